// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What a GEMM call means, shared by the CPU (Eigen) and CUDA (cuBLASLt) backends: operand
/// transposes, scaling, epilogues, shape validation, and the epilogue's elementwise math.
///
/// All matrices are row-major; a tensor of rank > 2 is read as its matrix view (`Shape::rows()` x
/// `Shape::cols()`). A call computes, in the accumulate type,
///   t = alpha * op(A) * op(B) + beta * C          op(A): M x K, op(B): K x N, C and D: M x N
/// and then applies the epilogue to t before rounding it into D. Bias vectors have one entry per
/// column of D (one per output feature of `Y = X * W^T`); in cuBLASLt's column-major view of the same
/// memory that is one per row of D, which is how its BIAS epilogues define them.
///
/// A batched call (`GemmConfig::batch_count` = n > 1) runs n independent products of that form: A, B,
/// C and D each hold n equal matrices one after another, so each matrix view has n times the rows of
/// one matrix (an attention score buffer [batch, heads, T, T] is n = batch * heads matrices T x T).
/// Only the Default epilogue takes a batch.
///
/// ReLU's backward reads a bit mask rather than a matrix, as cuBLASLt's RELU_AUX_BIAS and DRELU_BGRAD
/// do: one bit per element of D, set where the pre-activation is positive, rows (our rows of D,
/// cuBLASLt's columns) `relu_mask_words(N)` 32-bit words apart, bit c of a row in word c / 32 at
/// position c % 32 (the padding bits after column N - 1 are unspecified). A layer keeps
/// `relu_mask_words(N)` * 4 bytes per row (N / 8, N rounded up to 128) for its ReLU's backward.

#include <cmath>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "mpx/config.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/tanh.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/device.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Whether a GEMM operand is used as stored or transposed.
enum class Transpose : bool { No = false, Yes = true };

/// @brief Work fused after the matmul, mirroring cuBLASLt's epilogues.
enum class Epilogue {
  Default,      ///< D = t
  Bias,         ///< D = t + bias
  ReluBias,     ///< D = relu(t + bias)
  ReluAuxBias,  ///< D = relu(t + bias), and relu_mask bit = (t + bias > 0), kept for backward
  GeluBias,     ///< D = gelu(t + bias)
  GeluAuxBias,  ///< aux = t + bias (the pre-activation, kept for backward); D = gelu(aux)
  DRelu,        ///< D = t * relu'(x): relu_mask holds x > 0, as ReluAuxBias wrote it
  DReluBGrad,   ///< DRelu, and bias_grad[n] = sum over rows of D
  DGelu,        ///< D = t * gelu'(aux): aux is the forward pre-activation
  DGeluBGrad,   ///< DGelu, and bias_grad[n] = sum over rows of D
  BGradA,       ///< D = t, and bias_grad[m] = sum over k of op(A)[m, k]
  BGradB,       ///< D = t, and bias_grad[n] = sum over k of op(B)[k, n]
};

/// @brief Name of an epilogue for messages and benchmark records.
constexpr std::string_view to_string(Epilogue epilogue) noexcept {
  switch (epilogue) {
    case Epilogue::Default: return "default";
    case Epilogue::Bias: return "bias";
    case Epilogue::ReluBias: return "relu_bias";
    case Epilogue::ReluAuxBias: return "relu_aux_bias";
    case Epilogue::GeluBias: return "gelu_bias";
    case Epilogue::GeluAuxBias: return "gelu_aux_bias";
    case Epilogue::DRelu: return "drelu";
    case Epilogue::DReluBGrad: return "drelu_bgrad";
    case Epilogue::DGelu: return "dgelu";
    case Epilogue::DGeluBGrad: return "dgelu_bgrad";
    case Epilogue::BGradA: return "bgrada";
    case Epilogue::BGradB: return "bgradb";
  }
  return "unknown";
}

