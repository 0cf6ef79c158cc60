#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""mpx's convolutional layers against PyTorch (docs/cnn.md).

tests/tools/cnn_layers_tool runs each layer (Conv2d, BatchNorm2d, GroupNorm, the pools, SiLU, Upsample) forward
and backward in fp32, bf16 and fp16 and writes
its inputs, parameters and results (channels-last, widened to fp32) with the layer's description.
This script maps them to PyTorch's layouts (NHWC -> NCHW and KRSC -> OIHW: permute(0, 3, 1, 2)),
rebuilds the layer with torch.nn.functional from the description alone, and checks, per tensor (a
convolution; the norms and the parameter-free layers as `check_batch_norm`, `check_group_norm` and
`check_pooling` say):

  exact:    torch in fp64 on the very operands mpx read (the compute type's values): every element
            of y, dx, dweight and dbias within the GEMM's bound, (k + 16) 2^-24 sum|terms| for the
            fp32 sums plus half an ulp of the result's type (one rounding), k the sum's length;
  autocast: for fp16/bf16, torch's own autocast (CPU) from the fp32 master weights, what a PyTorch
            AMP user gets: reported, for y and dx, as the share of elements equal to mpx's, the
            largest difference in ulps of the result type, and autocast's own error against the
            same bound (PyTorch 2.15's CPU fp16 convolution backward exceeds it: mpx does not).

usage: cnn_layers_vs_torch.py <cnn_layers_tool> <scratch directory>
Exits 77 (CTest SKIP) when torch, numpy or safetensors cannot be imported.
"""
import glob
import json
import os
import subprocess
import sys

try:
    import numpy  # noqa: F401  (safetensors' torch loader needs it)
    import torch
    import torch.nn.functional as F
    from safetensors import safe_open
    from safetensors.torch import load_file
except Exception as error:  # an ImportError, or a broken install failing to load its libraries
    print(f"SKIP: PyTorch, numpy or safetensors cannot be imported by {sys.executable} ({error}); "
          "install them into build/tools/python (pip install torch numpy safetensors) to run this test")
    sys.exit(77)

ULP = {"fp32": 2.0 ** -23, "bf16_mixed": 2.0 ** -7, "fp16_mixed": 2.0 ** -10}
DTYPE = {"bf16_mixed": torch.bfloat16, "fp16_mixed": torch.float16}


def nchw(t):
    return t.permute(0, 3, 1, 2)


def nhwc(t):
    return t.permute(0, 2, 3, 1)


def conv_arguments(d):
    return dict(stride=(d["stride_h"], d["stride_w"]), padding=(d["padding_h"], d["padding_w"]),
                dilation=(d["dilation_h"], d["dilation_w"]), groups=d["groups"])


def conv2d_exact(t, d):
    """y, dx, dweight, dbias in fp64 from the operands mpx read, and the sums' sizes (sum |terms|)."""
    args = conv_arguments(d)
    x = nchw(t["x"]).double().requires_grad_()
    w = nchw(t["weight"]).double().requires_grad_()
    b = t["bias"].double().requires_grad_() if d["bias"] else None
    y = F.conv2d(x, w, b, **args)
    dy = nchw(t["dy"]).double()
    y.backward(dy)
    with torch.no_grad():
        ax, aw, ady = x.abs(), w.abs(), dy.abs()
        y_size = F.conv2d(ax, aw, b.abs() if b is not None else None, **args)
        dx_size = torch.nn.grad.conv2d_input(ax.shape, aw, ady, **args)
        dw_size = torch.nn.grad.conv2d_weight(ax, aw.shape, ady, **args)
    result = {"y": (nhwc(y.detach()), nhwc(y_size)), "dx": (nhwc(x.grad), nhwc(dx_size)),
              "dweight": (nhwc(w.grad), nhwc(dw_size))}
    if b is not None:
        result["dbias"] = (b.grad, ady.sum(dim=(0, 2, 3)))
    # The length of each tensor's sums, for the bound: a patch (+1 for the bias), a gradient's taps
    # times the group's output channels, every output position for the weight and bias.
    taps = d["kernel_size_h"] * d["kernel_size_w"]
    lengths = {"y": taps * d["in_channels"] // d["groups"] + 1,
               "dx": taps * d["out_channels"] // d["groups"],
               "dweight": dy.shape[0] * dy.shape[2] * dy.shape[3], "dbias": dy.shape[0] * dy.shape[2] * dy.shape[3]}
    return result, lengths


def window_arguments(d):
    return dict(kernel_size=(d["kernel_size_h"], d["kernel_size_w"]), stride=(d["stride_h"], d["stride_w"]),
                padding=(d["padding_h"], d["padding_w"]))


def pooling(t, d, dtype):
    """y and dx of a pooling layer in torch, in `dtype`, from mpx's x and dy."""
    x = nchw(t["x"]).to(dtype).requires_grad_()
    if d["kind"] == "MaxPool2d":
        y = F.max_pool2d(x, **window_arguments(d))
    elif d["kind"] == "AvgPool2d":
        y = F.avg_pool2d(x, **window_arguments(d), count_include_pad=d["count_include_pad"])
    elif d["kind"] == "GlobalAvgPool2d":  # [N, C, H, W] -> [N, C]
        y = x.mean(dim=(2, 3))
    elif d["kind"] == "SiLU":
        y = F.silu(x)
    else:  # Upsample
        y = F.interpolate(x, scale_factor=(d["scale_factor_h"], d["scale_factor_w"]), mode="nearest")
    dy = t["dy"].to(dtype)
    y.backward(nchw(dy) if y.dim() == 4 else dy)
    return (nhwc(y.detach()) if y.dim() == 4 else y.detach()), nhwc(x.grad)


def check_pooling(name, t, d, precision):
    """Max pooling is exact: bit for bit with torch in fp64 on the same values, forward and backward
    (its backward only moves and sums dy). Averages: within one rounding of the fp64 result plus the
    fp32 sum's error; and against torch in the layer's own type, reported."""
    failures = []
    y64, dx64 = pooling(t, d, torch.float64)
    taps = {"GlobalAvgPool2d": t["x"].shape[1] * t["x"].shape[2], "SiLU": 1,
            "Upsample": d.get("scale_factor_h", 1) * d.get("scale_factor_w", 1)}.get(
                d["kind"], d.get("kernel_size_h", 1) * d.get("kernel_size_w", 1))
    for key, reference in (("y", y64), ("dx", dx64)):
        if d["kind"] == "MaxPool2d" and key == "y":
            worst = (t[key].double() - reference).abs().max().item()
            print(f"{name:48s} {key:8s} exact: largest difference {worst}")
            if worst != 0:
                failures.append(f"{name} {key}: differs from torch's max")
            continue
        bound = (taps + 16) * 2.0 ** -24 * reference.abs().clamp_min(1.0) + ULP[precision] / 2 * reference.abs()
        worst = ((t[key].double() - reference).abs() / bound).max().item()
        print(f"{name:48s} {key:8s} exact: worst error / bound {worst:.3f}")
        if worst > 1.0:
            failures.append(f"{name} {key}: {worst:.2f} x the bound from torch in fp64")
    if precision in DTYPE:
        y_own, dx_own = pooling(t, d, DTYPE[precision])
        for key, theirs in (("y", y_own.float()), ("dx", dx_own.float())):
            equal = (t[key] == theirs).double().mean().item()
            print(f"{name:48s} {key:8s} torch in {precision}: {100 * equal:.1f}% equal to mpx")
    return failures


def check_group_norm(name, t, d, precision):
    """One forward and backward against F.group_norm in fp64 on mpx's values, and against torch
    given the compute-type input with fp32 gamma and beta, reported."""
    failures = []
    count = t["x"].numel() // (t["x"].shape[0] * d["num_groups"])

    def run(dtype):
        x = nchw(t["x"]).to(dtype).requires_grad_()
        w = t["weight"].to(torch.float64 if dtype == torch.float64 else torch.float32).requires_grad_()
        b = t["bias"].to(w.dtype).requires_grad_()
        y = F.group_norm(x, d["num_groups"], w, b, eps=d["eps"])
        y.backward(nchw(t["dy"]).to(y.dtype))
        return {"y": nhwc(y.detach()), "dx": nhwc(x.grad), "dweight": w.grad, "dbias": b.grad}

    for key, reference in run(torch.float64).items():
        rounding = ULP[precision] / 2 if key in ("y", "dx") else 0.0
        bound = (count + 16) * 2.0 ** -24 * (reference.abs() + 1) * 8 + rounding * reference.abs()
        worst = ((t[key].double() - reference).abs() / bound).max().item()
        print(f"{name:48s} {key:12s} exact: worst error / bound {worst:.3f}")
        if worst > 1.0:
            failures.append(f"{name} {key}: {worst:.2f} x the bound from torch in fp64")
    if precision in DTYPE:
        try:
            theirs = run(DTYPE[precision])
            for key in ("y", "dx"):
                equal = (t[key] == theirs[key].float()).double().mean().item()
                print(f"{name:48s} {key:12s} torch in {precision}: {100 * equal:.1f}% equal to mpx")
        except RuntimeError as error:  # a mixed-type group_norm torch does not offer on the CPU
            print(f"{name:48s} torch in {precision}: not run ({str(error).splitlines()[0]})")
    return failures


def check_batch_norm(name, t, d, precision):
    """One training step and an evaluation forward against F.batch_norm in fp64 on mpx's values
    (statistics and every result within fp32 arithmetic's bound, plus one rounding of y and dx into
    the compute type), and against torch given the compute-type input with fp32 parameters (what a
    PyTorch AMP model runs), reported."""
    failures = []
    eps, momentum = d["eps"], d["momentum"]
    rows = t["x"].numel() // t["x"].shape[-1]

    def run(dtype, x, x_eval):
        xt = nchw(x).to(dtype).requires_grad_()
        w = t["weight"].to(torch.float64 if dtype == torch.float64 else torch.float32).requires_grad_()
        b = t["bias"].to(w.dtype).requires_grad_()
        rm, rv = torch.zeros_like(w.detach()), torch.ones_like(w.detach())
        y = F.batch_norm(xt, rm, rv, w, b, training=True, momentum=momentum, eps=eps)
        y.backward(nchw(t["dy"]).to(y.dtype))
        with torch.no_grad():
            y_eval = F.batch_norm(nchw(x_eval).to(dtype), rm, rv, w, b, training=False, eps=eps)
        return {"y": nhwc(y.detach()), "dx": nhwc(xt.grad), "dweight": w.grad, "dbias": b.grad,
                "running_mean": rm, "running_var": rv, "y_eval": nhwc(y_eval)}

    exact = run(torch.float64, t["x"], t["x_eval"])
    for key, reference in exact.items():
        rounding = ULP[precision] / 2 if key in ("y", "dx", "y_eval") else 0.0
        # fp32 sums over `rows` terms of size about |reference| + 1 (normalised values, dy in [-1, 1]).
        bound = (rows + 16) * 2.0 ** -24 * (reference.abs() + 1) * 4 + rounding * reference.abs()
        worst = ((t[key].double() - reference).abs() / bound).max().item()
        print(f"{name:48s} {key:12s} exact: worst error / bound {worst:.3f}")
        if worst > 1.0:
            failures.append(f"{name} {key}: {worst:.2f} x the bound from torch in fp64")
    if precision in DTYPE:
        theirs = run(DTYPE[precision], t["x"], t["x_eval"])
        for key in ("y", "dx", "y_eval"):
            equal = (t[key] == theirs[key].float()).double().mean().item()
            print(f"{name:48s} {key:12s} torch in {precision}: {100 * equal:.1f}% equal to mpx")
    return failures


def conv2d_autocast(t, d, precision):
    """torch's autocast on the CPU from fp32 master copies: what a PyTorch AMP user gets."""
    args = conv_arguments(d)
    x = nchw(t["x"]).float().requires_grad_()
    w = nchw(t["weight"]).float().requires_grad_()
    b = t["bias"].float().requires_grad_() if d["bias"] else None
    with torch.autocast("cpu", dtype=DTYPE[precision]):
        y = F.conv2d(x, w, b, **args)
    y.backward(nchw(t["dy"]).to(y.dtype))
    out = {"y": nhwc(y.detach().float()), "dx": nhwc(x.grad), "dweight": nhwc(w.grad)}
    if b is not None:
        out["dbias"] = b.grad
    return out


def check_file(path):
    t = load_file(path)
    with safe_open(path, "pt") as f:
        metadata = f.metadata()
    precision = metadata["precision"]
    d = json.loads(metadata["model"])["layers"][0]
    name = os.path.basename(path)
    if d["kind"] == "BatchNorm2d":
        return check_batch_norm(name, t, d, precision)
    if d["kind"] == "GroupNorm":
        return check_group_norm(name, t, d, precision)
    if d["kind"] != "Conv2d":
        return check_pooling(name, t, d, precision)
    failures = []
    exact, lengths = conv2d_exact(t, d)
    for key, (reference, size) in exact.items():
        result_ulp = ULP[precision] if key in ("y", "dx") else 2.0 ** -23  # gradients of weights: fp32
        bound = (lengths[key] + 16) * 2.0 ** -24 * size + result_ulp / 2 * reference.abs() + 1e-30
        error = (t[key].double() - reference).abs()
        worst = (error / bound).max().item()
        print(f"{name:48s} {key:8s} exact: worst error / bound {worst:.3f}")
        if worst > 1.0:
            failures.append(f"{name} {key}: {worst:.2f} x the bound from torch in fp64")
    if precision in DTYPE:
        amp = conv2d_autocast(t, d, precision)
        for key in ("y", "dx"):
            reference, size = exact[key]
            bound = (lengths[key] + 16) * 2.0 ** -24 * size + ULP[precision] / 2 * reference.abs() + 1e-30
            own = ((amp[key].double() - reference).abs() / bound).max().item()
            equal = (t[key] == amp[key]).double().mean().item()
            ulps = ((t[key] - amp[key]).abs() / (amp[key].abs() * ULP[precision]).clamp_min(2.0 ** -24)).max().item()
            print(f"{name:48s} {key:8s} autocast: {100 * equal:.1f}% equal to mpx, largest difference "
                  f"{ulps:.2f} ulp; autocast's own worst error / bound {own:.3f}")
    return failures


def main():
    tool, scratch = sys.argv[1], sys.argv[2]
    subprocess.run([tool, scratch], check=True)
    files = sorted(glob.glob(os.path.join(scratch, "*.safetensors")))
    if not files:
        print(f"FAIL: {tool} wrote no files into {scratch}")
        return 1
    failures = [f for path in files for f in check_file(path)]
    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(files)} layer runs checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
