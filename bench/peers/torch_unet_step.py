#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""PyTorch peer of bench/train_cpu.cpp's UNet workload: the training step of mpx/experiment/unet.hpp's
diffusion UNet as examples/diffusion.cpp trains it, written as a PyTorch user writes it for speed on
the CPU: torch.nn layers, model and images in channels_last (oneDNN's direct convolutions, and mpx's
layout), F.scaled_dot_product_attention, eager fp32 and torch.autocast("cpu", bfloat16 / float16) over
fp32 weights; the fp16 step scales its loss with a GradScaler (unscaling before the clipping), as the
ResNet peer's does.

Model (c base channels, embedding 4c, 8 groups in every GroupNorm, every convolution and Linear with a
bias): the timesteps' sinusoidal features (cos then sin, dim c, max period 10000: diffusers'
get_timestep_embedding with flip_sin_to_cos=True, shift 0) through Linear(c, 4c) - SiLU - Linear(4c, 4c)
- SiLU; a conv 3x3 stem (1 -> c) and a residual block at 28 x 28; a stride-2 conv 3x3 and a block to 2c
at 14 x 14; another stride-2 conv, a block and self-attention (one head over the 49 pixels, x +
attention(GroupNorm(x))) at 7 x 7, nearest upsampling x2 and a conv 3x3; each level up concatenates
its input beside that output on the channels and mixes them with a block (4c -> 2c, then upsampling,
a conv 3x3 2c -> c, the concatenation and a block 2c -> c); GroupNorm - SiLU - conv 3x3 to one channel.
A block is diffusers' ResnetBlock2D: GroupNorm - SiLU - conv 3x3 - plus Linear(4c, C) of the embedding
- GroupNorm - SiLU - conv 3x3, added to x (through a 1x1 conv when the channels change). The parameter
count is checked against mpx's (--parameters).

