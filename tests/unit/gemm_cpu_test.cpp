// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx::cpu::gemm against an fp64 reference written here from gemm_spec.hpp's semantics: plain loops in
// double over the operands after rounding them to the compute type, the epilogue in double, and the
// per-precision tolerances of tests/support/tolerances.hpp.

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../support/relu_mask.hpp"
#include "../support/tolerances.hpp"
#include "mpx/backend/cpu/gemm.hpp"
#include "mpx/backend/gemm_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/memory_stats.hpp"
#include "mpx/tensor/tensor.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Epilogue;
using mpx::GemmConfig;
using mpx::Shape;
using mpx::Tensor;
using mpx::Transpose;

// A random code of an 8-bit format (mpx::Encoded), any but the non-finite ones, so that sums of
// products of such codes stay finite.
template <class Code>
Code random_finite_code(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> code(0, 255);
  Code x;
  do x = Code::from_bits(static_cast<std::uint8_t>(code(rng)));
  while (!std::isfinite(static_cast<float>(x)));
  return x;
}

/// A precision under test and the element type of D (the compute type's storage or the accumulate type).
template <mpx::NumericTag ComputeTag, mpx::Element DElement>
struct GemmCase {
  using Compute = ComputeTag;
  using D = DElement;
};
using Fp32 = GemmCase<mpx::Float, float>;
using Tf32 = GemmCase<mpx::TF32, float>;
using Fp64 = GemmCase<mpx::Double, double>;
using Fp16 = GemmCase<mpx::Half, Eigen::half>;
using Fp16IntoFp32 = GemmCase<mpx::Half, float>;
using Bf16 = GemmCase<mpx::BFloat16, Eigen::bfloat16>;
using Bf16IntoFp32 = GemmCase<mpx::BFloat16, float>;

template <class T>
double widen(T value) {
  if constexpr (std::is_same_v<T, double>) {
    return value;
  } else {
    return static_cast<double>(static_cast<float>(value));
  }
}

template <class T>
T narrow(double value) {
  if constexpr (std::is_same_v<T, double>) {
    return value;
  } else {
    return static_cast<T>(static_cast<float>(value));
  }
}

// fp32 -> TF32 written independently of mpx::round_tf32: keep 11 significant bits (10 stored + the
// implicit one), ties away from zero (std::round), which is what cvt.rna.tf32.f32 does.
double round_tf32_reference(double x) {
  if (x == 0.0) return x;
  int exponent = 0;
  const double mantissa = std::frexp(x, &exponent);  // |mantissa| in [0.5, 1)
  return std::ldexp(std::round(std::ldexp(mantissa, 11)), exponent - 11);
}

// The value a stored operand element has in the compute type: TF32 rounds fp32 storage; the others
// are stored in their compute type already.
template <class Compute, class S>
double compute_value(S stored) {
  if constexpr (std::is_same_v<Compute, mpx::TF32>) {
    return round_tf32_reference(widen(stored));
  } else {
    return widen(stored);
  }
}

template <class T>
Tensor<T> random_tensor(const Shape& shape, std::mt19937_64& rng, double low = -1.0, double high = 1.0) {
  std::uniform_real_distribution<double> distribution(low, high);
  auto tensor = Tensor<T>::uninitialized(shape);
  for (T& element : tensor.values()) element = narrow<T>(distribution(rng));
  return tensor;
}

template <class T>
std::vector<double> to_doubles(const Tensor<T>& tensor) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(tensor.numel()));
  for (const T& element : tensor.values()) out.push_back(widen(element));
  return out;
}

/// op(X) in double, rows x cols, after rounding X's elements to the compute type.
struct Matrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<double> values;
  double operator()(std::int64_t r, std::int64_t c) const {
    return values[static_cast<std::size_t>(r * cols + c)];
  }
};

template <class Compute, class S>
Matrix op_matrix(const Tensor<S>& stored, Transpose transpose) {
  const bool t = transpose == Transpose::Yes;
  Matrix m{t ? stored.shape()[1] : stored.shape()[0], t ? stored.shape()[0] : stored.shape()[1], {}};
  m.values.resize(static_cast<std::size_t>(m.rows * m.cols));
  for (std::int64_t r = 0; r < m.rows; ++r) {
    for (std::int64_t c = 0; c < m.cols; ++c) {
      const std::int64_t source = t ? c * m.rows + r : r * m.cols + c;
      m.values[static_cast<std::size_t>(r * m.cols + c)] = compute_value<Compute>(stored[source]);
    }
  }
  return m;
}

// GELU (tanh form) and its derivative in double, written from the formula rather than taken from
// gemm_spec.hpp; the derivative uses sech^2 = 1 / cosh^2 where the library uses 1 - tanh^2.
constexpr double k_sqrt_2_over_pi = 0.79788456080286535588;
constexpr double k_gelu_cubic = 0.044715;
double gelu_reference(double x) {
  return 0.5 * x * (1.0 + std::tanh(k_sqrt_2_over_pi * (x + k_gelu_cubic * x * x * x)));
}
double gelu_derivative_reference(double x) {
  const double inner = k_sqrt_2_over_pi * (x + k_gelu_cubic * x * x * x);
  const double sech = 1.0 / std::cosh(inner);
  return 0.5 * (1.0 + std::tanh(inner)) +
         0.5 * x * sech * sech * k_sqrt_2_over_pi * (1.0 + 3.0 * k_gelu_cubic * x * x);
}

/// What the reference produces: D (and aux) before rounding, bias_grad, and each value's magnitude.
struct Reference {
  std::vector<double> d, d_magnitude;
  std::vector<double> aux;       // GeluAuxBias: the pre-activation; its magnitude is d_magnitude's
  std::vector<double> relu_pre;  // ReluAuxBias: the pre-activation whose sign the mask holds
  std::vector<double> bias_grad, bias_grad_magnitude;
};

/// Inputs of one reference GEMM: op(A), op(B), C (empty: beta is 0), bias and aux as stored.
struct ReferenceInputs {
  Matrix a, b;
  std::vector<double> c, bias, aux;
};

Reference reference_gemm(const ReferenceInputs& in, const GemmConfig& config) {
  const std::int64_t m_size = in.a.rows, n_size = in.b.cols, k_size = in.a.cols;
  const double alpha = config.alpha, beta = config.beta;
  const Epilogue e = config.epilogue;
  const bool column_grad = e == Epilogue::DReluBGrad || e == Epilogue::DGeluBGrad;
  Reference out;
  const auto mn = static_cast<std::size_t>(m_size * n_size);
  out.d.resize(mn);
  out.d_magnitude.resize(mn);
  if (e == Epilogue::GeluAuxBias) out.aux.resize(mn);
  if (e == Epilogue::ReluAuxBias) out.relu_pre.resize(mn);
  if (column_grad || e == Epilogue::BGradB) {
    out.bias_grad.assign(static_cast<std::size_t>(n_size), 0.0);
    out.bias_grad_magnitude.assign(static_cast<std::size_t>(n_size), 0.0);
  }
  if (e == Epilogue::BGradA) {
    out.bias_grad.assign(static_cast<std::size_t>(m_size), 0.0);
    out.bias_grad_magnitude.assign(static_cast<std::size_t>(m_size), 0.0);
  }
  for (std::int64_t m = 0; m < m_size; ++m) {
    for (std::int64_t n = 0; n < n_size; ++n) {
      const auto i = static_cast<std::size_t>(m * n_size + n);
      double sum = 0.0, sum_abs = 0.0;
      for (std::int64_t k = 0; k < k_size; ++k) {
        sum += in.a(m, k) * in.b(k, n);
        sum_abs += std::fabs(in.a(m, k) * in.b(k, n));
      }
      double t = alpha * sum;
      double magnitude = std::fabs(alpha) * sum_abs;
      if (!in.c.empty()) {
        t += beta * in.c[i];
        magnitude += std::fabs(beta * in.c[i]);
      }
      const double bias = mpx::reads_bias(e) ? in.bias[static_cast<std::size_t>(n)] : 0.0;
      magnitude += std::fabs(bias);
      double value = t;
      switch (e) {
        case Epilogue::Bias: value = t + bias; break;
        case Epilogue::ReluBias: value = std::max(t + bias, 0.0); break;
        case Epilogue::ReluAuxBias:
          out.relu_pre[i] = t + bias;
          value = std::max(t + bias, 0.0);
          break;
        case Epilogue::GeluBias: value = gelu_reference(t + bias); break;
        case Epilogue::GeluAuxBias:
          out.aux[i] = t + bias;
          value = gelu_reference(t + bias);
          break;
        case Epilogue::DRelu:
        case Epilogue::DReluBGrad: value = in.aux[i] > 0.0 ? t : 0.0; break;
        case Epilogue::DGelu:
        case Epilogue::DGeluBGrad: value = t * gelu_derivative_reference(in.aux[i]); break;
        default: break;
      }
      out.d[i] = value;
      out.d_magnitude[i] = magnitude;
      if (column_grad) {
        out.bias_grad[static_cast<std::size_t>(n)] += value;
        out.bias_grad_magnitude[static_cast<std::size_t>(n)] += magnitude;
      }
    }
  }
  if (e == Epilogue::BGradA) {
    for (std::int64_t m = 0; m < m_size; ++m) {
      for (std::int64_t k = 0; k < k_size; ++k) {
        out.bias_grad[static_cast<std::size_t>(m)] += in.a(m, k);
        out.bias_grad_magnitude[static_cast<std::size_t>(m)] += std::fabs(in.a(m, k));
      }
    }
  }
  if (e == Epilogue::BGradB) {
    for (std::int64_t n = 0; n < n_size; ++n) {
      for (std::int64_t k = 0; k < k_size; ++k) {
        out.bias_grad[static_cast<std::size_t>(n)] += in.b(k, n);
        out.bias_grad_magnitude[static_cast<std::size_t>(n)] += std::fabs(in.b(k, n));
      }
    }
  }
  return out;
}

