// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// FP8 on the GPU against the CPU backend: the device casts bit for bit (every bf16 input, fp32 and
// fp16 ones with NaN and infinities, scales that saturate and flush); cuBLASLt's FP8 GEMMs against
// mpx::cpu::gemm_scaled under the model each is meant to follow (fast accumulation against
// mpx::HopperFp8FastAccumulation, the split accumulator against mpx::PromotedAccumulation<>), within
// a bound computed from the model's own truncations; an FP8 Linear layer on both devices; a short FP8
// MLP run. Each GEMM case prints one "fp8 accumulation:" line (the share of outputs equal to the
// model's bit for bit and the largest difference): the accumulation check docs/cuda.md lists for the
// first GPU run. main() is in numeric_cuda_test.cu and skips (exit 77) without a device; the GEMM,
// Linear and training cases skip, saying so, on a device below compute capability 8.9.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/cuda.hpp>

#include "../support/mismatch_log.hpp"
#include "accumulation_bounds.hpp"
#include "comparisons.hpp"

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Tensor;
using E4M3 = mpx::Float8E4M3;
using E5M2 = mpx::Float8E5M2;
using Bf16 = Eigen::bfloat16;
template <class Format>
using Codes = Tensor<mpx::Encoded<Format>>;
template <class Format>
using DeviceCodes = Tensor<mpx::Encoded<Format>, mpx::Cuda>;

constexpr double eps32 = 0x1p-23;

// Whether this GPU runs FP8 GEMMs (compute capability 8.9 or newer); when not, says SKIP and why.
bool fp8_gemms_here() {
  const cudaDeviceProp& properties = mpx::cuda_context().properties();
  if (mpx::fp8_gemm_capable(properties.major, properties.minor)) return true;
  WARN("SKIP: " << properties.name << " has compute capability " << properties.major << "."
                << properties.minor << "; FP8 GEMMs need 8.9 or newer");
  return false;
}

// One float in device memory.
Tensor<float, mpx::Cuda> device_float(float value) {
  Tensor<float> host(Shape{1});
  host[0] = value;
  return mpx::to<mpx::Cuda>(host);
}

float host_float(const Tensor<float, mpx::Cuda>& device) {
  return mpx::to<mpx::Host>(device)[0];
}

bool same_float_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// ---- casts -----------------------------------------------------------------------------------------

// Scales that keep values, round them (not a power of two), saturate most of them and flush most.
constexpr float cast_scales[] = {1.0f, 0.7f, 448.0f / 3.0f, 0x1p12f, 0x1p-12f, 3.0e30f};

// x cast into Format on both devices with each scale: cast_scaled's codes and amax, and
// cast_transpose_scaled's codes, transpose and amax, against cpu::cast_scaled bit for bit; and
// accumulate_amax against cpu::accumulate_amax.
template <class Format, class S>
void check_casts(const Tensor<S>& x, const std::string& what) {
  const auto x_gpu = mpx::to<mpx::Cuda>(x);
  const std::int64_t rows = x.shape().rows(), cols = x.shape().cols();
  const std::string format(mpx::numeric_traits<Format>::name);
  for (const float scale : cast_scales) {
    Codes<Format> codes(x.shape());
    float amax = 0.0f;
    mpx::cpu::cast_scaled<Format>(x, &scale, codes, &amax);
    float amax_only = 0.0f;
    mpx::cpu::accumulate_amax(x, &amax_only);

    const auto scale_gpu = device_float(scale);
    auto amax_gpu = device_float(0.0f), amax_transposed_gpu = device_float(0.0f),
         amax_only_gpu = device_float(0.0f);
    DeviceCodes<Format> out(x.shape()), out_again(x.shape()), out_transposed(Shape{cols, rows});
    mpx::cuda::cast_scaled<Format>(x_gpu, scale_gpu.data(), out, amax_gpu.data());
    mpx::cuda::cast_transpose_scaled<Format>(x_gpu, scale_gpu.data(), out_again, out_transposed,
                                             amax_transposed_gpu.data());
    mpx::cuda::accumulate_amax(x_gpu, amax_only_gpu.data());
    const Codes<Format> gpu = mpx::to<mpx::Host>(out), gpu_again = mpx::to<mpx::Host>(out_again),
                        gpu_transposed = mpx::to<mpx::Host>(out_transposed);

    mpx_test::MismatchLog log(what + " cast to " + format + " with scale " + std::to_string(scale));
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t i = r * cols + c;
        const unsigned expected = codes[i].bits;
        const auto describe = [&](const char* which, unsigned actual) {
          return std::string(which) + " [" + std::to_string(r) + ", " + std::to_string(c) + "] of " +
                 mpx_test::describe_float(static_cast<float>(x[i])) + ": gpu " + mpx_test::hex(actual, 2) +
                 ", cpu " + mpx_test::hex(expected, 2);
        };
        log.check(gpu[i].bits == expected, [&] { return describe("cast_scaled", gpu[i].bits); });
        log.check(gpu_again[i].bits == expected,
                  [&] { return describe("cast_transpose_scaled", gpu_again[i].bits); });
        const unsigned transposed = gpu_transposed[c * rows + r].bits;
        log.check(transposed == expected, [&] { return describe("its transpose", transposed); });
      }
    }
    INFO(log.summary());
    CHECK(log.failures() == 0);
    INFO(what << " amax: cpu " << mpx_test::describe_float(amax));
    CHECK(same_float_bits(host_float(amax_gpu), amax));
    CHECK(same_float_bits(host_float(amax_transposed_gpu), amax));
    CHECK(same_float_bits(host_float(amax_only_gpu), amax_only));
    CHECK(same_float_bits(amax_only, amax));
  }
}

