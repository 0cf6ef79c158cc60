#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""mpx's FP8 codecs against ml_dtypes and PyTorch: all 256 codes of E4M3 and E5M2 decode to the same
values, and every fp32 input near every rounding boundary, every special value and a large random
sample encode to the same codes, each reference compared with the overflow rule it implements:

  ml_dtypes' astype       saturates neither format   -> mpx::Overflow::NonFinite, both formats
  torch's .to(float8_*)   saturates E4M3 (inf too),  -> mpx::Overflow::Saturate for E4M3,
                          not E5M2                      mpx::Overflow::NonFinite for E5M2
  CUDA's __NV_SATFINITE   the non-saturating code, with every overflow (infinity included) at
                          +-max_finite               -> mpx::Overflow::Saturate, derived from ml_dtypes

NaN codes differ between producers (ml_dtypes writes E5M2's NaN as 0x7e, torch as 0x7f), so NaN results
are compared as a class; mpx's own NaN codes (docs/numerics.md) are checked exactly.

usage: float8_vs_references.py <float8_codec_tool> <scratch directory>
Exits 77 (CTest SKIP) when numpy or ml_dtypes cannot be imported; without torch it checks ml_dtypes
only and says so.
"""
import os
import subprocess
import sys

try:
    import ml_dtypes
    import numpy as np
except ImportError as error:
    print(f"SKIP: Python packages for the FP8 test are missing ({error}); "
          "scripts/install-deps.sh installs them into build/tools/python")
    sys.exit(77)
try:
    import torch
except ImportError:
    torch = None

FORMATS = {
    # name: (ml_dtypes type, torch dtype name, largest finite value, mpx's NaN code with + sign)
    "e4m3": (ml_dtypes.float8_e4m3fn, "float8_e4m3fn", 448.0, 0x7F),
    "e5m2": (ml_dtypes.float8_e5m2, "float8_e5m2", 57344.0, 0x7E),
}


def probes():
    """Every code's value, the midpoints between neighbouring codes and one float either side of all
    of them (both signs), the overflow boundaries, the specials, and a large random sample."""
    values = []
    for dtype, _, _, _ in FORMATS.values():
        codes = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
        finite = np.unique(np.abs(codes[np.isfinite(codes)]))
        mids = (finite[:-1] + finite[1:]) / 2
        values += [finite, mids, 2 * finite[-1] - mids[-1:]]  # the tie above the largest value
    exact = np.concatenate(values).astype(np.float32)
    named = np.array([448, 464, 480, 57344, 61440, 65536, 2**17, np.finfo(np.float32).max,
                      np.finfo(np.float32).tiny, np.finfo(np.float32).smallest_subnormal, 2**-9, 2**-10,
                      2**-16, 2**-17, 2**-18], dtype=np.float32)
    exact = np.concatenate([exact, named])
    near = np.concatenate([exact, np.nextafter(exact, np.float32(np.inf)), np.nextafter(exact, np.float32(0))])
    random = np.random.default_rng(2026)
    bits = random.integers(0, 2**32, size=1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    in_range = (random.choice([-1.0, 1.0], size=1_000_000) *
                np.exp2(random.uniform(-22.0, 17.0, size=1_000_000))).astype(np.float32)
    specials = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0], dtype=np.float32)
    return np.concatenate([near, -near, specials, bits, in_range]).astype(np.float32)


def same_codes(name, got, expected, inputs, failures):
    """Codes equal, or both NaN; lists the first differences."""
    dtype = FORMATS[name[:4]][0]
    got_nan = np.isnan(got.view(dtype).astype(np.float32))
    expected_nan = np.isnan(expected.view(dtype).astype(np.float32))
    bad = np.nonzero(~((got == expected) | (got_nan & expected_nan)))[0]
    if bad.size:
        failures.append(f"{name}: {bad.size} of {inputs.size} inputs differ, e.g. " + ", ".join(
            f"{inputs[i]!r} (0x{inputs[i:i + 1].view(np.uint32)[0]:08x}): mpx 0x{got[i]:02x}, "
            f"reference 0x{expected[i]:02x}" for i in bad[:5]))
    return bad.size == 0


def main():
    np.seterr(over="ignore", invalid="ignore")  # nextafter past float32's largest value, casts of NaN
    tool, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    inputs = probes()
    inputs.tofile(os.path.join(scratch, "inputs.f32"))
    subprocess.run([tool, os.path.join(scratch, "inputs.f32"), scratch], check=True)

    def read(file, dtype):
        return np.fromfile(os.path.join(scratch, file), dtype=dtype)

    failures = []
    nan_input = np.isnan(inputs)
    for name, (dtype, torch_name, largest, nan_code) in FORMATS.items():
        # Decoding: all 256 codes, bit for bit (NaN as a class).
        mpx_values = read(f"decode_{name}.f32", np.float32)
        reference = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float32)
        both_nan = np.isnan(mpx_values) & np.isnan(reference)
        bad = np.nonzero(~(both_nan | (mpx_values.view(np.uint32) == reference.view(np.uint32))))[0]
        if bad.size:
            failures.append(f"decode {name}: codes " + ", ".join(
                f"0x{c:02x} mpx {mpx_values[c]!r} ml_dtypes {reference[c]!r}" for c in bad[:5]))

        nonfinite = read(f"{name}_nonfinite.u8", np.uint8)
        saturate = read(f"{name}_saturate.u8", np.uint8)
        # Non-saturating: ml_dtypes' astype.
        ml = inputs.astype(dtype).view(np.uint8)
        same_codes(f"{name} non-saturating vs ml_dtypes", nonfinite, ml, inputs, failures)
        # Saturating: the non-saturating result with every overflow of a non-NaN input at +-largest.
        ml_values = ml.view(dtype).astype(np.float32)
        overflowed = ~nan_input & ~np.isfinite(ml_values)
        satfinite = ml.copy()
        largest_code = np.array([largest], dtype=np.float32).astype(dtype).view(np.uint8)[0]
        satfinite[overflowed] = largest_code | np.where(np.signbit(inputs[overflowed]), 0x80, 0).astype(np.uint8)
        same_codes(f"{name} saturating vs ml_dtypes with overflow at +-{largest:g}", saturate, satfinite,
                   inputs, failures)
        # mpx's NaN code: the documented one, with the input's sign.
        expected_nan = np.where(np.signbit(inputs[nan_input]), nan_code | 0x80, nan_code).astype(np.uint8)
        for rule, codes in (("non-saturating", nonfinite), ("saturating", saturate)):
            if not np.array_equal(codes[nan_input], expected_nan):
                failures.append(f"{name} {rule}: NaN inputs do not encode as 0x{nan_code:02x} with their sign")
        if torch is not None:
            converted = torch.from_numpy(inputs).to(getattr(torch, torch_name)).view(torch.uint8).numpy()
            mpx_codes = saturate if name == "e4m3" else nonfinite
            rule = "saturating" if name == "e4m3" else "non-saturating"
            same_codes(f"{name} {rule} vs torch {torch.__version__} .to({torch_name})", mpx_codes, converted,
                       inputs, failures)

    # The boundaries that catch wrong encoders, by name.
    index = {float(v): i for i, v in enumerate(inputs[:200_000]) if np.isfinite(v)}
    e4m3_nonfinite, e4m3_saturate = read("e4m3_nonfinite.u8", np.uint8), read("e4m3_saturate.u8", np.uint8)
    e5m2_nonfinite = read("e5m2_nonfinite.u8", np.uint8)
    above_464 = float(np.nextafter(np.float32(464), np.float32(np.inf)))
    below_61440 = float(np.nextafter(np.float32(61440), np.float32(0)))
    checks = [
        ("E4M3 464 rounds to 448", e4m3_nonfinite[index[464.0]] == 0x7E),
        ("E4M3 just above 464 overflows to NaN", e4m3_nonfinite[index[above_464]] == 0x7F),
        ("E4M3 saturating: just above 464 gives 448", e4m3_saturate[index[above_464]] == 0x7E),
        ("E5M2 61440 overflows to infinity", e5m2_nonfinite[index[61440.0]] == 0x7C),
        ("E5M2 just below 61440 gives 57344", e5m2_nonfinite[index[below_61440]] == 0x7B),
    ]
    failures += [f"boundary: {what}" for what, ok in checks if not ok]

    print(f"{inputs.size} inputs, 256 codes per format; references: ml_dtypes {ml_dtypes.__version__}, "
          + (f"torch {torch.__version__}" if torch is not None else "torch not installed (skipped)"))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("mpx's E4M3 and E5M2 decode and encode as the references do, each under its overflow rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
