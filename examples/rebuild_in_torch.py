# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Rebuilds an mpx model in PyTorch from its checkpoint alone and checks it against mpx's fp32 logits.
import json, math, sys, torch
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


class Residual(torch.nn.Module):  # shortcut(x) + block(x), "block.*" and "shortcut.*" (x itself without one)
    def __init__(self, d):
        super().__init__()
        self.block = build(d["block"][0])
        self.shortcut = build(d["shortcut"][0]) if "shortcut" in d else torch.nn.Identity()

    def forward(self, x):
        return self.shortcut(x) + self.block(x)


class Concat(torch.nn.Module):  # a UNet's skip: [x, block(x)] along the last dimension (channels-last), "block.*"
    def __init__(self, d):
        super().__init__()
        self.block = build(d["block"][0])

    def forward(self, x):
        return torch.cat([x, self.block(x)], dim=-1)


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


class SelfAttention(torch.nn.Module):  # softmax(q k^T / sqrt(d) [+ causal mask]) v per head, nanoGPT's layout
    def __init__(self, d, causal=False):
        super().__init__()
        self.heads, self.causal, c = d["num_heads"], causal, d["embed_dim"]
        self.qkv, self.proj = torch.nn.Linear(c, 3 * c, bias=d["bias"]), torch.nn.Linear(c, c, bias=d["bias"])

    def forward(self, x):  # x [b, ..., c]: an image [N, H, W, C] is the sequence of its H*W pixels
        shape, c = x.shape, x.shape[-1]
        x = x.reshape(shape[0], -1, c)
        b, t, _ = x.shape  # qkv.weight's rows are [Q | K | V]; head h: features h*d..(h+1)*d-1 of each
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in self.qkv(x).split(c, 2))
        return self.proj(self.attend(q, k, v).transpose(1, 2).reshape(b, t, c)).reshape(shape)

    def attend(self, q, k, v):  # [b, heads, t, d] each
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.causal)


class PaddedSelfAttention(SelfAttention):  # keys t >= lengths[b] masked: torch's key_padding_mask
    lengths = None  # [b], from PaddedSequences

    def attend(self, q, k, v):  # a sequence of length 0 gives zeros, as mpx's (older torch's SDPA gave NaN)
        real = torch.arange(k.shape[2]) < self.lengths[:, None]  # [b, t]: the keys each sequence attends to
        empty = (self.lengths == 0)[:, None, None, None]
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=real[:, None, None, :] | empty)
        return y.masked_fill(empty, 0.0)


class GatherTokens(torch.nn.Module):  # [N, T, C] -> [M, C]: rows n*T + t of the [N*T, C] tokens, in the given order
    rows = None  # [M], from PaddedSequences

    def forward(self, x):
        return x.reshape(-1, x.shape[-1])[self.rows]


class FirstToken(torch.nn.Module):  # [N, T, C] -> [N, C]: token 0, BERT's [CLS]
    def forward(self, x):
        return x[:, 0]


class TokenTypeEmbedding(torch.nn.Embedding):  # x + weight[token_types], BERT's segments; type 0 when none given
    token_types = None  # [b, t], from PaddedSequences

    def __init__(self, d):
        super().__init__(d["num_embeddings"], d["embedding_dim"])

    def forward(self, x):  # x [b, t, c]
        types = self.token_types if self.token_types is not None else torch.zeros(x.shape[:2], dtype=torch.long)
        return x + super().forward(types)


class PaddedSequences(torch.nn.Module):  # body(ids) over padded sequences; mpx describes it with its body's fields
    def __init__(self, body):  # the body's children become the wrapper's: parameters keep the body's names
        super().__init__()
        for name, child in body.named_children():
            self.add_module(name, child)
        self.body = [body]  # not a child: no "body." prefix

    def forward(self, ids, lengths, rows=None, token_types=None):  # [N, T], [N], [M] (GatherTokens'), [N, T]
        for module in self.modules():  # the batch's lengths, rows and types to the layers that read them
            if isinstance(module, PaddedSelfAttention):
                module.lengths = lengths
            elif isinstance(module, GatherTokens):
                module.rows = rows
            elif isinstance(module, TokenTypeEmbedding):
                module.token_types = token_types
        return self.body[0](ids)


def timestep_features(timesteps, dim, max_period):  # [cos(t f_i) | sin(t f_i)], f_i = max_period^(-i / (dim / 2))
    half = dim // 2  # in double, rounded once to fp32, as mpx computes them
    frequency = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float64) / half)
    angle = timesteps.to(torch.float64)[:, None] * frequency[None, :]
    return torch.cat([angle.cos(), angle.sin()], dim=1).float()


class TimeConditioned(torch.nn.Module):  # body(x), its AddTimeEmbedding layers reading time(features(t)); "time.*", "body.*"
    def __init__(self, d):
        super().__init__()
        features, time, body = d["layers"]
        self.dim, self.max_period = features["dim"], features["max_period"]
        self.time, self.body = build(time), build(body)
        self.embedding = [None]  # the time embedding of the current forward, shared with the body's readers
        for module in self.body.modules():
            if isinstance(module, AddTimeEmbedding):
                module.embedding = self.embedding

    def forward(self, x, timesteps):  # x [N, ...], timesteps [N]
        self.embedding[0] = self.time(timestep_features(timesteps, self.dim, self.max_period))
        return self.body(x)