// Every bf16 bit pattern, as a [256, 256] tensor (NaNs, infinities, subnormals and zeros included).
Tensor<Bf16> every_bf16() {
  Tensor<Bf16> x(Shape{256, 256});
  for (std::uint32_t bits = 0; bits < 65536; ++bits)
    x[static_cast<std::int64_t>(bits)] = mpx::from_bits<Bf16>(static_cast<std::uint16_t>(bits));
  return x;
}

// Random values of T over many binades, with NaN, infinities and zeros planted.
template <class T>
Tensor<T> wide_random(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-30, 20);
  Tensor<T> x(shape);
  for (T& v : x.values()) v = static_cast<T>(std::ldexp(mantissa(rng), exponent(rng)));
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f};
  for (int k = 0; k < 5; ++k) x[(7 * k + 3) % x.numel()] = static_cast<T>(specials[k]);
  return x;
}

TEST_CASE("FP8 casts on the GPU give the CPU's codes and amaxes bit for bit", "[cuda][fp8][cast]") {
  const Tensor<Bf16> all_bf16 = every_bf16();
  check_casts<E4M3>(all_bf16, "every bf16");
  check_casts<E5M2>(all_bf16, "every bf16");
  std::mt19937 rng(8);
  // Shapes whose rows and columns are not multiples of the transpose's 32 x 32 tiles; a rank-3
  // tensor is its [rows, last] matrix.
  const auto fp32 = wide_random<float>(Shape{37, 45}, rng);
  check_casts<E4M3>(fp32, "fp32 [37, 45]");
  check_casts<E5M2>(fp32, "fp32 [37, 45]");
  const auto fp16 = wide_random<Eigen::half>(Shape{3, 5, 70}, rng);
  check_casts<E4M3>(fp16, "fp16 [3, 5, 70]");
  check_casts<E5M2>(fp16, "fp16 [3, 5, 70]");
  const auto bf16_column = wide_random<Bf16>(Shape{1000, 1}, rng);
  check_casts<E4M3>(bf16_column, "bf16 [1000, 1]");
}

TEST_CASE("The GPU's FP8 casts name the shapes they refuse", "[cuda][fp8][cast]") {
  const Tensor<Bf16, mpx::Cuda> x(Shape{4, 6});
  const auto scale = device_float(1.0f);
  DeviceCodes<E4M3> out(Shape{4, 6}), wrong(Shape{6, 5}), transposed(Shape{6, 4});
  CHECK_THROWS_AS(mpx::cuda::cast_scaled<E4M3>(x, scale.data(), wrong), mpx::shape_error);
  try {
    mpx::cuda::cast_transpose_scaled<E4M3>(x, scale.data(), out, wrong);
    FAIL("no exception");
  } catch (const mpx::shape_error& e) {
    const std::string message = e.what();
    CHECK(message.find("[6, 5]") != std::string::npos);
    CHECK(message.find("[6, 4]") != std::string::npos);
  }
  CHECK_NOTHROW(mpx::cuda::cast_transpose_scaled<E4M3>(x, scale.data(), out, transposed));
}

// ---- GEMMs -----------------------------------------------------------------------------------------

