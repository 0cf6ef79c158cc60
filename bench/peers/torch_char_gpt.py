# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""The char-GPT of mpx/experiment/char_gpt.hpp in PyTorch, module for module, so that
`model.load_state_dict` takes mpx's parameter names as they are (`layers.3.layers.0.block.layers.1.
qkv.weight`): nn.ModuleList names its children "0", "1", ... as mpx's Sequential names its layers.

Layer by layer: token embedding, learned positions, dropout, `blocks` pre-LN decoder blocks (each a
Sequential of two residual branches: LayerNorm -> causal self-attention -> dropout, and LayerNorm ->
Linear(4C) + GELU(tanh) -> Linear(C) -> dropout), final LayerNorm, linear head. Attention splits the
fused qkv projection into three C-wide groups and each group into heads of C/H features, as
nanoGPT does; the scores are scaled by 1/sqrt(d) and causally masked.

Used by tests/interop/char_gpt_parity.py (the per-step losses of 50 AdamW steps in fp32 against
mpx's) and as the PyTorch peer of the char-GPT CPU benchmark."""

import math

import torch
from torch import nn


class Sequential(nn.Module):
    """mpx::nn::Sequential: layers applied in order, named layers.<i>."""

    def __init__(self, *layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Residual(nn.Module):
    """mpx::nn::Residual: x + block(x), the block named `block`."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return x + self.block(x)


class PositionalEmbedding(nn.Module):
    """mpx::nn::PositionalEmbedding: x + weight[:T]."""

    def __init__(self, max_positions, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(max_positions, dim))

    def forward(self, x):
        return x + self.weight[: x.shape[1]]


class CausalSelfAttention(nn.Module):
    """mpx::nn::CausalSelfAttention: fused qkv, heads, softmax(q k^T / sqrt(d) + causal mask) v, proj."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        batch, sequence, width = x.shape
        d = width // self.heads
        q, k, v = self.qkv(x).split(width, dim=2)
        q, k, v = (t.view(batch, sequence, self.heads, d).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        mask = torch.ones(sequence, sequence, dtype=torch.bool, device=x.device).tril()
        # Scores and softmax in fp32, as autocast runs softmax.
        weights = torch.softmax(scores.float().masked_fill(~mask, float("-inf")), dim=-1).to(v.dtype)
        y = (weights @ v).transpose(1, 2).contiguous().view(batch, sequence, width)
        return self.proj(y)


class LinearGELU(nn.Linear):
    """mpx::nn::Linear with GELU (tanh form) fused into its epilogue."""

    def forward(self, x):
        return nn.functional.gelu(super().forward(x), approximate="tanh")


def char_gpt(vocabulary, context, width, heads, blocks, dropout=0.0):
    """The model of mpx::experiment::char_gpt, parameters named as mpx names them."""

    def block():
        attention = Residual(Sequential(nn.LayerNorm(width), CausalSelfAttention(width, heads), nn.Dropout(dropout)))
        mlp = Residual(
            Sequential(nn.LayerNorm(width), LinearGELU(width, 4 * width), nn.Linear(4 * width, width), nn.Dropout(dropout)))
        return Sequential(attention, mlp)

    model = Sequential(nn.Embedding(vocabulary, width), PositionalEmbedding(context, width), nn.Dropout(dropout),
                       *[block() for _ in range(blocks)], nn.LayerNorm(width), nn.Linear(width, vocabulary))
    return model


def load_mpx_weights(model, tensors):
    """Copies mpx's tensors (name -> tensor) into the model; every parameter must be present."""
    by_mpx_name = dict(model.named_parameters())
    missing = sorted(set(by_mpx_name) - set(tensors))
    unexpected = sorted(set(tensors) - set(by_mpx_name))
    if missing or unexpected:
        raise ValueError(f"parameter names differ: missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        for name, parameter in by_mpx_name.items():
            if tuple(parameter.shape) != tuple(tensors[name].shape):
                raise ValueError(f"{name}: mpx has {tuple(tensors[name].shape)}, torch {tuple(parameter.shape)}")
            parameter.copy_(tensors[name])


def _step_arguments(prog, argv, steps, precision=False):
    """The model's shape, the token batch and the timing options of `bench` and `profile`."""
    import argparse  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog=prog)
    if precision:
        parser.add_argument("--precision", choices=("fp32", "bf16_mixed", "fp16_mixed"), default="fp32")
    for name, default in (("batch", 16), ("context", 64), ("width", 128), ("heads", 4), ("blocks", 4),
                          ("vocabulary", 96), ("steps", steps), ("threads", 0)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--compile", action="store_true", help="also time the step under torch.compile")
    args = parser.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    return args


def _training_step(args, dtype, mark_optimizer=False, compiled=False):
    """A fresh char-GPT (seed 5) and AdamW on `args.device`, and one training step of it on fixed
    random token ids (seed 11): forward and cross-entropy under torch.autocast(device, dtype) (eager
    fp32 when dtype is None), backward, AdamW, with a GradScaler for fp16. With `compiled`, the model
    runs under torch.compile. With `mark_optimizer`, the optimizer's work runs inside the profiler
    range "optimizer phase"."""
    import contextlib  # noqa: PLC0415

    device = args.device
    generator = torch.Generator().manual_seed(11)
    inputs = torch.randint(0, args.vocabulary, (args.batch, args.context), generator=generator).to(device)
    targets = torch.randint(0, args.vocabulary, (args.batch, args.context), generator=generator).to(device)
    torch.manual_seed(5)
    model = char_gpt(args.vocabulary, args.context, args.width, args.heads, args.blocks).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device, enabled=dtype is torch.float16)
    forward = torch.compile(model) if compiled else model

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            logits = forward(inputs)
            loss = nn.functional.cross_entropy(logits.float().view(-1, args.vocabulary), targets.view(-1))
        scaler.scale(loss).backward()
        with (torch.profiler.record_function("optimizer phase") if mark_optimizer else contextlib.nullcontext()):
            scaler.step(optimizer)
            scaler.update()

    return step


def bench(argv):
    """Median ms per training step (forward, cross-entropy, backward, AdamW) of the char-GPT on
    --device (the CPU by default) in eager fp32 and under torch.autocast(device, bf16 / fp16), on
    random token ids; with --compile also bf16 under torch.compile ("bf16_mixed_compiled"); prints one
    JSON object. The fp16 step scales its loss with a GradScaler, as an fp16 PyTorch user would. On
    the GPU each step is timed to its end (torch.cuda.synchronize), with 3 warm-up steps (the
    compiled ones compile there)."""
    import json  # noqa: PLC0415
    import statistics  # noqa: PLC0415
    import time  # noqa: PLC0415

    args = _step_arguments("torch_char_gpt.py bench", argv, steps=10)
    cuda = args.device == "cuda"
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)
    results = {"torch": torch.__version__, "device": torch.cuda.get_device_name() if cuda else "cpu",
               "threads": torch.get_num_threads(), "batch": args.batch, "context": args.context,
               "width": args.width, "heads": args.heads, "blocks": args.blocks, "step_ms": {},
               "tokens_per_second": {}}
    precisions = (("fp32", None), ("bf16_mixed", torch.bfloat16), ("fp16_mixed", torch.float16))
    runs = [(precision, dtype, False) for precision, dtype in precisions]
    if args.compile:  # compiling takes tens of seconds per precision: bf16, the usual choice, only
        runs.append(("bf16_mixed", torch.bfloat16, True))
    for precision, dtype, compiled in runs:
        suffix = "_compiled" if compiled else ""
        step = _training_step(args, dtype, compiled=compiled)
        for _ in range(3):
            step()
        synchronize()
        samples = []
        for _ in range(args.steps):
            start = time.perf_counter()
            step()
            synchronize()
            samples.append(1e3 * (time.perf_counter() - start))
        median = statistics.median(samples)
        results["step_ms"][precision + suffix] = median
        results["tokens_per_second"][precision + suffix] = args.batch * args.context / (median / 1e3)
    print(json.dumps(results))


def profile(argv):
    """Self CPU time per aten operation of the char-GPT training step (bench's step), from
    torch.profiler over --steps steps after 3 warm-up steps; prints one JSON object
    {"step_ms": median, "ops": {name: self ms per step}}."""
    import json  # noqa: PLC0415
    import statistics  # noqa: PLC0415
    import time  # noqa: PLC0415

    args = _step_arguments("torch_char_gpt.py profile", argv, steps=20, precision=True)
    dtype = {"fp32": None, "bf16_mixed": torch.bfloat16, "fp16_mixed": torch.float16}[args.precision]
    step = _training_step(args, dtype, mark_optimizer=True)
    for _ in range(3):
        step()
    samples = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            start = time.perf_counter()
            step()
            samples.append(1e3 * (time.perf_counter() - start))
    # Self time per operation; anything under the "optimizer phase" range counts as the optimizer's.
    ops = {}
    for event in prof.events():
        parent, in_optimizer = event.cpu_parent, event.name == "optimizer phase"
        while parent is not None and not in_optimizer:
            in_optimizer, parent = parent.name == "optimizer phase", parent.cpu_parent
        key = "optimizer: " + event.name if in_optimizer else event.name
        ops[key] = ops.get(key, 0.0) + event.self_cpu_time_total / 1e3 / args.steps
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                      "step_ms": statistics.median(samples), "ops": ops}))


if __name__ == "__main__":
    import sys  # noqa: PLC0415

    if len(sys.argv) < 2 or sys.argv[1] not in ("bench", "profile"):
        sys.exit("usage: torch_char_gpt.py bench|profile [--precision P (profile)] [--batch N --context N "
                 "--width N --heads N --blocks N --vocabulary N --steps N --threads N]")
    (bench if sys.argv[1] == "bench" else profile)(sys.argv[2:])
