// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Precision tags: empty types that name a number format. What each format is lives in its
/// `numeric_traits` (traits.hpp); a format of your own is a tag and a `numeric_traits` specialisation
/// (docs/precision.md, "Adding a number format").

namespace mpx {

/// @brief IEEE binary64. Used for reference computations and gradient checks.
struct Double {};
/// @brief IEEE binary32: the master-weight, accumulation and "fp32 op" type.
struct Float {};
/// @brief TensorFloat-32: fp32 storage, operands rounded to 10 mantissa bits inside Tensor Core matmuls.
struct TF32 {};
/// @brief IEEE binary16 (fp16): 5 exponent bits, so small gradients underflow without loss scaling.
struct Half {};
/// @brief bfloat16: fp32's exponent range with 7 mantissa bits; needs no loss scaling.
struct BFloat16 {};

/// @brief FP8 E4M3 (OCP FP8, the "fn" form of ml_dtypes and PyTorch): 4 exponent bits, 3 mantissa
/// bits, largest 448, no infinity; what FP8 training keeps forward GEMM operands in.
struct Float8E4M3 {};

/// @brief FP8 E5M2 (OCP FP8): 5 exponent bits, 2 mantissa bits, largest 57344, IEEE infinities and
/// NaN; fp16's range with a quarter of its precision, what FP8 training keeps gradients in.
struct Float8E5M2 {};

/// @brief FP4 E2M1 (OCP MX): 2 exponent bits, 1 mantissa bit, values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and
/// their negatives; no infinity or NaN. The elements of MXFP4 and NVFP4 blocks.
struct Float4E2M1 {};

/// @brief FP6 E2M3 (OCP MX): 2 exponent bits, 3 mantissa bits, largest 7.5, no infinity or NaN.
struct Float6E2M3 {};

/// @brief FP6 E3M2 (OCP MX): 3 exponent bits, 2 mantissa bits, largest 28, no infinity or NaN.
struct Float6E3M2 {};

/// @brief E8M0 (OCP MX's scale format): an unsigned power of two 2^(code - 127), codes 0 to 254
/// (2^-127 to 2^127); 0xFF is NaN; no zero, no sign. The scale of an MX block.
struct Float8E8M0 {};

/// @brief A list of precision tags, for code that instantiates something for each.
template <class... Tags>
struct FormatList {};

/// @brief The formats mpx defines, in one list: what decodes a checkpoint's dtypes (io/dtype.hpp)
/// and what the CUDA backend instantiates its unfused GEMM kernels for. A new built-in format is a
/// tag above, its `numeric_traits`, and its place here; nothing else names it.
using BuiltinFormats = FormatList<Double, Float, TF32, Half, BFloat16, Float8E4M3, Float8E5M2, Float4E2M1,
                                  Float6E2M3, Float6E3M2, Float8E8M0>;

}  // namespace mpx
