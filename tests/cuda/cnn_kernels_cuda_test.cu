// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The CNN layers' kernels of the CUDA backend (batch and group normalisation, pooling, upsampling,
// channel concatenation, SiLU, the per-sample shift of time conditioning) against the CPU backend on the same
// random inputs. main() is in numeric_cuda_test.cu and skips (exit 77) without a device.
//
// Bit for bit where both sides compute the same correctly rounded operations in the same order:
// max pooling (ties and NaN included) and its backward, average pooling and its backward, global
// average pooling, upsampling, concatenation and split, the per-sample shift and its sums (the GPU kernels
// gather the CPU's terms in the CPU's order; sums and quotients of IEEE operations, no multiply-add to fuse).
// Within a bound elsewhere, in kernels_cuda_test.cu's style: an error of (n + 16) eps of the accumulate type
// per unit of magnitude (the sum of the absolute values of the terms; n the sum's length) on each side, so
// twice that between them, plus one ulp of the stored type and its subnormal step. Where a result is computed
// from statistics the test also reads (y from mean and rstd, dx from the sums in dgamma and dbeta), the bound
// takes the measured difference of those statistics, which were checked on their own, so that it stays tight
// for long sums. Sums over integers that stay below 2^24 are exact in any order: those (a mean over a
// power-of-two count, dbeta) are checked bit for bit, which no dropped or doubled tile could pass. Every
// reduction repeats bit for bit, also replayed from a CUDA graph.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <mpx/backend/cuda/activation.cuh>
#include <mpx/backend/cuda/batch_norm.cuh>
#include <mpx/backend/cuda/channel_concat.cuh>
#include <mpx/backend/cuda/graph.hpp>
#include <mpx/backend/cuda/group_norm.cuh>
#include <mpx/backend/cuda/pool2d.cuh>
#include <mpx/backend/cuda/sample_shift.cuh>
#include <mpx/backend/cuda/upsample.cuh>
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
using mpx_test::eps_of;
using mpx_test::odd_sizes;
using mpx_test::random_host;
using mpx_test::require_close;
using mpx_test::require_same_bits;
using mpx_test::storage_slack;
using mpx_test::to_double;
using mpx_test::type_name;
using mpx_test::with_specials;

// A [..., C] tensor whose channel c holds centre[c] + spread[c] u, u uniform in [-1, 1), centres in
// [-4, 4] and spreads in [0.5, 2] drawn per channel: channels that differ, so a statistic read from
// the wrong channel shows, and an offset mean, so the two-pass variance matters.
template <class T>
mpx::Tensor<T> channel_data(const mpx::Shape& shape, std::mt19937& rng) {
  const std::int64_t channels = shape.cols();
  std::uniform_real_distribution<double> centre(-4.0, 4.0), spread(0.5, 2.0), unit(-1.0, 1.0);
  std::vector<double> mid(static_cast<std::size_t>(channels)), width(mid.size());
  for (std::size_t c = 0; c < mid.size(); ++c) {
    mid[c] = centre(rng);
    width[c] = spread(rng);
  }
  mpx::Tensor<T> t(shape);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const auto c = static_cast<std::size_t>(i % channels);
    t[i] = static_cast<T>(static_cast<float>(mid[c] + width[c] * unit(rng)));
  }
  return t;
}

// Small integers in [-8, 8]: sums of up to 2^20 of them are exact in fp32, in any order.
template <class T>
mpx::Tensor<T> integer_data(const mpx::Shape& shape, std::mt19937& rng) {
  std::uniform_int_distribution<int> pick(-8, 8);
  mpx::Tensor<T> t(shape);
  for (T& v : t.values()) v = static_cast<T>(static_cast<float>(pick(rng)));
  return t;
}

// No input gradient wanted (a typed null: the backends deduce T from it).
template <class T, class Device = mpx::Host>
mpx::Tensor<T, Device>* no_dx() {
  return nullptr;
}

// A host tensor filled with `value` (a gradient buffer's earlier contents).
template <class T>
mpx::Tensor<T> filled(const mpx::Shape& shape, double value) {
  mpx::Tensor<T> t(shape);
  for (T& v : t.values()) v = static_cast<T>(static_cast<float>(value));
  return t;
}

}  // namespace

// ---- SiLU ---------------------------------------------------------------------------------------

// silu is the same source on both sides (activation_spec.hpp: polynomial_exp in float, std::exp and
// CUDA's exp in double), and nvcc fuses multiply-adds the host compiler keeps apart (the polynomial's
// among them), so the two differ by a few ulp. x / (1 + e) carries the relative error of e damped by e / (1 +
// e), so a few eps of |x|; the derivative s (1 + x (1 - s)) carries s's error times |x|, so a few eps of (1 +
// |x|) |dy|. The bounds are 64 eps (1 + |x|) and 64 eps (1 + |x|)^2 |dy|, plus one ulp of the stored type.
TEMPLATE_TEST_CASE("cuda silu matches the cpu within the exp and rounding bound", "[cuda][activation]", float,
                   double, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  constexpr double eps = eps_of<accumulate_of<T>>();
  std::mt19937 rng(61);
  for (const std::int64_t count : odd_sizes) {
    INFO("count " << count);
    const auto x = with_specials<T>(count, rng, -12.0, 12.0);
    const auto dy = random_host<T>(x.shape(), rng, -2.0, 2.0);
    mpx::Tensor<T> y_cpu(x.shape());
    mpx::Tensor<T> dx_cpu(x.shape());
    mpx::cpu::silu_forward(x, y_cpu);
    mpx::cpu::silu_backward(x, dy, dx_cpu);

    const auto x_gpu = mpx::to_device(x);
    const auto dy_gpu = mpx::to_device(dy);
    mpx::Tensor<T, mpx::Cuda> y_gpu(x.shape());
    mpx::Tensor<T, mpx::Cuda> dx_gpu(x.shape());
    mpx::cuda::silu_forward(x_gpu, y_gpu);
    mpx::cuda::silu_backward(x_gpu, dy_gpu, dx_gpu);
    require_close(mpx::to_host(y_gpu), y_cpu, "silu_forward", [&](std::int64_t i, double ref) {
      return 64 * eps * (1 + std::abs(to_double(x[i]))) + storage_slack<T>(ref);
    });
    require_close(mpx::to_host(dx_gpu), dx_cpu, "silu_backward", [&](std::int64_t i, double ref) {
      const double a = 1 + std::abs(to_double(x[i]));
      return 64 * eps * a * a * std::abs(to_double(dy[i])) + storage_slack<T>(ref);
    });

    auto in_place = x_gpu.clone();  // y == x: every element is read before it is written
    mpx::cuda::silu_forward(in_place, in_place);
    require_same_bits(in_place, mpx::to_host(y_gpu), "silu_forward in place");
  }
  mpx::Tensor<T, mpx::Cuda> a(mpx::Shape{4, 3});
  mpx::Tensor<T, mpx::Cuda> b(mpx::Shape{3, 4});
  mpx::Tensor<T, mpx::Cuda> c(mpx::Shape{4, 3});
  CHECK_THROWS_AS(mpx::cuda::silu_forward(a, b), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::silu_backward(a, c, b), mpx::shape_error);
}

// ---- concatenation, upsampling ------------------------------------------------------------------

