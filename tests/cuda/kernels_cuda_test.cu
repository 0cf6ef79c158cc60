// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The layer and loss kernels of the CUDA backend against the CPU backend on the same random inputs.
// main() is in numeric_cuda_test.cu and skips (exit 77) without a device.
//
// Bit for bit where both sides evaluate the same elementwise formula with correctly rounded
// operations: relu, round_into (nearest and stochastic), add_into, fill_uniform, MSE's gradient.
// Within a bound elsewhere, because (a) reductions sum in another order (a block tree instead of a
// left-to-right loop), (b) CUDA's expf/logf/tanhf are within 1-2 ulp but are not glibc's, and (c) nvcc
// fuses a * b + c into an FMA. Each bound below follows the style of tests/support/tolerances.hpp: an
// error of (n + 16) eps of the accumulate type per unit of the element's *magnitude* (the sum of the
// absolute values of the terms it is computed from; n the length of the longest sum involved) for
// each side, so twice that between them, plus one ulp of the stored type (either side may round to
// the other neighbour) and that type's subnormal step.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <mpx/backend/cuda/activation.cuh>
#include <mpx/backend/cuda/layer_norm.cuh>
#include <mpx/backend/cuda/mse_loss.cuh>
#include <mpx/backend/cuda/softmax_cross_entropy.cuh>
#include <mpx/backend/cuda/tensor_ops.cuh>
#include <mpx/cuda.hpp>

#include "../support/mismatch_log.hpp"
#include "comparisons.hpp"
#include "support.hpp"

// This file's own namespace: several test files compile as one translation unit
// (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx_test::accumulate_of;
using mpx_test::close;
using mpx_test::odd_sizes;
using mpx_test::random_host;
using mpx_test::require_close;
using mpx_test::require_same_bits;
using mpx_test::same_bits_or_both_nan;
using mpx_test::storage_slack;
using mpx_test::to_double;
using mpx_test::type_name;
using mpx_test::with_specials;

// A device copy of host labels, for the device paths.
mpx::Tensor<std::int32_t, mpx::Cuda> device_labels(const std::vector<std::int32_t>& labels) {
  mpx::Tensor<std::int32_t> host(mpx::Shape{static_cast<std::int64_t>(labels.size())});
  std::copy(labels.begin(), labels.end(), host.values().begin());
  return mpx::to<mpx::Cuda>(host);
}

// The span of device memory the backends' label arguments take.
std::span<const std::int32_t> device_span(const mpx::Tensor<std::int32_t, mpx::Cuda>& labels) {
  return {labels.data(), static_cast<std::size_t>(labels.numel())};
}

std::vector<std::int32_t> random_labels(std::int64_t batch, std::int64_t classes, std::mt19937& rng) {
  std::uniform_int_distribution<std::int32_t> pick(0, static_cast<std::int32_t>(classes - 1));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
  for (auto& label : labels) label = pick(rng);
  return labels;
}

}  // namespace

// ---- activations --------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("cuda relu matches the cpu bit for bit, NaN included", "[cuda][activation]", float, double,
                   Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(11);
  for (const std::int64_t count : odd_sizes) {
    INFO("count " << count);
    const auto x = with_specials<T>(count, rng);
    const auto dy = with_specials<T>(count, rng);
    mpx::Tensor<T> y_cpu(x.shape());
    mpx::Tensor<T> dx_cpu(x.shape());
    mpx::cpu::relu_forward(x, y_cpu);
    mpx::cpu::relu_backward(y_cpu, dy, dx_cpu);

    const auto x_gpu = mpx::to_device(x);
    const auto dy_gpu = mpx::to_device(dy);
    mpx::Tensor<T, mpx::Cuda> y_gpu(x.shape());
    mpx::Tensor<T, mpx::Cuda> dx_gpu(x.shape());
    mpx::cuda::relu_forward(x_gpu, y_gpu);
    mpx::cuda::relu_backward(y_gpu, dy_gpu, dx_gpu);
    require_same_bits(mpx::to_host(y_gpu), y_cpu, "relu_forward");
    require_same_bits(mpx::to_host(dx_gpu), dx_cpu, "relu_backward");

    auto in_place = x_gpu.clone();  // y == x: every element is read before it is written
    mpx::cuda::relu_forward(in_place, in_place);
    require_same_bits(mpx::to_host(in_place), y_cpu, "relu_forward in place");
  }
  mpx::Tensor<T, mpx::Cuda> a(mpx::Shape{4, 3});
  mpx::Tensor<T, mpx::Cuda> b(mpx::Shape{3, 4});
  mpx::Tensor<T, mpx::Cuda> c(mpx::Shape{4, 3});
  CHECK_THROWS_AS(mpx::cuda::relu_forward(a, b), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::relu_backward(a, b, c), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::gelu_backward(a, c, b), mpx::shape_error);
  mpx::Tensor<T, mpx::Cuda> empty(mpx::Shape{0});
  mpx::Tensor<T, mpx::Cuda> empty_out(mpx::Shape{0});
  CHECK_NOTHROW(mpx::cuda::gelu_forward(empty, empty_out));
}

// gelu_tanh is the same source on both sides (in float, tanh is numeric/tanh.hpp's rational
// approximation, within 7 ulp; in double, CUDA's tanh (<= 2 ulp) on the device and glibc's on the
// host), and nvcc may fuse other multiply-adds than the host compiler. Both stay within a few eps of the math
// type per unit of |x| (tanh's slope 1 - t^2 damps the argument's error, whose size grows like
// |x|^3), so the bound is 64 eps (1 + |x|) for gelu and 64 eps (1 + |x|)^3 |dy| for its derivative,
// plus one ulp of the stored type.
TEMPLATE_TEST_CASE("cuda gelu matches the cpu within the tanh and rounding bound", "[cuda][activation]",
                   float, double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  constexpr double eps = mpx::epsilon_v<mpx::tag_of_t<accumulate_of<T>>>;
  std::mt19937 rng(12);
  for (const std::int64_t count : odd_sizes) {
    INFO("count " << count);
    const auto x = with_specials<T>(count, rng);
    const auto dy = random_host<T>(x.shape(), rng, -2.0, 2.0);
    mpx::Tensor<T> y_cpu(x.shape());
    mpx::Tensor<T> dx_cpu(x.shape());
    mpx::cpu::gelu_forward(x, y_cpu);
    mpx::cpu::gelu_backward(x, dy, dx_cpu);

    const auto x_gpu = mpx::to_device(x);
    const auto dy_gpu = mpx::to_device(dy);
    mpx::Tensor<T, mpx::Cuda> y_gpu(x.shape());
    mpx::Tensor<T, mpx::Cuda> dx_gpu(x.shape());
    mpx::cuda::gelu_forward(x_gpu, y_gpu);
    mpx::cuda::gelu_backward(x_gpu, dy_gpu, dx_gpu);
    require_close(mpx::to_host(y_gpu), y_cpu, "gelu_forward " + type_name<T>(),
                  [&](std::int64_t i, double ref) {
                    return 64 * eps * (1 + std::abs(to_double(x[i]))) + storage_slack<T>(ref);
                  });
    require_close(mpx::to_host(dx_gpu), dx_cpu, "gelu_backward " + type_name<T>(),
                  [&](std::int64_t i, double ref) {
                    const double a = 1 + std::abs(to_double(x[i]));
                    return 64 * eps * a * a * a * std::abs(to_double(dy[i])) + storage_slack<T>(ref);
                  });
  }
}