// Random codes of Format: 16 x |N(0, 1)| (positive) or 16 x N(0, 1), cast as a scaled tensor is.
template <class Format>
Codes<Format> random_codes(const Shape& shape, bool positive, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Codes<Format> codes(shape);
  for (auto& code : codes.values()) {
    const float value = 16.0f * (positive ? std::abs(normal(rng)) : normal(rng));
    code = mpx::Encoded<Format>::template rounded<mpx::Overflow::Saturate>(value);
  }
  return codes;
}

struct GemmCase {
  std::int64_t m, n, k;
  bool positive;
  mpx::Epilogue epilogue;
  float beta;
};

// One GEMM on both devices under Model, compared output by output within
//   2 |factor| bound_model * gain + 20 eps32 * magnitude + one ulp of D,
// bound_model from ModelErrorBound along the CPU's order (the GPU's own truncations, in its order,
// are bounded alike: hence the 2); factor = alpha * a_scale_inverse * b_scale_inverse; gain = 1.13
// for GELU (the largest |gelu'|), 1 otherwise; 20 eps32 of the magnitude for the fp32 scaling,
// bias and C additions and the GELU of cuBLASLt against mpx's (tolerances.hpp counts 16 roundings for an
// epilogue); one ulp of D for the rounding of two values that may straddle a midpoint.
template <class AFormat, class BFormat, class Model, class TD>
void check_gemm(const GemmCase& c, const char* model_name, std::mt19937& rng) {
  const auto a = random_codes<AFormat>(Shape{c.m, c.k}, c.positive, rng);
  const auto b = random_codes<BFormat>(Shape{c.n, c.k}, c.positive, rng);
  const float a_scale_inverse = 0.0625f, b_scale_inverse = 0.3f, alpha = 1.0f;
  const mpx::GemmConfig config{.transpose_b = mpx::Transpose::Yes, .beta = c.beta, .epilogue = c.epilogue};
  const auto bias = mpx_test::random_host<TD>(Shape{c.n}, rng, -50.0, 50.0);
  const auto initial = mpx_test::random_host<TD>(Shape{c.m, c.n}, rng, -50.0, 50.0);
  const bool aux = c.epilogue == mpx::Epilogue::GeluAuxBias;
  const bool mask = c.epilogue == mpx::Epilogue::ReluAuxBias;

  Tensor<TD> d_cpu = initial.clone();
  Tensor<TD> aux_cpu(Shape{c.m, c.n});
  Tensor<std::int32_t> mask_cpu(mpx::relu_mask_shape(Shape{c.m, c.n}));
  mpx::cpu::GemmOperands<TD, float> cpu_operands;
  if (mpx::reads_bias(c.epilogue)) cpu_operands.bias = &bias;
  if (aux) cpu_operands.aux = &aux_cpu;
  if (mask) cpu_operands.relu_mask = &mask_cpu;
  mpx::cpu::gemm_scaled<AFormat, BFormat, Model>(a, b, d_cpu, config, cpu_operands, &a_scale_inverse,
                                                 &b_scale_inverse);

  const auto a_gpu = mpx::to<mpx::Cuda>(a);
  const auto b_gpu = mpx::to<mpx::Cuda>(b);
  const auto bias_gpu = mpx::to<mpx::Cuda>(bias);
  auto d_gpu = mpx::to<mpx::Cuda>(initial);
  Tensor<TD, mpx::Cuda> aux_gpu(Shape{c.m, c.n});
  Tensor<std::int32_t, mpx::Cuda> mask_gpu(mpx::relu_mask_shape(Shape{c.m, c.n}));
  mpx::cuda::GemmOperands<TD, float> gpu_operands;
  if (mpx::reads_bias(c.epilogue)) gpu_operands.bias = &bias_gpu;
  if (aux) gpu_operands.aux = &aux_gpu;
  if (mask) gpu_operands.relu_mask = &mask_gpu;
  const auto a_si = device_float(a_scale_inverse), b_si = device_float(b_scale_inverse);
  auto d_amax = device_float(0.0f);
  mpx::cuda::reset_gemm_path_counts();
  mpx::cuda::gemm_scaled<AFormat, BFormat, Model>(a_gpu, b_gpu, d_gpu, config, gpu_operands, a_si.data(),
                                                  b_si.data(), d_amax.data());
  const mpx::cuda::GemmPathCounts paths = mpx::cuda::gemm_path_counts();
  const Tensor<TD> d_back = mpx::to<mpx::Host>(d_gpu);

  std::vector<double> bounds, magnitudes;
  mpx_test::model_bounds<Model, AFormat, BFormat>(a, b, c.m, c.n, c.k, bounds, magnitudes);
  const double factor = std::abs(double(alpha * a_scale_inverse * b_scale_inverse));
  const double gain = mpx::is_gelu_epilogue(c.epilogue) ? 1.13 : 1.0;
  const std::string what = std::string(mpx::numeric_traits<AFormat>::name) + " x " +
                           std::string(mpx::numeric_traits<BFormat>::name) + " " + model_name + " " +
                           std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                           (c.positive ? " positive" : " signed") + ", " +
                           std::string(mpx::to_string(c.epilogue)) + ", D " + mpx_test::type_name<TD>() +
                           (c.beta != 0.0f ? ", beta 1" : "");
  mpx_test::MismatchLog log(what);
  std::vector<double> output_bounds(bounds.size());
  std::int64_t equal = 0;
  double largest = 0.0, largest_share = 0.0, largest_value = 0.0;
  for (std::int64_t i = 0; i < c.m; ++i) {
    for (std::int64_t j = 0; j < c.n; ++j) {
      const auto at = static_cast<std::size_t>(i * c.n + j);
      const double expected = mpx_test::to_double(d_cpu[i * c.n + j]);
      const double actual = mpx_test::to_double(d_back[i * c.n + j]);
      const double magnitude = factor * magnitudes[at] +
                               std::abs(c.beta * mpx_test::to_double(initial[i * c.n + j])) +
                               (mpx::reads_bias(c.epilogue) ? std::abs(mpx_test::to_double(bias[j])) : 0.0);
      const double bound = 2.0 * gain * factor * bounds[at] + 20.0 * eps32 * magnitude +
                           mpx_test::eps_of<TD>() * std::abs(expected) +
                           mpx_test::min_normal_of<TD>() * mpx_test::eps_of<TD>();
      output_bounds[at] = bound;
      const double difference = std::abs(actual - expected);
      equal += mpx_test::same_bits_or_both_nan(d_back[i * c.n + j], d_cpu[i * c.n + j]) ? 1 : 0;
      if (difference > largest) {
        largest = difference;
        largest_value = expected;
      }
      largest_share = std::max(largest_share, bound > 0 ? difference / bound : 0.0);
      log.check(mpx_test::close(actual, expected, bound), [&] {
        return "[" + std::to_string(i) + ", " + std::to_string(j) + "] gpu " + std::to_string(actual) +
               " cpu " + std::to_string(expected) + " bound " + std::to_string(bound);
      });
    }
  }
  std::printf(
      "fp8 accumulation: %s: %.2f%% of %lld outputs equal bit for bit, largest difference %.3g (at "
      "%.6g; %.3f of its bound); path: fused %lld, unfused %lld, decoded %lld\n",
      what.c_str(), 100.0 * double(equal) / double(c.m * c.n), static_cast<long long>(c.m * c.n), largest,
      largest_value, largest_share, static_cast<long long>(paths.fused),
      static_cast<long long>(paths.unfused), static_cast<long long>(paths.decoded));
  INFO(log.summary());
  CHECK(log.failures() == 0);
  if (mask) {  // where the pre-activation is clear of zero, the GPU's bit is the CPU's
    const Tensor<std::int32_t> mask_back = mpx::to<mpx::Host>(mask_gpu);
    const std::int64_t words = mpx::relu_mask_words(c.n);
    std::int64_t differing = 0;
    for (std::int64_t i = 0; i < c.m; ++i) {
      for (std::int64_t j = 0; j < c.n; ++j) {
        // Both outputs are relu(pre): 0 on both, the pre-activations are <= 0 on both; one within the
        // bound of 0, either bit is right.
        const double larger =
            std::max(mpx_test::to_double(d_cpu[i * c.n + j]), mpx_test::to_double(d_back[i * c.n + j]));
        if (larger > 0.0 && larger <= output_bounds[static_cast<std::size_t>(i * c.n + j)]) continue;
        differing += mpx::relu_mask_bit(mask_back.data() + i * words, j) !=
                     mpx::relu_mask_bit(mask_cpu.data() + i * words, j);
      }
    }
    CHECK(differing == 0);
  }
  // The amax of D: the largest |D| the GPU wrote.
  float d_largest = 0.0f;
  for (const TD& v : d_back.values()) {
    const float magnitude = std::abs(static_cast<float>(v));
    d_largest = magnitude > d_largest ? magnitude : d_largest;
  }
  CHECK(host_float(d_amax) == d_largest);
}

