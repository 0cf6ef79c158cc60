#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""PyTorch peer of bench/conv_cpu.cpp: one convolution's forward and backward (input and weight
gradients), written as a PyTorch user writes it for speed on the CPU: channels_last tensors (oneDNN's
direct convolutions), fp32, and torch.autocast("cpu", bfloat16 / float16) from fp32 weights.

Method: as conv_cpu's: per case, 3 warm-up passes, then --repetitions timed forwards and as many timed
backwards (each backward after its own forward, outside the timing); the medians in milliseconds.

Usage: torch_conv.py --cases "name:N:H:W:C:O:K:S:P,..." [--threads T] [--repetitions R]
Prints one JSON object: {"torch": version, "cases": {name: {precision: {"forward_ms": .., "backward_ms": ..}}}}.
"""

import argparse
import json
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as error:
    print(f"torch_conv.py: PyTorch is missing ({error})", file=sys.stderr)
    sys.exit(77)


def case_times(spec, precision, repetitions):
    name, n, h, w, c, o, k, s, p = spec
    generator = torch.Generator().manual_seed(7)
    x = (torch.rand(n, c, h, w, generator=generator) * 2 - 1).contiguous(memory_format=torch.channels_last)
    weight = ((torch.rand(o, c, k, k, generator=generator) * 2 - 1) * 0.1).contiguous(
        memory_format=torch.channels_last).requires_grad_()
    x.requires_grad_()
    autocast = {"bf16_mixed": torch.bfloat16, "fp16_mixed": torch.float16}.get(precision)

    def forward():
        if autocast is None:
            return F.conv2d(x, weight, None, stride=s, padding=p)
        with torch.autocast("cpu", dtype=autocast):
            return F.conv2d(x, weight, None, stride=s, padding=p)

    y = forward()
    dy = (torch.rand(y.shape, generator=generator) * 2 - 1).to(y.dtype).contiguous(memory_format=torch.channels_last)
    forward_ms, backward_ms = [], []
    for repetition in range(3 + repetitions):
        started = time.perf_counter()
        y = forward()
        middle = time.perf_counter()
        y.backward(dy)
        ended = time.perf_counter()
        x.grad, weight.grad = None, None
        if repetition >= 3:
            forward_ms.append((middle - started) * 1e3)
            backward_ms.append((ended - middle) * 1e3)
    return {"forward_ms": statistics.median(forward_ms), "backward_ms": statistics.median(backward_ms)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", required=True)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--precisions", default="fp32,bf16_mixed,fp16_mixed")
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    results = {}
    for text in args.cases.split(","):
        fields = text.split(":")
        spec = [fields[0]] + [int(v) for v in fields[1:]]
        results[spec[0]] = {precision: case_times(spec, precision, args.repetitions)
                            for precision in args.precisions.split(",")}
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "cases": results}))


if __name__ == "__main__":
    main()