// ---- tensor ops ---------------------------------------------------------------------------------

namespace {

// Floats of every kind: random bit patterns (NaN, inf, subnormals, huge) and moderate values.
mpx::Tensor<float> any_floats(std::int64_t count, std::mt19937& rng) {
  std::uniform_int_distribution<std::uint32_t> any_bits;
  std::uniform_real_distribution<float> moderate(-70000.0f, 70000.0f);
  mpx::Tensor<float> t(mpx::Shape{count});
  for (std::int64_t i = 0; i < count; ++i)
    t[i] = i % 2 == 0 ? moderate(rng) : std::bit_cast<float>(any_bits(rng));
  return t;
}

template <mpx::NumericTag To, mpx::Element From>
void check_round_nearest(const mpx::Tensor<From>& source) {
  using S = mpx::storage_t<To>;
  mpx::Tensor<S> expected(source.shape());
  mpx::round_into<To>(source, expected);
  const auto source_gpu = mpx::to_device(source);
  mpx::Tensor<S, mpx::Cuda> actual(source.shape());
  mpx::cuda::round_into<To>(source_gpu, actual);
  require_same_bits(
      mpx::to_host(actual), expected,
      "round_into<" + std::string(mpx::numeric_traits<To>::name) + "> from " + type_name<From>());
}

}  // namespace

TEST_CASE("cuda round_into rounds to nearest with the host's bits", "[cuda][tensor_ops]") {
  std::mt19937 rng(21);
  for (const std::int64_t count :
       {std::int64_t{1}, std::int64_t{7}, std::int64_t{4097}, std::int64_t{100000}}) {
    INFO("count " << count);
    const auto floats = any_floats(count, rng);
    check_round_nearest<mpx::Half>(floats);
    check_round_nearest<mpx::BFloat16>(floats);
    check_round_nearest<mpx::TF32>(floats);
    check_round_nearest<mpx::Float>(floats);
    check_round_nearest<mpx::Double>(floats);
    const auto doubles = random_host<double>(mpx::Shape{count}, rng, -1e5, 1e5);
    check_round_nearest<mpx::Half>(doubles);
    check_round_nearest<mpx::Float>(doubles);
    const auto halves = with_specials<Eigen::half>(count, rng, -60000.0, 60000.0);
    check_round_nearest<mpx::BFloat16>(halves);
    check_round_nearest<mpx::Float>(halves);
    const auto bf16s = with_specials<Eigen::bfloat16>(count, rng, -1e30, 1e30);
    check_round_nearest<mpx::Half>(bf16s);
    check_round_nearest<mpx::Float>(bf16s);
  }
  mpx::Tensor<float, mpx::Cuda> a(mpx::Shape{3, 2});
  mpx::Tensor<Eigen::half, mpx::Cuda> b(mpx::Shape{2, 3});
  CHECK_THROWS_AS(mpx::cuda::round_into<mpx::Half>(a, b), mpx::shape_error);
}

TEST_CASE("cuda stochastic round_into draws the host's Philox bits", "[cuda][tensor_ops]") {
  std::mt19937 rng(22);
  for (const std::int64_t count :
       {std::int64_t{1}, std::int64_t{7}, std::int64_t{1023}, std::int64_t{4097}}) {
    INFO("count " << count);
    const auto source = any_floats(count, rng);
    const auto source_gpu = mpx::to_device(source);
    for (const mpx::RoundStochastic rounding :
         {mpx::RoundStochastic{0, 0}, mpx::RoundStochastic{42, 7}, mpx::RoundStochastic{~0ull, 1ull << 40}}) {
      mpx::Tensor<Eigen::half> half_cpu(source.shape());
      mpx::Tensor<Eigen::bfloat16> bf16_cpu(source.shape());
      mpx::round_into<mpx::Half>(source, half_cpu, rounding);
      mpx::round_into<mpx::BFloat16>(source, bf16_cpu, rounding);
      mpx::Tensor<Eigen::half, mpx::Cuda> half_gpu(source.shape());
      mpx::Tensor<Eigen::bfloat16, mpx::Cuda> bf16_gpu(source.shape());
      mpx::cuda::round_into<mpx::Half>(source_gpu, half_gpu, rounding);
      mpx::cuda::round_into<mpx::BFloat16>(source_gpu, bf16_gpu, rounding);
      require_same_bits(mpx::to_host(half_gpu), half_cpu, "stochastic round_into");
      require_same_bits(mpx::to_host(bf16_gpu), bf16_cpu, "stochastic round_into");
    }
  }
}

TEMPLATE_TEST_CASE("cuda add_into and fill_uniform give the host's bits", "[cuda][tensor_ops]", float, double,
                   Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(23);
  for (const std::int64_t count : odd_sizes) {
    INFO("count " << count);
    const auto a = with_specials<T>(count, rng, -100.0, 100.0);
    const auto b = random_host<T>(a.shape(), rng, -100.0, 100.0);
    auto sum_cpu = a.clone();
    mpx::Backend<mpx::Host>::add_into(sum_cpu, b);
    auto sum_gpu = mpx::to_device(a);
    mpx::cuda::add_into(sum_gpu, mpx::to_device(b));
    require_same_bits(mpx::to_host(sum_gpu), sum_cpu, "add_into");

    for (const auto& [low, high] :
         {std::pair{-0.1, 0.1}, std::pair{-1.0 / 3.0, 2.0 / 7.0}, std::pair{0.0, 1.0}}) {
      mpx::Tensor<T> fill_cpu(mpx::Shape{count, 1});
      mpx::Backend<mpx::Host>::fill_uniform(fill_cpu, low, high, 1234, 5);
      mpx::Tensor<T, mpx::Cuda> fill_gpu(mpx::Shape{count, 1});
      mpx::cuda::fill_uniform(fill_gpu, low, high, 1234, 5);
      require_same_bits(mpx::to_host(fill_gpu), fill_cpu, "fill_uniform");
    }
  }
  mpx::Tensor<T, mpx::Cuda> a(mpx::Shape{2, 3});
  mpx::Tensor<T, mpx::Cuda> b(mpx::Shape{3, 2});
  CHECK_THROWS_AS(mpx::cuda::add_into(a, b), mpx::shape_error);
}

