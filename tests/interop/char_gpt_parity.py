#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""The char-GPT in mpx and in PyTorch, step for step: char_gpt_parity_tool trains mpx's model
(mpx/experiment/char_gpt.hpp, fp32, 2 blocks) 50 AdamW steps and writes its initial weights, every
batch and every loss; bench/peers/torch_char_gpt.py builds the same model in PyTorch, loads those
weights by name, takes the same batches with torch.optim.AdamW (same settings) and must give every
step's loss within 1e-4 relative of mpx's.

usage: char_gpt_parity.py <char_gpt_parity_tool> <scratch directory> <bench/peers directory>
Exits 77 (CTest SKIP) when torch or safetensors cannot be imported.
"""
import json
import os
import subprocess
import sys

try:
    import numpy  # noqa: F401  (safetensors' torch loader needs it)
    import torch
    from safetensors.torch import load_file
except Exception as error:  # an ImportError, or a broken install failing to load its libraries
    print(f"SKIP: PyTorch, numpy or safetensors cannot be imported by {sys.executable} ({error}); "
          "scripts/test.sh installs them into build/tools/python (MPX_INSTALL_TORCH=1 scripts/install-deps.sh)")
    sys.exit(77)

TOLERANCE = 1e-4


def main():
    tool, scratch, peers = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.path.insert(0, peers)
    import torch_char_gpt  # noqa: PLC0415 - found through the peers directory given on the command line

    subprocess.run([tool, scratch, "50"], check=True)
    with open(os.path.join(scratch, "run.json")) as f:
        run = json.load(f)
    torch.manual_seed(0)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model = torch_char_gpt.char_gpt(run["vocabulary"], run["context"], run["width"], run["heads"], run["blocks"])
    torch_char_gpt.load_mpx_weights(model, load_file(os.path.join(scratch, "initial.safetensors")))
    optimizer = torch.optim.AdamW(model.parameters(), lr=run["lr"], betas=tuple(run["betas"]), eps=run["eps"],
                                  weight_decay=run["weight_decay"])
    shape = (run["batch"], run["context"])
    worst = 0.0
    failures = 0
    for step, record in enumerate(run["steps"]):
        inputs = torch.tensor(record["inputs"], dtype=torch.long).view(shape)
        targets = torch.tensor(record["targets"], dtype=torch.long).view(shape)
        optimizer.zero_grad()
        logits = model(inputs)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        loss.backward()
        optimizer.step()
        relative = abs(loss.item() - record["loss"]) / abs(record["loss"])
        worst = max(worst, relative)
        marker = ""
        if relative > TOLERANCE:
            failures += 1
            marker = "  <-- beyond 1e-4"
        print(f"step {step + 1:3d}  mpx {record['loss']:.9f}  torch {loss.item():.9f}  relative {relative:.2e}{marker}")
    print(f"{len(run['steps'])} steps, largest relative difference {worst:.2e} (tolerance {TOLERANCE:g})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
