#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""The PyTorch rebuild of docs/checkpoints.md: mpx trains two models in bf16 and saves checkpoints
(safetensors_interop_tool torch), examples/rebuild_in_torch.py rebuilds each in PyTorch from the
checkpoint alone, and torch's logits must equal the logits of mpx's fp32 model loaded with
load_weights, within 1e-5 relative.

usage: torch_rebuild.py <safetensors_interop_tool> <scratch directory> <rebuild_in_torch.py>
Exits 77 (CTest SKIP) when torch, numpy or safetensors cannot be imported.
"""
import os
import subprocess
import sys

try:
    import numpy  # noqa: F401  (safetensors' torch loader needs it)
    import safetensors  # noqa: F401
    import torch  # noqa: F401
except Exception as error:  # an ImportError, or a broken install failing to load its libraries
    print(f"SKIP: PyTorch, numpy or safetensors cannot be imported by {sys.executable} ({error}); "
          "install them into build/tools/python (pip install torch numpy safetensors) to run this test")
    sys.exit(77)


def main():
    tool, scratch, script = sys.argv[1], sys.argv[2], sys.argv[3]
    subprocess.run([tool, "torch", scratch], check=True)
    failures = []
    for name in ("mlp3", "mlp3_layer_norm"):
        checkpoint = os.path.join(scratch, f"{name}.safetensors")
        probe = os.path.join(scratch, f"{name}_probe.safetensors")
        result = subprocess.run([sys.executable, script, checkpoint, probe], capture_output=True, text=True)
        print(f"--- {name}\n{result.stdout}{result.stderr}", end="")
        if result.returncode != 0:
            failures.append(f"{name}: {os.path.basename(script)} exited with {result.returncode}")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