class AddTimeEmbedding(torch.nn.Module):  # x + proj(embedding) per sample, the same at every pixel; "proj.*"
    def __init__(self, d):
        super().__init__()
        self.proj, self.embedding = torch.nn.Linear(d["embedding_dim"], d["channels"]), [None]

    def forward(self, x):  # x [N, ..., C] channels-last
        shift = self.proj(self.embedding[0])
        return x + shift.view(shift.shape[0], *([1] * (x.dim() - 2)), shift.shape[1])


# Images stay channels-last [N, H, W, C] between layers, as in mpx; each image layer runs torch's NCHW op.
def channels_last(module):  # a torch module of NCHW images on mpx's NHWC ones; parameter names unchanged
    forward = module.forward
    module.forward = lambda x: forward(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
    return module


class Conv2d(torch.nn.Conv2d):  # mpx stores the weight [O, KH, KW, C / groups]; torch's OIHW is permute(0, 3, 1, 2)
    def __init__(self, d):
        super().__init__(d["in_channels"], d["out_channels"], (d["kernel_size_h"], d["kernel_size_w"]),
                         (d["stride_h"], d["stride_w"]), (d["padding_h"], d["padding_w"]),
                         (d["dilation_h"], d["dilation_w"]), d["groups"], d["bias"])
        self.weight = torch.nn.Parameter(self.weight.detach().permute(0, 2, 3, 1).contiguous())

    def forward(self, x):
        y = self._conv_forward(x.permute(0, 3, 1, 2), self.weight.permute(0, 3, 1, 2), self.bias)
        return y.permute(0, 2, 3, 1)


class GlobalAvgPool2d(torch.nn.Module):  # [N, H, W, C] -> [N, C]: the mean over the pixels
    def forward(self, x):
        return x.mean(dim=(1, 2))


def window(d):
    return dict(kernel_size=(d["kernel_size_h"], d["kernel_size_w"]), stride=(d["stride_h"], d["stride_w"]),
                padding=(d["padding_h"], d["padding_w"]))


make = {"Sequential": Sequential, "Residual": Residual, "Concat": Concat, "Linear": Linear, "Conv2d": Conv2d,
        "TimeConditioned": TimeConditioned, "AddTimeEmbedding": AddTimeEmbedding,
        "BatchNorm2d": lambda d: channels_last(torch.nn.BatchNorm2d(d["num_features"], d["eps"], d["momentum"])),
        "GroupNorm": lambda d: channels_last(torch.nn.GroupNorm(d["num_groups"], d["num_channels"], d["eps"])),
        "MaxPool2d": lambda d: channels_last(torch.nn.MaxPool2d(**window(d))),
        "AvgPool2d": lambda d: channels_last(torch.nn.AvgPool2d(**window(d), count_include_pad=d["count_include_pad"])),
        "Upsample": lambda d: channels_last(torch.nn.Upsample(scale_factor=(d["scale_factor_h"], d["scale_factor_w"]))),
        "GlobalAvgPool2d": lambda d: GlobalAvgPool2d(),
        "Flatten": lambda d: torch.nn.Flatten(), "SiLU": lambda d: torch.nn.SiLU(),
        "PositionalEmbedding": PositionalEmbedding, "SelfAttention": SelfAttention,
        "CausalSelfAttention": lambda d: SelfAttention(d, causal=True), "PaddedSelfAttention": PaddedSelfAttention,
        "GatherTokens": lambda d: GatherTokens(), "FirstToken": lambda d: FirstToken(),
        "TokenTypeEmbedding": TokenTypeEmbedding, "PaddedSequences": lambda d: PaddedSequences(Sequential(d)),
        "Embedding": lambda d: torch.nn.Embedding(d["num_embeddings"], d["embedding_dim"]),
        "LayerNorm": lambda d: torch.nn.LayerNorm(d["normalized_shape"], eps=d["eps"], bias=d["bias"]),
        "Dropout": lambda d: torch.nn.Dropout(d["p"]), "ReLU": lambda d: torch.nn.ReLU(),
        "GELU": lambda d: torch.nn.GELU(approximate="tanh"), "Cast": lambda d: torch.nn.Identity()}


def build(d):  # one entry of the metadata "model", and the layers inside it
    return make[d["kind"]](d)


if __name__ == "__main__":  # importable: tests build models with `build` too
    with safe_open(sys.argv[1], "pt") as f:  # metadata "model": what to build, layer by layer
        model = build(json.loads(f.metadata()["model"])).eval()  # eval(): dropout off
    state = {k: v for k, v in load_file(sys.argv[1]).items() if not k.startswith(("optimizer.", "ema."))}
    missing, unexpected = model.load_state_dict(state, strict=False)  # mpx keeps no num_batches_tracked
    assert not unexpected and all(k.endswith("num_batches_tracked") for k in missing), (missing, unexpected)
    probe = load_file(sys.argv[2])  # a few inputs and the logits mpx computed for them in fp32
    with torch.no_grad():
        error = ((model(probe["inputs"]) - probe["logits"]).abs().max() / probe["logits"].abs().max()).item()
    print(f"{model}\nmax |torch - mpx| / max |mpx| = {error:.2e}")
    sys.exit(0 if error <= 1e-5 else 1)
