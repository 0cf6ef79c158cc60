#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""mpx's block-scaled quantizers against the references, bit for bit, on a matrix of random blocks
spanning fp32's range and every edge case (zeros, fp32 subnormals, blocks at the element format's
largest value and just past it, tiny amaxes, NaN and infinity):

  MX, E8M0Rounding::Floor and RCeil   torchao's to_mx (ScaleCalculationMode.FLOOR / RCEIL), every
                                      element format: scales everywhere; element codes everywhere but
                                      in blocks whose scale is NaN (their values are NaN whatever the
                                      codes) or code 0 (torchao divides those by 2^-126, not 2^-127)
  MX, E8M0Rounding::RoundUp           Transformer Engine's float_to_e8m0 and cast, transcribed below
  NVFP4 (1x16, 16x16)                 TE's encode formulas (core_nvfp4.cuh), transcribed below; and
                                      torchao's nvfp4_quantize, whose formulas round differently, as
                                      a count of the blocks where the two agree
  FP8 128-blocks (1x128, 128x128)     TE's compute_scale_from_amax and cast, transcribed below

The transcriptions use numpy float32 arithmetic (each operation rounded to nearest, as the GPU's)
and ml_dtypes for the element codes.

usage: block_scaling_vs_references.py <block_quantize_tool> <scratch directory>
Exits 77 (CTest SKIP) when numpy, ml_dtypes, torch or torchao cannot be imported.
"""
import os
import subprocess
import sys
import warnings

try:
    import ml_dtypes
    import numpy as np
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2
        from torchao.prototype.mx_formats.kernels import unpack_uint4
        from torchao.prototype.mx_formats.mx_tensor import to_mx
        from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
        import torchao
except Exception as error:  # noqa: BLE001 - torchao raises more than ImportError on a mismatched torch
    print(f"SKIP: Python packages for the block-scaling test are missing ({error}); "
          "scripts/install-deps.sh installs numpy, ml_dtypes, torch and torchao into build/tools/python")
    sys.exit(77)

ROWS, COLS = 256, 256
F32 = np.float32
ELEMENTS = {
    # name: (ml_dtypes type, torchao element dtype, largest value)
    "e4m3": (ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn, 448.0),
    "e5m2": (ml_dtypes.float8_e5m2, torch.float8_e5m2, 57344.0),
    "e2m3": (ml_dtypes.float6_e2m3fn, DTYPE_FP6_E2M3, 7.5),
    "e3m2": (ml_dtypes.float6_e3m2fn, DTYPE_FP6_E3M2, 28.0),
    "e2m1": (ml_dtypes.float4_e2m1fn, torch.float4_e2m1fn_x2, 6.0),
}


def matrix():
    """Rows of 32-element blocks, each block at its own magnitude, and rows of edge cases."""
    rng = np.random.default_rng(27)
    x = rng.standard_normal((ROWS, COLS)).astype(F32)
    per_block = np.exp2(rng.uniform(-140, 120, size=(ROWS, COLS // 32))).astype(F32)
    x *= np.repeat(per_block, 32, axis=1)
    x[0] = 0.0                                                       # all zeros
    x[1] = rng.uniform(-1, 1, COLS).astype(F32) * F32(2.0**-127)     # fp32 subnormals
    x[2, :32] = F32(448.0)                                           # amax at E4M3's largest
    x[2, 32:64] = F32(448.0 * 2.0**-20)
    x[2, 64:96] = np.nextafter(F32(448.0), F32(np.inf))              # just past it
    x[2, 96:128] = F32(6.0 * 2.0**40)                                # E2M1's largest, scaled
    x[2, 128:160] = np.nextafter(F32(6.0), F32(0))
    x[2, 160:192] = F32(2.0**-149)                                   # the smallest subnormal
    x[2, 192:224] = F32(np.finfo(F32).max)                           # fp32's largest
    x[2, 224:256] = F32(57344.0 * 3)
    x[3, 5] = np.nan                                                 # a NaN block
    x[3, 40] = np.inf                                                # an infinite block
    x[3, 70] = -np.inf
    x[4] *= F32(2.0**-126)                                           # tiny amaxes: scale code 0
    x[5, ::3] = 0.0
    return x


def read(scratch, name, dtype, shape):
    return np.fromfile(os.path.join(scratch, name), dtype=dtype).reshape(shape)


def blocks(a, rows, cols):
    """[R, C] -> [R/rows, C/cols, rows*cols]: each block's elements."""
    r, c = a.shape
    return a.reshape(r // rows, rows, c // cols, cols).transpose(0, 2, 1, 3).reshape(r // rows, c // cols, rows * cols)


def block_amax(x, rows, cols):
    """torch.amax's rule: NaN when any element is NaN."""
    b = np.abs(blocks(x, rows, cols))
    return np.where(np.isnan(b).any(axis=-1), F32(np.nan), np.nanmax(np.where(np.isnan(b), 0, b), axis=-1)).astype(F32)


def expand(per_block, rows, cols):
    return np.repeat(np.repeat(per_block, rows, axis=0), cols, axis=1)


def encode(values, dtype, largest):
    """RNE into `dtype`, saturating at +-largest; NaN stays NaN (FP6/FP4 NaN: compared apart)."""
    with np.errstate(invalid="ignore"):
        clamped = np.clip(values, -F32(largest), F32(largest))
    return clamped.astype(dtype).view(np.uint8)


def e8m0_round_up(v):
    """Transformer Engine's float_to_e8m0 (the software path of cvt.rp.satfinite.ue8m0x2.f32)."""
    bits = v.astype(F32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.int64)
    mantissa = bits & 0x7FFFFF
    up = (mantissa > 0) & (exponent != 0xFE) & ~((exponent == 0) & (mantissa <= 0x400000))
    code = exponent + up
    code = np.where(v == 0, 0, code)
    code = np.where(np.isinf(v), 0xFE, code)
    return np.where(np.isnan(v), 0xFF, code).astype(np.uint8)


def e8m0_multiplier(code):
    """2^(127 - code), exactly; NaN for 0xFF."""
    with np.errstate(over="ignore"):
        m = np.exp2(127.0 - code.astype(np.float64)).astype(F32)
    return np.where(code == 0xFF, F32(np.nan), m)


class Checks:
    def __init__(self):
        self.failures, self.lines = [], []

    def same(self, what, got, expected, mask=None, nan_dtype=None):
        ok = got == expected
        if nan_dtype is not None:
            ok |= np.isnan(got.view(nan_dtype).astype(F32)) & np.isnan(expected.view(nan_dtype).astype(F32))
        if mask is not None:
            ok |= ~mask
        bad = np.argwhere(~ok)
        compared = got.size if mask is None else int(mask.sum())
        if bad.size:
            self.failures.append(f"{what}: {len(bad)} of {compared} differ, e.g. " + ", ".join(
                f"{tuple(int(i) for i in idx)}: mpx {got[tuple(idx)]!r}, reference {expected[tuple(idx)]!r}"
                for idx in bad[:4]))
        else:
            self.lines.append(f"  {what}: {compared} identical")


def check_mx(tool_dir, x, checks):
    xt = torch.from_numpy(x)
    for element, (dtype, torchao_dtype, largest) in ELEMENTS.items():
        for rounding, mode in (("floor", ScaleCalculationMode.FLOOR), ("rceil", ScaleCalculationMode.RCEIL),
                               ("roundup", None)):
            block_nan = np.isnan(block_amax(x, 1, 32))
            name = f"mx_{element}_{rounding}"
            codes = read(tool_dir, f"{name}.codes.u8", np.uint8, (ROWS, COLS))
            scales = read(tool_dir, f"{name}.scales.u8", np.uint8, (ROWS, COLS // 32))
            if mode is not None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ref_scales, ref_data = to_mx(xt, torchao_dtype, 32, mode)
                ref_scales = ref_scales.view(torch.uint8).numpy().reshape(ROWS, COLS // 32)
                if element == "e2m1":
                    unpacked = unpack_uint4(ref_data.view(torch.uint8)).numpy()
                    ref_codes = unpacked.reshape(ROWS, COLS)
                else:
                    ref_codes = ref_data.view(torch.uint8).numpy().reshape(ROWS, COLS)
                source = f"torchao {torchao.__version__} to_mx {mode.value}"
            else:  # Transformer Engine's MXFP8 cast: amax * fp32(1 / max), rounded up
                amax = block_amax(x, 1, 32)
                ref_scales = e8m0_round_up(amax * F32(1.0 / largest))
                with np.errstate(invalid="ignore", over="ignore"):
                    ref_codes = encode(x * expand(e8m0_multiplier(ref_scales), 1, 32), dtype, largest)
                source = "Transformer Engine's float_to_e8m0 (transcribed)"
            if rounding == "rceil":
                # cuBLAS's rule, exactly: amax / max rounded up to a power of two. torchao's CPU path
                # takes ceil(log2(descale)) in fp32, which rounds a descale just above 2^k (by less
                # than about 2^-22 k) down to k: it is the reference only where its log2 is exact.
                amax = block_amax(x, 1, 32)
                with np.errstate(divide="ignore", invalid="ignore"):
                    descale = (amax / F32(largest)).astype(F32)
                    exact = e8m0_round_up(descale)
                    log2 = np.log2(descale)
                checks.same(f"{name} scales vs cuBLAS's RCEIL rule (transcribed)", scales, exact)
                inexact = np.isfinite(log2) & (log2 == np.round(log2)) & (np.frexp(descale)[0] != 0.5)
                inexact &= descale >= np.finfo(F32).tiny
                if inexact.any():
                    checks.lines.append(f"  ({int(inexact.sum())} {name} blocks left out of the torchao comparison: "
                                        "fp32 log2 rounded their descale to a power of two)")
                block_nan = block_nan | inexact
                ref_scales = np.where(inexact, exact, ref_scales)
            checks.same(f"{name} scales vs {source}", scales, ref_scales)
            compare = ~expand(block_nan | (ref_scales == 0), 1, 32)
            if element in ("e2m3", "e3m2", "e2m1"):
                compare &= ~np.isnan(x)
            checks.same(f"{name} codes vs {source}", codes, ref_codes, mask=compare, nan_dtype=dtype)
            # mpx's own rule where the references differ: code-0 blocks multiply by 2^127.
            zero_blocks = expand(~block_nan & (scales == 0), 1, 32)
            if zero_blocks.any():
                with np.errstate(invalid="ignore", over="ignore"):
                    own = encode(x * F32(2.0**127), dtype, largest)
                checks.same(f"{name} codes in scale-code-0 blocks (x * 2^127)", codes, own,
                            mask=zero_blocks & ~np.isnan(x))
    # The columnwise copy: the transpose quantized from the same source.
    codes_t = read(tool_dir, "mx_e4m3_floor_t.codes.u8", np.uint8, (COLS, ROWS))
    ref_scales, ref_data = to_mx(torch.from_numpy(np.ascontiguousarray(x.T)), torch.float8_e4m3fn, 32,
                                 ScaleCalculationMode.FLOOR)
    ref_scales = ref_scales.view(torch.uint8).numpy().reshape(COLS, ROWS // 32)
    mask = ~expand(np.isnan(block_amax(np.ascontiguousarray(x.T), 1, 32)) | (ref_scales == 0), 1, 32)
    checks.same("mx_e4m3_floor columnwise codes vs torchao to_mx of x^T", codes_t,
                ref_data.view(torch.uint8).numpy().reshape(COLS, ROWS), mask=mask, nan_dtype=ml_dtypes.float8_e4m3fn)


def te_nvfp4(x, rows, cols):
    """TE's NVFP4 quantization (fp32 scale-factor path): codes, E4M3 block scales, 1 / S_enc."""
    amax = F32(np.nanmax(np.abs(x)))  # TE's amax kernel passes NaNs over (fmaxf)
    with np.errstate(divide="ignore", over="ignore"):
        s_enc = min(F32(448.0 * 6.0) / amax, F32(np.finfo(F32).max))
    if amax == 0 or s_enc == 0:
        s_enc = F32(1.0)
    s_enc = F32(s_enc)
    block = block_amax(x, rows, cols) * (s_enc * F32(1.0 / 6.0))
    block = np.minimum(block, F32(np.finfo(F32).max))
    scales = encode(block, ml_dtypes.float8_e4m3fn, 448.0)
    s_dec = F32(1.0) / s_enc
    with np.errstate(divide="ignore", over="ignore"):
        multiplier = F32(1.0) / (scales.view(ml_dtypes.float8_e4m3fn).astype(F32) * s_dec)
    multiplier = np.minimum(multiplier, F32(np.finfo(F32).max)).astype(F32)
    with np.errstate(invalid="ignore", over="ignore"):
        codes = encode(x * expand(multiplier, rows, cols), ml_dtypes.float4_e2m1fn, 6.0)
    return codes, scales, s_dec


def check_nvfp4(tool_dir, x, checks):
    for name, (rows, cols) in (("nvfp4_1d", (1, 16)), ("nvfp4_2d", (16, 16))):
        codes = read(tool_dir, f"{name}.codes.u8", np.uint8, (ROWS, COLS))
        scales = read(tool_dir, f"{name}.scales.u8", np.uint8, (ROWS // rows, COLS // cols))
        global_decode = read(tool_dir, f"{name}.global.f32", F32, (1,))[0]
        ref_codes, ref_scales, s_dec = te_nvfp4(x, rows, cols)
        source = "Transformer Engine's NVFP4 formulas (transcribed)"
        checks.same(f"{name} global decode scale vs {source}", np.array([global_decode]).view(np.uint32),
                    np.array([s_dec], dtype=F32).view(np.uint32))
        checks.same(f"{name} scales vs {source}", scales, ref_scales, nan_dtype=ml_dtypes.float8_e4m3fn)
        mask = ~np.isnan(expand(block_amax(x, rows, cols), rows, cols))
        checks.same(f"{name} codes vs {source}", codes, ref_codes, mask=mask)
    # torchao's two-level NVFP4 divides where TE multiplies: how often the two agree on a normal
    # matrix, for the record.
    finite = np.random.default_rng(4).standard_normal((ROWS, COLS)).astype(F32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ta_scales, _ = nvfp4_quantize(torch.from_numpy(finite), 16,
                                      per_tensor_amax_to_scale(torch.tensor(np.abs(finite).max())))
    te_codes, te_scales, _ = te_nvfp4(finite, 1, 16)
    agree = (ta_scales.view(torch.uint8).numpy().reshape(te_scales.shape) == te_scales).mean()
    checks.lines.append(f"  (torchao {torchao.__version__} nvfp4_quantize's block scales equal TE's on "
                        f"{100 * agree:.2f}% of the blocks of a standard normal matrix)")


def check_fp8_blocks(tool_dir, x, checks):
    for name, (rows, cols), pow2 in (("fp8block_1d", (1, 128), True), ("fp8block_2d", (128, 128), True),
                                     ("fp8block_1d_exact", (1, 128), False)):
        codes = read(tool_dir, f"{name}.codes.u8", np.uint8, (ROWS, COLS))
        scales = read(tool_dir, f"{name}.scales.f32", F32, (ROWS // rows, COLS // cols))
        amax = block_amax(x, rows, cols)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            scale = F32(448.0) / amax                     # TE's compute_scale_from_amax, epsilon 0
            scale = np.where(np.isinf(scale), F32(np.finfo(F32).max), scale)
            scale = np.where(np.isnan(scale), F32(1.0), scale)
            scale = np.where((amax == 0) | np.isinf(amax), F32(1.0), scale).astype(F32)
            if pow2:
                scale = (scale.view(np.uint32) & np.uint32(0xFF800000)).view(F32)
            ref_codes = encode(x * expand(scale, rows, cols), ml_dtypes.float8_e4m3fn, 448.0)
            ref_scales = (F32(1.0) / scale).astype(F32)
        source = "Transformer Engine's Float8BlockScaling (transcribed)"
        checks.same(f"{name} scale inverses vs {source}", scales.view(np.uint32), ref_scales.view(np.uint32))
        checks.same(f"{name} codes vs {source}", codes, ref_codes, nan_dtype=ml_dtypes.float8_e4m3fn)


def main():
    np.seterr(over="ignore")
    tool, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    x = matrix()
    x.tofile(os.path.join(scratch, "x.f32"))
    subprocess.run([tool, os.path.join(scratch, "x.f32"), str(ROWS), str(COLS), scratch], check=True)
    checks = Checks()
    check_mx(scratch, x, checks)
    check_nvfp4(scratch, x, checks)
    check_fp8_blocks(scratch, x, checks)
    print(f"a [{ROWS}, {COLS}] matrix; references: torchao {torchao.__version__}, torch {torch.__version__}, "
          f"ml_dtypes {ml_dtypes.__version__}")
    print("\n".join(checks.lines))
    if checks.failures:
        print("FAILED:\n  " + "\n  ".join(checks.failures))
        return 1
    print("mpx's MX, NVFP4 and FP8 128-block quantizers give the references' scales and codes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