/// The element of `actual` furthest outside (or nearest to) its bound; ratio > 1 means a failure.
struct Worst {
  double ratio = 0.0;
  std::size_t index = 0;
  double actual = 0.0, expected = 0.0, bound = 0.0;
  std::string describe(const char* what) const {
    std::ostringstream out;
    out.precision(10);
    out << what << "[" << index << "] = " << actual << ", reference " << expected << ", |error| "
        << std::fabs(actual - expected) << " vs bound " << bound << " (ratio " << ratio << ")";
    return out.str();
  }
};

Worst worst_error(const std::vector<double>& actual, const std::vector<double>& expected,
                  const std::vector<double>& magnitude, const mpx::test::GemmTolerance& tolerance) {
  Worst worst;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double bound = tolerance.bound(magnitude[i], expected[i]);
    const double error = std::fabs(actual[i] - expected[i]);
    // NaN compares false: count it as infinitely wrong.
    const double ratio =
        error <= bound ? (bound > 0 ? error / bound : 0.0) : std::numeric_limits<double>::infinity();
    if (i == 0 || ratio > worst.ratio) worst = {ratio, i, actual[i], expected[i], bound};
  }
  return worst;
}

/// Where beta's C comes from.
enum class Accumulate { None, ExplicitC, PreviousD };

std::string describe(Transpose t) {
  return t == Transpose::Yes ? "T" : "N";
}

/// Runs one mpx::cpu::gemm call on random inputs and checks D, aux and bias_grad against the
/// reference. Returns nothing; failures are Catch2 CHECKs with the whole configuration in INFO.
template <class Case>
void check_gemm(std::int64_t m, std::int64_t n, std::int64_t k, GemmConfig config, Accumulate accumulate,
                std::uint64_t seed) {
  using Compute = typename Case::Compute;
  using TD = typename Case::D;
  using S = mpx::storage_t<Compute>;
  using Acc = mpx::accumulate_t<Compute>;
  const Epilogue e = config.epilogue;
  INFO("compute " << mpx::numeric_traits<Compute>::name << ", D "
                  << mpx::numeric_traits<mpx::tag_of_t<TD>>::name << ", M N K = " << m << " " << n << " " << k
                  << ", op " << describe(config.transpose_a) << describe(config.transpose_b) << ", alpha "
                  << config.alpha << ", beta " << config.beta << ", C from "
                  << (accumulate == Accumulate::None        ? "nowhere"
                      : accumulate == Accumulate::ExplicitC ? "operand C"
                                                            : "D")
                  << ", epilogue " << mpx::to_string(e));

  std::mt19937_64 rng(seed);
  const bool ta = config.transpose_a == Transpose::Yes;
  const bool tb = config.transpose_b == Transpose::Yes;
  const auto a = random_tensor<S>(ta ? Shape{k, m} : Shape{m, k}, rng);
  const auto b = random_tensor<S>(tb ? Shape{n, k} : Shape{k, n}, rng);
  const auto c = random_tensor<TD>(Shape{m, n}, rng);
  const auto bias = random_tensor<TD>(Shape{n}, rng);
  // aux read by DGelu, and the sign bits of DRelu's mask: a forward pre-activation, both signs and
  // well into gelu's curve.
  auto aux = random_tensor<TD>(Shape{m, n}, rng, -3.0, 3.0);
  Tensor<std::int32_t> relu_mask = mpx::test::relu_mask_of(aux);
  // bias_grad starts as garbage: the epilogue must overwrite it, not add to it.
  Tensor<Acc> bias_grad(Shape{e == Epilogue::BGradA ? m : n});
  bias_grad.fill(static_cast<Acc>(1234.5));

  // D's previous contents: C itself when accumulating into D; NaN otherwise, which beta = 0 must
  // ignore (cuBLAS semantics: with beta == 0, C is not read).
  auto d = Tensor<TD>::uninitialized(Shape{m, n});
  if (accumulate == Accumulate::PreviousD) {
    std::copy(c.values().begin(), c.values().end(), d.values().begin());
  } else {
    d.fill(narrow<TD>(std::numeric_limits<double>::quiet_NaN()));
  }
  if (accumulate == Accumulate::None) config.beta = 0.0f;

  mpx::cpu::GemmOperands<TD, Acc> operands;
  if (accumulate == Accumulate::ExplicitC) operands.c = &c;
  if (mpx::reads_bias(e)) operands.bias = &bias;
  if (mpx::reads_aux(e) || mpx::writes_aux(e)) operands.aux = &aux;
  if (mpx::reads_relu_mask(e) || mpx::writes_relu_mask(e)) operands.relu_mask = &relu_mask;
  if (mpx::writes_bias_grad(e)) operands.bias_grad = &bias_grad;

  // The reference's inputs are taken before the call: aux is an output of GeluAuxBias.
  ReferenceInputs in{
      op_matrix<Compute>(a, config.transpose_a), op_matrix<Compute>(b, config.transpose_b), {}, {}, {}};
  if (accumulate != Accumulate::None) in.c = to_doubles(c);
  in.bias = to_doubles(bias);
  in.aux = to_doubles(aux);
  const Reference expected = reference_gemm(in, config);

  mpx::cpu::gemm<Compute>(a, b, d, config, operands);

  const auto tolerance = mpx::test::gemm_tolerance<Compute, mpx::tag_of_t<TD>>(k);
  const Worst d_worst = worst_error(to_doubles(d), expected.d, expected.d_magnitude, tolerance);
  INFO(d_worst.describe("D"));
  CHECK(d_worst.ratio <= 1.0);

  if (mpx::writes_aux(e)) {
    const Worst aux_worst = worst_error(to_doubles(aux), expected.aux, expected.d_magnitude, tolerance);
    INFO(aux_worst.describe("aux"));
    CHECK(aux_worst.ratio <= 1.0);
  }
  if (mpx::writes_relu_mask(e)) {
    // The sign of t + bias, wherever the computed t is further from -bias than its error bound.
    std::int64_t checked = 0;
    for (std::int64_t row = 0; row < m; ++row) {
      for (std::int64_t col = 0; col < n; ++col) {
        const auto i = static_cast<std::size_t>(row * n + col);
        if (std::fabs(expected.relu_pre[i]) <= tolerance.accumulate * expected.d_magnitude[i]) {
          continue;
        }
        INFO("mask bit (" << row << ", " << col << "), pre-activation " << expected.relu_pre[i]);
        CHECK(mpx::relu_mask_bit(relu_mask.data() + row * mpx::relu_mask_words(n), col) ==
              (expected.relu_pre[i] > 0.0));
        ++checked;
      }
    }
    CHECK(checked > 0);
  }
  if (mpx::writes_bias_grad(e)) {
    const bool of_operand = e == Epilogue::BGradA || e == Epilogue::BGradB;
    const auto grad_tolerance = of_operand ? mpx::test::gemm_bias_grad_tolerance<Compute>(0, k)
                                           : mpx::test::gemm_bias_grad_tolerance<Compute>(k, m);
    const Worst grad_worst =
        worst_error(to_doubles(bias_grad), expected.bias_grad, expected.bias_grad_magnitude, grad_tolerance);
    INFO(grad_worst.describe("bias_grad"));
    CHECK(grad_worst.ratio <= 1.0);
  }
}