TEMPLATE_TEST_CASE("cuda concat_channels and split_channels copy the cpu's bits", "[cuda][concat]", float,
                   Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(62);
  struct Case {
    mpx::Shape a, b;
  };
  for (const Case& s : {Case{{1, 1}, {1, 1}}, Case{{2, 3, 5, 7}, {2, 3, 5, 9}}, Case{{4, 5, 1}, {4, 5, 1023}},
                        Case{{3, 17, 64}, {3, 17, 3}}, Case{{2, 4, 4, 0}, {2, 4, 4, 5}}}) {
    INFO("a " << s.a << " b " << s.b);
    const auto a = with_specials<T>(s.a, rng);
    const auto b = with_specials<T>(s.b, rng);
    const mpx::Shape joined = s.a.with_last(s.a.cols() + s.b.cols());
    mpx::Tensor<T> y_cpu(joined);
    mpx::cpu::concat_channels(a, b, y_cpu);
    mpx::Tensor<T, mpx::Cuda> y_gpu(joined);
    mpx::cuda::concat_channels(mpx::to_device(a), mpx::to_device(b), y_gpu);
    require_same_bits(y_gpu, y_cpu, "concat_channels");

    const auto y = random_host<T>(joined, rng);
    mpx::Tensor<T> a_cpu(s.a);
    mpx::Tensor<T> b_cpu(s.b);
    mpx::cpu::split_channels(y, a_cpu, b_cpu);
    mpx::Tensor<T, mpx::Cuda> a_gpu(s.a);
    mpx::Tensor<T, mpx::Cuda> b_gpu(s.b);
    mpx::cuda::split_channels(mpx::to_device(y), a_gpu, b_gpu);
    require_same_bits(a_gpu, a_cpu, "split_channels a");
    require_same_bits(b_gpu, b_cpu, "split_channels b");
  }
  mpx::Tensor<T, mpx::Cuda> a(mpx::Shape{2, 3, 4});
  mpx::Tensor<T, mpx::Cuda> b(mpx::Shape{2, 4, 4});
  mpx::Tensor<T, mpx::Cuda> y(mpx::Shape{2, 3, 8});
  CHECK_THROWS_AS(mpx::cuda::concat_channels(a, b, y), mpx::shape_error);
  mpx::Tensor<T, mpx::Cuda> b_ok(mpx::Shape{2, 3, 4});
  mpx::Tensor<T, mpx::Cuda> y_wrong(mpx::Shape{2, 3, 7});
  CHECK_THROWS_AS(mpx::cuda::concat_channels(a, b_ok, y_wrong), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::split_channels(y_wrong, a, b_ok), mpx::shape_error);
}

TEMPLATE_TEST_CASE("cuda upsample_nearest matches the cpu bit for bit", "[cuda][upsample]", float,
                   Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(63);
  struct Case {
    mpx::Shape x;
    mpx::Size2d scale;
  };
  for (const Case& s : {Case{{1, 1, 1, 3}, {1}}, Case{{2, 3, 5, 7}, {2}}, Case{{1, 4, 3, 9}, {3, 2}},
                        Case{{3, 5, 2, 33}, {1, 4}}, Case{{2, 8, 8, 64}, {2}}}) {
    INFO("x " << s.x << " scale " << s.scale.h << " x " << s.scale.w);
    const mpx::Shape big{s.x[0], s.x[1] * s.scale.h, s.x[2] * s.scale.w, s.x[3]};
    const auto x = with_specials<T>(s.x, rng);
    const auto dy = random_host<T>(big, rng, -2.0, 2.0);
    mpx::Tensor<T> y_cpu(big);
    mpx::Tensor<T> dx_cpu(s.x);
    mpx::cpu::upsample_nearest_forward(x, y_cpu, s.scale);
    mpx::cpu::upsample_nearest_backward(dy, dx_cpu, s.scale);
    mpx::Tensor<T, mpx::Cuda> y_gpu(big);
    mpx::Tensor<T, mpx::Cuda> dx_gpu(s.x);
    mpx::cuda::upsample_nearest_forward(mpx::to_device(x), y_gpu, s.scale);
    mpx::cuda::upsample_nearest_backward(mpx::to_device(dy), dx_gpu, s.scale);
    require_same_bits(y_gpu, y_cpu, "upsample_nearest_forward");
    require_same_bits(dx_gpu, dx_cpu, "upsample_nearest_backward");
  }
  mpx::Tensor<T, mpx::Cuda> x(mpx::Shape{2, 3, 4});
  mpx::Tensor<T, mpx::Cuda> y(mpx::Shape{2, 6, 8});
  CHECK_THROWS_AS(mpx::cuda::upsample_nearest_forward(x, y, mpx::Size2d{2}), mpx::shape_error);
  mpx::Tensor<T, mpx::Cuda> x4(mpx::Shape{1, 2, 3, 4});
  mpx::Tensor<T, mpx::Cuda> y4(mpx::Shape{1, 4, 5, 4});
  CHECK_THROWS_AS(mpx::cuda::upsample_nearest_forward(x4, y4, mpx::Size2d{2}), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::upsample_nearest_backward(y4, x4, mpx::Size2d{2}), mpx::shape_error);
}

TEMPLATE_TEST_CASE("cuda add_sample_shift and sample_shift_backward match the cpu bit for bit",
                   "[cuda][time]", float, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  using Acc = mpx::accumulate_t<T>;
  std::mt19937 rng(64);
  for (const mpx::Shape& shape : {mpx::Shape{3, 5}, mpx::Shape{2, 7, 9}, mpx::Shape{4, 6, 5, 70}}) {
    INFO("x " << shape);
    const mpx::Shape shift_shape{shape[0], shape.cols()};
    const auto x = with_specials<T>(shape, rng);
    const auto shift = random_host<T>(shift_shape, rng, -2.0, 2.0);
    const auto dy = random_host<T>(shape, rng, -2.0, 2.0);
    mpx::Tensor<T> y_cpu(shape);
    mpx::Tensor<Acc> dshift_cpu(shift_shape);
    mpx::cpu::add_sample_shift(x, shift, y_cpu);
    mpx::cpu::sample_shift_backward(dy, dshift_cpu);
    mpx::Tensor<T, mpx::Cuda> y_gpu(shape);
    mpx::Tensor<Acc, mpx::Cuda> dshift_gpu(shift_shape);
    mpx::cuda::add_sample_shift(mpx::to_device(x), mpx::to_device(shift), y_gpu);
    mpx::cuda::sample_shift_backward(mpx::to_device(dy), dshift_gpu);
    require_same_bits(y_gpu, y_cpu, "add_sample_shift");
    require_same_bits(dshift_gpu, dshift_cpu, "sample_shift_backward");
  }
  mpx::Tensor<T, mpx::Cuda> x(mpx::Shape{2, 3, 4});
  mpx::Tensor<T, mpx::Cuda> bad_shift(mpx::Shape{3, 4});
  mpx::Tensor<T, mpx::Cuda> y(mpx::Shape{2, 3, 4});
  CHECK_THROWS_AS(mpx::cuda::add_sample_shift(x, bad_shift, y), mpx::shape_error);
}

// ---- pooling ------------------------------------------------------------------------------------

namespace {

// Windows with and without overlap, padding, dilation, strides that skip pixels, unequal sides.
std::vector<mpx::Window2d> pool_windows() {
  std::vector<mpx::Window2d> w;
  w.push_back(mpx::Window2d{.kernel = 2, .stride = 2});
  w.push_back(mpx::Window2d{.kernel = 3, .stride = 2, .padding = 1});
  w.push_back(mpx::Window2d{.kernel = 3, .stride = 1, .padding = 1});
  w.push_back(mpx::Window2d{.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}});
  w.push_back(mpx::Window2d{.kernel = 2, .stride = 3});
  w.push_back(mpx::Window2d{.kernel = {1, 4}, .stride = {1, 2}, .padding = {0, 2}});
  return w;
}

// Images [N, H, W, C]: one image, odd sides, C of 1, 3, 13, 64 and 1024.
const std::vector<mpx::Shape> pool_inputs = {
    {1, 7, 9, 3}, {2, 8, 5, 13}, {3, 5, 5, 1}, {2, 6, 7, 64}, {1, 4, 4, 1024}};

