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

/// @brief A list of precision tags, for code that instantiates something for each.
template <class... Tags>
struct FormatList {};

/// @brief The formats mpx defines, in one list: what decodes a checkpoint's dtypes (io/dtype.hpp)
/// and what the CUDA backend instantiates its unfused GEMM kernels for. A new built-in format is a
/// tag above, its `numeric_traits`, and its place here; nothing else names it.
using BuiltinFormats = FormatList<Double, Float, TF32, Half, BFloat16, Float8E4M3, Float8E5M2>;

}  // namespace mpx
