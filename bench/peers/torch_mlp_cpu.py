#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""PyTorch peer of bench/train_cpu.cpp's MLP workloads on the CPU: the training step of
mpx::experiment::mlp3, written as a PyTorch user writes it: torch.nn layers, eager fp32 and
torch.autocast("cpu", bfloat16 / float16) over fp32 weights; the fp16 step scales its loss with a
GradScaler, as the char-GPT and ResNet peers' do.

Model: Linear(w0, w1) + ReLU, Linear(w1, w2) + ReLU, Linear(w2, w3), with biases; cross-entropy;
torch.optim.AdamW with its defaults (lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 1e-2: mpx's
AdamW defaults too; PyTorch's default foreach implementation). A batch of random fp32 inputs and labels
(seed 11); parameters from seed 5 (PyTorch's own initialisation: the values do not change the time).

Method: as train_cpu's (torch_cpu_step.py): per precision a fresh model, 3 warm-up steps, then
--steps timed steps (zero_grad, forward and loss, backward, optimizer step); the median in ms.

Usage: torch_mlp_cpu.py [--widths 784,512,256,10] [--batch N] [--steps N] [--threads T]
                        [--precisions fp32,bf16_mixed,fp16_mixed]
(autocast's fp16 on a CPU without AVX512_FP16 is slow: the wide MLP's step took 28 s on a 2-core
Xeon, so train_cpu leaves it out there.) Prints one JSON object: {"torch": version, "threads": T, ..., "step_ms": {precision: ms},
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
    print(f"torch_mlp_cpu.py: PyTorch is missing ({error})", file=sys.stderr)
    sys.exit(77)


def mlp3(widths):
    """mpx::experiment::mlp3(w0, w1, w2, w3): two hidden ReLU layers."""
    return nn.Sequential(
        nn.Linear(widths[0], widths[1]),
        nn.ReLU(),
        nn.Linear(widths[1], widths[2]),
        nn.ReLU(),
        nn.Linear(widths[2], widths[3]),
    )


def training_step(widths, batch, dtype):
    """A fresh MLP (seed 5) and AdamW, and its training step on a fixed random batch (seed 11)."""
    torch.manual_seed(5)
    model = mlp3(widths)
    generator = torch.Generator().manual_seed(11)
    inputs = torch.randn(batch, widths[0], generator=generator)
    labels = torch.randint(0, widths[3], (batch,), generator=generator)
    return classifier_step(model, inputs, labels, torch.optim.AdamW(model.parameters()), dtype)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--widths", default="784,512,256,10")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--precisions", default="fp32,bf16_mixed,fp16_mixed")
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    if len(widths) != 4 or min(widths) < 1:
        parser.error(f"--widths {args.widths}: expected four positive sizes (inputs, hidden1, hidden2, classes)")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    results = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "widths": widths,
        "batch": args.batch,
    }
    precisions = args.precisions.split(",")
    if any(precision not in DTYPES for precision in precisions):
        parser.error(f"--precisions {args.precisions}: expected names from {', '.join(DTYPES)}")
    time_precisions(
        results, lambda dtype: training_step(widths, args.batch, dtype), precisions, args.steps, args.batch
    )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