// Few distinct values (signed zeros among them), so windows hold ties, plus NaN and -inf: the
// forward's choice among ties and NaN decides where backward sends dy.
template <class T>
mpx::Tensor<T> tied_values(const mpx::Shape& shape, std::mt19937& rng) {
  const float levels[] = {-2.0f, -1.0f, -0.0f, 0.0f, 0.5f, 1.0f, 2.0f};
  std::uniform_int_distribution<int> pick(0, 6);
  std::uniform_int_distribution<int> special(0, 99);
  mpx::Tensor<T> t(shape);
  for (T& v : t.values()) {
    const int s = special(rng);
    const float value = s == 0   ? std::numeric_limits<float>::quiet_NaN()
                        : s == 1 ? -std::numeric_limits<float>::infinity()
                                 : levels[pick(rng)];
    v = static_cast<T>(value);
  }
  return t;
}

mpx::Pool2dGeometry geometry(const mpx::Shape& x, const mpx::Window2d& window) {
  return mpx::Pool2dGeometry{.batch = x[0], .input = {x[1], x[2]}, .channels = x[3], .window = window};
}

}  // namespace

TEMPLATE_TEST_CASE("cuda max_pool2d matches the cpu bit for bit, ties and NaN included", "[cuda][pool]",
                   float, Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(64);
  for (const mpx::Shape& shape : pool_inputs) {
    for (const mpx::Window2d& window : pool_windows()) {
      const mpx::Pool2dGeometry g = geometry(shape, window);
      g.check_settings("test");
      INFO("x " << shape << " kernel " << window.kernel.h << "x" << window.kernel.w << " stride "
                << window.stride.h << "x" << window.stride.w << " padding " << window.padding.h << "x"
                << window.padding.w << " dilation " << window.dilation.h << "x" << window.dilation.w);
      const auto x = tied_values<T>(shape, rng);
      const auto dy = random_host<T>(g.output_shape(), rng, -2.0, 2.0);
      mpx::Tensor<T> y_cpu(g.output_shape());
      mpx::Tensor<T> dx_cpu(shape);
      mpx::cpu::max_pool2d_forward(x, y_cpu, g);
      mpx::cpu::max_pool2d_backward(x, dy, dx_cpu, g);
      const auto x_gpu = mpx::to_device(x);
      mpx::Tensor<T, mpx::Cuda> y_gpu(g.output_shape());
      mpx::Tensor<T, mpx::Cuda> dx_gpu(shape);
      mpx::cuda::max_pool2d_forward(x_gpu, y_gpu, g);
      mpx::cuda::max_pool2d_backward(x_gpu, mpx::to_device(dy), dx_gpu, g);
      require_same_bits(y_gpu, y_cpu, "max_pool2d_forward");
      require_same_bits(dx_gpu, dx_cpu, "max_pool2d_backward");
    }
  }
  const mpx::Pool2dGeometry g = geometry(mpx::Shape{1, 4, 4, 2}, mpx::Window2d{.kernel = 2, .stride = 2});
  mpx::Tensor<T, mpx::Cuda> x(g.input_shape());
  mpx::Tensor<T, mpx::Cuda> wrong(mpx::Shape{1, 3, 2, 2});
  mpx::Tensor<T, mpx::Cuda> dy(g.output_shape());
  CHECK_THROWS_AS(mpx::cuda::max_pool2d_forward(x, wrong, g), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::max_pool2d_backward(x, dy, wrong, g), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::max_pool2d_backward(x, wrong, x, g), mpx::shape_error);
}

TEMPLATE_TEST_CASE("cuda avg_pool2d matches the cpu bit for bit", "[cuda][pool]", float, Eigen::half,
                   Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(65);
  for (const mpx::Shape& shape : pool_inputs) {
    for (const mpx::Window2d& window : pool_windows()) {
      for (const bool include_pad : {true, false}) {
        const mpx::Pool2dGeometry g = geometry(shape, window);
        INFO("x " << shape << " kernel " << window.kernel.h << "x" << window.kernel.w << " stride "
                  << window.stride.h << "x" << window.stride.w << " padding " << window.padding.h << "x"
                  << window.padding.w << " dilation " << window.dilation.h << "x" << window.dilation.w
                  << " count_include_pad " << include_pad);
        const auto x = random_host<T>(shape, rng, -3.0, 3.0);
        const auto dy = random_host<T>(g.output_shape(), rng, -2.0, 2.0);
        mpx::Tensor<T> y_cpu(g.output_shape());
        mpx::Tensor<T> dx_cpu(shape);
        mpx::cpu::avg_pool2d_forward(x, y_cpu, g, include_pad);
        mpx::cpu::avg_pool2d_backward(dy, dx_cpu, g, include_pad);
        mpx::Tensor<T, mpx::Cuda> y_gpu(g.output_shape());
        mpx::Tensor<T, mpx::Cuda> dx_gpu(shape);
        mpx::cuda::avg_pool2d_forward(mpx::to_device(x), y_gpu, g, include_pad);
        mpx::cuda::avg_pool2d_backward(mpx::to_device(dy), dx_gpu, g, include_pad);
        require_same_bits(y_gpu, y_cpu, "avg_pool2d_forward");
        require_same_bits(dx_gpu, dx_cpu, "avg_pool2d_backward");
      }
    }
  }
  const mpx::Pool2dGeometry g = geometry(mpx::Shape{1, 4, 4, 2}, mpx::Window2d{.kernel = 2, .stride = 2});
  mpx::Tensor<T, mpx::Cuda> x(g.input_shape());
  mpx::Tensor<T, mpx::Cuda> wrong(mpx::Shape{1, 3, 2, 2});
  CHECK_THROWS_AS(mpx::cuda::avg_pool2d_forward(x, wrong, g, true), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::avg_pool2d_backward(wrong, x, g, false), mpx::shape_error);
}

TEMPLATE_TEST_CASE("cuda global_avg_pool2d matches the cpu bit for bit", "[cuda][pool]", float, Eigen::half,
                   Eigen::bfloat16) {
  using T = TestType;
  std::mt19937 rng(66);
  for (const mpx::Shape& shape :
       std::vector<mpx::Shape>{{1, 1, 1, 1}, {2, 7, 9, 13}, {3, 16, 16, 1024}, {1, 64, 64, 5}}) {
    INFO("x " << shape);
    const mpx::Shape pooled{shape[0], shape[3]};
    const auto x = random_host<T>(shape, rng, -3.0, 3.0);
    const auto dy = random_host<T>(pooled, rng, -2.0, 2.0);
    mpx::Tensor<T> y_cpu(pooled);
    mpx::Tensor<T> dx_cpu(shape);
    mpx::cpu::global_avg_pool2d_forward(x, y_cpu);
    mpx::cpu::global_avg_pool2d_backward(dy, dx_cpu);
    mpx::Tensor<T, mpx::Cuda> y_gpu(pooled);
    mpx::Tensor<T, mpx::Cuda> dx_gpu(shape);
    mpx::cuda::global_avg_pool2d_forward(mpx::to_device(x), y_gpu);
    mpx::cuda::global_avg_pool2d_backward(mpx::to_device(dy), dx_gpu);
    require_same_bits(y_gpu, y_cpu, "global_avg_pool2d_forward");
    require_same_bits(dx_gpu, dx_cpu, "global_avg_pool2d_backward");
  }
  mpx::Tensor<T, mpx::Cuda> x3(mpx::Shape{2, 3, 4});
  mpx::Tensor<T, mpx::Cuda> y(mpx::Shape{2, 4});
  CHECK_THROWS_AS(mpx::cuda::global_avg_pool2d_forward(x3, y), mpx::shape_error);
  mpx::Tensor<T, mpx::Cuda> x4(mpx::Shape{2, 3, 3, 5});
  CHECK_THROWS_AS(mpx::cuda::global_avg_pool2d_forward(x4, y), mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::global_avg_pool2d_backward(y, x4), mpx::shape_error);
}

