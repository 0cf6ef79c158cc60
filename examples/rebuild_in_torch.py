# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Rebuilds an mpx model in PyTorch from its checkpoint alone and checks it against mpx's fp32 logits.
import json, sys, torch
from safetensors import safe_open
from safetensors.torch import load_file

with safe_open(sys.argv[1], "pt") as f:  # metadata "model": what to build, layer by layer
    layers = json.loads(f.metadata()["model"])["layers"]
make = {"Linear": lambda d: torch.nn.Linear(d["in_features"], d["out_features"], bias=d["bias"]),
        "LayerNorm": lambda d: torch.nn.LayerNorm(d["normalized_shape"], eps=d["eps"], bias=d["bias"])}
activation = {"None": [], "ReLU": [torch.nn.ReLU()], "GELU": [torch.nn.GELU(approximate="tanh")]}
tensors, modules = load_file(sys.argv[1]), []
for i, d in enumerate(layers):  # "layers.<i>.weight" is [out, in], as torch lays it out
    modules.append(make[d["kind"]](d))
    modules[-1].load_state_dict({k.split(".")[-1]: v for k, v in tensors.items() if k.startswith(f"layers.{i}.")})
    modules += activation[d.get("activation", "None")]
model = torch.nn.Sequential(*modules)
probe = load_file(sys.argv[2])  # a few inputs and the logits mpx computed for them in fp32
error = ((model(probe["inputs"]) - probe["logits"]).abs().max() / probe["logits"].abs().max()).item()
print(f"{model}\nmax |torch - mpx| / max |mpx| = {error:.2e}")
sys.exit(0 if error <= 1e-5 else 1)
