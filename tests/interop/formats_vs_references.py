#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""mpx's codecs of the formats it keeps as bit patterns against ml_dtypes and PyTorch: every code of
E4M3, E5M2 (FP8), E2M1 (FP4), E2M3, E3M2 (FP6) and E8M0 (the MX scale) decodes to the same value, and
every fp32 input near every rounding boundary, every special value and a large random sample encode
to the same codes, each reference compared with the overflow rule it implements:

  ml_dtypes' astype       saturates neither FP8 format  -> mpx::Overflow::NonFinite, both formats;
                          nor E8M0 (overflow to NaN)       and E8M0;
                          FP6/FP4 always saturate          and Saturate for FP6/FP4 (their only rule)
  torch's .to(float8_*)   saturates E4M3 (inf too),     -> mpx::Overflow::Saturate for E4M3,
                          not E5M2 nor E8M0                mpx::Overflow::NonFinite for E5M2, E8M0
  CUDA's __NV_SATFINITE   the non-saturating code, with every overflow (infinity included) at
                          +-max_finite                  -> mpx::Overflow::Saturate, derived from ml_dtypes

NaN codes differ between producers (ml_dtypes writes E5M2's NaN as 0x7e, torch as 0x7f), so NaN results
are compared as a class; mpx's own NaN codes (docs/numerics.md) are checked exactly. FP6 and FP4 have no
NaN: ml_dtypes encodes NaN as -0, mpx as +max_finite (its documented choice), so NaN inputs are left out
of their comparison and checked against mpx's rule. torch's E8M0 conversion takes |x| and maps 0 to
code 0 where ml_dtypes (and mpx) give NaN, so torch is compared on positive inputs only.

usage: formats_vs_references.py <format_codec_tool> <scratch directory>
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
    print(f"SKIP: Python packages for the number-format test are missing ({error}); "
          "scripts/install-deps.sh installs them into build/tools/python")
    sys.exit(77)
try:
    import torch
except ImportError:
    torch = None

FORMATS = {
    # name: (ml_dtypes type, torch dtype name or None, largest finite value, mpx's NaN code with + sign
    #        (None: the format has no NaN), signed)
    "e4m3": (ml_dtypes.float8_e4m3fn, "float8_e4m3fn", 448.0, 0x7F, True),
    "e5m2": (ml_dtypes.float8_e5m2, "float8_e5m2", 57344.0, 0x7E, True),
    "e2m1": (ml_dtypes.float4_e2m1fn, None, 6.0, None, True),
    "e2m3": (ml_dtypes.float6_e2m3fn, None, 7.5, None, True),
    "e3m2": (ml_dtypes.float6_e3m2fn, None, 28.0, None, True),
    "e8m0": (ml_dtypes.float8_e8m0fnu, "float8_e8m0fnu", 2.0**127, 0xFF, False),
}


def all_codes(name):
    """Every code of a format, as uint8: 2^(bits) of them."""
    bits = {"e2m1": 4, "e2m3": 6, "e3m2": 6}.get(name, 8)
    return np.arange(1 << bits, dtype=np.uint16).astype(np.uint8)


def probes():
    """Every code's value, the midpoints between neighbouring codes and one float either side of all
    of them (both signs), the overflow boundaries, the specials, and a large random sample."""
    values = []
    for name, (dtype, _, _, _, _) in FORMATS.items():
        codes = all_codes(name).view(dtype).astype(np.float64)
        finite = np.unique(np.abs(codes[np.isfinite(codes)]))
        mids = (finite[:-1] + finite[1:]) / 2
        values += [finite, mids, 2 * finite[-1] - mids[-1:]]  # the tie above the largest value
    exact = np.concatenate(values).astype(np.float32)
    named = np.array([448, 464, 480, 57344, 61440, 65536, 2**17, np.finfo(np.float32).max,
                      np.finfo(np.float32).tiny, np.finfo(np.float32).smallest_subnormal, 2**-9, 2**-10,
                      2**-16, 2**-17, 2**-18, 6, 7, 7.5, 7.75, 8, 28, 30, 32, 0.25, 0.0625, 0.03125,
                      2.0**127, 1.5 * 2.0**127, 2.0**-127, 2.0**-128, 1.5 * 2.0**-128], dtype=np.float32)
    exact = np.concatenate([exact, named])
    near = np.concatenate([exact, np.nextafter(exact, np.float32(np.inf)), np.nextafter(exact, np.float32(0))])
    random = np.random.default_rng(2026)
    bits = random.integers(0, 2**32, size=1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    in_range = (random.choice([-1.0, 1.0], size=1_000_000) *
                np.exp2(random.uniform(-22.0, 17.0, size=1_000_000))).astype(np.float32)
    specials = np.array([np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0], dtype=np.float32)
    return np.concatenate([near, -near, specials, bits, in_range]).astype(np.float32)


def same_codes(name, got, expected, inputs, failures, mask=None):
    """Codes equal, or both NaN, where `mask` (default: everywhere); lists the first differences."""
    dtype = FORMATS[name.split()[0]][0]
    got_nan = np.isnan(got.view(dtype).astype(np.float32))
    expected_nan = np.isnan(expected.view(dtype).astype(np.float32))
    ok = (got == expected) | (got_nan & expected_nan)
    if mask is not None:
        ok |= ~mask
    bad = np.nonzero(~ok)[0]
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
    for name, (dtype, torch_name, largest, nan_code, signed) in FORMATS.items():
        # Decoding: every code, bit for bit (NaN as a class).
        mpx_values = read(f"decode_{name}.f32", np.float32)
        reference = all_codes(name).view(dtype).astype(np.float32)
        both_nan = np.isnan(mpx_values) & np.isnan(reference)
        bad = np.nonzero(~(both_nan | (mpx_values.view(np.uint32) == reference.view(np.uint32))))[0]
        if mpx_values.size != reference.size or bad.size:
            failures.append(f"decode {name}: {mpx_values.size} codes, expected {reference.size}; codes " +
                            ", ".join(f"0x{c:02x} mpx {mpx_values[c]!r} ml_dtypes {reference[c]!r}"
                                      for c in bad[:5]))

        saturate = read(f"{name}_saturate.u8", np.uint8)
        ml = inputs.astype(dtype).view(np.uint8)
        if nan_code is None:
            # FP6/FP4: ml_dtypes saturates; NaN inputs give mpx's +max_finite.
            same_codes(f"{name} saturating vs ml_dtypes (NaN inputs apart)", saturate, ml, inputs, failures,
                       mask=~nan_input)
            largest_code = np.array([largest], dtype=np.float32).astype(dtype).view(np.uint8)[0]
            if not np.all(saturate[nan_input] == largest_code):
                failures.append(f"{name}: NaN inputs do not encode as +{largest:g} (0x{largest_code:02x})")
            continue
        nonfinite = read(f"{name}_nonfinite.u8", np.uint8)
        # Non-saturating: ml_dtypes' astype.
        same_codes(f"{name} non-saturating vs ml_dtypes", nonfinite, ml, inputs, failures)
        # Saturating: the non-saturating result with every overflow of a value above the largest at
        # +-largest (an unsigned format's negative values stay NaN).
        ml_values = ml.view(dtype).astype(np.float32)
        overflowed = ~nan_input & ~np.isfinite(ml_values) & (np.abs(inputs) > largest)
        if not signed:
            overflowed &= ~np.signbit(inputs)
        satfinite = ml.copy()
        largest_code = np.array([largest], dtype=np.float32).astype(dtype).view(np.uint8)[0]
        satfinite[overflowed] = largest_code | np.where(np.signbit(inputs[overflowed]) & signed, 0x80,
                                                        0).astype(np.uint8)
        same_codes(f"{name} saturating vs ml_dtypes with overflow at +-{largest:g}", saturate, satfinite,
                   inputs, failures)
        # mpx's NaN code: the documented one, with the input's sign where the format has one.
        expected_nan = np.where(np.signbit(inputs[nan_input]) & signed, nan_code | 0x80, nan_code).astype(np.uint8)
        for rule, codes in (("non-saturating", nonfinite), ("saturating", saturate)):
            if not np.array_equal(codes[nan_input], expected_nan):
                failures.append(f"{name} {rule}: NaN inputs do not encode as 0x{nan_code:02x} with their sign")
        if torch is not None and torch_name is not None:
            converted = torch.from_numpy(inputs).to(getattr(torch, torch_name)).view(torch.uint8).numpy()
            mpx_codes = saturate if name == "e4m3" else nonfinite
            rule = "saturating" if name == "e4m3" else "non-saturating"
            same_codes(f"{name} {rule} vs torch {torch.__version__} .to({torch_name})", mpx_codes, converted,
                       inputs, failures, mask=None if signed else inputs > 0)

    # The boundaries that catch wrong encoders, by name.
    index = {float(v): i for i, v in enumerate(inputs[:200_000]) if np.isfinite(v)}
    e4m3_nonfinite, e4m3_saturate = read("e4m3_nonfinite.u8", np.uint8), read("e4m3_saturate.u8", np.uint8)
    e5m2_nonfinite = read("e5m2_nonfinite.u8", np.uint8)
    e8m0_nonfinite, e8m0_saturate = read("e8m0_nonfinite.u8", np.uint8), read("e8m0_saturate.u8", np.uint8)
    e2m1 = read("e2m1_saturate.u8", np.uint8)
    above_464 = float(np.nextafter(np.float32(464), np.float32(np.inf)))
    below_61440 = float(np.nextafter(np.float32(61440), np.float32(0)))
    checks = [
        ("E4M3 464 rounds to 448", e4m3_nonfinite[index[464.0]] == 0x7E),
        ("E4M3 just above 464 overflows to NaN", e4m3_nonfinite[index[above_464]] == 0x7F),
        ("E4M3 saturating: just above 464 gives 448", e4m3_saturate[index[above_464]] == 0x7E),
        ("E5M2 61440 overflows to infinity", e5m2_nonfinite[index[61440.0]] == 0x7C),
        ("E5M2 just below 61440 gives 57344", e5m2_nonfinite[index[below_61440]] == 0x7B),
        ("E2M1 7 rounds to 6", e2m1[index[7.0]] == 0x7),
        ("E2M1 0.25 ties to 0", e2m1[index[0.25]] == 0x0),
        ("E8M0 1.5 * 2^-128 ties up to 2^-127", e8m0_nonfinite[index[1.5 * 2.0**-128]] == 0x00),
        ("E8M0 2^-127 is code 0", e8m0_nonfinite[index[2.0**-127]] == 0x00),
        ("E8M0 1.5 * 2^127 overflows to NaN", e8m0_nonfinite[index[1.5 * 2.0**127]] == 0xFF),
        ("E8M0 saturating: 1.5 * 2^127 gives 2^127", e8m0_saturate[index[1.5 * 2.0**127]] == 0xFE),
        ("E8M0 6 ties up to 8", e8m0_nonfinite[index[6.0]] == 130),
    ]
    failures += [f"boundary: {what}" for what, ok in checks if not ok]

    print(f"{inputs.size} inputs, every code of {', '.join(FORMATS)}; references: ml_dtypes {ml_dtypes.__version__}, "
          + (f"torch {torch.__version__}" if torch is not None else "torch not installed (skipped)"))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("mpx's E4M3, E5M2, E2M1, E2M3, E3M2 and E8M0 decode and encode as the references do, each under its "
          "overflow rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