/// @brief Whether an epilogue reads a bias vector.
constexpr bool reads_bias(Epilogue e) noexcept {
  return e == Epilogue::Bias || e == Epilogue::ReluBias || e == Epilogue::ReluAuxBias ||
         e == Epilogue::GeluBias || e == Epilogue::GeluAuxBias;
}
/// @brief Whether an epilogue writes the pre-activation into aux.
constexpr bool writes_aux(Epilogue e) noexcept {
  return e == Epilogue::GeluAuxBias;
}
/// @brief Whether an epilogue reads aux (the forward pre-activation).
constexpr bool reads_aux(Epilogue e) noexcept {
  return e == Epilogue::DGelu || e == Epilogue::DGeluBGrad;
}
/// @brief Whether an epilogue applies GELU or its derivative.
constexpr bool is_gelu_epilogue(Epilogue e) noexcept {
  return e == Epilogue::GeluBias || e == Epilogue::GeluAuxBias || e == Epilogue::DGelu ||
         e == Epilogue::DGeluBGrad;
}
/// @brief Whether an epilogue writes the ReLU bit mask.
constexpr bool writes_relu_mask(Epilogue e) noexcept {
  return e == Epilogue::ReluAuxBias;
}
/// @brief Whether an epilogue reads the ReLU bit mask.
constexpr bool reads_relu_mask(Epilogue e) noexcept {
  return e == Epilogue::DRelu || e == Epilogue::DReluBGrad;
}

/// @brief 32-bit words per row of a ReLU bit mask for N columns: N rounded up to a multiple of 128
/// bits, the leading dimension cuBLASLt requires of its masks.
constexpr std::int64_t relu_mask_words(std::int64_t n) noexcept {
  return (n + 127) / 128 * 4;
}
/// @brief Shape of the ReLU bit mask of a D of shape `d`: [rows of D, `relu_mask_words(columns)`].
inline Shape relu_mask_shape(const Shape& d) {
  return Shape{d.rows(), relu_mask_words(d.cols())};
}
/// @brief Bit `col` of one row of a ReLU mask: whether the pre-activation there was positive.
MPX_HOST_DEVICE inline bool relu_mask_bit(const std::int32_t* row_words, std::int64_t col) noexcept {
  return ((static_cast<std::uint32_t>(row_words[col / 32]) >> (col % 32)) & 1u) != 0;
}
/// @brief Whether an epilogue writes a bias gradient.
constexpr bool writes_bias_grad(Epilogue e) noexcept {
  return e == Epilogue::DReluBGrad || e == Epilogue::DGeluBGrad || e == Epilogue::BGradA ||
         e == Epilogue::BGradB;
}

/// @brief Everything about a GEMM call except its operands.
struct GemmConfig {
  /// @brief Whether A is read transposed.
  Transpose transpose_a = Transpose::No;
  /// @brief Whether B is read transposed.
  Transpose transpose_b = Transpose::No;
  /// @brief Scale applied to A·B.
  float alpha = 1.0f;
  float beta = 0.0f;  ///< with beta != 0 and no C operand, D's previous contents are C (accumulate)
  /// @brief What is fused after the product (bias, activation, their gradients).
  Epilogue epilogue = Epilogue::Default;
  /// @brief How many independent products the call runs (strided batch): A, B, C and D hold that
  /// many matrices each, stored one after another. With more than one the epilogue must be Default.
  std::int64_t batch_count = 1;
};

/// @brief The optional operands of a GEMM; which ones must be set depends on the epilogue.
/// @tparam TD  element type of D (bias and aux share it, as in cuBLASLt's defaults).
/// @tparam Acc accumulate type; bias gradients are produced in it.
template <FloatingElement TD, class Acc = accumulate_t<TD>, class Device = Host>
struct GemmOperands {
  const Tensor<TD, Device>* c = nullptr;     ///< beta * C; null means D's previous contents
  const Tensor<TD, Device>* bias = nullptr;  ///< length N, for the Bias* epilogues
  Tensor<TD, Device>* aux = nullptr;         ///< M x N: written by GeluAuxBias, read by DGelu*
  /// [M, relu_mask_words(N)] bit mask: written by ReluAuxBias, read by DRelu* (see the file comment)
  Tensor<std::int32_t, Device>* relu_mask = nullptr;
  Tensor<Acc, Device>* bias_grad = nullptr;  ///< length N (M for BGradA), for the *BGrad* epilogues
};