// ---- batch normalisation ------------------------------------------------------------------------

namespace {

template <class T>
void check_batch_norm(const mpx::Shape& shape, std::mt19937& rng) {
  using Acc = accumulate_of<T>;
  using W = Acc;
  INFO(type_name<T>() << " x " << shape);
  constexpr double eps = eps_of<Acc>();
  const std::int64_t rows = shape.rows(), channels = shape.cols();
  const mpx::Shape per_channel{channels};
  const auto x = channel_data<T>(shape, rng);
  const auto gamma = random_host<W>(per_channel, rng, 0.5, 1.5);
  const auto beta = random_host<W>(per_channel, rng, -0.5, 0.5);
  const auto dy = random_host<T>(shape, rng);
  constexpr float epsilon = 1e-5f;
  const auto channel = [&](std::int64_t i) { return i % channels; };

  // ---- training forward
  mpx::Tensor<T> y_cpu(shape);
  mpx::Tensor<Acc> mean_cpu(per_channel), var_cpu(per_channel), rstd_cpu(per_channel);
  mpx::cpu::batch_norm_forward_training(x, gamma, beta, epsilon, y_cpu, mean_cpu, var_cpu, rstd_cpu);
  const auto x_gpu = mpx::to_device(x);
  const auto gamma_gpu = mpx::to_device(gamma);
  const auto beta_gpu = mpx::to_device(beta);
  mpx::Tensor<T, mpx::Cuda> y_gpu(shape);
  mpx::Tensor<Acc, mpx::Cuda> mean_gpu(per_channel), var_gpu(per_channel), rstd_gpu(per_channel);
  mpx::cuda::batch_norm_forward_training(x_gpu, gamma_gpu, beta_gpu, epsilon, y_gpu, mean_gpu, var_gpu,
                                         rstd_gpu);
  const auto mean_g = mpx::to_host(mean_gpu);
  const auto var_g = mpx::to_host(var_gpu);
  const auto rstd_g = mpx::to_host(rstd_gpu);

  std::vector<double> abs_mean(static_cast<std::size_t>(channels), 0.0);
  for (std::int64_t i = 0; i < x.numel(); ++i)
    abs_mean[static_cast<std::size_t>(channel(i))] += std::abs(to_double(x[i]));
  for (double& a : abs_mean) a /= static_cast<double>(rows);
  const double n = static_cast<double>(rows + 16);
  // The mean: a sum of `rows` terms of |x| on each side. The variance: a sum of squares (n eps of
  // itself on each side), plus the square of the mean's error, which shifts every deviation.
  const auto mean_bound = [&](std::int64_t c) { return 2 * n * eps * abs_mean[static_cast<std::size_t>(c)]; };
  const auto var_bound = [&](std::int64_t c) {
    const double delta = n * eps * abs_mean[static_cast<std::size_t>(c)];
    return 2 * n * eps * to_double(var_cpu[c]) + delta * delta;
  };
  require_close(mean_g, mean_cpu, "batch_norm mean", [&](std::int64_t c, double) { return mean_bound(c); });
  require_close(var_g, var_cpu, "batch_norm var", [&](std::int64_t c, double) { return var_bound(c); });
  require_close(rstd_g, rstd_cpu, "batch_norm rstd", [&](std::int64_t c, double ref) {
    return std::abs(ref) * (var_bound(c) / (to_double(var_cpu[c]) + epsilon) + 4 * eps);
  });
  // y = (x - mean) rstd gamma + beta from each side's statistics: their measured difference carried
  // through, plus a few roundings of the terms.
  require_close(mpx::to_host(y_gpu), y_cpu, "batch_norm y", [&](std::int64_t i, double ref) {
    const std::int64_t c = channel(i);
    const double dm = std::abs(to_double(mean_g[c]) - to_double(mean_cpu[c]));
    const double dr = std::abs(to_double(rstd_g[c]) - to_double(rstd_cpu[c]));
    const double rstd = to_double(rstd_cpu[c]);
    const double d = std::abs(to_double(x[i]) - to_double(mean_cpu[c]));
    const double g = std::abs(to_double(gamma[c]));
    return g * (dm * (rstd + dr) + d * dr) + 16 * eps * (d * rstd * g + std::abs(to_double(beta[c]))) +
           storage_slack<T>(ref);
  });

  // Repeats bit for bit.
  mpx::Tensor<T, mpx::Cuda> y_again(shape);
  mpx::Tensor<Acc, mpx::Cuda> mean_again(per_channel), var_again(per_channel), rstd_again(per_channel);
  mpx::cuda::batch_norm_forward_training(x_gpu, gamma_gpu, beta_gpu, epsilon, y_again, mean_again, var_again,
                                         rstd_again);
  require_same_bits(y_again, mpx::to_host(y_gpu), "batch_norm y repeated");
  require_same_bits(mean_again, mean_g, "batch_norm mean repeated");
  require_same_bits(var_again, var_g, "batch_norm var repeated");
  require_same_bits(rstd_again, rstd_g, "batch_norm rstd repeated");

  // ---- running statistics, from the CPU's batch statistics on both sides: the same formula, up to
  // multiply-adds fused on the device.
  const double momentum = 0.1;
  const auto running_mean0 = random_host<Acc>(per_channel, rng, -1.0, 1.0);
  const auto running_var0 = random_host<Acc>(per_channel, rng, 0.5, 2.0);
  auto running_mean_cpu = running_mean0.clone();
  auto running_var_cpu = running_var0.clone();
  mpx::cpu::batch_norm_update_running_stats(mean_cpu, var_cpu, rows, momentum, running_mean_cpu,
                                            running_var_cpu);
  auto running_mean_gpu = mpx::to_device(running_mean0);
  auto running_var_gpu = mpx::to_device(running_var0);
  mpx::cuda::batch_norm_update_running_stats(mpx::to_device(mean_cpu), mpx::to_device(var_cpu), rows,
                                             momentum, running_mean_gpu, running_var_gpu);
  const double correction = rows > 1 ? static_cast<double>(rows) / static_cast<double>(rows - 1) : 1.0;
  require_close(mpx::to_host(running_mean_gpu), running_mean_cpu, "batch_norm running_mean",
                [&](std::int64_t c, double) {
                  return 8 * eps *
                         ((1 - momentum) * std::abs(to_double(running_mean0[c])) +
                          momentum * std::abs(to_double(mean_cpu[c])));
                });
  require_close(mpx::to_host(running_var_gpu), running_var_cpu, "batch_norm running_var",
                [&](std::int64_t c, double) {
                  return 8 * eps *
                         ((1 - momentum) * std::abs(to_double(running_var0[c])) +
                          momentum * correction * std::abs(to_double(var_cpu[c])));
                });

  // ---- inference, from the same running statistics on both sides.
  mpx::Tensor<T> y_eval_cpu(shape);
  mpx::cpu::batch_norm_forward_inference(x, gamma, beta, running_mean_cpu, running_var_cpu, epsilon,
                                         y_eval_cpu);
  mpx::Tensor<T, mpx::Cuda> y_eval_gpu(shape);
  mpx::cuda::batch_norm_forward_inference(x_gpu, gamma_gpu, beta_gpu, mpx::to_device(running_mean_cpu),
                                          mpx::to_device(running_var_cpu), epsilon, y_eval_gpu);
  require_close(mpx::to_host(y_eval_gpu), y_eval_cpu, "batch_norm inference y",
                [&](std::int64_t i, double ref) {
                  const std::int64_t c = channel(i);
                  const double inv = 1.0 / std::sqrt(to_double(running_var_cpu[c]) + epsilon);
                  const double d = std::abs(to_double(x[i]) - to_double(running_mean_cpu[c]));
                  return 16 * eps * (d * inv * std::abs(to_double(gamma[c])) + std::abs(to_double(beta[c]))) +
                         storage_slack<T>(ref);
                });

  // ---- backward, from the CPU's statistics on both sides; dgamma and dbeta overwritten (they hold
  // junk), so that they are the sums dx was computed from.
  mpx::Tensor<T> dx_cpu(shape);
  mpx::Tensor<Acc> dgamma_cpu(per_channel), dbeta_cpu(per_channel);
  mpx::cpu::batch_norm_backward(x, gamma, mean_cpu, rstd_cpu, dy, &dx_cpu, dgamma_cpu, true, dbeta_cpu, true);
  const auto mean_in = mpx::to_device(mean_cpu);
  const auto rstd_in = mpx::to_device(rstd_cpu);
  const auto dy_gpu = mpx::to_device(dy);
  mpx::Tensor<T, mpx::Cuda> dx_gpu(shape);
  auto dgamma_gpu = mpx::to_device(filled<Acc>(per_channel, 7.0));
  auto dbeta_gpu = mpx::to_device(filled<Acc>(per_channel, -7.0));
  mpx::cuda::batch_norm_backward(x_gpu, gamma_gpu, mean_in, rstd_in, dy_gpu, &dx_gpu, dgamma_gpu, true,
                                 dbeta_gpu, true);
  const auto dgamma_g = mpx::to_host(dgamma_gpu);
  const auto dbeta_g = mpx::to_host(dbeta_gpu);
  const auto xhat_magnitude = [&](std::int64_t i) {
    const std::int64_t c = channel(i);
    return to_double(rstd_cpu[c]) * std::abs(to_double(x[i]) - to_double(mean_cpu[c]));
  };
  std::vector<double> sum_abs_g(static_cast<std::size_t>(channels), 0.0), sum_abs_gx(sum_abs_g.size(), 0.0);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const auto c = static_cast<std::size_t>(channel(i));
    sum_abs_g[c] += std::abs(to_double(dy[i]));
    sum_abs_gx[c] += std::abs(to_double(dy[i])) * xhat_magnitude(i);
  }
  require_close(dbeta_g, dbeta_cpu, "batch_norm dbeta",
                [&](std::int64_t c, double) { return 2 * n * eps * sum_abs_g[static_cast<std::size_t>(c)]; });
  require_close(dgamma_g, dgamma_cpu, "batch_norm dgamma", [&](std::int64_t c, double) {
    return 2 * n * eps * sum_abs_gx[static_cast<std::size_t>(c)];
  });
  require_close(mpx::to_host(dx_gpu), dx_cpu, "batch_norm dx", [&](std::int64_t i, double ref) {
    const std::int64_t c = channel(i);
    const double r = static_cast<double>(rows);
    const double k = std::abs(to_double(gamma[c]) * to_double(rstd_cpu[c]));
    const double xh = xhat_magnitude(i);
    const double d_db = std::abs(to_double(dbeta_g[c]) - to_double(dbeta_cpu[c]));
    const double d_dg = std::abs(to_double(dgamma_g[c]) - to_double(dgamma_cpu[c]));
    const double mg = std::abs(to_double(dbeta_cpu[c])) / r;
    const double mgx = std::abs(to_double(dgamma_cpu[c])) / r;
    return k * (d_db / r + xh * d_dg / r) + 16 * eps * k * (std::abs(to_double(dy[i])) + mg + xh * mgx) +
           storage_slack<T>(ref);
  });

