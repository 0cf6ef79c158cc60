#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""PyTorch peer of bench/train_cpu.cpp's ResNet workload: the training step of mpx/experiment/resnet.hpp's
ResNet-8, written as a PyTorch user writes it for speed on the CPU: torch.nn layers, model and images in
channels_last (oneDNN's direct convolutions, and mpx's layout), eager fp32 and torch.autocast("cpu",
bfloat16 / float16) over fp32 weights; the fp16 step scales its loss with a GradScaler, as the char-GPT
peer's does.

Model: conv 3x3 (1 -> c) + BatchNorm + ReLU; three downsampling blocks c -> 2c, 2c -> 4c and 4c -> 8c
(the first convolution with stride 2, and a 1x1 stride-2 convolution + BatchNorm as the shortcut); ReLU
after each block's sum; global average pooling; Linear(8c, classes). A basic block's body
is conv 3x3 - BatchNorm - ReLU - conv 3x3 - BatchNorm; no convolution has a bias. ReLU in place, as
torchvision's ResNets have it. Cross-entropy; torch.optim.SGD (lr 0.1, momentum 0.9, Nesterov, weight
decay 5e-4; PyTorch's default foreach implementation). A batch of random fp32 images (seed 11) and labels.

Method: as train_cpu's (torch_cpu_step.py): per precision a fresh model (seed 5), 3 warm-up steps,
then --steps timed steps (zero_grad, forward and loss, backward, optimizer step); the median in ms.

Usage: torch_resnet_step.py [--batch N] [--width C] [--classes K] [--steps N] [--threads T]
Prints one JSON object: {"torch": version, "threads": T, ..., "step_ms": {precision: ms},
"samples_per_second": {precision: n}, "first_loss": {precision: loss}}.
"""

import argparse
import json
import sys

try:
    import torch
    from torch import nn

    from torch_cpu_step import DTYPES, classifier_step, time_precisions
except ImportError as error:
    print(f"torch_resnet_step.py: PyTorch is missing ({error})", file=sys.stderr)
    sys.exit(77)

LR = 0.1
MOMENTUM = 0.9
WEIGHT_DECAY = 5e-4


class Residual(nn.Module):
    """mpx::nn::Residual: body(x) + shortcut(x), the shortcut the identity unless given."""

    def __init__(self, body, shortcut=None):
        super().__init__()
        self.body = body
        self.shortcut = shortcut if shortcut is not None else nn.Identity()

    def forward(self, x):
        return self.body(x) + self.shortcut(x)


def basic_block(cin, cout, stride):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
    )


def downsampling_block(cin, cout):
    shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=2, bias=False), nn.BatchNorm2d(cout))
    return Residual(basic_block(cin, cout, 2), shortcut)


def resnet(c, classes):
    """mpx::experiment::resnet(c, classes) for [N, 1, 28, 28] images."""
    return nn.Sequential(
        nn.Conv2d(1, c, 3, padding=1, bias=False),
        nn.BatchNorm2d(c),
        nn.ReLU(inplace=True),
        downsampling_block(c, 2 * c),
        nn.ReLU(inplace=True),
        downsampling_block(2 * c, 4 * c),
        nn.ReLU(inplace=True),
        downsampling_block(4 * c, 8 * c),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8 * c, classes),
    )


def training_step(args, dtype):
    """A fresh ResNet (seed 5) and SGD, and one training step of it on a fixed random batch (seed 11):
    forward and cross-entropy under torch.autocast("cpu", dtype) (eager fp32 when dtype is None),
    backward, SGD, with a GradScaler for fp16. Returns step() -> loss."""
    torch.manual_seed(5)
    model = resnet(args.width, args.classes).to(memory_format=torch.channels_last)
    generator = torch.Generator().manual_seed(11)
    images = torch.randn(args.batch, 1, 28, 28, generator=generator).contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, args.classes, (args.batch,), generator=generator)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, nesterov=True, weight_decay=WEIGHT_DECAY)
    return classifier_step(model, images, labels, optimizer, dtype)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    results = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "batch": args.batch,
        "width": args.width,
        "classes": args.classes,
    }
    time_precisions(results, lambda dtype: training_step(args, dtype), DTYPES, args.steps, args.batch)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
