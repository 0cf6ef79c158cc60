# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""What the CPU classifier peers of bench/train_cpu.cpp share (torch_mlp_cpu.py, torch_resnet_step.py):
a training step as a PyTorch user writes it on the CPU, eager fp32 or torch.autocast("cpu") over
fp32 weights with a GradScaler for fp16, and its timing: the first step's loss, 2 more warm-up steps,
then the median of the timed steps in milliseconds, per precision, into the peer's JSON object."""

import statistics
import time

import torch
from torch import nn

# Precision name (as mpx prints it) -> autocast dtype (None: eager fp32).
DTYPES = {"fp32": None, "bf16_mixed": torch.bfloat16, "fp16_mixed": torch.float16}


def classifier_step(model, inputs, labels, optimizer, dtype):
    """step() -> loss: zero_grad, forward and cross-entropy under torch.autocast("cpu", dtype) (eager
    fp32 when dtype is None), backward, the optimizer's step, with a GradScaler for fp16."""
    scaler = torch.amp.GradScaler("cpu", enabled=dtype is torch.float16)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = nn.functional.cross_entropy(model(inputs), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss

    return step


def time_step(step, steps):
    """(first loss, median ms over `steps` timed steps after 3 warm-up steps, the first among them)."""
    first_loss = step().item()
    for _ in range(2):
        step()
    samples = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        samples.append(1e3 * (time.perf_counter() - start))
    return first_loss, statistics.median(samples)


def time_precisions(results, make_step, precisions, steps, batch):
    """Times make_step(dtype) (a fresh model's step) for each precision name in `precisions` and
    records "first_loss", "step_ms" and "samples_per_second" ({precision: value}) in `results`."""
    for key in ("first_loss", "step_ms", "samples_per_second"):
        results.setdefault(key, {})
    for precision in precisions:
        first_loss, median = time_step(make_step(DTYPES[precision]), steps)
        results["first_loss"][precision] = first_loss
        results["step_ms"][precision] = median
        results["samples_per_second"][precision] = batch / (median / 1e3)