  // Repeats bit for bit, and without dx gives the same parameter gradients.
  mpx::Tensor<T, mpx::Cuda> dx_again(shape);
  mpx::Tensor<Acc, mpx::Cuda> dgamma_again(per_channel), dbeta_again(per_channel);
  mpx::cuda::batch_norm_backward(x_gpu, gamma_gpu, mean_in, rstd_in, dy_gpu, &dx_again, dgamma_again, true,
                                 dbeta_again, true);
  require_same_bits(dx_again, mpx::to_host(dx_gpu), "batch_norm dx repeated");
  require_same_bits(dgamma_again, dgamma_g, "batch_norm dgamma repeated");
  mpx::cuda::batch_norm_backward(x_gpu, gamma_gpu, mean_in, rstd_in, dy_gpu, no_dx<T, mpx::Cuda>(),
                                 dgamma_again, true, dbeta_again, true);
  require_same_bits(dgamma_again, dgamma_g, "batch_norm dgamma without dx");
  require_same_bits(dbeta_again, dbeta_g, "batch_norm dbeta without dx");

  // Accumulating (+=) into earlier gradients.
  const auto dgamma0 = random_host<Acc>(per_channel, rng);
  const auto dbeta0 = random_host<Acc>(per_channel, rng);
  auto dgamma_acc_cpu = dgamma0.clone();
  auto dbeta_acc_cpu = dbeta0.clone();
  mpx::cpu::batch_norm_backward(x, gamma, mean_cpu, rstd_cpu, dy, no_dx<T>(), dgamma_acc_cpu, false,
                                dbeta_acc_cpu, false);
  auto dgamma_acc_gpu = mpx::to_device(dgamma0);
  auto dbeta_acc_gpu = mpx::to_device(dbeta0);
  mpx::cuda::batch_norm_backward(x_gpu, gamma_gpu, mean_in, rstd_in, dy_gpu, no_dx<T, mpx::Cuda>(),
                                 dgamma_acc_gpu, false, dbeta_acc_gpu, false);
  require_close(mpx::to_host(dbeta_acc_gpu), dbeta_acc_cpu, "batch_norm dbeta accumulated",
                [&](std::int64_t c, double) {
                  return 2 * n * eps *
                         (sum_abs_g[static_cast<std::size_t>(c)] + std::abs(to_double(dbeta0[c])));
                });
  require_close(mpx::to_host(dgamma_acc_gpu), dgamma_acc_cpu, "batch_norm dgamma accumulated",
                [&](std::int64_t c, double) {
                  return 2 * n * eps *
                         (sum_abs_gx[static_cast<std::size_t>(c)] + std::abs(to_double(dgamma0[c])));
                });
}

}  // namespace

TEMPLATE_TEST_CASE("cuda batch_norm matches the cpu", "[cuda][batch_norm]", float, Eigen::half,
                   Eigen::bfloat16, double) {
  using T = TestType;
  std::mt19937 rng(67);
  // One row; one image; channel tails of the 32-channel blocks; rank 2 and 3; a single tile and
  // 256 tiles; C = 1024; N H W = 2^17 rows.
  std::vector<mpx::Shape> shapes = {{1, 1, 1, 3}, {1, 3, 5, 7}, {2, 7, 9, 33},
                                    {1000, 24},   {3, 37, 5},   {4, 8, 8, 1024}};
  if constexpr (!std::is_same_v<T, double>) shapes.push_back(mpx::Shape{8, 128, 128, 13});
  for (const mpx::Shape& shape : shapes) check_batch_norm<T>(shape, rng);

  mpx::Tensor<T, mpx::Cuda> x(mpx::Shape{4, 3});
  mpx::Tensor<T, mpx::Cuda> y(mpx::Shape{4, 3});
  using Acc = accumulate_of<T>;
  mpx::Tensor<Acc, mpx::Cuda> three(mpx::Shape{3}), two(mpx::Shape{2});
  CHECK_THROWS_AS(mpx::cuda::batch_norm_forward_training(x, two, three, 1e-5f, y, three, three, three),
                  mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::batch_norm_forward_training(x, three, three, 1e-5f, y, three, two, three),
                  mpx::shape_error);
  mpx::Tensor<T, mpx::Cuda> empty(mpx::Shape{0, 3});
  CHECK_THROWS_AS(
      mpx::cuda::batch_norm_forward_training(empty, three, three, 1e-5f, empty, three, three, three),
      mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::batch_norm_forward_inference(x, three, three, two, three, 1e-5f, y),
                  mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::batch_norm_update_running_stats(three, two, 4, 0.1, three, three),
                  mpx::shape_error);
  mpx::Tensor<T, mpx::Cuda> wrong(mpx::Shape{3, 4});
  CHECK_THROWS_AS(mpx::cuda::batch_norm_backward(x, three, three, three, wrong, &y, three, true, three, true),
                  mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::batch_norm_backward(x, three, three, three, y, &wrong, three, true, three, true),
                  mpx::shape_error);
}