TEMPLATE_TEST_CASE("cuda flag_nonfinite sets the flag for inf or NaN and never clears it",
                   "[cuda][tensor_ops]", float, double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(24);
  mpx::cuda::DeviceArray<int> flag(1);
  const auto flag_after = [&](const mpx::Tensor<T>& host, int initial) {
    const int start[] = {initial};
    flag.upload(std::span<const int>(start));
    mpx::cuda::flag_nonfinite(mpx::to_device(host), flag.data());
    return flag.download()[0];
  };
  for (const std::int64_t count : odd_sizes) {
    INFO("count " << count);
    auto x = random_host<T>(mpx::Shape{count}, rng, -60000.0, 60000.0);
    CHECK(flag_after(x, 0) == 0);
    CHECK(flag_after(x, 1) == 1);
    x[count - 1] = static_cast<T>(std::numeric_limits<float>::quiet_NaN());
    CHECK(flag_after(x, 0) == 1);
    x[count - 1] = static_cast<T>(0.0f);
    x[0] = static_cast<T>(-std::numeric_limits<float>::infinity());
    CHECK(flag_after(x, 0) == 1);
  }
  CHECK(flag_after(mpx::Tensor<T>(mpx::Shape{0}), 0) == 0);
}

// ---- softmax cross-entropy ----------------------------------------------------------------------

namespace {

// Bounds for a [batch, classes] cross-entropy from the logits, in the accumulate type: per row,
// log_sum_exp carries the bound below, the smoothed terms (classes + 16) eps of their absolute sum.
// The gradient (p - target) * scale has p = exp(z - lse), whose relative error is the error of lse,
// plus eps |z - lse| for the subtraction, plus 4 eps for exp and the product.
template <class T>
struct CrossEntropyBounds {
  std::vector<double> lse_error;  // per row
  double loss = 0;
  mpx::Tensor<double> gradient;

  CrossEntropyBounds(const mpx::Tensor<T>& logits, const std::vector<std::int32_t>& labels, float smoothing,
                     double grad_scale)
      : gradient(logits.shape()) {
    constexpr double eps = mpx::epsilon_v<mpx::tag_of_t<accumulate_of<T>>>;
    const std::int64_t batch = logits.shape()[0];
    const std::int64_t classes = logits.shape()[1];
    const double off = static_cast<double>(smoothing) / static_cast<double>(classes);
    const double on = 1.0 - smoothing + off;
    double sum_row_bounds = 0;
    double sum_row_magnitudes = 0;
    for (std::int64_t r = 0; r < batch; ++r) {
      double max = -INFINITY;
      double max_abs = 0;
      for (std::int64_t c = 0; c < classes; ++c) {
        max = std::max(max, to_double(logits[r * classes + c]));
        max_abs = std::max(max_abs, std::abs(to_double(logits[r * classes + c])));
      }
      double sum = 0;
      double smoothed = 0;
      for (std::int64_t c = 0; c < classes; ++c) {
        const double z = to_double(logits[r * classes + c]);
        sum += std::exp(z - max);
        smoothed += (c == labels[static_cast<std::size_t>(r)] ? on : off) * std::abs(z);
      }
      const double lse = max + std::log(sum);
      const double n = static_cast<double>(classes + 16);
      // The sum of positive exponentials: n eps relatively, which log turns into n eps absolutely;
      // the roundings of z - max, z - lse and max + log(sum): a few eps of the values involved.
      const double lse_bound = n * eps + 8 * eps * (1 + max_abs + std::abs(lse));
      lse_error.push_back(lse_bound);
      sum_row_bounds += lse_bound + n * eps * smoothed;
      sum_row_magnitudes += std::abs(lse) + smoothed;
      for (std::int64_t c = 0; c < classes; ++c) {
        const double z = to_double(logits[r * classes + c]);
        const double p = std::exp(z - lse);
        const double target = c == labels[static_cast<std::size_t>(r)] ? on : off;
        gradient[r * classes + c] =
            std::abs(grad_scale) *
            (p * (lse_bound + eps * std::abs(z - lse) + 4 * eps) + 2 * eps * std::abs(p - target));
      }
    }
    const double b = static_cast<double>(batch);
    loss = (sum_row_bounds + static_cast<double>(batch + 16) * eps * sum_row_magnitudes) / b;
  }
};

template <class T>
void check_cross_entropy(std::int64_t batch, std::int64_t classes, float smoothing, float grad_seed,
                         std::mt19937& rng) {
  using Acc = accumulate_of<T>;
  INFO(type_name<T>() << " batch " << batch << " classes " << classes << " smoothing " << smoothing
                      << " seed " << grad_seed);
  const auto logits = random_host<T>(mpx::Shape{batch, classes}, rng, -6.0, 6.0);
  const auto labels = random_labels(batch, classes, rng);
  mpx::Tensor<T> d_cpu(logits.shape());
  const Acc loss_cpu = mpx::cpu::softmax_cross_entropy(logits, labels, smoothing, grad_seed, &d_cpu);

  const auto logits_gpu = mpx::to_device(logits);
  mpx::Tensor<T, mpx::Cuda> d_gpu(logits.shape());
  const Acc loss_gpu = mpx::cuda::softmax_cross_entropy(logits_gpu, labels, smoothing, grad_seed, &d_gpu);

  const CrossEntropyBounds<T> bounds(logits, labels, smoothing,
                                     static_cast<double>(grad_seed) / static_cast<double>(batch));
  CHECK(close(loss_gpu, loss_cpu, 2 * bounds.loss));
  require_close(mpx::to_host(d_gpu), d_cpu, "cross-entropy gradient " + type_name<T>(),
                [&](std::int64_t i, double ref) { return 2 * bounds.gradient[i] + storage_slack<T>(ref); });

  // Without a gradient: the same loss, bit for bit (the gradient does not change the loss's sums).
  CHECK(mpx::cuda::softmax_cross_entropy(logits_gpu, labels, smoothing, grad_seed, nullptr) == loss_gpu);
  // Device labels: the same again.
  const auto labels_gpu = device_labels(labels);
  CHECK(mpx::cuda::softmax_cross_entropy(logits_gpu, device_span(labels_gpu), smoothing, grad_seed,
                                         nullptr) == loss_gpu);
}

}  // namespace