template <class AFormat, class BFormat, class Model>
void check_gemms(const char* model_name) {
  std::mt19937 rng(32);
  using Ep = mpx::Epilogue;
  // K = 4096: the length DeepSeek-V3 measured fast accumulation at; positive values show the
  // accumulator's loss, signed ones its cancellation.
  check_gemm<AFormat, BFormat, Model, float>({32, 48, 4096, true, Ep::Default, 0.0f}, model_name, rng);
  check_gemm<AFormat, BFormat, Model, float>({32, 48, 4096, false, Ep::Default, 0.0f}, model_name, rng);
  check_gemm<AFormat, BFormat, Model, Bf16>({32, 48, 4096, true, Ep::Default, 0.0f}, model_name, rng);
  // Epilogues, bf16 and fp32 D, accumulation into D (the weight gradient's beta = 1).
  for (const Ep epilogue : {Ep::Bias, Ep::ReluBias, Ep::ReluAuxBias, Ep::GeluBias, Ep::GeluAuxBias}) {
    check_gemm<AFormat, BFormat, Model, Bf16>({128, 96, 256, false, epilogue, 0.0f}, model_name, rng);
  }
  check_gemm<AFormat, BFormat, Model, float>({128, 96, 256, false, Ep::Bias, 0.0f}, model_name, rng);
  check_gemm<AFormat, BFormat, Model, float>({128, 96, 512, false, Ep::Default, 1.0f}, model_name, rng);
  check_gemm<AFormat, BFormat, Model, Bf16>({128, 96, 512, false, Ep::Default, 1.0f}, model_name, rng);
  // Shapes cuBLASLt has no FP8 kernel for (N = 10 outputs of bf16, K = 40): the decoded path.
  check_gemm<AFormat, BFormat, Model, Bf16>({32, 10, 784, false, Ep::Bias, 0.0f}, model_name, rng);
  check_gemm<AFormat, BFormat, Model, float>({24, 32, 40, false, Ep::Default, 1.0f}, model_name, rng);
}