Step: MSE loss on the noise; clip_grad_norm_(1.0); torch.optim.AdamW (lr 2e-3, weight decay 0;
PyTorch's default implementation on the CPU); then the exponential moving average of the weights
(decay 0.999 with diffusers' warm-up, min(decay, (1 + s) / (10 + s)) at update s, 0 at the first),
one torch._foreach_lerp_ over the parameters, as mpx's Trainer::keep_weight_average updates it in the
step. The batch: random fp32 images (seed 11) scaled into [-1, 1], noised by DDPM's linear schedule
(1000 steps, beta 1e-4 to 0.02) at random timesteps; the same batch every step.

Method: as train_cpu's (torch_cpu_step.py): per precision a fresh model (seed 5), 3 warm-up steps,
then --steps timed steps (zero_grad, timestep features, forward and loss, backward, clipping,
optimizer step, EMA); the median in ms.

Usage: torch_unet_step.py [--batch N] [--width C] [--parameters P] [--steps N] [--threads T]
Prints one JSON object: {"torch": version, "threads": T, ..., "step_ms": {precision: ms},
"samples_per_second": {precision: n}, "first_loss": {precision: loss}}.
"""

import argparse
import json
import math
import sys

try:
    import torch
    import torch.nn.functional as F
    from torch import nn

    from torch_cpu_step import DTYPES, time_precisions
except ImportError as error:
    print(f"torch_unet_step.py: PyTorch is missing ({error})", file=sys.stderr)
    sys.exit(77)

LR = 2e-3
MAX_GRAD_NORM = 1.0
EMA_DECAY = 0.999
GROUPS = 8
TIMESTEPS = 1000


def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1)


class Block(nn.Module):
    """mpx::experiment::unet_block / unet_projected_block: diffusers' ResnetBlock2D."""

    def __init__(self, cin, cout, embedding):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(GROUPS, cin), conv3x3(cin, cout)
        self.time = nn.Linear(embedding, cout)
        self.norm2, self.conv2 = nn.GroupNorm(GROUPS, cout), conv3x3(cout, cout)
        self.act = nn.SiLU()
        self.shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, emb):
        h = self.conv1(self.act(self.norm1(x))) + self.time(emb)[:, :, None, None]
        return self.shortcut(x) + self.conv2(self.act(self.norm2(h)))


class Attention(nn.Module):
    """mpx::experiment::unet_attention: x + proj(attention(qkv(GroupNorm(x)))), one head, every pixel."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(GROUPS, channels)
        self.qkv, self.proj = nn.Linear(channels, 3 * channels), nn.Linear(channels, channels)

    def forward(self, x):
        n, c, h, w = x.shape
        # channels_last: [N, C, H, W] -> [N, HW, C] is a view, no copy.
        tokens = self.norm(x).flatten(2).transpose(1, 2)
        q, k, v = (y.unsqueeze(1) for y in self.qkv(tokens).split(c, dim=2))
        y = self.proj(F.scaled_dot_product_attention(q, k, v).squeeze(1))
        return x + y.transpose(1, 2).reshape(n, c, h, w)


def up(cin, cout):
    return nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), conv3x3(cin, cout))


class UNet(nn.Module):
    """mpx::experiment::unet(c) for [N, 1, 28, 28] images."""

    def __init__(self, c):
        super().__init__()
        e = 4 * c
        self.c = c
        self.time = nn.Sequential(nn.Linear(c, e), nn.SiLU(), nn.Linear(e, e), nn.SiLU())
        self.stem, self.block1 = conv3x3(1, c), Block(c, c, e)  # 28 x 28
        self.down1, self.block2 = conv3x3(c, c, 2), Block(c, 2 * c, e)  # 14 x 14
        self.down2, self.block3 = conv3x3(2 * c, 2 * c, 2), Block(2 * c, 2 * c, e)  # 7 x 7
        self.attention, self.up2 = Attention(2 * c), up(2 * c, 2 * c)
        self.block4, self.up1 = Block(4 * c, 2 * c, e), up(2 * c, c)  # 14 x 14
        self.block5 = Block(2 * c, c, e)  # 28 x 28
        self.out = nn.Sequential(nn.GroupNorm(GROUPS, c), nn.SiLU(), conv3x3(c, 1))

    def features(self, timesteps):
        half = self.c // 2
        frequency = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
        angle = timesteps[:, None] * frequency[None, :]
        return torch.cat([angle.cos(), angle.sin()], dim=1)

    def forward(self, x, timesteps):
        emb = self.time(self.features(timesteps))
        top = self.block1(self.stem(x), emb)
        middle = self.block2(self.down1(top), emb)
        lowest = self.up2(self.attention(self.block3(self.down2(middle), emb)))
        middle = self.block4(torch.cat([middle, lowest], dim=1), emb)
        top = self.block5(torch.cat([top, self.up1(middle)], dim=1), emb)
        return self.out(top)


def noised_batch(batch):
    """DDPM's training input at random timesteps: x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) eps."""
    generator = torch.Generator().manual_seed(11)
    clean = torch.randn(batch, 1, 28, 28, generator=generator)
    clean /= clean.abs().max()
    timesteps = torch.randint(0, TIMESTEPS, (batch,), generator=generator)
    noise = torch.randn(batch, 1, 28, 28, generator=generator)
    alpha_bar = torch.cumprod(1 - torch.linspace(1e-4, 0.02, TIMESTEPS, dtype=torch.float64), 0)[timesteps]
    keep, spread = alpha_bar.sqrt()[:, None, None, None], (1 - alpha_bar).sqrt()[:, None, None, None]
    noisy = (keep * clean + spread * noise).float()
    layout = torch.channels_last
    return noisy.contiguous(memory_format=layout), timesteps.float(), noise.contiguous(memory_format=layout)


def training_step(args, dtype):
    """A fresh UNet (seed 5), AdamW and the weight average, and one training step of them on a fixed
    noised batch: forward and MSE loss under torch.autocast("cpu", dtype) (eager fp32 when dtype is
    None), backward, clipping, AdamW, the average; a GradScaler for fp16. Returns step() -> loss."""
    torch.manual_seed(5)
    model = UNet(args.width).to(memory_format=torch.channels_last)
    noisy, timesteps, noise = noised_batch(args.batch)
    parameters = list(model.parameters())
    optimizer = torch.optim.AdamW(parameters, lr=LR, weight_decay=0.0)
    scaler = torch.amp.GradScaler("cpu", enabled=dtype is torch.float16)
    average = [p.detach().clone() for p in parameters]
    updates = 0

    def step():
        nonlocal updates
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = F.mse_loss(model(noisy, timesteps), noise)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(parameters, MAX_GRAD_NORM)
        scaler.step(optimizer)
        scaler.update()
        decay = 0.0 if updates == 0 else min(EMA_DECAY, (1 + updates) / (10 + updates))
        with torch.no_grad():
            torch._foreach_lerp_(average, parameters, 1.0 - decay)
        updates += 1
        return loss

    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--parameters", type=int, default=0, help="mpx's count, to check ours against")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    parameters = sum(p.numel() for p in UNet(args.width).parameters())
    # The same network: a different count means a different architecture, and timing it means nothing.
    if args.parameters and parameters != args.parameters:
        print(f"torch_unet_step.py: this UNet has {parameters} parameters, mpx's {args.parameters}",
              file=sys.stderr)
        sys.exit(1)
    results = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "batch": args.batch,
        "width": args.width,
        "parameters": parameters,
        "mpx_parameters": args.parameters,
    }
    time_precisions(results, lambda dtype: training_step(args, dtype), DTYPES, args.steps, args.batch)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
