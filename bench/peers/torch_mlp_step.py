#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""PyTorch peer of bench/mlp_step_cuda.cu: the same training step, written as a PyTorch user writes
it, timed the same way, in the same session.

Model: three Linear(4096, 4096), ReLU after the first two, cross-entropy over 4096 classes, SGD
(lr 0.01, momentum 0.9; PyTorch's default foreach implementation) over fp32 parameters; Kaiming-
uniform weights (Xavier-uniform for the last layer) and zero biases, as mpx initialises them (the
values differ, the distribution is the same). Batch 512 and 4096 of random (never zero) fp32 inputs
and random labels. Precisions: strict fp32 (no TF32), tf32 (allow_tf32), fp16_mixed
(torch.autocast(float16) + GradScaler with its defaults) and bf16_mixed (torch.autocast(bfloat16));
variants: eager, and torch.compile of the forward and loss (backward through AOTAutograd, optimizer
eager) for the precisions in --compile-precisions.

Method: groups of --steps-per-sample consecutive steps are timed with CUDA events after a warm-up
group (which includes compilation); the median group over --repetitions, divided by its size, is
the step time. Peak memory is torch.cuda.max_memory_allocated() over the timed steps, with the model,
optimizer state and batch live. Before timing, each case's first loss is checked against strict
fp32 on the same model and batch.

The bars (mpx >= 1.4x eager AMP at batch 512, >= 1.1x at 4096, >= 1.0x torch.compile, no more peak
memory) are evaluated by bench/peers/compare.py from this JSON and mlp_step_cuda's.

Usage: torch_mlp_step.py [--json PATH] [--batches 512,4096] [--precisions fp32,tf32,fp16_mixed,bf16_mixed]
                         [--compile-precisions fp16_mixed,bf16_mixed] [--no-compile]
                         [--repetitions N] [--steps-per-sample N] [--quick]
(--quick: 5 repetitions of 5 steps and torch.compile for bf16_mixed only.)
Exits 77 with a message when PyTorch or a CUDA device is missing.
"""

import argparse
import sys
import time
import traceback

import torch_common as common

WIDTH = 4096
LR = 0.01
MOMENTUM = 0.9
SEED = 5


def run_case(torch, precision, batch, variant, settings):
    common.release(torch)
    common.reset_compiler(torch)
    common.set_matmul_precision(torch, precision)
    model = common.mlp(torch, [WIDTH] * 4, SEED)
    generator = torch.Generator().manual_seed(4)
    x, y = common.random_batch(torch, batch, WIDTH, WIDTH, generator)
    check = common.check_first_loss(torch, model, precision, x, y)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    scaler = common.make_scaler(torch, precision)
    step = common.make_step(torch, model, optimizer, scaler, precision, compiled=variant == "compile")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()

    started = time.perf_counter()
    step(x, y)  # the first step allocates the gradients and momentum, and compiles
    torch.cuda.synchronize()
    first_step_seconds = time.perf_counter() - started
    last = {}

    def group():
        for _ in range(settings.steps_per_sample):
            last["loss"] = step(x, y)

    step_ms, samples = common.time_steps(torch, group, settings.steps_per_sample, settings.repetitions)
    final_loss = float(last["loss"])
    return {
        "precision": precision,
        "batch": batch,
        "variant": variant,
        "step_ms": step_ms,
        "step_ms_range": [min(samples), max(samples)],
        "steps_per_second": 1e3 / step_ms,
        "peak_bytes": torch.cuda.max_memory_allocated(),
        "first_step_seconds": first_step_seconds,
        "final_loss": final_loss,
        "final_loss_scale": scaler.get_scale() if scaler is not None else None,
        "check": check,
    }


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default="torch_mlp_step.json")
    parser.add_argument("--batches", default="512,4096")
    parser.add_argument("--precisions", default=",".join(common.PRECISIONS))
    parser.add_argument("--compile-precisions", default="fp16_mixed,bf16_mixed")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--steps-per-sample", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    settings = parser.parse_args(argv)
    if settings.quick:
        settings.repetitions = 5
        settings.steps_per_sample = 5
        settings.compile_precisions = "bf16_mixed"
    settings.batches = [int(b) for b in settings.batches.split(",") if b]
    settings.precisions = [p for p in settings.precisions.split(",") if p]
    settings.compile_precisions = [] if settings.no_compile else [p for p in settings.compile_precisions.split(",") if p]
    for p in settings.precisions + settings.compile_precisions:
        if p not in common.PRECISIONS:
            parser.error(f"unknown precision {p!r}; expected one of {', '.join(common.PRECISIONS)}")
    return settings


def main(argv):
    settings = parse(argv)
    torch = common.import_torch()
    if torch is None:
        return common.NO_DEVICE_EXIT
    document = {
        "benchmark": "torch_mlp_step",
        **common.environment(torch),
        "statistic": "median",
        "model": {
            "widths": [WIDTH] * 4,
            "activation": "ReLU (first two layers)",
            "loss": "cross-entropy",
            "optimizer": "torch.optim.SGD (default foreach)",
            "lr": LR,
            "momentum": MOMENTUM,
            "init": "Kaiming-uniform (Xavier-uniform last), zero bias",
        },
        "inputs": "fp32 batch; autocast casts it in the first Linear",
        "repetitions": settings.repetitions,
        "steps_per_sample": settings.steps_per_sample,
        "cases": [],
        "errors": [],
    }
    print(f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}, {document['device']['name']}")
    print(f"{'precision':<10} {'batch':>6} {'variant':>8} {'step ms':>9} {'peak MiB':>10} {'loss':>8} {'1st step s':>10}")
    for batch in settings.batches:
        for precision in settings.precisions:
            variants = ["eager"] + (["compile"] if precision in settings.compile_precisions else [])
            for variant in variants:
                try:
                    case = run_case(torch, precision, batch, variant, settings)
                except Exception as error:  # noqa: BLE001 - record it, go on with the other cases
                    traceback.print_exc()
                    document["errors"].append(
                        {"precision": precision, "batch": batch, "variant": variant, "error": repr(error)}
                    )
                    continue
                document["cases"].append(case)
                print(
                    f"{precision:<10} {batch:>6} {variant:>8} {case['step_ms']:>9.3f} "
                    f"{case['peak_bytes'] / 2**20:>10.1f} {case['final_loss']:>8.4f} {case['first_step_seconds']:>10.2f}",
                    flush=True,
                )
    common.write_json(settings.json, document)
    return 1 if document["errors"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