constexpr Epilogue k_all_epilogues[] = {Epilogue::Default,     Epilogue::Bias,       Epilogue::ReluBias,
                                        Epilogue::ReluAuxBias, Epilogue::GeluBias,   Epilogue::GeluAuxBias,
                                        Epilogue::DRelu,       Epilogue::DReluBGrad, Epilogue::DGelu,
                                        Epilogue::DGeluBGrad,  Epilogue::BGradA,     Epilogue::BGradB};

// Each of 1, 7 and 129 appears once in each of M, N and K.
struct Dims {
  std::int64_t m, n, k;
};
constexpr Dims k_rotated_shapes[] = {{1, 7, 129}, {7, 129, 1}, {129, 1, 7}};

std::uint64_t seed_of(std::int64_t m, std::int64_t n, std::int64_t k, int variant) {
  return 0x9e3779b97f4a7c15ull ^ static_cast<std::uint64_t>((m * 1000003 + n) * 1000003 + k) * 31u ^
         static_cast<std::uint64_t>(variant);
}

}  // namespace

TEMPLATE_TEST_CASE("cpu::gemm matches the fp64 reference for every shape in {1,7,129}^3 and transpose",
                   "[gemm][cpu]", Fp32, Tf32, Fp64, Fp16, Fp16IntoFp32, Bf16, Bf16IntoFp32) {
  const std::int64_t m = GENERATE(1, 7, 129);
  const std::int64_t n = GENERATE(1, 7, 129);
  const std::int64_t k = GENERATE(1, 7, 129);
  const Transpose ta = GENERATE(Transpose::No, Transpose::Yes);
  const Transpose tb = GENERATE(Transpose::No, Transpose::Yes);
  GemmConfig config{.transpose_a = ta, .transpose_b = tb};
  check_gemm<TestType>(m, n, k, config, Accumulate::None, seed_of(m, n, k, 1));
}

TEMPLATE_TEST_CASE("cpu::gemm scales by alpha and adds beta times C, from operand C or D's previous contents",
                   "[gemm][cpu]", Fp32, Tf32, Fp64, Fp16, Fp16IntoFp32, Bf16, Bf16IntoFp32) {
  const Dims dims = GENERATE(from_range(std::begin(k_rotated_shapes), std::end(k_rotated_shapes)));
  const Accumulate accumulate = GENERATE(Accumulate::ExplicitC, Accumulate::PreviousD);
  const auto [alpha, beta] = GENERATE(table<float, float>({{1.0f, 1.0f}, {-0.5f, 2.0f}, {2.5f, -0.75f}}));
  const Transpose ta = GENERATE(Transpose::No, Transpose::Yes);
  const Transpose tb = GENERATE(Transpose::No, Transpose::Yes);
  GemmConfig config{.transpose_a = ta, .transpose_b = tb, .alpha = alpha, .beta = beta};
  check_gemm<TestType>(dims.m, dims.n, dims.k, config, accumulate, seed_of(dims.m, dims.n, dims.k, 2));
}

TEST_CASE("cpu::gemm with beta = 1 adds D's contents to the finished product, once, for any k",
          "[gemm][cpu]") {
  // Gradient accumulation over micro-batches must equal the sum of the micro-batches' own gradients
  // (what data-parallel ranks add up): D + A B computed at once equals D + (A B computed alone), bit
  // for bit, also when k spans several of Eigen's k-blocks and the product is large enough for its
  // parallel path. Accumulating in place, Eigen would add D to the first block's partial sum instead.
  std::mt19937_64 rng(17);
  for (const std::int64_t k : {std::int64_t{24}, std::int64_t{3000}}) {
    for (const std::int64_t m : {std::int64_t{16}, std::int64_t{300}}) {
      CAPTURE(k, m);
      const std::int64_t n = 40;
      const auto a = random_tensor<Eigen::bfloat16>(Shape{k, m}, rng);
      const auto b = random_tensor<Eigen::bfloat16>(Shape{k, n}, rng);
      const auto previous = random_tensor<float>(Shape{m, n}, rng);
      Tensor<float> product(Shape{m, n});
      mpx::cpu::gemm<mpx::BFloat16>(a, b, product, {.transpose_a = Transpose::Yes});
      Tensor<float> accumulated = previous.clone();
      mpx::cpu::gemm<mpx::BFloat16>(a, b, accumulated, {.transpose_a = Transpose::Yes, .beta = 1.0f});
      for (std::int64_t i = 0; i < accumulated.numel(); ++i) {
        CAPTURE(i);
        REQUIRE(accumulated[i] == previous[i] + product[i]);
      }
    }
  }
}

TEST_CASE("cpu::gemm into a 16-bit D with beta = 1 rounds D + the finished fp32 product once",
          "[gemm][cpu]") {
  // cuBLASLt's t = alpha A B + beta C, rounded once into D: C joins the finished fp32 product, not the
  // first k-block's partial sum, whatever k is.
  std::mt19937_64 rng(23);
  for (const std::int64_t k : {std::int64_t{24}, std::int64_t{3000}}) {
    CAPTURE(k);
    const std::int64_t m = 70, n = 40;
    const auto a = random_tensor<Eigen::bfloat16>(Shape{m, k}, rng);
    const auto b = random_tensor<Eigen::bfloat16>(Shape{k, n}, rng);
    const auto previous = random_tensor<Eigen::bfloat16>(Shape{m, n}, rng);
    Tensor<float> product(Shape{m, n});
    mpx::cpu::gemm<mpx::BFloat16>(a, b, product, {});
    Tensor<Eigen::bfloat16> accumulated = previous.clone();
    mpx::cpu::gemm<mpx::BFloat16>(a, b, accumulated, {.beta = 1.0f});
    for (std::int64_t i = 0; i < accumulated.numel(); ++i) {
      CAPTURE(i);
      const float expected = static_cast<float>(previous[i]) + product[i];
      REQUIRE(mpx::bits_of(accumulated[i]) == mpx::bits_of(mpx::round_to<mpx::BFloat16>(expected)));
    }
  }
}

TEST_CASE("cpu::gemm<BFloat16> keeps subnormal products and sums, as cuBLASLt does", "[gemm][cpu]") {
  // oneDNN's bf16 dot products flush subnormals to zero; mpx takes them only for operands whose
  // products and sums cannot be subnormal (gemm_kernel.hpp), and widens to fp32 otherwise.
  using Bf16 = Eigen::bfloat16;
  Tensor<Bf16> a(Shape{1, 2}), b(Shape{2, 1});
  a[0] = Bf16(1e-20f);
  a[1] = Bf16(0.0f);
  b[0] = Bf16(1e-19f);
  b[1] = Bf16(3.0f);
  Tensor<float> d(Shape{1, 1});
  mpx::cpu::gemm<mpx::BFloat16>(a, b, d, {});
  const float exact = static_cast<float>(a[0]) * static_cast<float>(b[0]);  // about 1e-39: subnormal
  REQUIRE(exact != 0.0f);
  REQUIRE(std::fpclassify(exact) == FP_SUBNORMAL);
  REQUIRE(d[0] == exact);
  // A subnormal operand is kept too (its product with 2 is subnormal as well).
  a[0] = Bf16(0x1p-130f);  // a bf16 subnormal
  b[0] = Bf16(2.0f);
  mpx::cpu::gemm<mpx::BFloat16>(a, b, d, {});
  REQUIRE(d[0] == static_cast<float>(a[0]) * 2.0f);
  REQUIRE(d[0] != 0.0f);
}

