// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Precision tags: empty types that name a floating-point format. Traits live in traits.hpp.

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

}  // namespace mpx