TEMPLATE_TEST_CASE("cuda softmax cross-entropy matches the cpu", "[cuda][loss]", float, double, Eigen::half,
                   Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(31);
  struct Size {
    std::int64_t batch, classes;
  };
  for (const Size s : {Size{1, 1}, Size{1, 10}, Size{7, 3}, Size{64, 1023}, Size{5, 4097}, Size{1023, 10}}) {
    check_cross_entropy<T>(s.batch, s.classes, 0.0f, 1.0f, rng);
    check_cross_entropy<T>(s.batch, s.classes, 0.1f, 65536.0f / 3.0f, rng);
  }
}

TEMPLATE_TEST_CASE("cuda softmax cross-entropy device path: device seed, accumulated sum, NaN rows",
                   "[cuda][loss]", float, double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  using Acc = accumulate_of<T>;
  std::mt19937 rng(32);
  const std::int64_t batch = 9;
  const std::int64_t classes = 37;
  const auto logits = random_host<T>(mpx::Shape{batch, classes}, rng, -6.0, 6.0);
  auto labels = random_labels(batch, classes, rng);
  const auto logits_gpu = mpx::to_device(logits);
  const Acc loss = mpx::cuda::softmax_cross_entropy(logits_gpu, labels, 0.05f, 1.0f, nullptr);

  // seed = scale / divisor read on the device: the CPU's grad_seed = 1024 / 3 (a float division).
  const float scale_value[] = {1024.0f};
  mpx::cuda::DeviceArray<float> scale(std::span<const float>{scale_value});
  const float grad_seed = 1024.0f / 3.0f;
  mpx::Tensor<T> d_cpu(logits.shape());
  (void)mpx::cpu::softmax_cross_entropy(logits, labels, 0.05f, grad_seed, &d_cpu);
  mpx::Tensor<T, mpx::Cuda> d_gpu(logits.shape());
  mpx::Tensor<T, mpx::Cuda> d_sync(logits.shape());
  (void)mpx::cuda::softmax_cross_entropy(logits_gpu, labels, 0.05f, grad_seed, &d_sync);

  const auto labels_gpu = device_labels(labels);
  mpx::Tensor<Acc, mpx::Cuda> row_losses(mpx::Shape{batch});
  mpx::cuda::DeviceArray<double> loss_sum(1);
  const double zero[] = {0.0};
  loss_sum.upload(std::span<const double>{zero});
  const mpx::LossSeed seed{scale.data(), 3.0f};
  mpx::cuda::softmax_cross_entropy(logits_gpu, labels_gpu.data(), 0.05f, seed, &d_gpu, row_losses,
                                   loss_sum.data());
  mpx::cuda::softmax_cross_entropy(logits_gpu, labels_gpu.data(), 0.05f, seed, nullptr, row_losses,
                                   loss_sum.data());
  // Deterministic: two calls add exactly twice the synchronous form's mean.
  CHECK(loss_sum.download()[0] == static_cast<double>(loss) + static_cast<double>(loss));
  // The device seed equals the host seed bit for bit, so the gradient equals the synchronous one.
  require_same_bits(mpx::to_host(d_gpu), mpx::to_host(d_sync), "gradient with a device seed");
  const CrossEntropyBounds<T> bounds(logits, labels, 0.05f, static_cast<double>(grad_seed) / batch);
  require_close(mpx::to_host(d_gpu), d_cpu, "gradient with a device seed vs cpu",
                [&](std::int64_t i, double ref) { return 2 * bounds.gradient[i] + storage_slack<T>(ref); });

  // Labels outside [0, classes) on the device: those rows are NaN, the others unchanged, the mean NaN.
  labels[2] = -1;
  labels[5] = static_cast<std::int32_t>(classes);
  const auto bad_labels_gpu = device_labels(labels);
  loss_sum.upload(std::span<const double>{zero});
  mpx::Tensor<T, mpx::Cuda> d_bad(logits.shape());
  mpx::cuda::softmax_cross_entropy(logits_gpu, bad_labels_gpu.data(), 0.05f, seed, &d_bad, row_losses,
                                   loss_sum.data());
  CHECK(std::isnan(loss_sum.download()[0]));
  const auto rows = mpx::to_host(row_losses);
  const auto d_bad_host = mpx::to_host(d_bad);
  const auto d_good_host = mpx::to_host(d_gpu);
  for (std::int64_t r = 0; r < batch; ++r) {
    const bool bad = r == 2 || r == 5;
    CHECK(std::isnan(to_double(rows[r])) == bad);
    for (std::int64_t c = 0; c < classes; ++c) {
      const auto i = r * classes + c;
      if (bad) {
        CHECK(std::isnan(to_double(d_bad_host[i])));
      } else {
        CHECK(same_bits_or_both_nan(d_bad_host[i], d_good_host[i]));
      }
    }
  }
  CHECK(std::isnan(
      mpx::cuda::softmax_cross_entropy(logits_gpu, device_span(bad_labels_gpu), 0.0f, 1.0f, nullptr)));
  // Host labels are checked on the host, with the CPU's message.
  try {
    (void)mpx::cuda::softmax_cross_entropy(logits_gpu, labels, 0.0f, 1.0f, nullptr);
    FAIL("an invalid host label was accepted");
  } catch (const mpx::invalid_argument& e) {
    CHECK_THAT(std::string(e.what()),
               Catch::Contains("mpx::cuda::softmax_cross_entropy: label -1 at row 2 is outside [0, 37)"));
  }
}

TEMPLATE_TEST_CASE("cuda softmax cross-entropy propagates NaN and inf and checks its arguments",
                   "[cuda][loss]", float, double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(33);
  const std::int64_t batch = 4;
  const std::int64_t classes = 33;
  auto logits = random_host<T>(mpx::Shape{batch, classes}, rng, -3.0, 3.0);
  logits[1 * classes + 4] = static_cast<T>(std::numeric_limits<float>::quiet_NaN());
  logits[2 * classes + 0] = static_cast<T>(std::numeric_limits<float>::infinity());
  logits[3 * classes + 32] = static_cast<T>(-std::numeric_limits<float>::infinity());
  const auto labels = random_labels(batch, classes, rng);
  mpx::Tensor<T> d_cpu(logits.shape());
  const auto loss_cpu = mpx::cpu::softmax_cross_entropy(logits, labels, 0.1f, 1.0f, &d_cpu);
  const auto logits_gpu = mpx::to_device(logits);
  mpx::Tensor<T, mpx::Cuda> d_gpu(logits.shape());
  const auto loss_gpu = mpx::cuda::softmax_cross_entropy(logits_gpu, labels, 0.1f, 1.0f, &d_gpu);
  CHECK(std::isnan(loss_cpu));
  CHECK(std::isnan(loss_gpu));
  const auto d_back = mpx::to_host(d_gpu);
  for (std::int64_t i = 0; i < d_cpu.numel(); ++i) {
    INFO("element " << i);
    CHECK(std::isnan(to_double(d_back[i])) == std::isnan(to_double(d_cpu[i])));
  }

  std::vector<std::int32_t> three(3, 0);
  mpx::Tensor<T, mpx::Cuda> flat(mpx::Shape{classes});
  mpx::Tensor<T, mpx::Cuda> wrong(mpx::Shape{batch, classes + 1});
  CHECK_THROWS_AS(mpx::cuda::softmax_cross_entropy(flat, labels, 0.0f, 1.0f, nullptr), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::softmax_cross_entropy(logits_gpu, three, 0.0f, 1.0f, nullptr), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::softmax_cross_entropy(logits_gpu, labels, 1.0f, 1.0f, nullptr),
                  mpx::invalid_argument);
  CHECK_THROWS_AS(mpx::cuda::softmax_cross_entropy(logits_gpu, labels, 0.0f, 1.0f, &wrong), mpx::shape_error);
  // The per-row scratch is resized to [batch] by the call (a loss keeps an empty one until then).
  mpx::Tensor<accumulate_of<T>, mpx::Cuda> short_rows(mpx::Shape{batch - 1});
  const mpx::cuda::DeviceArray<std::int32_t> labels_gpu{std::span<const std::int32_t>(labels)};
  mpx::cuda::softmax_cross_entropy(logits_gpu, labels_gpu.data(), 0.0f, mpx::LossSeed{}, nullptr, short_rows,
                                   nullptr);
  CHECK(short_rows.shape() == mpx::Shape{batch});
}