TEST_CASE("bf16 dot products are taken only where flushing subnormals cannot change a result",
          "[gemm][cpu]") {
  // Every nonzero |a| >= 2^ea, |b| >= 2^eb with ea + eb >= -100, no subnormal, |alpha| >= 2^-12 or 0
  // (backend/cpu/bf16_exactness.hpp); zeros of either sign, infinities and NaN take no part.
  using Bf16 = Eigen::bfloat16;
  const auto exact = [](std::vector<float> a_values, std::vector<float> b_values, float alpha = 1.0f) {
    std::vector<Bf16> a(a_values.begin(), a_values.end()), b(b_values.begin(), b_values.end());
    return mpx::cpu::detail::bf16_products_stay_normal(a.data(), std::int64_t(a.size()), b.data(),
                                                       std::int64_t(b.size()), alpha);
  };
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(exact({1.0f, 0.0f, -0x1p-50f}, {0x1p-50f, -2.0f}));   // ea + eb = -100
  CHECK(exact({0x1p-60f}, {0x1.8p-40f}));                     // -100 again
  CHECK(exact({1.0f, -0.0f, inf, -inf, nan}, {3.0f, 0.0f}));  // -0, Inf, NaN ignored
  CHECK(exact({0.0f, -0.0f}, {0.0f}));                        // nothing nonzero at all
  CHECK(exact({1.0f}, {1.0f}, 0x1p-12f));
  CHECK(exact({1.0f}, {1.0f}, -0x1p-12f));
  CHECK(exact({1.0f}, {1.0f}, 0.0f));
  CHECK_FALSE(exact({1.0f, 0x1p-50f}, {0x1.fcp-51f}));  // ea + eb = -101
  CHECK_FALSE(exact({0x1p-127f}, {1.0f}));              // a subnormal in A
  CHECK_FALSE(exact({1.0f}, {2.0f, -0x1p-130f}));       // a subnormal in B
  CHECK_FALSE(exact({1.0f}, {1.0f}, 0x1p-13f));         // alpha could make it subnormal
  CHECK_FALSE(exact({1.0f}, {1.0f}, nan));
  // Larger than one parallel chunk, the smallest value last.
  std::vector<float> many(100000, 1.0f);
  many.back() = 0x1p-101f;
  CHECK_FALSE(exact(many, {1.0f}));
  many.back() = 0x1p-100f;
  CHECK(exact(many, {1.0f}));
#if defined(MPX_HAS_ONEDNN) && MPX_HAS_ONEDNN
  // Where the CPU has bf16 dot products, ordinary values take them (so the other GEMM tests run
  // that path here).
  if (mpx::cpu::detail::onednn::has_native_bf16()) {
    const Bf16 a[] = {Bf16(0.5f), Bf16(-1.25f)}, b[] = {Bf16(3.0f), Bf16(0.0f)};
    CHECK(mpx::cpu::detail::native_bf16_products<mpx::BFloat16>(a, 2, b, 2, 1.0f));
  }
#endif
}

TEST_CASE("cpu::gemm gives the same bits on one thread and on several", "[gemm][cpu][threads]") {
#ifdef _OPENMP
  // Each product is cut into tiles by its shape alone, each tile one kernel call on one thread, so
  // D cannot depend on the thread count: not for many tiles, not for one tile with a long k (a
  // single row is one that oneDNN's own threads would split along k), not for a batch.
  struct Case {
    std::int64_t m, n, k, batch;
    Transpose ta, tb;
  };
  const Case cases[] = {{1024, 384, 128, 1, Transpose::No, Transpose::Yes},
                        {384, 128, 1024, 1, Transpose::Yes, Transpose::No},
                        {48, 40, 20000, 1, Transpose::No, Transpose::No},
                        {1, 64, 30000, 1, Transpose::No, Transpose::No},  // oneDNN threads it along k
                        {300, 2000, 50, 1, Transpose::No, Transpose::Yes},
                        {64, 64, 32, 12, Transpose::No, Transpose::Yes}};
  std::mt19937_64 rng(31);
  const int threads = omp_get_max_threads();
  for (const Case& c : cases) {
    CAPTURE(c.m, c.n, c.k, c.batch);
    const Shape a_shape = c.ta == Transpose::Yes ? Shape{c.batch * c.k, c.m} : Shape{c.batch * c.m, c.k};
    const Shape b_shape = c.tb == Transpose::Yes ? Shape{c.batch * c.n, c.k} : Shape{c.batch * c.k, c.n};
    const auto a = random_tensor<float>(a_shape, rng);
    const auto b = random_tensor<float>(b_shape, rng);
    const auto a16 = random_tensor<Eigen::bfloat16>(a_shape, rng);
    const auto b16 = random_tensor<Eigen::bfloat16>(b_shape, rng);
    const GemmConfig config{.transpose_a = c.ta, .transpose_b = c.tb, .batch_count = c.batch};
    const auto run = [&](int thread_count) {
      mpx::cpu::release_gemm_scratch();  // no kernel state carried over from another thread count
      omp_set_num_threads(thread_count);
      Tensor<float> d(Shape{c.batch * c.m, c.n}), d16(Shape{c.batch * c.m, c.n});
      mpx::cpu::gemm<mpx::Float>(a, b, d, config);
      mpx::cpu::gemm<mpx::BFloat16>(a16, b16, d16, config);
      omp_set_num_threads(threads);
      return std::pair{std::move(d), std::move(d16)};
    };
    const auto [one, one16] = run(1);
    const auto [two, two16] = run(2);
    const auto [four, four16] = run(4);
    REQUIRE(std::memcmp(one.data(), two.data(), one.size_bytes()) == 0);
    REQUIRE(std::memcmp(one.data(), four.data(), one.size_bytes()) == 0);
    REQUIRE(std::memcmp(one16.data(), two16.data(), one16.size_bytes()) == 0);
    REQUIRE(std::memcmp(one16.data(), four16.data(), one16.size_bytes()) == 0);
  }
#else
  WARN("built without OpenMP: one thread only, nothing to compare");
#endif
}

TEST_CASE("cpu::gemm multiplies fp16 and TF32 operands as the fp32 GEMM multiplies them widened, bit for bit",
          "[gemm][cpu][conversion]") {
  // A converted operand is widened tile by tile on the thread that multiplies the tile where its
  // blocks fit a cache, else whole before the product (gemm.hpp). Either way each tile is the fp32
  // kernel's call on the same values, so D must equal the fp32 GEMM of the widened operands.
  struct Case {
    std::int64_t m, n, k, batch;
    Transpose ta, tb;
  };
  const Case cases[] = {
      {1024, 384, 128, 1, Transpose::No, Transpose::Yes},  {384, 128, 1024, 1, Transpose::Yes, Transpose::No},
      {300, 200, 5000, 1, Transpose::Yes, Transpose::Yes},  // both widened whole
      {128, 512, 784, 1, Transpose::No, Transpose::Yes},    // B per tile, A whole
      {128, 512, 784, 1, Transpose::Yes, Transpose::No},   {129, 7, 1, 1, Transpose::No, Transpose::No},
      {64, 64, 32, 12, Transpose::No, Transpose::Yes}};
  std::mt19937_64 rng(37);
  int a_per_tile = 0, b_per_tile = 0, whole = 0;
  const auto check = [&]<class Compute>(Compute, const Case& c) {
    using S = mpx::storage_t<Compute>;
    CAPTURE(mpx::numeric_traits<Compute>::name, c.m, c.n, c.k, c.batch, c.ta == Transpose::Yes,
            c.tb == Transpose::Yes);
    const Shape a_shape = c.ta == Transpose::Yes ? Shape{c.batch * c.k, c.m} : Shape{c.batch * c.m, c.k};
    const Shape b_shape = c.tb == Transpose::Yes ? Shape{c.batch * c.n, c.k} : Shape{c.batch * c.k, c.n};
    const auto a = random_tensor<S>(a_shape, rng);
    const auto b = random_tensor<S>(b_shape, rng);
    const auto widen = [](const Tensor<S>& x) {
      Tensor<float> wide(x.shape());
      for (std::int64_t i = 0; i < x.numel(); ++i) {
        wide[i] = std::is_same_v<Compute, mpx::TF32> ? mpx::round_to<mpx::TF32>(static_cast<float>(x[i]))
                                                     : static_cast<float>(x[i]);
      }
      return wide;
    };
    const GemmConfig config{.transpose_a = c.ta, .transpose_b = c.tb, .batch_count = c.batch};
    Tensor<float> d(Shape{c.batch * c.m, c.n}), expected(Shape{c.batch * c.m, c.n});
    mpx::cpu::gemm<Compute>(a, b, d, config);
    mpx::cpu::gemm<mpx::Float>(widen(a), widen(b), expected, config);
    REQUIRE(std::memcmp(d.data(), expected.data(), d.size_bytes()) == 0);
    const auto per_tile = mpx::cpu::detail::widens_per_tile<Compute, float>({c.m, c.n, c.k, c.batch});
    a_per_tile += per_tile.a;
    b_per_tile += per_tile.b;
    whole += !per_tile.a && !per_tile.b;
  };
  for (const Case& c : cases) {
    check(mpx::Half{}, c);
    check(mpx::TF32{}, c);
  }
  CHECK(a_per_tile > 0);  // every way was taken
  CHECK(b_per_tile > 0);
  CHECK(whole > 0);
}

TEMPLATE_TEST_CASE("cpu::gemm applies every epilogue (D, aux, bias_grad) like the reference",
                   "[gemm][cpu][epilogue]", Fp32, Tf32, Fp64, Fp16, Fp16IntoFp32, Bf16, Bf16IntoFp32) {
  const Epilogue epilogue = GENERATE(from_range(std::begin(k_all_epilogues), std::end(k_all_epilogues)));
  const Dims dims = GENERATE(Dims{1, 7, 129}, Dims{7, 129, 1}, Dims{129, 1, 7}, Dims{7, 7, 129});
  const Transpose ta = GENERATE(Transpose::No, Transpose::Yes);
  const Transpose tb = GENERATE(Transpose::No, Transpose::Yes);
  // Epilogues act on t = alpha op(A) op(B) + beta C, so exercise them with both terms present.
  GemmConfig config{
      .transpose_a = ta, .transpose_b = tb, .alpha = 0.75f, .beta = -0.5f, .epilogue = epilogue};
  check_gemm<TestType>(dims.m, dims.n, dims.k, config, Accumulate::ExplicitC,
                       seed_of(dims.m, dims.n, dims.k, 3 + static_cast<int>(epilogue)));
}