TEST_CASE("cuBLASLt's FP8 GEMMs follow mpx's accumulator models", "[cuda][fp8][gemm]") {
  if (!fp8_gemms_here()) return;
  SECTION("fast accumulation (FAST_ACCUM on) against HopperFp8FastAccumulation") {
    check_gemms<E4M3, E4M3, mpx::HopperFp8FastAccumulation>("fast");
    check_gemms<E5M2, E4M3, mpx::HopperFp8FastAccumulation>("fast");
  }
  SECTION("the split accumulator (FAST_ACCUM off) against PromotedAccumulation<128>") {
    check_gemms<E4M3, E4M3, mpx::PromotedAccumulation<>>("promoted");
    check_gemms<E5M2, E4M3, mpx::PromotedAccumulation<>>("promoted");
    check_gemms<E4M3, E5M2, mpx::PromotedAccumulation<>>("promoted");
  }
}

TEST_CASE("gemm_scaled on the GPU refuses layouts cuBLASLt's FP8 GEMMs do not take", "[cuda][fp8][gemm]") {
  if (!fp8_gemms_here()) return;
  const DeviceCodes<E4M3> a(Shape{16, 32}), b(Shape{32, 16});
  Tensor<Bf16, mpx::Cuda> d(Shape{16, 16});
  const auto one = device_float(1.0f);
  try {
    mpx::cuda::gemm_scaled<E4M3, E4M3>(a, b, d, {}, {}, one.data(), one.data());
    FAIL("no exception");
  } catch (const mpx::invalid_argument& e) {
    const std::string message = e.what();
    CHECK(message.find("not transposed") != std::string::npos);
    CHECK(message.find("transposed copies") != std::string::npos);
  }
}

// ---- Linear and training ---------------------------------------------------------------------------

template <class T>
Tensor<T> random_tensor(const Shape& shape, float spread, std::mt19937& rng) {
  return mpx_test::random_host<T>(shape, rng, -spread, spread);
}