TEMPLATE_TEST_CASE(
    "cuda softmax cross-entropy over [batch, sequence, classes] with ignored rows matches the cpu",
    "[cuda][loss][sequence]", float, double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  using Acc = accumulate_of<T>;
  std::mt19937 rng(34);
  const std::int64_t batch = 3;
  const std::int64_t sequence = 7;
  const std::int64_t classes = 65;
  const std::int64_t rows = batch * sequence;
  const auto logits = random_host<T>(mpx::Shape{batch, sequence, classes}, rng, -6.0, 6.0);
  for (const std::int32_t ignore : {mpx::default_ignore_index, std::int32_t{3}}) {
    CAPTURE(ignore);
    auto labels = random_labels(rows, classes, rng);
    for (const std::size_t r : {0u, 4u, 5u, 13u, 20u}) labels[r] = ignore;  // with 3, other rows may be too
    mpx::Tensor<T> d_cpu(logits.shape());
    const Acc loss_cpu = mpx::cpu::softmax_cross_entropy(logits, labels, 0.1f, 512.0f, &d_cpu, ignore);
    const auto logits_gpu = mpx::to_device(logits);
    mpx::Tensor<T, mpx::Cuda> d_gpu(logits.shape());
    const Acc loss_gpu = mpx::cuda::softmax_cross_entropy(logits_gpu, labels, 0.1f, 512.0f, &d_gpu, ignore);

    // The bounds of the kept rows alone, whose mean both sides take.
    std::vector<std::int32_t> kept_labels;
    std::vector<std::int64_t> kept_rows;
    for (std::int64_t r = 0; r < rows; ++r) {
      if (labels[static_cast<std::size_t>(r)] == ignore) continue;
      kept_rows.push_back(r);
      kept_labels.push_back(labels[static_cast<std::size_t>(r)]);
    }
    const auto kept = static_cast<std::int64_t>(kept_rows.size());
    mpx::Tensor<T> kept_logits(mpx::Shape{kept, classes});
    for (std::int64_t k = 0; k < kept; ++k)
      for (std::int64_t c = 0; c < classes; ++c)
        kept_logits[k * classes + c] = logits[kept_rows[k] * classes + c];
    const CrossEntropyBounds<T> bounds(kept_logits, kept_labels, 0.1f, 512.0 / static_cast<double>(kept));
    CHECK(close(loss_gpu, loss_cpu, 2 * bounds.loss));

    const auto d_back = mpx::to_host(d_gpu);
    mpx_test::MismatchLog log("cross-entropy gradient with ignored rows " + type_name<T>());
    std::int64_t k = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const bool ignored = labels[static_cast<std::size_t>(r)] == ignore;
      for (std::int64_t c = 0; c < classes; ++c) {
        const std::int64_t i = r * classes + c;
        const double gpu = to_double(d_back[i]);
        const double cpu = to_double(d_cpu[i]);
        const double bound = ignored ? 0.0 : 2 * bounds.gradient[k * classes + c] + storage_slack<T>(cpu);
        log.check(ignored ? gpu == 0.0 && cpu == 0.0 : close(gpu, cpu, bound), [&] {
          std::ostringstream message;  // not operator+: GCC 12 warns falsely (-Wrestrict) where it inlines it
          message << "[" << i << "] gpu " << gpu << " cpu " << cpu << " bound " << bound;
          return message.str();
        });
      }
      if (!ignored) ++k;
    }
    INFO(log.summary());
    CHECK(log.failures() == 0);

    // The device path: the count of kept rows made on the device; the same loss and gradient bits.
    const auto labels_gpu = device_labels(labels);
    mpx::Tensor<Acc, mpx::Cuda> row_losses;
    mpx::cuda::DeviceArray<double> loss_sum(1);
    const double zero[] = {0.0};
    loss_sum.upload(std::span<const double>{zero});
    mpx::Tensor<T, mpx::Cuda> d_step(logits.shape());
    mpx::cuda::softmax_cross_entropy(logits_gpu, device_span(labels_gpu), 0.1f,
                                     mpx::LossSeed{nullptr, 1.0f, 512.0f}, &d_step, row_losses,
                                     loss_sum.data(), ignore);
    CHECK(loss_sum.download()[0] == static_cast<double>(loss_gpu));
    require_same_bits(mpx::to_host(d_step), d_back, "device path with ignored rows");
    const auto row_values = mpx::to_host(row_losses);
    for (const std::size_t r : {0u, 4u, 5u, 13u, 20u})
      CHECK(to_double(row_values[static_cast<std::int64_t>(r)]) == 0.0);
  }

  // Every row ignored: loss 0 and a zero gradient, as on the CPU.
  const std::vector<std::int32_t> none(static_cast<std::size_t>(rows), -100);
  const auto logits_gpu = mpx::to_device(logits);
  mpx::Tensor<T, mpx::Cuda> d_none(logits.shape());
  CHECK(mpx::cuda::softmax_cross_entropy(logits_gpu, none, 0.0f, 1.0f, &d_none) == Acc(0));
  // Named: a range-for over to_host(...).values() would read a destroyed temporary's memory.
  const auto none_back = mpx::to_host(d_none);
  for (const T g : none_back.values()) CHECK(to_double(g) == 0.0);
}