// Sums of small integers are exact in any order, and a mean over 2^k rows is exact too: the GPU's
// mean and dbeta equal the CPU's bit for bit, whatever the tiles.
TEMPLATE_TEST_CASE("cuda batch_norm sums every row exactly once", "[cuda][batch_norm]", float, Eigen::half,
                   Eigen::bfloat16) {
  using T = TestType;
  using Acc = accumulate_of<T>;
  std::mt19937 rng(68);
  for (const mpx::Shape& shape :
       std::vector<mpx::Shape>{{2, 16, 16, 40}, {8, 128, 128, 13}, {4, 8, 8, 1024}}) {
    INFO(type_name<T>() << " x " << shape);
    const mpx::Shape per_channel{shape.cols()};
    const auto x = integer_data<T>(shape, rng);
    const auto dy = integer_data<T>(shape, rng);
    const auto gamma = random_host<Acc>(per_channel, rng, 0.5, 1.5);
    const auto beta = random_host<Acc>(per_channel, rng, -0.5, 0.5);
    mpx::Tensor<T> y_cpu(shape);
    mpx::Tensor<Acc> mean_cpu(per_channel), var_cpu(per_channel), rstd_cpu(per_channel);
    mpx::cpu::batch_norm_forward_training(x, gamma, beta, 1e-5f, y_cpu, mean_cpu, var_cpu, rstd_cpu);
    const auto x_gpu = mpx::to_device(x);
    const auto gamma_gpu = mpx::to_device(gamma);
    mpx::Tensor<T, mpx::Cuda> y_gpu(shape);
    mpx::Tensor<Acc, mpx::Cuda> mean_gpu(per_channel), var_gpu(per_channel), rstd_gpu(per_channel);
    mpx::cuda::batch_norm_forward_training(x_gpu, gamma_gpu, mpx::to_device(beta), 1e-5f, y_gpu, mean_gpu,
                                           var_gpu, rstd_gpu);
    require_same_bits(mean_gpu, mean_cpu, "batch_norm mean of integers");

    mpx::Tensor<Acc> dgamma_cpu(per_channel), dbeta_cpu(per_channel);
    mpx::cpu::batch_norm_backward(x, gamma, mean_cpu, rstd_cpu, dy, no_dx<T>(), dgamma_cpu, true, dbeta_cpu,
                                  true);
    mpx::Tensor<Acc, mpx::Cuda> dgamma_gpu(per_channel), dbeta_gpu(per_channel);
    mpx::cuda::batch_norm_backward(x_gpu, gamma_gpu, mpx::to_device(mean_cpu), mpx::to_device(rstd_cpu),
                                   mpx::to_device(dy), no_dx<T, mpx::Cuda>(), dgamma_gpu, true, dbeta_gpu,
                                   true);
    require_same_bits(dbeta_gpu, dbeta_cpu, "batch_norm dbeta of integers");
  }
}

// ---- group normalisation ------------------------------------------------------------------------

namespace {

template <class T>
void check_group_norm(const mpx::Shape& shape, std::int64_t groups, std::mt19937& rng) {
  using Acc = accumulate_of<T>;
  using W = Acc;
  INFO(type_name<T>() << " x " << shape << " groups " << groups);
  constexpr double eps = eps_of<Acc>();
  const std::int64_t images = shape[0], channels = shape.cols(), pixels = shape.numel() / (images * channels);
  const std::int64_t cg = channels / groups, segments = images * groups;
  const mpx::Shape per_channel{channels}, per_group{images, groups};
  const auto x = channel_data<T>(shape, rng);
  const auto gamma = random_host<W>(per_channel, rng, 0.5, 1.5);
  const auto beta = random_host<W>(per_channel, rng, -0.5, 0.5);
  const auto dy = random_host<T>(shape, rng);
  constexpr float epsilon = 1e-5f;
  const auto channel = [&](std::int64_t i) { return i % channels; };
  const auto segment = [&](std::int64_t i) { return (i / (pixels * channels)) * groups + channel(i) / cg; };

  mpx::Tensor<T> y_cpu(shape);
  mpx::Tensor<Acc> mean_cpu(per_group), rstd_cpu(per_group);
  mpx::cpu::group_norm_forward(x, gamma, beta, groups, epsilon, y_cpu, mean_cpu, rstd_cpu);
  const auto x_gpu = mpx::to_device(x);
  const auto gamma_gpu = mpx::to_device(gamma);
  const auto beta_gpu = mpx::to_device(beta);
  mpx::Tensor<T, mpx::Cuda> y_gpu(shape);
  mpx::Tensor<Acc, mpx::Cuda> mean_gpu(per_group), rstd_gpu(per_group);
  mpx::cuda::group_norm_forward(x_gpu, gamma_gpu, beta_gpu, groups, epsilon, y_gpu, mean_gpu, rstd_gpu);
  const auto mean_g = mpx::to_host(mean_gpu);
  const auto rstd_g = mpx::to_host(rstd_gpu);

  // Per group: the mean of |x| and the variance about the CPU's mean, in double.
  const double m = static_cast<double>(pixels * cg);
  std::vector<double> abs_mean(static_cast<std::size_t>(segments), 0.0), var(abs_mean.size(), 0.0);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t s = segment(i);
    const double d = to_double(x[i]) - to_double(mean_cpu[s]);
    abs_mean[static_cast<std::size_t>(s)] += std::abs(to_double(x[i])) / m;
    var[static_cast<std::size_t>(s)] += d * d / m;
  }
  const double n = m + 16;
  require_close(mean_g, mean_cpu, "group_norm mean",
                [&](std::int64_t s, double) { return 2 * n * eps * abs_mean[static_cast<std::size_t>(s)]; });
  require_close(rstd_g, rstd_cpu, "group_norm rstd", [&](std::int64_t s, double ref) {
    const auto k = static_cast<std::size_t>(s);
    const double delta = n * eps * abs_mean[k];
    const double var_bound = 2 * n * eps * var[k] + delta * delta;
    return std::abs(ref) * (var_bound / (var[k] + epsilon) + 4 * eps);
  });
  require_close(mpx::to_host(y_gpu), y_cpu, "group_norm y", [&](std::int64_t i, double ref) {
    const std::int64_t c = channel(i), s = segment(i);
    const double dm = std::abs(to_double(mean_g[s]) - to_double(mean_cpu[s]));
    const double dr = std::abs(to_double(rstd_g[s]) - to_double(rstd_cpu[s]));
    const double rstd = to_double(rstd_cpu[s]);
    const double d = std::abs(to_double(x[i]) - to_double(mean_cpu[s]));
    const double g = std::abs(to_double(gamma[c]));
    return g * (dm * (rstd + dr) + d * dr) + 16 * eps * (d * rstd * g + std::abs(to_double(beta[c]))) +
           storage_slack<T>(ref);
  });
  mpx::Tensor<T, mpx::Cuda> y_again(shape);
  mpx::Tensor<Acc, mpx::Cuda> mean_again(per_group), rstd_again(per_group);
  mpx::cuda::group_norm_forward(x_gpu, gamma_gpu, beta_gpu, groups, epsilon, y_again, mean_again, rstd_again);
  require_same_bits(y_again, mpx::to_host(y_gpu), "group_norm y repeated");
  require_same_bits(mean_again, mean_g, "group_norm mean repeated");
  require_same_bits(rstd_again, rstd_g, "group_norm rstd repeated");