TEST_CASE("An FP8 Linear layer on the GPU computes what it computes on the CPU", "[cuda][fp8][nn]") {
  if (!fp8_gemms_here()) return;
  using P = mpx::fp8_hybrid<mpx::DelayedScaling<>>;
  using A = mpx::nn::Activation;
  constexpr std::int64_t batch = 64, in = 256, out = 128;
  mpx::nn::Linear<P, A::ReLU, mpx::Host> cpu(in, out);
  mpx::nn::Linear<P, A::ReLU, mpx::Cuda> gpu(in, out);
  cpu.initialize(3, 0);
  gpu.initialize(3, 0);
  std::mt19937 rng(64);
  const auto x = random_tensor<Bf16>(Shape{batch, in}, 4.0f, rng);
  const Tensor<Bf16> y_cpu = cpu.forward(x).clone();
  const auto x_gpu = mpx::to<mpx::Cuda>(x);
  const Tensor<Bf16> y_gpu = mpx::to<mpx::Host>(gpu.forward(x_gpu));

  // The codes both cast (scales of 1 before the first update), for the models' bounds.
  const float one = 1.0f;
  Codes<E4M3> x8(x.shape()), w8(Shape{out, in});
  mpx::cpu::cast_scaled<E4M3>(x, &one, x8);
  mpx::cpu::cast_scaled<E4M3>(cpu.weight().master(), &one, w8);
  std::vector<double> bounds, magnitudes;
  mpx_test::model_bounds<mpx::HopperFp8FastAccumulation, E4M3, E4M3>(x8, w8, batch, out, in, bounds,
                                                                     magnitudes);
  mpx_test::MismatchLog forward_log("Linear forward");
  for (std::int64_t i = 0; i < batch * out; ++i) {
    const double expected = mpx_test::to_double(y_cpu[i]), actual = mpx_test::to_double(y_gpu[i]);
    const auto at = static_cast<std::size_t>(i);
    const double bound =
        2.0 * bounds[at] + 20.0 * eps32 * magnitudes[at] + mpx_test::eps_of<Bf16>() * std::abs(expected);
    forward_log.check(mpx_test::close(actual, expected, bound), [&] {
      return "[" + std::to_string(i) + "] gpu " + std::to_string(actual) + " cpu " + std::to_string(expected);
    });
  }
  INFO(forward_log.summary());
  CHECK(forward_log.failures() == 0);

  // dy, its largest magnitude planted where both outputs are clearly positive, so that both
  // devices' dZ = dy * relu'(y) have the same amax.
  auto dy = random_tensor<Bf16>(Shape{batch, out}, 1.0f, rng);
  std::int64_t planted = -1;
  for (std::int64_t i = 0; i < batch * out && planted < 0; ++i) {
    if (mpx_test::to_double(y_cpu[i]) > 1.0 && mpx_test::to_double(y_gpu[i]) > 1.0) planted = i;
  }
  REQUIRE(planted >= 0);
  dy[planted] = static_cast<Bf16>(3.0f);
  const Tensor<Bf16> dx_cpu = cpu.backward(dy)->clone();
  const auto dy_gpu = mpx::to<mpx::Cuda>(dy);
  const Tensor<Bf16> dx_gpu = mpx::to<mpx::Host>(*gpu.backward(dy_gpu));
  const Tensor<float> dw_cpu = cpu.weight().grad().clone();
  const Tensor<float> dw_gpu = mpx::to<mpx::Host>(gpu.weight().grad());
  const Tensor<float> db_cpu = cpu.bias()->grad().clone();
  const Tensor<float> db_gpu = mpx::to<mpx::Host>(gpu.bias()->grad());

  // dZ as the CPU's forward masks it; an output whose sign the two devices' sums disagree on (within
  // the forward's bound of zero) masks dy on one device only, which the bounds below add back.
  Tensor<Bf16> dz(dy.shape());
  std::vector<std::int64_t> disagreeing;
  for (std::int64_t i = 0; i < batch * out; ++i) {
    dz[i] = mpx_test::to_double(y_cpu[i]) > 0.0 ? dy[i] : static_cast<Bf16>(0.0f);
    if ((mpx_test::to_double(y_cpu[i]) > 0.0) != (mpx_test::to_double(y_gpu[i]) > 0.0))
      disagreeing.push_back(i);
  }
  WARN("FP8 Linear: " << disagreeing.size() << " of " << batch * out
                      << " outputs with a different sign on the two devices (within the forward's bound)");
  Codes<E5M2> dz8(dz.shape());
  mpx::cpu::cast_scaled<E5M2>(dz, &one, dz8);
  // dx = dZ W: rows of dZ against the columns of W, i.e. A = dZ [batch, out], B = W^T [in, out].
  Codes<E4M3> wt8(Shape{in, out});
  for (std::int64_t j = 0; j < out; ++j)
    for (std::int64_t k = 0; k < in; ++k) wt8[k * out + j] = w8[j * in + k];
  mpx_test::model_bounds<mpx::PromotedAccumulation<>, E5M2, E4M3>(dz8, wt8, batch, in, out, bounds,
                                                                  magnitudes);
  mpx_test::MismatchLog dx_log("Linear dx");
  for (std::int64_t i = 0; i < batch; ++i) {
    for (std::int64_t k = 0; k < in; ++k) {
      const std::int64_t at = i * in + k;
      double extra = 0.0;
      for (const std::int64_t d : disagreeing) {
        if (d / out == i)
          extra += 1.25 * std::abs(mpx_test::to_double(dy[d]) * static_cast<float>(w8[(d % out) * in + k]));
      }
      const double expected = mpx_test::to_double(dx_cpu[at]), actual = mpx_test::to_double(dx_gpu[at]);
      const auto index = static_cast<std::size_t>(at);
      const double bound = 2.0 * bounds[index] + 20.0 * eps32 * magnitudes[index] + extra +
                           mpx_test::eps_of<Bf16>() * std::abs(expected) + mpx_test::min_normal_of<Bf16>();
      dx_log.check(mpx_test::close(actual, expected, bound), [&] {
        return "[" + std::to_string(i) + ", " + std::to_string(k) + "] gpu " + std::to_string(actual) +
               " cpu " + std::to_string(expected);
      });
    }
  }
  INFO(dx_log.summary());
  CHECK(dx_log.failures() == 0);
  // dW = dZ^T x: A = dZ^T [out, batch], B = x^T [in, batch].
  Codes<E5M2> dzt8(Shape{out, batch});
  Codes<E4M3> xt8(Shape{in, batch});
  for (std::int64_t i = 0; i < batch; ++i) {
    for (std::int64_t j = 0; j < out; ++j) dzt8[j * batch + i] = dz8[i * out + j];
    for (std::int64_t k = 0; k < in; ++k) xt8[k * batch + i] = x8[i * in + k];
  }
  mpx_test::model_bounds<mpx::PromotedAccumulation<>, E5M2, E4M3>(dzt8, xt8, out, in, batch, bounds,
                                                                  magnitudes);
  mpx_test::MismatchLog dw_log("Linear dW");
  for (std::int64_t j = 0; j < out; ++j) {
    for (std::int64_t k = 0; k < in; ++k) {
      const std::int64_t at = j * in + k;
      double extra = 0.0;
      for (const std::int64_t d : disagreeing) {
        if (d % out == j)
          extra += 1.25 * std::abs(mpx_test::to_double(dy[d]) * static_cast<float>(x8[(d / out) * in + k]));
      }
      const auto index = static_cast<std::size_t>(at);
      const double bound = 2.0 * bounds[index] + 20.0 * eps32 * magnitudes[index] + extra +
                           4.0 * eps32 * std::abs(double(dw_cpu[at]));
      dw_log.check(mpx_test::close(dw_gpu[at], dw_cpu[at], bound), [&] {
        return "[" + std::to_string(j) + ", " + std::to_string(k) + "] gpu " + std::to_string(dw_gpu[at]) +
               " cpu " + std::to_string(dw_cpu[at]);
      });
    }
  }
  INFO(dw_log.summary());
  CHECK(dw_log.failures() == 0);
  // The bias gradient: dZ's column sums in fp32 on both (different orders).
  for (std::int64_t j = 0; j < out; ++j) {
    double magnitude = 0.0, extra = 0.0;
    for (std::int64_t i = 0; i < batch; ++i) magnitude += std::abs(mpx_test::to_double(dz[i * out + j]));
    for (const std::int64_t d : disagreeing)
      if (d % out == j) extra += std::abs(mpx_test::to_double(dy[d]));
    CHECK(std::abs(double(db_gpu[j]) - double(db_cpu[j])) <= double(batch + 2) * eps32 * magnitude + extra);
  }

  // The same amaxes recorded, and the same scales after the update.
  cpu.update_fp8_scales();
  gpu.update_fp8_scales();
  const Tensor<float> history_cpu = cpu.fp8_scales().amaxes().clone();
  const Tensor<float> history_gpu = mpx::to<mpx::Host>(gpu.fp8_scales().amaxes());
  REQUIRE(history_gpu.shape() == history_cpu.shape());
  CHECK(std::memcmp(history_gpu.data(), history_cpu.data(), sizeof(float) * history_cpu.numel()) == 0);
  const Tensor<float> scales_cpu = cpu.fp8_scales().scales().clone();
  const Tensor<float> scales_gpu = mpx::to<mpx::Host>(gpu.fp8_scales().scales());
  for (std::int64_t t = 0; t < 3; ++t) {
    INFO("tensor " << t << ": scale cpu " << scales_cpu[t] << " gpu " << scales_gpu[t]);
    CHECK(same_float_bits(scales_gpu[t], scales_cpu[t]));
  }
  CHECK(scales_cpu[2] == 57344.0f / 3.0f);  // the planted output gradient set the E5M2 scale
}