TEST_CASE("cpu::gemm<TF32> rounds fp32 operands to nearest, ties away from zero", "[gemm][cpu][tf32]") {
  // 1 + 2^-11 lies halfway between the TF32 neighbours 1 and 1 + 2^-10: the tie goes away from zero.
  // 1 + 2^-12 lies below the midpoint: it goes to 1. Values worked out by hand from the RNA rule.
  Tensor<float> a(Shape{1, 3});
  a[0] = 1.0f + 0x1p-11f;
  a[1] = 1.0f + 0x1p-12f;
  a[2] = -(1.0f + 0x1p-11f);
  Tensor<float> b(Shape{3, 1});
  b[0] = 1.0f;
  b[1] = 2.0f;
  b[2] = 4.0f;
  Tensor<float> d(Shape{1, 1});

  mpx::cpu::gemm<mpx::TF32>(a, b, d, {});
  // (1 + 2^-10) * 1 + 1 * 2 - (1 + 2^-10) * 4 = -1 - 3 * 2^-10, exact in fp32.
  CHECK(d[0] == -1.0f - 3.0f * 0x1p-10f);

  mpx::cpu::gemm<mpx::Float>(a, b, d, {});
  // fp32 keeps all bits: (1 + 2^-11) + 2 (1 + 2^-12) - 4 (1 + 2^-11) = -1 - 2^-10.
  CHECK(d[0] == -1.0f - 0x1p-10f);
}

TEST_CASE("cpu::gemm<TF32> differs from fp32 by more than fp32's tolerance on random data",
          "[gemm][cpu][tf32]") {
  // If TF32 compute skipped the operand rounding it would equal the fp32 result within fp32's
  // tolerance; rounding 13 mantissa bits away must move some results well outside it.
  constexpr std::int64_t m = 7, n = 7, k = 129;
  std::mt19937_64 rng(20260101);
  const auto a = random_tensor<float>(Shape{m, k}, rng);
  const auto b = random_tensor<float>(Shape{n, k}, rng);
  const GemmConfig config{.transpose_b = Transpose::Yes};
  Tensor<float> d_fp32(Shape{m, n});
  Tensor<float> d_tf32(Shape{m, n});
  mpx::cpu::gemm<mpx::Float>(a, b, d_fp32, config);
  mpx::cpu::gemm<mpx::TF32>(a, b, d_tf32, config);

  const auto tolerance = mpx::test::gemm_tolerance<mpx::Float, mpx::Float>(k);
  double worst_ratio = 0.0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double magnitude = 0.0;
      for (std::int64_t p = 0; p < k; ++p)
        magnitude += std::fabs(double{a[i * k + p]} * double{b[j * k + p]});
      const double bound = tolerance.bound(magnitude, d_fp32[i * n + j]);
      worst_ratio =
          std::max(worst_ratio, std::fabs(double{d_tf32[i * n + j]} - double{d_fp32[i * n + j]}) / bound);
    }
  }
  INFO("largest |tf32 - fp32| / fp32 tolerance: " << worst_ratio);
  CHECK(worst_ratio > 2.0);
}

namespace {

// A value of storage type S spread over 2^[min_exp, max_exp] with a random sign and mantissa, so that
// products land in the normal, subnormal, underflow and overflow ranges of the 16-bit formats.
template <class S>
S wide_range_value(std::mt19937_64& rng, int min_exp, int max_exp) {
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(min_exp, max_exp);
  const double sign = (rng() & 1u) != 0 ? -1.0 : 1.0;
  return narrow<S>(sign * std::ldexp(mantissa(rng), exponent(rng)));
}

template <class S>
std::uint32_t bits_of_value(S value) {
  if constexpr (std::is_same_v<S, float>) {
    return Eigen::numext::bit_cast<std::uint32_t>(value);
  } else {
    return mpx::bits_of(value);
  }
}

template <class S>
void set_special_values(Tensor<S>& tensor) {
  // Inputs the vectorised conversions must treat as the scalar ones do.
  const double inf = std::numeric_limits<double>::infinity();
  const double specials[] = {0.0,
                             -0.0,
                             inf,
                             -inf,
                             std::numeric_limits<double>::quiet_NaN(),
                             -std::numeric_limits<double>::quiet_NaN(),
                             double{mpx::numeric_traits<mpx::tag_of_t<S>>::max_finite},
                             double{mpx::min_normal_v<mpx::tag_of_t<S>>} / 4};
  std::int64_t i = 0;
  for (const double value : specials) tensor[(i += 5) % tensor.numel()] = narrow<S>(value);
}

}  // namespace

TEMPLATE_TEST_CASE("cpu::gemm widens fp16, bf16 and tf32 operands exactly like the scalar conversions",
                   "[gemm][cpu][conversion]", mpx::Half, mpx::BFloat16, mpx::TF32) {
  // D = A * [1] holds the operand as the product saw it. 67 rows: whole vectors and a ragged tail.
  using S = mpx::storage_t<TestType>;
  std::mt19937_64 rng(99);
  auto a = Tensor<S>::uninitialized(Shape{67, 1});
  for (S& value : a.values()) value = wide_range_value<S>(rng, -30, 15);
  set_special_values(a);
  Tensor<S> one(Shape{1, 1});
  one[0] = narrow<S>(1.0);
  Tensor<float> d(Shape{67, 1});
  mpx::cpu::gemm<TestType>(a, one, d, {});
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    const float expected = std::is_same_v<TestType, mpx::TF32>
                               ? mpx::round_to<mpx::TF32>(static_cast<float>(a[i]))
                               : static_cast<float>(a[i]);
    INFO("row " << i << ": operand " << static_cast<float>(a[i]) << ", expected " << expected << ", got "
                << d[i]);
    if (std::isnan(expected)) {
      CHECK(std::isnan(d[i]));
    } else if (expected == 0.0f) {
      CHECK(d[i] == 0.0f);  // 0 + (-0) * 1 is +0: the sign of a zero product is the sum's business
    } else {
      CHECK(bits_of_value(d[i]) == bits_of_value(expected));
    }
  }
}

TEMPLATE_TEST_CASE("cpu::gemm rounds D into fp16 and bf16 bit for bit as round_to does",
                   "[gemm][cpu][conversion]", mpx::Half, mpx::BFloat16) {
  // The same GEMM once into fp32 and once into the 16-bit type: the 16-bit D must be round_to of the
  // fp32 one, for ties, subnormals, underflow, overflow and NaN alike. 5 x 67: vectors and a tail.
  using S = mpx::storage_t<TestType>;
  constexpr bool half = std::is_same_v<TestType, mpx::Half>;
  std::mt19937_64 rng(2718);
  const int min_exp = half ? -16 : -70, max_exp = half ? 9 : 70;
  auto a = Tensor<S>::uninitialized(Shape{5, 1});
  auto b = Tensor<S>::uninitialized(Shape{1, 67});
  for (S& value : a.values()) value = wide_range_value<S>(rng, min_exp, max_exp);
  for (S& value : b.values()) value = wide_range_value<S>(rng, min_exp, max_exp);
  set_special_values(b);
  // (1 + 3 eps) * 1.5 = 1.5 + 4 eps + eps/2 lies halfway between 1.5 + 4 eps (even) and 1.5 + 5 eps:
  // a tie, which must round down to the even neighbour.
  a[0] = narrow<S>(1.0 + 3.0 * double{mpx::epsilon_v<TestType>});
  b[1] = narrow<S>(1.5);
  // alpha = 3 adds bits to exact products, so most results need rounding.
  const float alpha = GENERATE(1.0f, 3.0f);
  // alpha * a[1] * b[2] is finite in fp32 but at least halfway from the format's largest finite value
  // to the next power of two, so it rounds to infinity.
  const bool triple = alpha == 3.0f;
  a[1] = narrow<S>(half ? std::ldexp(1.0009765625, triple ? 7 : 8)
                        : std::ldexp(triple ? 1.015625 : 1.0078125, 64));
  b[2] = narrow<S>(half ? std::ldexp(triple ? 1.33203125 : 1.998046875, 7)
                        : std::ldexp(triple ? 1.3125 : 1.984375, triple ? 62 : 63));
  const GemmConfig config{.alpha = alpha};
  Tensor<float> d32(Shape{5, 67});
  Tensor<S> d16(Shape{5, 67});
  mpx::cpu::gemm<TestType>(a, b, d32, config);
  mpx::cpu::gemm<TestType>(a, b, d16, config);
  int subnormal = 0, overflow = 0;
  for (std::int64_t i = 0; i < d32.numel(); ++i) {
    const S expected = mpx::round_to<TestType>(d32[i]);
    INFO("element " << i << ": fp32 " << d32[i] << ", round_to " << static_cast<float>(expected) << ", D "
                    << static_cast<float>(d16[i]));
    CHECK(bits_of_value(d16[i]) == bits_of_value(expected));
    const float magnitude = std::fabs(static_cast<float>(expected));
    subnormal += magnitude > 0 && magnitude < mpx::min_normal_v<TestType> ? 1 : 0;
    overflow += std::isinf(magnitude) && std::isfinite(d32[i]) ? 1 : 0;
  }
  // The data must reach the ranges the test is about.
  CHECK(subnormal > 0);
  CHECK(overflow > 0);
}