TEMPLATE_TEST_CASE("cuda count_correct matches the cpu's argmax, ties included", "[cuda][loss]", float,
                   double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(34);
  struct Size {
    std::int64_t batch, classes;
  };
  for (const Size s : {Size{1, 1}, Size{7, 3}, Size{1023, 10}, Size{33, 4097}}) {
    const std::int64_t batch = s.batch;
    const std::int64_t classes = s.classes;
    INFO("batch " << batch << " classes " << classes);
    // Few distinct values, so rows often have tied maxima (the first one wins).
    auto logits = random_host<T>(mpx::Shape{batch, classes}, rng, -3.0, 3.0);
    for (T& z : logits.values()) z = static_cast<T>(std::round(static_cast<float>(z)));
    const auto labels = random_labels(batch, classes, rng);
    const std::int64_t expected = mpx::cpu::count_correct(logits, labels);
    const auto logits_gpu = mpx::to_device(logits);
    CHECK(mpx::cuda::count_correct(logits_gpu, labels) == expected);
    const auto labels_gpu = device_labels(labels);
    CHECK(mpx::cuda::count_correct(logits_gpu, device_span(labels_gpu)) == expected);
    mpx::cuda::DeviceArray<std::int64_t> correct(1);
    const std::int64_t start[] = {5};
    correct.upload(std::span<const std::int64_t>{start});
    mpx::cuda::count_correct(logits_gpu, labels_gpu.data(), correct.data());
    mpx::cuda::count_correct(logits_gpu, labels_gpu.data(), correct.data());
    CHECK(correct.download()[0] == 5 + 2 * expected);
  }
  mpx::Tensor<T, mpx::Cuda> logits(mpx::Shape{3, 2});
  CHECK_THROWS_AS(mpx::cuda::count_correct(logits, std::vector<std::int32_t>(2, 0)), mpx::shape_error);
}

TEMPLATE_TEST_CASE("cuda argmax and nn::predict match the cpu's, ties and NaN included", "[cuda][loss]",
                   float, double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(35);
  struct Size {
    std::int64_t batch, classes;
  };
  for (const Size s : {Size{1, 1}, Size{7, 3}, Size{1023, 10}, Size{33, 4097}, Size{70000, 2}}) {
    const std::int64_t batch = s.batch;
    const std::int64_t classes = s.classes;
    INFO("batch " << batch << " classes " << classes);
    // Few distinct values, so rows often have tied maxima (the first one wins), and a NaN in some
    // rows (the first NaN wins, as torch.argmax).
    auto logits = random_host<T>(mpx::Shape{batch, classes}, rng, -3.0, 3.0);
    for (T& z : logits.values()) z = static_cast<T>(std::round(static_cast<float>(z)));
    for (std::int64_t r = 3; r < batch; r += 5) {
      logits[r * classes + (r * 7) % classes] = static_cast<T>(std::numeric_limits<float>::quiet_NaN());
    }
    mpx::Tensor<std::int32_t> expected(mpx::Shape{batch});
    mpx::cpu::argmax(logits, expected);
    const auto logits_gpu = mpx::to<mpx::Cuda>(logits);
    auto indices = mpx::Tensor<std::int32_t, mpx::Cuda>::uninitialized(mpx::Shape{batch});
    mpx::cuda::argmax(logits_gpu, indices);
    const auto got = mpx::to<mpx::Host>(indices);
    CHECK(std::equal(got.values().begin(), got.values().end(), expected.values().begin()));
    const auto predicted = mpx::to<mpx::Host>(mpx::nn::predict(logits_gpu));
    CHECK(std::equal(predicted.values().begin(), predicted.values().end(), expected.values().begin()));
    // count_correct counts the rows whose argmax is the label, on either device.
    const auto labels = random_labels(batch, classes, rng);
    std::int64_t hits = 0;
    for (std::int64_t r = 0; r < batch; ++r)
      hits += expected[r] == labels[static_cast<std::size_t>(r)] ? 1 : 0;
    CHECK(mpx::nn::count_correct(logits_gpu, device_labels(labels)) == hits);
  }
  mpx::Tensor<T, mpx::Cuda> logits(mpx::Shape{3, 2});
  mpx::Tensor<std::int32_t, mpx::Cuda> two(mpx::Shape{2});
  CHECK_THROWS_AS(mpx::cuda::argmax(logits, two), mpx::shape_error);
  mpx::Tensor<T, mpx::Cuda> no_classes(mpx::Shape{3, 0});
  CHECK_THROWS_AS(mpx::nn::predict(no_classes), mpx::shape_error);
}

// ---- LayerNorm ----------------------------------------------------------------------------------