// Four Gaussian blobs' worth of 10 classes in 64 dimensions, one batch per step.
struct Blobs {
  std::vector<Tensor<float>> inputs;
  std::vector<Tensor<std::int32_t>> labels;
};
Blobs blobs(int steps, std::int64_t batch, std::int64_t features, std::int64_t classes) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, static_cast<std::int32_t>(classes - 1));
  std::vector<float> centres(static_cast<std::size_t>(classes * features));
  for (float& c : centres) c = normal(rng);
  Blobs data;
  for (int s = 0; s < steps; ++s) {
    Tensor<float> x(Shape{batch, features});
    Tensor<std::int32_t> y(Shape{batch});
    for (std::int64_t row = 0; row < batch; ++row) {
      y[row] = label(rng);
      for (std::int64_t f = 0; f < features; ++f)
        x[row * features + f] = centres[static_cast<std::size_t>(y[row] * features + f)] + 2.0f * normal(rng);
    }
    data.inputs.push_back(std::move(x));
    data.labels.push_back(std::move(y));
  }
  return data;
}

template <class Device>
std::vector<double> fp8_mlp_losses(const Blobs& data) {
  using P = mpx::fp8_hybrid<mpx::DelayedScaling<16>>;
  using A = mpx::nn::Activation;
  // 64 -> 128 -> 64 -> 10: the head's N = 10 takes the decoded path on the GPU.
  mpx::nn::Sequential model{mpx::nn::Linear<P, A::ReLU, Device>(64, 128),
                            mpx::nn::Linear<P, A::GELU, Device>(128, 64),
                            mpx::nn::Linear<P, A::None, Device>(64, 10)};
  model.initialize(9);
  mpx::nn::SoftmaxCrossEntropy<P, Device> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 0.005f});
  mpx::Trainer trainer(model, loss, optimizer);
  std::vector<double> losses;
  for (std::size_t s = 0; s < data.inputs.size(); ++s) {
    const auto& x = mpx::to<Device>(data.inputs[s]);  // the host's own tensors on the CPU
    const auto& y = mpx::to<Device>(data.labels[s]);
    losses.push_back(trainer.step(x, y).loss);
  }
  return losses;
}