TEST_CASE("cpu::gemm's vectorised conversions give the scalar conversions' bits on boundary inputs",
          "[gemm][cpu][conversion]") {
  // White-box: gemm.hpp converts whole arrays with branch-free code instead of calling round_to /
  // static_cast per element. Compare them on every 16-bit pattern and, for fp32, on every sign and
  // exponent and top mantissa bits combined with low halves at the rounding boundaries of bf16 (bit
  // 16), fp16 and TF32 (bit 13), NaN payloads included.
  std::vector<float> floats;
  const std::uint32_t low_halves[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff,
                                      0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0xffff};
  for (std::uint32_t high = 0; high < 0x10000u; ++high) {
    for (const std::uint32_t low : low_halves)
      floats.push_back(Eigen::numext::bit_cast<float>(high << 16 | low));
  }
  const auto count = static_cast<std::int64_t>(floats.size());

  std::vector<Eigen::half> halves(floats.size());
  std::vector<Eigen::bfloat16> bfloats(floats.size());
  std::vector<float> tf32s(floats.size());
  mpx::cpu::detail::round_range(floats.data(), halves.data(), 0, count);
  mpx::cpu::detail::round_range(floats.data(), bfloats.data(), 0, count);
  mpx::cpu::detail::widen_range<mpx::TF32>(floats.data(), tf32s.data(), 0, count);
  std::int64_t half_mismatches = 0, bfloat_mismatches = 0, tf32_mismatches = 0;
  for (std::size_t i = 0; i < floats.size(); ++i) {
    half_mismatches += mpx::bits_of(halves[i]) != mpx::bits_of(mpx::round_to<mpx::Half>(floats[i])) ? 1 : 0;
    bfloat_mismatches +=
        mpx::bits_of(bfloats[i]) != mpx::bits_of(mpx::round_to<mpx::BFloat16>(floats[i])) ? 1 : 0;
    tf32_mismatches += bits_of_value(tf32s[i]) != bits_of_value(mpx::round_tf32(floats[i])) ? 1 : 0;
  }
  CHECK(half_mismatches == 0);
  CHECK(bfloat_mismatches == 0);
  CHECK(tf32_mismatches == 0);

  std::vector<Eigen::half> all_halves(0x10000);
  std::vector<Eigen::bfloat16> all_bfloats(0x10000);
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    all_halves[bits] = mpx::from_bits<Eigen::half>(static_cast<std::uint16_t>(bits));
    all_bfloats[bits] = mpx::from_bits<Eigen::bfloat16>(static_cast<std::uint16_t>(bits));
  }
  std::vector<float> from_half(0x10000), from_bfloat(0x10000);
  mpx::cpu::detail::widen_range<mpx::Half>(all_halves.data(), from_half.data(), 0, 0x10000);
  mpx::cpu::detail::widen_range<mpx::BFloat16>(all_bfloats.data(), from_bfloat.data(), 0, 0x10000);
  std::int64_t widen_mismatches = 0;
  for (std::size_t i = 0; i < 0x10000u; ++i) {
    widen_mismatches +=
        bits_of_value(from_half[i]) != bits_of_value(static_cast<float>(all_halves[i])) ? 1 : 0;
    widen_mismatches +=
        bits_of_value(from_bfloat[i]) != bits_of_value(static_cast<float>(all_bfloats[i])) ? 1 : 0;
  }
  CHECK(widen_mismatches == 0);
}

// Every byte (all 256, high bits of narrower formats included) widened as the format's scalar
// decoding gives it: decode_code's arithmetic for the formats it serves, the table otherwise.
template <class Format>
std::int64_t byte_decoding_mismatches() {
  std::vector<mpx::Encoded<Format>> codes(256);
  for (std::uint32_t code = 0; code < 256; ++code) codes[code].bits = static_cast<std::uint8_t>(code);
  std::vector<float> widened(256);
  mpx::cpu::detail::widen_range<Format>(codes.data(), widened.data(), 0, 256);
  std::int64_t mismatches = 0;
  for (std::uint32_t code = 0; code < 256; ++code) {
    const float expected = static_cast<float>(codes[code]);
    mismatches += bits_of_value(widened[code]) != bits_of_value(expected) ? 1 : 0;
  }
  return mismatches;
}

TEST_CASE("cpu widening decodes every FP8 code as the format's definition does, NaN and infinities included",
          "[gemm][cpu][fp8]") {
  STATIC_REQUIRE(mpx::cpu::detail::decodes_by_arithmetic<mpx::Float8E4M3>);
  STATIC_REQUIRE(mpx::cpu::detail::decodes_by_arithmetic<mpx::Float8E5M2>);
  CHECK(byte_decoding_mismatches<mpx::Float8E4M3>() == 0);
  CHECK(byte_decoding_mismatches<mpx::Float8E5M2>() == 0);
}

TEST_CASE("cpu::gemm's scratch memory counts in memory_stats during the call only", "[gemm][cpu][memory]") {
  // Converted operands and the fp32 t behind a 16-bit D are reused between calls, but memory_stats
  // reports them as if each call allocated them: in the peak, not in live bytes afterwards. fp16
  // operands are always widened; bf16 ones only where they do not go to oneDNN's bf16 matmul as
  // they are.
  constexpr std::int64_t m = 64, n = 48, k = 32;
  std::mt19937_64 rng(5);
  const GemmConfig config{.transpose_b = Transpose::Yes};
  auto& stats = mpx::memory_stats<mpx::Host>();
  const auto check_scratch = [&]<class Compute>(Compute) {
    using S = mpx::storage_t<Compute>;
    const auto a = random_tensor<S>(Shape{m, k}, rng);
    const auto b = random_tensor<S>(Shape{n, k}, rng);
    Tensor<S> d(Shape{m, n});
    const bool widened =
        !mpx::cpu::detail::native_bf16_products<Compute>(a.data(), a.numel(), b.data(), b.numel(), 1.0f);
    const std::int64_t expected = (m * n + (widened ? m * k + n * k : 0)) * std::int64_t{sizeof(float)};
    for (int call = 0; call < 2; ++call) {  // the first call fills the cache, the second reuses it
      INFO(mpx::numeric_traits<Compute>::name << ", call " << call);
      stats.reset_peak();
      const std::int64_t live_before = stats.live_bytes();
      mpx::cpu::gemm<Compute>(a, b, d, config);
      CHECK(stats.live_bytes() == live_before);
      CHECK(stats.peak_bytes() - live_before == expected);
    }
  };
  check_scratch(mpx::Half{});
  check_scratch(mpx::BFloat16{});
  // fp32 needs no scratch: operands are used in place and t is D.
  const auto a32 = random_tensor<float>(Shape{m, k}, rng);
  const auto b32 = random_tensor<float>(Shape{n, k}, rng);
  Tensor<float> d32(Shape{m, n});
  stats.reset_peak();
  const std::int64_t live_before = stats.live_bytes();
  mpx::cpu::gemm<mpx::Float>(a32, b32, d32, config);
  CHECK(stats.peak_bytes() == live_before);
}