namespace {

template <class T, class W, class Acc>
void check_layer_norm(std::int64_t rows, std::int64_t features, std::mt19937& rng) {
  INFO(type_name<T>() << " rows " << rows << " features " << features);
  constexpr double eps = mpx::epsilon_v<mpx::tag_of_t<Acc>>;
  const mpx::Shape shape{rows, features};
  // An offset mean, so the two-pass variance matters.
  const auto x = random_host<T>(shape, rng, 2.0, 6.0);
  const auto gamma = random_host<W>(mpx::Shape{features}, rng, 0.5, 1.5);
  const auto beta = random_host<W>(mpx::Shape{features}, rng, -0.5, 0.5);
  const auto dy = random_host<T>(shape, rng);
  const auto dgamma0 = random_host<Acc>(mpx::Shape{features}, rng);
  const auto dbeta0 = random_host<Acc>(mpx::Shape{features}, rng);
  constexpr float epsilon = 1e-5f;

  mpx::Tensor<T> y_cpu(shape);
  mpx::Tensor<Acc> mean_cpu(mpx::Shape{rows});
  mpx::Tensor<Acc> rstd_cpu(mpx::Shape{rows});
  mpx::cpu::layer_norm_forward(x, gamma, beta, epsilon, y_cpu, mean_cpu, rstd_cpu);
  mpx::Tensor<T> dx_cpu(shape);
  auto dgamma_cpu = dgamma0.clone();
  auto dbeta_cpu = dbeta0.clone();
  mpx::cpu::layer_norm_backward(x, gamma, mean_cpu, rstd_cpu, dy, dx_cpu, dgamma_cpu, dbeta_cpu);

  const auto x_gpu = mpx::to_device(x);
  const auto gamma_gpu = mpx::to_device(gamma);
  const auto beta_gpu = mpx::to_device(beta);
  const auto dy_gpu = mpx::to_device(dy);
  mpx::Tensor<T, mpx::Cuda> y_gpu(shape);
  mpx::Tensor<Acc, mpx::Cuda> mean_gpu(mpx::Shape{rows});
  mpx::Tensor<Acc, mpx::Cuda> rstd_gpu(mpx::Shape{rows});
  mpx::cuda::layer_norm_forward(x_gpu, gamma_gpu, beta_gpu, epsilon, y_gpu, mean_gpu, rstd_gpu);
  // The backward gets the CPU's statistics, so that it is checked on its own.
  const auto mean_in = mpx::to_device(mean_cpu);
  const auto rstd_in = mpx::to_device(rstd_cpu);
  mpx::Tensor<T, mpx::Cuda> dx_gpu(shape);
  auto dgamma_gpu = mpx::to_device(dgamma0);
  auto dbeta_gpu = mpx::to_device(dbeta0);
  mpx::cuda::layer_norm_backward(x_gpu, gamma_gpu, mean_in, rstd_in, dy_gpu, dx_gpu, dgamma_gpu, dbeta_gpu);

  // Per row: the mean's sum has n = features terms of |x|; the variance's terms (x - mean)^2; rstd's
  // relative error is about half the variance's. Each y and dx is a few operations on those.
  const double n = static_cast<double>(features + 16);
  std::vector<double> abs_mean(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int64_t f = 0; f < features; ++f) s += std::abs(to_double(x[r * features + f]));
    abs_mean[static_cast<std::size_t>(r)] = s / static_cast<double>(features);
  }
  require_close(mpx::to_host(mean_gpu), mean_cpu, "layer_norm mean",
                [&](std::int64_t r, double) { return 2 * n * eps * abs_mean[static_cast<std::size_t>(r)]; });
  require_close(mpx::to_host(rstd_gpu), rstd_cpu, "layer_norm rstd",
                [&](std::int64_t, double ref) { return 2 * n * eps * std::abs(ref); });
  const auto xhat_magnitude = [&](std::int64_t i) {
    const std::int64_t r = i / features;
    const double rstd = to_double(rstd_cpu[r]);
    return rstd *
           (std::abs(to_double(x[i]) - to_double(mean_cpu[r])) + abs_mean[static_cast<std::size_t>(r)]);
  };
  require_close(mpx::to_host(y_gpu), y_cpu, "layer_norm y " + type_name<T>(),
                [&](std::int64_t i, double ref) {
                  const std::int64_t f = i % features;
                  const double magnitude =
                      xhat_magnitude(i) * std::abs(to_double(gamma[f])) + std::abs(to_double(beta[f]));
                  return 2 * n * eps * magnitude + storage_slack<T>(ref);
                });

  // dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat)): magnitude from the absolute values.
  std::vector<double> mean_abs_dxhat(static_cast<std::size_t>(rows));
  std::vector<double> mean_abs_dxhat_xhat(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    double a = 0;
    double b = 0;
    for (std::int64_t f = 0; f < features; ++f) {
      const std::int64_t i = r * features + f;
      const double dxhat = std::abs(to_double(dy[i]) * to_double(gamma[f]));
      a += dxhat;
      b += dxhat * xhat_magnitude(i);
    }
    mean_abs_dxhat[static_cast<std::size_t>(r)] = a / static_cast<double>(features);
    mean_abs_dxhat_xhat[static_cast<std::size_t>(r)] = b / static_cast<double>(features);
  }
  require_close(
      mpx::to_host(dx_gpu), dx_cpu, "layer_norm dx " + type_name<T>(), [&](std::int64_t i, double ref) {
        const std::int64_t r = i / features;
        const std::int64_t f = i % features;
        const auto k = static_cast<std::size_t>(r);
        const double magnitude =
            to_double(rstd_cpu[r]) * (std::abs(to_double(dy[i]) * to_double(gamma[f])) + mean_abs_dxhat[k] +
                                      xhat_magnitude(i) * mean_abs_dxhat_xhat[k]);
        return 2 * n * eps * magnitude + storage_slack<T>(ref);
      });

  // dgamma, dbeta: sums over rows added to the previous values.
  const double m = static_cast<double>(rows + 16);
  require_close(mpx::to_host(dgamma_gpu), dgamma_cpu, "layer_norm dgamma", [&](std::int64_t f, double) {
    double magnitude = std::abs(to_double(dgamma0[f]));
    for (std::int64_t r = 0; r < rows; ++r) {
      magnitude += std::abs(to_double(dy[r * features + f])) * xhat_magnitude(r * features + f);
    }
    return 2 * m * eps * magnitude;
  });
  require_close(mpx::to_host(dbeta_gpu), dbeta_cpu, "layer_norm dbeta", [&](std::int64_t f, double) {
    double magnitude = std::abs(to_double(dbeta0[f]));
    for (std::int64_t r = 0; r < rows; ++r) magnitude += std::abs(to_double(dy[r * features + f]));
    return 2 * m * eps * magnitude;
  });
}

}  // namespace

TEMPLATE_TEST_CASE("cuda layer_norm forward and backward match the cpu", "[cuda][layer_norm]", float, double,
                   Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  using Acc = mpx::accumulate_t<T>;
  std::mt19937 rng(41);
  struct Size {
    std::int64_t rows, features;
  };
  // 33 and more rows take the partial-sum path for dgamma/dbeta; 4097 rows use all 64 chunks.
  for (const Size s :
       {Size{1, 1}, Size{7, 33}, Size{33, 4097}, Size{130, 1023}, Size{1023, 64}, Size{4097, 7}}) {
    check_layer_norm<T, Acc, Acc>(s.rows, s.features, rng);
  }
  if constexpr (!std::is_same_v<T, double>) check_layer_norm<T, Eigen::bfloat16, float>(37, 19, rng);
}