TEST_CASE("An FP8 MLP trains on the GPU as on the CPU", "[cuda][fp8][train]") {
  if (!fp8_gemms_here()) return;
  const Blobs data = blobs(60, 128, 64, 10);
  const std::vector<double> cpu = fp8_mlp_losses<mpx::Host>(data);
  const std::vector<double> gpu = fp8_mlp_losses<mpx::Cuda>(data);
  double cpu_mean = 0.0, gpu_mean = 0.0, worst = 0.0;
  for (std::size_t s = 0; s < cpu.size(); ++s) {
    REQUIRE(std::isfinite(gpu[s]));
    cpu_mean += cpu[s] / double(cpu.size());
    gpu_mean += gpu[s] / double(gpu.size());
    worst = std::max(worst, std::abs(gpu[s] - cpu[s]) / cpu[s]);
  }
  std::printf(
      "fp8 MLP: mean loss over %zu steps cpu %.5f gpu %.5f (%+.2f%%); first %.4f / %.4f, last %.4f / "
      "%.4f; largest step difference %.2f%%\n",
      cpu.size(), cpu_mean, gpu_mean, 100.0 * (gpu_mean / cpu_mean - 1.0), cpu.front(), gpu.front(),
      cpu.back(), gpu.back(), 100.0 * worst);
  // The first step's loss comes from the same weights and the forward's bounded differences; then the
  // two runs drift apart as any two GEMM orders do (trainer_cuda_test.cu), which 3% of the mean allows.
  CHECK(std::abs(gpu.front() - cpu.front()) <= 0.01 * cpu.front());
  CHECK(std::abs(gpu_mean - cpu_mean) <= 0.03 * cpu_mean);
  CHECK(gpu.back() < 0.8 * gpu.front());  // it learns
}

}  // namespace

}  // namespace MPX_UNITY_ID
}  // namespace