/// @brief The problem size of a GEMM: op(A) is M x K, op(B) is K x N.
struct GemmShape {
  /// @brief Rows of the output.
  std::int64_t m = 0;
  /// @brief Columns of the output.
  std::int64_t n = 0;
  /// @brief The inner (reduced) dimension.
  std::int64_t k = 0;
  /// @brief How many products of that size (`GemmConfig::batch_count`); m, n, k are per product.
  std::int64_t batch = 1;
};

/// @brief Checks that A, B and D fit together under `config` and returns M, N, K; throws
/// `mpx::shape_error` naming `where` and the shapes involved.
inline GemmShape validate_gemm_shapes(const char* where, const Shape& a, const Shape& b, const Shape& d,
                                      const GemmConfig& config) {
  // An operand of rank > 2 is its matrix view: all leading extents fold into rows, as a
  // [batch, sequence, features] activation is [batch * sequence, features] to a Linear.
  const auto matrix = [&](const char* name, const Shape& s) {
    if (s.rank() < 2) {
      throw shape_error(detail::concat(where, ": operand ", name, " must be a matrix (rank 2 or more, ",
                                       "leading extents folded into rows), got ", s));
    }
  };
  matrix("A", a);
  matrix("B", b);
  matrix("D", d);
  const std::int64_t batch = config.batch_count;
  if (batch < 1) {
    throw invalid_argument(detail::concat(where, ": batch_count must be at least 1, got ", batch));
  }
  if (batch > 1 && config.epilogue != Epilogue::Default) {
    throw invalid_argument(detail::concat(where, ": epilogue ", to_string(config.epilogue),
                                          " with batch_count = ", batch,
                                          "; a batched GEMM takes only the default epilogue"));
  }
  // Rows of one matrix of a batched operand: its matrix view holds `batch` of them.
  const auto per_matrix_rows = [&](const char* name, const Shape& s) {
    if (s.rows() % batch != 0) {
      throw shape_error(detail::concat(where, ": operand ", name, " ", s, " has ", s.rows(),
                                       " rows, not divisible by batch_count = ", batch));
    }
    return s.rows() / batch;
  };
  const std::int64_t a_rows = per_matrix_rows("A", a);
  const std::int64_t b_rows = per_matrix_rows("B", b);
  const std::int64_t d_rows = per_matrix_rows("D", d);
  const bool ta = config.transpose_a == Transpose::Yes;
  const bool tb = config.transpose_b == Transpose::Yes;
  const GemmShape g{ta ? a.cols() : a_rows, tb ? b_rows : b.cols(), ta ? a_rows : a.cols(), batch};
  const std::int64_t kb = tb ? b.cols() : b_rows;
  const char* per_matrix = batch > 1 ? " per matrix" : "";
  if (g.k != kb) {
    throw shape_error(detail::concat(where, ": inner dimensions differ", per_matrix, ": op(A) is ", g.m,
                                     " x ", g.k, " (A ", a, ta ? ", transposed" : "", ") but op(B) is ", kb,
                                     " x ", g.n, " (B ", b, tb ? ", transposed" : "", ")"));
  }
  if (d_rows != g.m || d.cols() != g.n) {
    throw shape_error(detail::concat(where, ": D has shape ", d, " but op(A) * op(B) is [", g.m, ", ", g.n,
                                     "]", per_matrix, " (A ", a, ", B ", b, ")"));
  }
  return g;
}

namespace detail {
// An epilogue's vector operand: present, and of the given length.
template <class T>
void require_epilogue_vector(const char* where, const char* what, const T* tensor, std::int64_t length,
                             Epilogue epilogue) {
  if (tensor == nullptr) {
    throw invalid_argument(concat(where, ": epilogue ", to_string(epilogue), " needs ", what, " (length ",
                                  length, ") but none was given"));
  }
  if (!(tensor->shape() == Shape{length})) {
    throw shape_error(concat(where, ": ", what, " has shape ", tensor->shape(), ", expected [", length,
                             "] for epilogue ", to_string(epilogue)));
  }
}
}  // namespace detail

