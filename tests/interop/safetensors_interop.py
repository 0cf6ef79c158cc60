#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""Python safetensors <-> mpx: files mpx writes load in Python with identical values, and files
Python writes load in mpx with identical values (F32, F64, F16, BF16, I32, I64, U8, metadata).

usage: safetensors_interop.py <safetensors_interop_tool> <scratch directory>
Exits 77 (CTest SKIP) when numpy, safetensors or ml_dtypes cannot be imported.
"""
import math
import os
import subprocess
import sys

try:
    import ml_dtypes
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file, save_file
except ImportError as error:
    print(f"SKIP: Python packages for the interop test are missing ({error}); "
          "scripts/install-deps.sh installs them into build/tools/python")
    sys.exit(77)


def reference():
    """The values of tests/tools/safetensors_interop_tool.cpp's Reference, in numpy."""
    f32 = np.array([(i - 7) * 0.375 for i in range(15)], dtype=np.float32)
    f32[0] = -0.0
    f32[14] = np.inf
    return {
        "f32": f32.reshape(3, 5),
        "f64": np.array([1.0 / 3.0, -1e300, 5e-324], dtype=np.float64),
        "f16": np.array([(i - 3) * 0.5 for i in range(6)], dtype=np.float16).reshape(2, 3),
        "bf16": np.array([(i - 2) * 1.5 for i in range(4)], dtype=ml_dtypes.bfloat16),
        "i32": np.array([-2**31, -1, 0, 7, 2**31 - 1], dtype=np.int32),
        "i64": np.array([-2**63, 2**62 + 1], dtype=np.int64),
        "u8": np.array([0, 1, 128, 255], dtype=np.uint8).reshape(2, 2),
    }


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def main():
    tool, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    failures = []

    # mpx -> Python
    path = os.path.join(scratch, "from_mpx.safetensors")
    subprocess.run([tool, "write", path], check=True)
    loaded = load_file(path)
    for name, expected in reference().items():
        if name not in loaded or not same_bits(loaded[name], expected):
            failures.append(f"mpx -> Python: tensor {name}: {loaded.get(name)!r} != {expected!r}")
    with safe_open(path, "np") as f:
        metadata = f.metadata()
    if metadata != {"source": "mpx", "unicode": "\u00e9\"\\"}:
        failures.append(f"mpx -> Python: metadata {metadata!r}")
    print(f"mpx -> Python: {len(loaded)} tensors read")

    # Python -> mpx
    path = os.path.join(scratch, "from_python.safetensors")
    save_file(reference(), path, metadata={"source": "python \u00e9"})
    result = subprocess.run([tool, "check", path], capture_output=True, text=True)
    print(result.stdout, result.stderr, end="")
    if result.returncode != 0:
        failures.append(f"Python -> mpx: the tool rejected the file (exit {result.returncode})")

    # An mpx checkpoint is an ordinary safetensors file to Python.
    path = os.path.join(scratch, "checkpoint.safetensors")
    result = subprocess.run([tool, "checkpoint", path], check=True, capture_output=True, text=True)
    printed = np.array([float.fromhex(line) for line in result.stdout.split()], dtype=np.float32)
    checkpoint = load_file(path)
    with safe_open(path, "np") as f:
        metadata = f.metadata()
    expected_names = {"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"}
    expected_names |= {f"optimizer.{n}.{s}" for n in list(expected_names) for s in ("exp_avg", "exp_avg_sq")}
    if set(checkpoint) != expected_names:
        failures.append(f"checkpoint: tensors {sorted(checkpoint)}")
    weight = checkpoint.get("layers.0.weight")
    if weight is None or weight.dtype != np.float32 or weight.shape != (8, 4) or \
            weight.reshape(-1).tobytes() != printed.tobytes():
        failures.append("checkpoint: layers.0.weight differs from the weights mpx printed")
    for key, value in {"precision": "bf16_mixed", "step": "3", "optimizer": "AdamW", "optimizer.steps": "3",
                       "optimizer.lr": "0.01", "scaler.policy": "none", "data.epoch": "0"}.items():
        if metadata.get(key) != value:
            failures.append(f"checkpoint: metadata {key} = {metadata.get(key)!r}, expected {value!r}")
    print(f"checkpoint: {len(checkpoint)} tensors, {len(metadata)} metadata keys read")

    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