TEST_CASE("cpu::gemm rejects mismatched shapes with a shape_error naming both shapes",
          "[gemm][cpu][errors]") {
  Tensor<float> d(Shape{3, 6});

  SECTION("inner dimensions differ") {
    const Tensor<float> a(Shape{3, 4});
    const Tensor<float> b(Shape{5, 6});
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::Float>(a, b, d, {}), mpx::shape_error);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(a, b, d, {}),
                        Catch::Contains("[3, 4]") && Catch::Contains("[5, 6]"));
  }
  SECTION("inner dimensions differ after transposing") {
    const Tensor<float> a(Shape{4, 3});  // op(A) = 3 x 4
    const Tensor<float> b(Shape{4, 6});  // op(B) = 6 x 4
    const GemmConfig config{.transpose_a = Transpose::Yes, .transpose_b = Transpose::Yes};
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::Float>(a, b, d, config), mpx::shape_error);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(a, b, d, config),
                        Catch::Contains("[4, 3]") && Catch::Contains("[4, 6]"));
  }
  SECTION("D does not have op(A) op(B)'s shape") {
    const Tensor<Eigen::half> a(Shape{3, 4});
    const Tensor<Eigen::half> b(Shape{4, 5});
    Tensor<Eigen::half> wrong_d(Shape{5, 3});
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::Half>(a, b, wrong_d, {}), mpx::shape_error);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Half>(a, b, wrong_d, {}),
                        Catch::Contains("[5, 3]") && Catch::Contains("[3, 5]"));
  }
  SECTION("an operand is not a matrix") {
    const Tensor<float> a(Shape{2, 3, 4});
    const Tensor<float> b(Shape{4, 6});
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::Float>(a, b, d, {}), mpx::shape_error);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(a, b, d, {}), Catch::Contains("[2, 3, 4]"));
  }
  SECTION("C does not have D's shape") {
    const Tensor<float> a(Shape{3, 4});
    const Tensor<float> b(Shape{4, 6});
    const Tensor<float> c(Shape{6, 3});
    const GemmConfig config{.beta = 1.0f};
    const mpx::cpu::GemmOperands<float, float> operands{.c = &c};
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::Float>(a, b, d, config, operands), mpx::shape_error);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(a, b, d, config, operands),
                        Catch::Contains("[6, 3]") && Catch::Contains("[3, 6]"));
  }
}

TEST_CASE("cpu::gemm rejects a missing epilogue operand with invalid_argument", "[gemm][cpu][errors]") {
  const Tensor<Eigen::bfloat16> a(Shape{3, 4});
  const Tensor<Eigen::bfloat16> b(Shape{4, 5});
  Tensor<Eigen::bfloat16> d(Shape{3, 5});
  Tensor<Eigen::bfloat16> bias(Shape{5});
  Tensor<Eigen::bfloat16> aux(Shape{3, 5});
  Tensor<std::int32_t> relu_mask(mpx::relu_mask_shape(Shape{3, 5}));
  Tensor<float> bias_grad_n(Shape{5});
  Tensor<float> bias_grad_m(Shape{3});
  const Epilogue epilogue = GENERATE(from_range(std::begin(k_all_epilogues) + 1, std::end(k_all_epilogues)));
  INFO("epilogue " << mpx::to_string(epilogue));
  // Everything the epilogue needs, then each needed operand left out in turn.
  mpx::cpu::GemmOperands<Eigen::bfloat16, float> complete;
  if (mpx::reads_bias(epilogue)) complete.bias = &bias;
  if (mpx::reads_aux(epilogue) || mpx::writes_aux(epilogue)) complete.aux = &aux;
  if (mpx::reads_relu_mask(epilogue) || mpx::writes_relu_mask(epilogue)) complete.relu_mask = &relu_mask;
  if (mpx::writes_bias_grad(epilogue))
    complete.bias_grad = epilogue == Epilogue::BGradA ? &bias_grad_m : &bias_grad_n;
  const GemmConfig config{.epilogue = epilogue};
  REQUIRE_NOTHROW(mpx::cpu::gemm<mpx::BFloat16>(a, b, d, config, complete));

  if (complete.bias != nullptr) {
    auto missing = complete;
    missing.bias = nullptr;
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::BFloat16>(a, b, d, config, missing), mpx::invalid_argument);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::BFloat16>(a, b, d, config, missing), Catch::Contains("bias"));
  }
  if (complete.aux != nullptr) {
    auto missing = complete;
    missing.aux = nullptr;
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::BFloat16>(a, b, d, config, missing), mpx::invalid_argument);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::BFloat16>(a, b, d, config, missing), Catch::Contains("aux"));
  }
  if (complete.relu_mask != nullptr) {
    auto missing = complete;
    missing.relu_mask = nullptr;
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::BFloat16>(a, b, d, config, missing), mpx::invalid_argument);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::BFloat16>(a, b, d, config, missing),
                        Catch::Contains("relu_mask"));
  }
  if (complete.bias_grad != nullptr) {
    auto missing = complete;
    missing.bias_grad = nullptr;
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::BFloat16>(a, b, d, config, missing), mpx::invalid_argument);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::BFloat16>(a, b, d, config, missing),
                        Catch::Contains("bias_grad"));
  }
}

TEST_CASE("cpu::gemm rejects epilogue vectors and aux of the wrong size with shape_error",
          "[gemm][cpu][errors]") {
  // M = 3, N = 5: bias and the column bias gradients have length N; BGradA's has length M.
  const Tensor<float> a(Shape{3, 4});
  const Tensor<float> b(Shape{4, 5});
  Tensor<float> d(Shape{3, 5});
  const Tensor<float> bias_m(Shape{3});
  Tensor<float> vector_m(Shape{3});
  Tensor<float> vector_n(Shape{5});
  Tensor<float> aux_transposed(Shape{5, 3});

  SECTION("bias of length M instead of N") {
    const GemmConfig config{.epilogue = Epilogue::Bias};
    const mpx::cpu::GemmOperands<float, float> operands{.bias = &bias_m};
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::Float>(a, b, d, config, operands), mpx::shape_error);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(a, b, d, config, operands),
                        Catch::Contains("[3]") && Catch::Contains("[5]"));
  }
  SECTION("BGradA's bias_grad of length N instead of M") {
    const GemmConfig config{.epilogue = Epilogue::BGradA};
    const mpx::cpu::GemmOperands<float, float> operands{.bias_grad = &vector_n};
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::Float>(a, b, d, config, operands), mpx::shape_error);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(a, b, d, config, operands),
                        Catch::Contains("[5]") && Catch::Contains("[3]"));
  }
  SECTION("DReluBGrad's bias_grad of length M instead of N") {
    Tensor<std::int32_t> relu_mask(mpx::relu_mask_shape(Shape{3, 5}));
    const GemmConfig config{.epilogue = Epilogue::DReluBGrad};
    const mpx::cpu::GemmOperands<float, float> operands{.relu_mask = &relu_mask, .bias_grad = &vector_m};
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::Float>(a, b, d, config, operands), mpx::shape_error);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(a, b, d, config, operands),
                        Catch::Contains("[3]") && Catch::Contains("[5]"));
  }
  SECTION("aux not of D's shape") {
    const GemmConfig config{.epilogue = Epilogue::DGelu};
    const mpx::cpu::GemmOperands<float, float> operands{.aux = &aux_transposed};
    REQUIRE_THROWS_AS(mpx::cpu::gemm<mpx::Float>(a, b, d, config, operands), mpx::shape_error);
    REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(a, b, d, config, operands),
                        Catch::Contains("[5, 3]") && Catch::Contains("[3, 5]"));
  }
}

TEST_CASE("gemm refuses a D that shares memory with an operand, and accepts C == D", "[gemm][errors]") {
  mpx::Tensor<float> a(mpx::Shape{4, 4}), identity(mpx::Shape{4, 4}), d(mpx::Shape{4, 4});
  for (std::int64_t i = 0; i < 16; ++i) a[i] = static_cast<float>(i + 1);
  for (std::int64_t i = 0; i < 4; ++i) identity[i * 4 + i] = 1.0f;
  // D = A * I written over A would read A after zeroing it: a wrong answer, so an error instead.
  REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(a, identity, a, {}),
                      Catch::Contains("overlaps A") && Catch::Contains("[4, 4]"));
  REQUIRE_THROWS_WITH(mpx::cpu::gemm<mpx::Float>(identity, a, a, {}), Catch::Contains("overlaps B"));
  for (float& v : a.values()) CHECK(v != 0.0f);  // nothing was written
  // C aliasing D is cuBLASLt's in-place accumulation: D = A * I + 1 * D.
  d.fill(1.0f);
  mpx::cpu::gemm<mpx::Float>(a, identity, d, {.beta = 1.0f}, {.c = &d});
  for (std::int64_t i = 0; i < 16; ++i) CHECK(d[i] == a[i] + 1.0f);
}

