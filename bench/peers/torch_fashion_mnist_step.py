#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""PyTorch peer of bench/fashion_mnist_step_cuda.cu: steps per second of the small Fashion-MNIST MLP,
written as a PyTorch user writes it, timed the same way, in the same session.

Model: Linear(784, 512) + ReLU, Linear(512, 256) + ReLU, Linear(256, 10), cross-entropy, AdamW
(lr 1e-3, weight decay 1e-4; PyTorch's default foreach implementation) over fp32 parameters;
Kaiming-uniform weights (Xavier-uniform for the last layer) and zero biases, as mpx initialises
them. Batch 128; a pool of --pool random (never zero) fp32 batches and labels on the GPU, cycled
through. Precisions: strict fp32, tf32, fp16_mixed (autocast + GradScaler), bf16_mixed (autocast);
variants: eager for every precision, torch.compile of the forward and loss for --compile-precisions,
and with --reduce-overhead also torch.compile(mode="reduce-overhead") (CUDA graphs of the compiled
part; the optimizer stays eager).

Method: groups of --steps-per-sample consecutive steps timed with CUDA events after a warm-up group;
the median group over --repetitions, divided by its size, is the step time. Peak memory is
torch.cuda.max_memory_allocated() over the timed steps. Before timing, each case's first loss is
checked against strict fp32 on the same model and batch.

The bar (mpx's CUDA graph step >= 5x PyTorch eager steps/s) is evaluated by bench/peers/compare.py
from this JSON and fashion_mnist_step_cuda's.

Usage: torch_fashion_mnist_step.py [--json PATH] [--precisions fp32,tf32,fp16_mixed,bf16_mixed]
                                   [--compile-precisions bf16_mixed] [--no-compile] [--reduce-overhead]
                                   [--repetitions N] [--steps-per-sample N] [--pool N] [--quick]
(--quick: 7 repetitions of 50 steps.)
Exits 77 with a message when PyTorch or a CUDA device is missing.
"""

import argparse
import sys
import time
import traceback

import torch_common as common

WIDTHS = [784, 512, 256, 10]
BATCH = 128
LR = 1e-3
WEIGHT_DECAY = 1e-4
SEED = 42


def run_case(torch, precision, variant, settings):
    common.release(torch)
    common.reset_compiler(torch)
    common.set_matmul_precision(torch, precision)
    model = common.mlp(torch, WIDTHS, SEED)
    generator = torch.Generator().manual_seed(100)
    pool = [common.random_batch(torch, BATCH, WIDTHS[0], WIDTHS[-1], generator) for _ in range(settings.pool)]
    check = common.check_first_loss(torch, model, precision, *pool[0])
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    scaler = common.make_scaler(torch, precision)
    compile_mode = "reduce-overhead" if variant == "compile-reduce-overhead" else None
    step = common.make_step(
        torch, model, optimizer, scaler, precision, compiled=variant != "eager", compile_mode=compile_mode
    )
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()

    started = time.perf_counter()
    step(*pool[0])  # allocates the gradients and AdamW's moments, and compiles
    torch.cuda.synchronize()
    first_step_seconds = time.perf_counter() - started
    state = {"next": 1, "loss": None}

    def group():
        for _ in range(settings.steps_per_sample):
            x, y = pool[state["next"]]
            state["loss"] = step(x, y)
            state["next"] = (state["next"] + 1) % len(pool)

    step_ms, samples = common.time_steps(torch, group, settings.steps_per_sample, settings.repetitions)
    final_loss = float(state["loss"])
    return {
        "precision": precision,
        "batch": BATCH,
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
    parser.add_argument("--json", default="torch_fashion_mnist_step.json")
    parser.add_argument("--precisions", default=",".join(common.PRECISIONS))
    parser.add_argument("--compile-precisions", default="bf16_mixed")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--reduce-overhead", action="store_true")
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--steps-per-sample", type=int, default=100)
    parser.add_argument("--pool", type=int, default=16)
    parser.add_argument("--quick", action="store_true")
    settings = parser.parse_args(argv)
    if settings.quick:
        settings.repetitions = 7
        settings.steps_per_sample = 50
    settings.precisions = [p for p in settings.precisions.split(",") if p]
    settings.compile_precisions = [] if settings.no_compile else [p for p in settings.compile_precisions.split(",") if p]
    for p in settings.precisions + settings.compile_precisions:
        if p not in common.PRECISIONS:
            parser.error(f"unknown precision {p!r}; expected one of {', '.join(common.PRECISIONS)}")
    if settings.pool < 1:
        parser.error("--pool must be at least 1")
    return settings


def main(argv):
    settings = parse(argv)
    torch = common.import_torch()
    if torch is None:
        return common.NO_DEVICE_EXIT
    document = {
        "benchmark": "torch_fashion_mnist_step",
        **common.environment(torch),
        "statistic": "median",
        "model": {
            "widths": WIDTHS,
            "activation": "ReLU (first two layers)",
            "loss": "cross-entropy",
            "optimizer": "torch.optim.AdamW (default foreach)",
            "lr": LR,
            "weight_decay": WEIGHT_DECAY,
            "batch": BATCH,
            "init": "Kaiming-uniform (Xavier-uniform last), zero bias",
        },
        "inputs": "pool of random fp32 batches on the GPU; autocast casts them in the first Linear",
        "pool": settings.pool,
        "repetitions": settings.repetitions,
        "steps_per_sample": settings.steps_per_sample,
        "cases": [],
        "errors": [],
    }
    print(f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}, {document['device']['name']}")
    print(f"{'precision':<10} {'variant':>24} {'step ms':>9} {'steps/s':>9} {'peak MiB':>9} {'loss':>8} {'1st step s':>10}")
    for precision in settings.precisions:
        variants = ["eager"]
        if precision in settings.compile_precisions:
            variants.append("compile")
            if settings.reduce_overhead:
                variants.append("compile-reduce-overhead")
        for variant in variants:
            try:
                case = run_case(torch, precision, variant, settings)
            except Exception as error:  # noqa: BLE001 - record it, go on with the other cases
                traceback.print_exc()
                document["errors"].append({"precision": precision, "variant": variant, "error": repr(error)})
                continue
            document["cases"].append(case)
            print(
                f"{precision:<10} {variant:>24} {case['step_ms']:>9.4f} {case['steps_per_second']:>9.0f} "
                f"{case['peak_bytes'] / 2**20:>9.1f} {case['final_loss']:>8.4f} {case['first_step_seconds']:>10.2f}",
                flush=True,
            )
    common.write_json(settings.json, document)
    return 1 if document["errors"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