/// @brief `validate_gemm_shapes`, then the operands the epilogue needs (C, bias, aux, bias gradient):
/// present and of the right shapes. Throws `mpx::shape_error` or `mpx::invalid_argument` naming
/// `where`; both backends call it, so they refuse the same calls with the same messages.
template <FloatingElement TD, class Acc, class Device>
GemmShape validate_gemm(const char* where, const Shape& a, const Shape& b, const Shape& d,
                        const GemmConfig& config, const GemmOperands<TD, Acc, Device>& operands) {
  const GemmShape g = validate_gemm_shapes(where, a, b, d, config);
  const Epilogue epilogue = config.epilogue;
  if (operands.c != nullptr) require_shape(where, "C", operands.c->shape(), d);
  if (reads_bias(epilogue)) detail::require_epilogue_vector(where, "bias", operands.bias, g.n, epilogue);
  if (writes_aux(epilogue) || reads_aux(epilogue)) {
    if (operands.aux == nullptr) {
      throw invalid_argument(
          detail::concat(where, ": epilogue ", to_string(epilogue), " needs an aux tensor of shape ", d));
    }
    require_shape(where, "aux", operands.aux->shape(), d);
  }
  if (writes_relu_mask(epilogue) || reads_relu_mask(epilogue)) {
    if (operands.relu_mask == nullptr) {
      throw invalid_argument(detail::concat(where, ": epilogue ", to_string(epilogue),
                                            " needs a relu_mask tensor of shape ", relu_mask_shape(d)));
    }
    require_shape(where, "relu_mask", operands.relu_mask->shape(), relu_mask_shape(d));
  }
  if (writes_bias_grad(epilogue)) {
    const std::int64_t length = epilogue == Epilogue::BGradA ? g.m : g.n;
    detail::require_epilogue_vector(where, "bias_grad", operands.bias_grad, length, epilogue);
  }
  return g;
}

/// @brief GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as cuBLASLt's epilogue;
/// tanh is `activation_tanh` (numeric/tanh.hpp: a rational approximation in float).
template <class T>
MPX_HOST_DEVICE MPX_ALWAYS_INLINE T gelu_tanh(T x) {
  constexpr T k_sqrt_2_over_pi = static_cast<T>(0.7978845608028654);
  constexpr T k_cubic = static_cast<T>(0.044715);
  return static_cast<T>(0.5) * x *
         (static_cast<T>(1) + activation_tanh(k_sqrt_2_over_pi * (x + k_cubic * x * x * x)));
}

/// @brief d gelu_tanh(x) / dx.
template <class T>
MPX_HOST_DEVICE MPX_ALWAYS_INLINE T gelu_tanh_derivative(T x) {
  constexpr T k_sqrt_2_over_pi = static_cast<T>(0.7978845608028654);
  constexpr T k_cubic = static_cast<T>(0.044715);
  const T inner = k_sqrt_2_over_pi * (x + k_cubic * x * x * x);
  const T t = activation_tanh(inner);
  const T d_inner = k_sqrt_2_over_pi * (static_cast<T>(1) + static_cast<T>(3) * k_cubic * x * x);
  return static_cast<T>(0.5) * (static_cast<T>(1) + t) +
         static_cast<T>(0.5) * x * (static_cast<T>(1) - t * t) * d_inner;
}

/// @brief ReLU that lets NaN through (so a later finite check still sees it).
template <class T>
MPX_HOST_DEVICE inline T relu(T x) {
  return x < static_cast<T>(0) ? static_cast<T>(0) : x;
}

/// @brief d relu(x) / dx at the pre-activation (or, equivalently, the output) x: 1 where x > 0.
template <class T>
MPX_HOST_DEVICE inline T relu_derivative(T x) {
  return x > static_cast<T>(0) ? static_cast<T>(1) : static_cast<T>(0);
}

}  // namespace mpx
