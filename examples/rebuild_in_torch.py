# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Rebuilds an mpx model in PyTorch from its checkpoint alone and checks it against mpx's fp32 logits.
import json, sys, torch
from safetensors import safe_open
from safetensors.torch import load_file


class Sequential(torch.nn.Module):  # parameters "layers.<i>.*", as mpx names them
    def __init__(self, d):
        super().__init__()
        self.layers = torch.nn.ModuleList(build(layer) for layer in d["layers"])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Residual(torch.nn.Module):  # x + block(x), parameters "block.*"
    def __init__(self, d):
        super().__init__()
        self.block = build(d["block"][0])

    def forward(self, x):
        return x + self.block(x)


class Linear(torch.nn.Linear):  # weight [out, in] as torch's, then the activation mpx fuses into it
    def __init__(self, d):
        super().__init__(d["in_features"], d["out_features"], bias=d["bias"])
        self.activation = {"None": torch.nn.Identity(), "ReLU": torch.nn.ReLU(),
                           "GELU": torch.nn.GELU(approximate="tanh")}[d["activation"]]

    def forward(self, x):
        return self.activation(super().forward(x))


class PositionalEmbedding(torch.nn.Embedding):  # x + weight[:T], GPT-2's wpe
    def __init__(self, d):
        super().__init__(d["max_positions"], d["embedding_dim"])

    def forward(self, x):
        return x + self.weight[: x.shape[1]]


class CausalSelfAttention(torch.nn.Module):  # nanoGPT's: softmax(q k^T / sqrt(d) + causal mask) v per head
    def __init__(self, d):
        super().__init__()
        self.heads, c = d["num_heads"], d["embed_dim"]
        self.qkv, self.proj = torch.nn.Linear(c, 3 * c, bias=d["bias"]), torch.nn.Linear(c, c, bias=d["bias"])

    def forward(self, x):  # qkv.weight's rows are [Q | K | V]; head h: features h*d..(h+1)*d-1 of each
        b, t, c = x.shape
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in self.qkv(x).split(c, 2))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


make = {"Sequential": Sequential, "Residual": Residual, "Linear": Linear,
        "PositionalEmbedding": PositionalEmbedding, "CausalSelfAttention": CausalSelfAttention,
        "Embedding": lambda d: torch.nn.Embedding(d["num_embeddings"], d["embedding_dim"]),
        "LayerNorm": lambda d: torch.nn.LayerNorm(d["normalized_shape"], eps=d["eps"], bias=d["bias"]),
        "Dropout": lambda d: torch.nn.Dropout(d["p"]), "ReLU": lambda d: torch.nn.ReLU(),
        "GELU": lambda d: torch.nn.GELU(approximate="tanh"), "Cast": lambda d: torch.nn.Identity()}


def build(d):  # one entry of the metadata "model", and the layers inside it
    return make[d["kind"]](d)


with safe_open(sys.argv[1], "pt") as f:  # metadata "model": what to build, layer by layer
    model = build(json.loads(f.metadata()["model"])).eval()  # eval(): dropout off
model.load_state_dict({k: v for k, v in load_file(sys.argv[1]).items() if not k.startswith("optimizer.")})
probe = load_file(sys.argv[2])  # a few inputs and the logits mpx computed for them in fp32
with torch.no_grad():
    error = ((model(probe["inputs"]) - probe["logits"]).abs().max() / probe["logits"].abs().max()).item()
print(f"{model}\nmax |torch - mpx| / max |mpx| = {error:.2e}")
sys.exit(0 if error <= 1e-5 else 1)