  // ---- backward from the CPU's statistics; dgamma and dbeta overwritten.
  mpx::Tensor<T> dx_cpu(shape);
  mpx::Tensor<Acc> dgamma_cpu(per_channel), dbeta_cpu(per_channel);
  mpx::cpu::group_norm_backward(x, gamma, groups, mean_cpu, rstd_cpu, dy, &dx_cpu, dgamma_cpu, true,
                                dbeta_cpu, true);
  const auto mean_in = mpx::to_device(mean_cpu);
  const auto rstd_in = mpx::to_device(rstd_cpu);
  const auto dy_gpu = mpx::to_device(dy);
  mpx::Tensor<T, mpx::Cuda> dx_gpu(shape);
  auto dgamma_gpu = mpx::to_device(filled<Acc>(per_channel, 7.0));
  auto dbeta_gpu = mpx::to_device(filled<Acc>(per_channel, -7.0));
  mpx::cuda::group_norm_backward(x_gpu, gamma_gpu, groups, mean_in, rstd_in, dy_gpu, &dx_gpu, dgamma_gpu,
                                 true, dbeta_gpu, true);
  const auto xhat_magnitude = [&](std::int64_t i) {
    const std::int64_t s = segment(i);
    return to_double(rstd_cpu[s]) * std::abs(to_double(x[i]) - to_double(mean_cpu[s]));
  };
  // dgamma, dbeta: per channel over images x pixels rows. dx: per group, sum h and sum h xhat
  // (h = dy gamma) over its m elements, which the test cannot read, so their worst-case bounds.
  std::vector<double> sum_abs_g(static_cast<std::size_t>(channels), 0.0), sum_abs_gx(sum_abs_g.size(), 0.0);
  std::vector<double> sum_h(static_cast<std::size_t>(segments), 0.0), sum_hx(sum_h.size(), 0.0);
  std::vector<double> sum_abs_h(sum_h.size(), 0.0), sum_abs_hx(sum_h.size(), 0.0);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const auto c = static_cast<std::size_t>(channel(i));
    const auto s = static_cast<std::size_t>(segment(i));
    const double g = to_double(dy[i]);
    const double h = g * to_double(gamma[channel(i)]);
    const double xhat = (to_double(x[i]) - to_double(mean_cpu[segment(i)])) * to_double(rstd_cpu[segment(i)]);
    sum_abs_g[c] += std::abs(g);
    sum_abs_gx[c] += std::abs(g) * xhat_magnitude(i);
    sum_h[s] += h;
    sum_hx[s] += h * xhat;
    sum_abs_h[s] += std::abs(h);
    sum_abs_hx[s] += std::abs(h) * xhat_magnitude(i);
  }
  const double rows = static_cast<double>(images * pixels + 16);
  require_close(mpx::to_host(dbeta_gpu), dbeta_cpu, "group_norm dbeta", [&](std::int64_t c, double) {
    return 2 * rows * eps * sum_abs_g[static_cast<std::size_t>(c)];
  });
  require_close(mpx::to_host(dgamma_gpu), dgamma_cpu, "group_norm dgamma", [&](std::int64_t c, double) {
    return 2 * rows * eps * sum_abs_gx[static_cast<std::size_t>(c)];
  });
  require_close(mpx::to_host(dx_gpu), dx_cpu, "group_norm dx", [&](std::int64_t i, double ref) {
    const std::int64_t s = segment(i);
    const auto k = static_cast<std::size_t>(s);
    const double rstd = to_double(rstd_cpu[s]);
    const double xh = xhat_magnitude(i);
    const double h = std::abs(to_double(dy[i]) * to_double(gamma[channel(i)]));
    const double sums_error = 2 * n * eps * (sum_abs_h[k] + xh * sum_abs_hx[k]) / m;
    return rstd * (sums_error + 16 * eps * (h + std::abs(sum_h[k]) / m + xh * std::abs(sum_hx[k]) / m)) +
           storage_slack<T>(ref);
  });
  mpx::Tensor<T, mpx::Cuda> dx_again(shape);
  mpx::Tensor<Acc, mpx::Cuda> dgamma_again(per_channel), dbeta_again(per_channel);
  mpx::cuda::group_norm_backward(x_gpu, gamma_gpu, groups, mean_in, rstd_in, dy_gpu, &dx_again, dgamma_again,
                                 true, dbeta_again, true);
  require_same_bits(dx_again, mpx::to_host(dx_gpu), "group_norm dx repeated");
  require_same_bits(dgamma_again, mpx::to_host(dgamma_gpu), "group_norm dgamma repeated");
  require_same_bits(dbeta_again, mpx::to_host(dbeta_gpu), "group_norm dbeta repeated");

  // Accumulating (+=) into earlier gradients, without dx.
  const auto dgamma0 = random_host<Acc>(per_channel, rng);
  const auto dbeta0 = random_host<Acc>(per_channel, rng);
  auto dgamma_acc_cpu = dgamma0.clone();
  auto dbeta_acc_cpu = dbeta0.clone();
  mpx::cpu::group_norm_backward(x, gamma, groups, mean_cpu, rstd_cpu, dy, no_dx<T>(), dgamma_acc_cpu, false,
                                dbeta_acc_cpu, false);
  auto dgamma_acc_gpu = mpx::to_device(dgamma0);
  auto dbeta_acc_gpu = mpx::to_device(dbeta0);
  mpx::cuda::group_norm_backward(x_gpu, gamma_gpu, groups, mean_in, rstd_in, dy_gpu, no_dx<T, mpx::Cuda>(),
                                 dgamma_acc_gpu, false, dbeta_acc_gpu, false);
  require_close(mpx::to_host(dbeta_acc_gpu), dbeta_acc_cpu, "group_norm dbeta accumulated",
                [&](std::int64_t c, double) {
                  return 2 * rows * eps *
                         (sum_abs_g[static_cast<std::size_t>(c)] + std::abs(to_double(dbeta0[c])));
                });
  require_close(mpx::to_host(dgamma_acc_gpu), dgamma_acc_cpu, "group_norm dgamma accumulated",
                [&](std::int64_t c, double) {
                  return 2 * rows * eps *
                         (sum_abs_gx[static_cast<std::size_t>(c)] + std::abs(to_double(dgamma0[c])));
                });
}

}  // namespace

TEMPLATE_TEST_CASE("cuda group_norm matches the cpu", "[cuda][group_norm]", float, Eigen::half,
                   Eigen::bfloat16, double) {
  using T = TestType;
  std::mt19937 rng(69);
  struct Case {
    mpx::Shape x;
    std::int64_t groups;
  };
  // One channel per group; rank 2 (one pixel) and 3; odd channels per group; one image; groups of
  // 2^17 elements (32 chunks); C = 1024 in 32 groups.
  std::vector<Case> cases = {Case{{1, 1, 1, 4}, 4},    Case{{4, 8}, 2},        Case{{3, 5, 6}, 2},
                             Case{{2, 3, 5, 12}, 4},   Case{{1, 7, 9, 33}, 3}, Case{{2, 16, 16, 64}, 32},
                             Case{{2, 8, 8, 1024}, 32}};
  if constexpr (!std::is_same_v<T, double>) cases.push_back(Case{{1, 64, 64, 32}, 1});
  for (const Case& c : cases) check_group_norm<T>(c.x, c.groups, rng);

  using Acc = accumulate_of<T>;
  mpx::Tensor<T, mpx::Cuda> x(mpx::Shape{2, 3, 6});
  mpx::Tensor<T, mpx::Cuda> y(mpx::Shape{2, 3, 6});
  mpx::Tensor<Acc, mpx::Cuda> six(mpx::Shape{6}), stats(mpx::Shape{2, 3}), wrong_stats(mpx::Shape{3, 2});
  CHECK_THROWS_AS(mpx::cuda::group_norm_forward(x, six, six, 4, 1e-5f, y, stats, stats),
                  mpx::invalid_argument);
  CHECK_THROWS_AS(mpx::cuda::group_norm_forward(x, six, six, 3, 1e-5f, y, wrong_stats, stats),
                  mpx::shape_error);
  mpx::Tensor<T, mpx::Cuda> wrong(mpx::Shape{2, 6, 3});
  CHECK_THROWS_AS(mpx::cuda::group_norm_forward(x, six, six, 3, 1e-5f, wrong, stats, stats),
                  mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::group_norm_backward(x, six, 3, stats, stats, wrong, &y, six, true, six, true),
                  mpx::shape_error);
  CHECK_THROWS_AS(mpx::cuda::group_norm_backward(x, six, 3, stats, stats, y, &wrong, six, true, six, true),
                  mpx::shape_error);
}