TEST_CASE("cpu::gemm_scaled multiplies FP8 operands of two formats, their inverse scales applied to each sum",
          "[gemm][cpu][fp8]") {
  // A backward GEMM of an FP8 Linear: dX = dY W, dY in E5M2 and W in E4M3, both stored scaled. The
  // result must be the fp32 GEMM of the decoded codes with alpha * a_scale_inverse * b_scale_inverse
  // (same kernel, same tiles: bit for bit), rounded into bf16 with the bias added, and close to an
  // fp64 evaluation.
  using E4M3 = mpx::Encoded<mpx::Float8E4M3>;
  using E5M2 = mpx::Encoded<mpx::Float8E5M2>;
  const std::int64_t m = 96, n = 160, k = 200;
  std::mt19937_64 rng(91);
  Tensor<E5M2> a(Shape{m, k});
  Tensor<E4M3> b(Shape{k, n});
  Tensor<float> a_wide(a.shape()), b_wide(b.shape());
  // Every code but the non-finite ones, so that the sums stay finite.
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    a[i] = random_finite_code<E5M2>(rng);
    a_wide[i] = static_cast<float>(a[i]);
  }
  for (std::int64_t i = 0; i < b.numel(); ++i) {
    b[i] = random_finite_code<E4M3>(rng);
    b_wide[i] = static_cast<float>(b[i]);
  }
  Tensor<float> bias_fp32(Shape{n});
  Tensor<Eigen::bfloat16> bias(Shape{n});
  for (std::int64_t j = 0; j < n; ++j) {
    bias[j] = Eigen::bfloat16(static_cast<float>(j % 7) - 3.0f);
    bias_fp32[j] = static_cast<float>(bias[j]);
  }
  const float a_scale_inverse = 1.0f / 3000.0f, b_scale_inverse = 1.0f / 7.0f;
  const GemmConfig config{.alpha = 0.5f, .epilogue = Epilogue::Bias};
  Tensor<Eigen::bfloat16> d(Shape{m, n});
  mpx::cpu::gemm_scaled<mpx::Float8E5M2, mpx::Float8E4M3>(a, b, d, config, {.bias = &bias}, &a_scale_inverse,
                                                          &b_scale_inverse);

  // A bias gradient from scaled codes would be wrong by the scale: refused, naming the epilogue.
  Tensor<float> bias_grad(Shape{m});
  const auto bias_gradient_of_codes = [&] {
    mpx::cpu::gemm_scaled<mpx::Float8E5M2, mpx::Float8E4M3>(a, b, d, {.epilogue = Epilogue::BGradA},
                                                            {.bias_grad = &bias_grad}, &a_scale_inverse,
                                                            &b_scale_inverse);
  };
  CHECK_THROWS_WITH(bias_gradient_of_codes(),
                    Catch::Contains("epilogue bgrada sums an operand's scaled codes"));

  GemmConfig widened_config = config;
  widened_config.alpha = config.alpha * a_scale_inverse * b_scale_inverse;
  widened_config.epilogue = Epilogue::Default;
  Tensor<float> product(Shape{m, n});
  mpx::cpu::gemm<mpx::Float>(a_wide, b_wide, product, widened_config);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      CAPTURE(i, j);
      const float expected = product[i * n + j] + bias_fp32[j];
      const Eigen::bfloat16 rounded = mpx::round_to<mpx::BFloat16>(expected);
      REQUIRE(std::memcmp(&d[i * n + j], &rounded, sizeof rounded) == 0);
      double exact = 0;
      for (std::int64_t l = 0; l < k; ++l) exact += double(a_wide[i * k + l]) * double(b_wide[l * n + j]);
      exact = exact * config.alpha * a_scale_inverse * b_scale_inverse + bias_fp32[j];
      REQUIRE(static_cast<double>(static_cast<float>(d[i * n + j])) ==
              Approx(exact).epsilon(0x1p-7).margin(1e-3));
    }
  }
}

TEST_CASE("cpu::gemm_scaled under an accumulator model sums each output as the model's scalar function does",
          "[gemm][cpu][fp8][accumulation]") {
  // E4M3 times E5M2 codes (subnormals and zeros among them), shapes that leave partial groups, runs
  // and vector blocks, every transpose: each output must be alpha * Model::accumulate(0, row, column)
  // plus the bias, bit for bit, for the vectorised models and for one that takes the scalar path.
  using E4M3 = mpx::Encoded<mpx::Float8E4M3>;
  using E5M2 = mpx::Encoded<mpx::Float8E5M2>;
  const std::int64_t m = 37, n = 45, k = 300;
  std::mt19937_64 rng(2511);
  const auto finite_code = [&]<class Code>(Code& x) { x = random_finite_code<Code>(rng); };
  Tensor<float> bias(Shape{n});
  for (std::int64_t j = 0; j < n; ++j) bias[j] = 0.25f * static_cast<float>(j % 5);
  const float a_scale_inverse = 1.0f / 48.0f, b_scale_inverse = 3.0f;
  const auto check_model = [&]<class Model>(Model, bool transpose_a, bool transpose_b, bool with_nan) {
    Tensor<E4M3> a(transpose_a ? Shape{k, m} : Shape{m, k});
    Tensor<E5M2> b(transpose_b ? Shape{n, k} : Shape{k, n});
    for (E4M3& x : a.values()) finite_code(x);
    for (E5M2& x : b.values()) finite_code(x);
    if (with_nan) a[5] = E4M3::from_bits(0x7f);  // E4M3's NaN: its row (or column of op(A)) gives NaN
    const GemmConfig config{.transpose_a = transpose_a ? Transpose::Yes : Transpose::No,
                            .transpose_b = transpose_b ? Transpose::Yes : Transpose::No,
                            .alpha = 0.5f,
                            .epilogue = Epilogue::Bias};
    Tensor<float> d(Shape{m, n});
    mpx::cpu::gemm_scaled<mpx::Float8E4M3, mpx::Float8E5M2, Model>(a, b, d, config, {.bias = &bias},
                                                                   &a_scale_inverse, &b_scale_inverse);
    const float alpha = config.alpha * a_scale_inverse * b_scale_inverse;
    std::vector<float> row(k), column(k);
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        for (std::int64_t l = 0; l < k; ++l) {
          row[l] = static_cast<float>(transpose_a ? a[l * m + i] : a[i * k + l]);
          column[l] = static_cast<float>(transpose_b ? b[j * k + l] : b[l * n + j]);
        }
        const float expected =
            alpha * Model::template accumulate<mpx::Float8E4M3, mpx::Float8E5M2>(0.0f, row, column) + bias[j];
        CAPTURE(Model::name, transpose_a, transpose_b, with_nan, i, j, expected, d[i * n + j]);
        if (std::isnan(expected)) {
          REQUIRE(std::isnan(d[i * n + j]));
        } else {
          REQUIRE(std::bit_cast<std::uint32_t>(d[i * n + j]) == std::bit_cast<std::uint32_t>(expected));
        }
      }
    }
  };
  for (const bool transpose_a : {false, true}) {
    for (const bool transpose_b : {false, true}) {
      check_model(mpx::HopperFp8FastAccumulation{}, transpose_a, transpose_b, false);
      check_model(mpx::PromotedAccumulation<>{}, transpose_a, transpose_b, false);
    }
  }
  check_model(mpx::HopperFp8FastAccumulation{}, false, true, true);           // NaN: the scalar path
  check_model(mpx::TruncatedAccumulation<25, 16, 23>{}, false, true, false);  // not vectorised
  // The models differ from each other here (else the test could not tell them apart).
  Tensor<E4M3> a(Shape{m, k});
  Tensor<E5M2> b(Shape{k, n});
  for (E4M3& x : a.values()) finite_code(x);
  for (E5M2& x : b.values()) finite_code(x);
  Tensor<float> fast(Shape{m, n}), promoted(Shape{m, n}), fp32(Shape{m, n});
  const float one = 1.0f;
  mpx::cpu::gemm_scaled<mpx::Float8E4M3, mpx::Float8E5M2, mpx::HopperFp8FastAccumulation>(a, b, fast, {}, {},
                                                                                          &one, &one);
  mpx::cpu::gemm_scaled<mpx::Float8E4M3, mpx::Float8E5M2, mpx::PromotedAccumulation<>>(a, b, promoted, {}, {},
                                                                                       &one, &one);
  mpx::cpu::gemm_scaled<mpx::Float8E4M3, mpx::Float8E5M2>(a, b, fp32, {}, {}, &one, &one);
  std::int64_t fast_differs = 0, promoted_differs = 0;
  for (std::int64_t i = 0; i < m * n; ++i) {
    fast_differs += fast[i] != fp32[i];
    promoted_differs += promoted[i] != fp32[i];
  }
  CHECK(fast_differs > m * n / 2);
  CHECK(promoted_differs > 0);
}

}  // namespace MPX_UNITY_ID
}  // namespace
