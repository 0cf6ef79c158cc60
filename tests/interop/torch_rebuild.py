#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""The PyTorch rebuild of docs/checkpoints.md: mpx trains three models in bf16 and saves checkpoints
(safetensors_interop_tool torch): the Fashion-MNIST MLP, the same with LayerNorms, a char-GPT
(embeddings, positions, dropout, pre-LN blocks of causal self-attention and a GELU MLP, final
LayerNorm, head) and a small ResNet (convolutions, BatchNorm with its running statistics, a block
with a projection shortcut, max and global pooling, evaluated in eval mode). examples/rebuild_in_torch.py rebuilds each in PyTorch from the checkpoint alone,
and torch's logits must equal the logits of mpx's fp32 model loaded with load_weights, within 1e-5
relative. So that a rebuild that slices the heads out of the qkv projection otherwise than mpx is
seen to fail, the char-GPT's checkpoint is also rebuilt with its description saying 2 heads instead
of 4 (the same tensors, other heads): the example must reject that one.

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
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file
except Exception as error:  # an ImportError, or a broken install failing to load its libraries
    print(f"SKIP: PyTorch, numpy or safetensors cannot be imported by {sys.executable} ({error}); "
          "install them into build/tools/python (pip install torch numpy safetensors) to run this test")
    sys.exit(77)


def main():
    tool, scratch, script = sys.argv[1], sys.argv[2], sys.argv[3]
    subprocess.run([tool, "torch", scratch], check=True)
    failures = []
    for name in ("mlp3", "mlp3_layer_norm", "char_gpt", "resnet", "unet"):
        checkpoint = os.path.join(scratch, f"{name}.safetensors")
        probe = os.path.join(scratch, f"{name}_probe.safetensors")
        result = subprocess.run([sys.executable, script, checkpoint, probe], capture_output=True, text=True)
        print(f"--- {name}\n{result.stdout}{result.stderr}", end="")
        if result.returncode != 0:
            failures.append(f"{name}: {os.path.basename(script)} exited with {result.returncode}")
    # The control: 2 heads of 16 features where mpx computed 4 heads of 8 must not pass.
    checkpoint = os.path.join(scratch, "char_gpt.safetensors")
    with safe_open(checkpoint, "pt") as f:
        metadata = f.metadata()
    description = metadata["model"].replace('"num_heads":4', '"num_heads":2')
    if description == metadata["model"]:
        failures.append("char_gpt: no \"num_heads\":4 in the description to change")
    wrong = os.path.join(scratch, "char_gpt_2_heads.safetensors")
    save_file(load_file(checkpoint), wrong, metadata={**metadata, "model": description})
    probe = os.path.join(scratch, "char_gpt_probe.safetensors")
    result = subprocess.run([sys.executable, script, wrong, probe], capture_output=True, text=True)
    last_line = result.stdout.splitlines()[-1] if result.stdout else ""
    print(f"--- char_gpt read as 2 heads (must fail)\n{last_line}\n{result.stderr}", end="")
    if result.returncode != 1:
        failures.append(f"char_gpt read as 2 heads: {os.path.basename(script)} exited with "
                        f"{result.returncode}, expected 1 (logits that differ)")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