TEST_CASE("cuda layer_norm checks shapes and repeats bit for bit", "[cuda][layer_norm]") {
  std::mt19937 rng(42);
  const auto x = mpx::to_device(random_host<float>(mpx::Shape{100, 16}, rng));
  const auto gamma = mpx::to_device(random_host<float>(mpx::Shape{16}, rng));
  const auto dy = mpx::to_device(random_host<float>(mpx::Shape{100, 16}, rng));
  mpx::Tensor<float, mpx::Cuda> y(mpx::Shape{100, 16});
  mpx::Tensor<float, mpx::Cuda> mean(mpx::Shape{100});
  mpx::Tensor<float, mpx::Cuda> rstd(mpx::Shape{100});
  mpx::Tensor<float, mpx::Cuda> wrong(mpx::Shape{15});
  CHECK_THROWS_AS(mpx::cuda::layer_norm_forward(x, wrong, gamma, 1e-5f, y, mean, rstd), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::layer_norm_forward(x, gamma, gamma, 1e-5f, y, wrong, rstd), mpx::shape_error);
  mpx::cuda::layer_norm_forward(x, gamma, gamma, 1e-5f, y, mean, rstd);
  mpx::Tensor<float, mpx::Cuda> dx(mpx::Shape{100, 16});
  mpx::Tensor<float, mpx::Cuda> dgamma(mpx::Shape{16});
  mpx::Tensor<float, mpx::Cuda> dbeta(mpx::Shape{16});
  CHECK_THROWS_AS(mpx::cuda::layer_norm_backward(x, gamma, mean, rstd, dy, dx, wrong, dbeta),
                  mpx::shape_error);
  mpx::cuda::layer_norm_backward(x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
  const auto first_dgamma = mpx::to_host(dgamma);
  const auto first_dx = mpx::to_host(dx);
  dgamma.set_zero();
  dbeta.set_zero();
  mpx::cuda::layer_norm_backward(x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
  require_same_bits(mpx::to_host(dgamma), first_dgamma, "dgamma repeated");
  require_same_bits(mpx::to_host(dx), first_dx, "dx repeated");
}

// ---- MSE ----------------------------------------------------------------------------------------

namespace {

// The loss is a sum of `count` non-negative squares, so (count + 16) eps of the result bounds it on
// each side. The gradient is one subtraction and one product of the same operands: bit for bit.
template <class T, class U>
void check_mse(std::int64_t count, float grad_seed, std::mt19937& rng) {
  using Acc = accumulate_of<T>;
  INFO(type_name<T>() << " vs " << type_name<U>() << " count " << count << " seed " << grad_seed);
  constexpr double eps = mpx::epsilon_v<mpx::tag_of_t<Acc>>;
  const auto prediction = random_host<T>(mpx::Shape{count}, rng, -3.0, 3.0);
  const auto target = random_host<U>(mpx::Shape{count}, rng, -3.0, 3.0);
  mpx::Tensor<T> d_cpu(prediction.shape());
  const Acc loss_cpu = mpx::cpu::mse_loss(prediction, target, grad_seed, &d_cpu);
  const auto prediction_gpu = mpx::to_device(prediction);
  const auto target_gpu = mpx::to_device(target);
  mpx::Tensor<T, mpx::Cuda> d_gpu(prediction.shape());
  const Acc loss_gpu = mpx::cuda::mse_loss(prediction_gpu, target_gpu, grad_seed, &d_gpu);
  CHECK(close(loss_gpu, loss_cpu, 2 * static_cast<double>(count + 16) * eps * std::abs(to_double(loss_cpu))));
  require_same_bits(mpx::to_host(d_gpu), d_cpu, "mse gradient");
  CHECK(mpx::cuda::mse_loss(prediction_gpu, target_gpu, grad_seed, nullptr) == loss_gpu);
}

}  // namespace

TEMPLATE_TEST_CASE("cuda mse_loss matches the cpu", "[cuda][loss]", float, double, Eigen::half,
                   Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(51);
  for (const std::int64_t count :
       {std::int64_t{1}, std::int64_t{7}, std::int64_t{1023}, std::int64_t{4097}, std::int64_t{70001}}) {
    check_mse<T, T>(count, 1.0f, rng);
    check_mse<T, T>(count, 65536.0f / 3.0f, rng);
    check_mse<T, float>(count, 0.5f, rng);
  }
  // Empty: the mean is 0, as on the CPU.
  mpx::Tensor<T, mpx::Cuda> empty(mpx::Shape{0});
  mpx::Tensor<T, mpx::Cuda> empty_grad(mpx::Shape{0});
  CHECK(mpx::cuda::mse_loss(empty, empty, 1.0f, &empty_grad) == 0);
  mpx::Tensor<T, mpx::Cuda> other(mpx::Shape{2});
  CHECK_THROWS_AS(mpx::cuda::mse_loss(other, empty, 1.0f, nullptr), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::mse_loss(other, other, 1.0f, &empty_grad), mpx::shape_error);
}

TEMPLATE_TEST_CASE("cuda mse_loss device path: device seed, accumulated sum, NaN", "[cuda][loss]", float,
                   double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  using Acc = accumulate_of<T>;
  std::mt19937 rng(52);
  const std::int64_t count = 4097;
  auto prediction = random_host<T>(mpx::Shape{count}, rng, -3.0, 3.0);
  const auto target = random_host<T>(mpx::Shape{count}, rng, -3.0, 3.0);
  const auto prediction_gpu = mpx::to_device(prediction);
  const auto target_gpu = mpx::to_device(target);
  const Acc loss = mpx::cuda::mse_loss(prediction_gpu, target_gpu, 1.0f, nullptr);

  const float scale_value[] = {4096.0f};
  mpx::cuda::DeviceArray<float> scale(std::span<const float>{scale_value});
  mpx::Tensor<T> d_cpu(prediction.shape());
  (void)mpx::cpu::mse_loss(prediction, target, 4096.0f / 3.0f, &d_cpu);
  mpx::Tensor<Acc, mpx::Cuda> partials(mpx::Shape{mpx::cuda::mse_loss_partials});
  mpx::cuda::DeviceArray<double> loss_sum(1);
  const double zero[] = {0.0};
  loss_sum.upload(std::span<const double>{zero});
  mpx::Tensor<T, mpx::Cuda> d_gpu(prediction.shape());
  const mpx::LossSeed seed{scale.data(), 3.0f};
  mpx::cuda::mse_loss(prediction_gpu, target_gpu, seed, &d_gpu, partials, loss_sum.data());
  mpx::cuda::mse_loss(prediction_gpu, target_gpu, seed, nullptr, partials, loss_sum.data());
  CHECK(loss_sum.download()[0] == static_cast<double>(loss) + static_cast<double>(loss));
  require_same_bits(mpx::to_host(d_gpu), d_cpu, "mse gradient with a device seed");

  // Scratch of another shape is given the right one (a loss keeps an empty tensor for it).
  mpx::Tensor<Acc, mpx::Cuda> resized(mpx::Shape{3});
  mpx::cuda::mse_loss(prediction_gpu, target_gpu, seed, nullptr, resized, loss_sum.data());
  CHECK(resized.shape() == mpx::Shape{mpx::cuda::mse_loss_partials});
  CHECK(loss_sum.download()[0] == 3 * static_cast<double>(loss));

  prediction[100] = static_cast<T>(std::numeric_limits<float>::quiet_NaN());
  mpx::Tensor<T> d_nan_cpu(prediction.shape());
  CHECK(std::isnan(mpx::cpu::mse_loss(prediction, target, 1.0f, &d_nan_cpu)));
  mpx::Tensor<T, mpx::Cuda> d_nan(prediction.shape());
  CHECK(std::isnan(mpx::cuda::mse_loss(mpx::to_device(prediction), target_gpu, 1.0f, &d_nan)));
  require_same_bits(mpx::to_host(d_nan), d_nan_cpu, "mse gradient with a NaN");
}

}  // namespace MPX_UNITY_ID
}  // namespace