TEMPLATE_TEST_CASE("cuda group_norm sums every element exactly once", "[cuda][group_norm]", float,
                   Eigen::half, Eigen::bfloat16) {
  using T = TestType;
  using Acc = accumulate_of<T>;
  std::mt19937 rng(70);
  struct Case {
    mpx::Shape x;
    std::int64_t groups;
  };
  // Groups of 2^12 and 2^17 elements (one chunk; 32 chunks).
  for (const Case& s : {Case{{2, 32, 32, 8}, 2}, Case{{1, 64, 64, 32}, 1}}) {
    INFO(type_name<T>() << " x " << s.x << " groups " << s.groups);
    const mpx::Shape per_channel{s.x.cols()}, per_group{s.x[0], s.groups};
    const auto x = integer_data<T>(s.x, rng);
    const auto dy = integer_data<T>(s.x, rng);
    const auto gamma = random_host<Acc>(per_channel, rng, 0.5, 1.5);
    const auto beta = random_host<Acc>(per_channel, rng, -0.5, 0.5);
    mpx::Tensor<T> y_cpu(s.x);
    mpx::Tensor<Acc> mean_cpu(per_group), rstd_cpu(per_group);
    mpx::cpu::group_norm_forward(x, gamma, beta, s.groups, 1e-5f, y_cpu, mean_cpu, rstd_cpu);
    const auto x_gpu = mpx::to_device(x);
    const auto gamma_gpu = mpx::to_device(gamma);
    mpx::Tensor<T, mpx::Cuda> y_gpu(s.x);
    mpx::Tensor<Acc, mpx::Cuda> mean_gpu(per_group), rstd_gpu(per_group);
    mpx::cuda::group_norm_forward(x_gpu, gamma_gpu, mpx::to_device(beta), s.groups, 1e-5f, y_gpu, mean_gpu,
                                  rstd_gpu);
    require_same_bits(mean_gpu, mean_cpu, "group_norm mean of integers");

    mpx::Tensor<Acc> dgamma_cpu(per_channel), dbeta_cpu(per_channel);
    mpx::cpu::group_norm_backward(x, gamma, s.groups, mean_cpu, rstd_cpu, dy, no_dx<T>(), dgamma_cpu, true,
                                  dbeta_cpu, true);
    mpx::Tensor<Acc, mpx::Cuda> dgamma_gpu(per_channel), dbeta_gpu(per_channel);
    mpx::cuda::group_norm_backward(x_gpu, gamma_gpu, s.groups, mpx::to_device(mean_cpu),
                                   mpx::to_device(rstd_cpu), mpx::to_device(dy), no_dx<T, mpx::Cuda>(),
                                   dgamma_gpu, true, dbeta_gpu, true);
    require_same_bits(dbeta_gpu, dbeta_cpu, "group_norm dbeta of integers");
  }
}

// ---- CUDA graphs --------------------------------------------------------------------------------

// After one eager call has sized the scratch buffers, the normalisations' and pools' launches are
// captured (no allocation, no synchronisation inside) and a replay gives the eager bits.
TEST_CASE("cuda cnn kernels are captured in a CUDA graph and replay bit for bit", "[cuda][graph]") {
  using T = Eigen::bfloat16;
  std::mt19937 rng(71);
  const mpx::Shape shape{4, 12, 10, 48}, per_channel{48}, per_group{4, 8};
  const auto x = mpx::to_device(channel_data<T>(shape, rng));
  const auto dy = mpx::to_device(random_host<T>(shape, rng));
  const auto gamma = mpx::to_device(random_host<float>(per_channel, rng, 0.5, 1.5));
  const auto beta = mpx::to_device(random_host<float>(per_channel, rng, -0.5, 0.5));
  const mpx::Pool2dGeometry g = geometry(shape, mpx::Window2d{.kernel = 3, .stride = 2, .padding = 1});
  mpx::Tensor<T, mpx::Cuda> y(shape), dx(shape), gy(shape), gdx(shape), pooled(g.output_shape()),
      pool_dx(shape);
  mpx::Tensor<float, mpx::Cuda> mean(per_channel), var(per_channel), rstd(per_channel),
      running_mean(per_channel), running_var(per_channel), dgamma(per_channel), dbeta(per_channel),
      gmean(per_group), grstd(per_group), gdgamma(per_channel), gdbeta(per_channel);
  const auto pooled_dy = mpx::to_device(random_host<T>(g.output_shape(), rng));
  const auto queue = [&] {
    mpx::cuda::batch_norm_forward_training(x, gamma, beta, 1e-5f, y, mean, var, rstd);
    mpx::cuda::batch_norm_update_running_stats(mean, var, shape.rows(), 0.1, running_mean, running_var);
    mpx::cuda::batch_norm_backward(x, gamma, mean, rstd, dy, &dx, dgamma, true, dbeta, true);
    mpx::cuda::group_norm_forward(x, gamma, beta, 8, 1e-5f, gy, gmean, grstd);
    mpx::cuda::group_norm_backward(x, gamma, 8, gmean, grstd, dy, &gdx, gdgamma, true, gdbeta, true);
    mpx::cuda::max_pool2d_forward(x, pooled, g);
    mpx::cuda::max_pool2d_backward(x, pooled_dy, pool_dx, g);
  };
  queue();
  const auto eager_y = mpx::to_host(y), eager_dx = mpx::to_host(dx), eager_gy = mpx::to_host(gy),
             eager_gdx = mpx::to_host(gdx), eager_pool_dx = mpx::to_host(pool_dx);
  const auto eager_dgamma = mpx::to_host(dgamma), eager_gdgamma = mpx::to_host(gdgamma),
             eager_running_var = mpx::to_host(running_var);
  for (auto* t : {&y, &dx, &gy, &gdx, &pool_dx}) t->set_zero();
  for (auto* t : {&dgamma, &gdgamma, &mean, &rstd}) t->set_zero();
  running_mean.set_zero();
  running_var.set_zero();

  mpx::cuda::Graph graph;
  graph.capture(queue);
  graph.launch();
  mpx::cuda_context().synchronize();
  require_same_bits(y, eager_y, "batch_norm y replayed");
  require_same_bits(dx, eager_dx, "batch_norm dx replayed");
  require_same_bits(dgamma, eager_dgamma, "batch_norm dgamma replayed");
  require_same_bits(running_var, eager_running_var, "batch_norm running_var replayed");
  require_same_bits(gy, eager_gy, "group_norm y replayed");
  require_same_bits(gdx, eager_gdx, "group_norm dx replayed");
  require_same_bits(gdgamma, eager_gdgamma, "group_norm dgamma replayed");
  require_same_bits(pool_dx, eager_pool_dx, "max_pool2d dx replayed");
}

}  // namespace MPX_UNITY_ID
}  // namespace
