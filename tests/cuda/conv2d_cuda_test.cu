// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The cuDNN convolutions (backend/cuda/conv2d.cuh) against the CPU backend's (mpx::cpu::conv2d_*) on
// the same random inputs: forward (with and without bias), input gradient, weight gradient and bias
// gradient (written and added), in fp32, TF32, fp16 and bf16, over 3x3, strided, 1x1, dilated,
// grouped, depthwise, odd-sized and one-image geometries; then strict fp32 without TF32, the plan
// cache, and CUDA graph capture; last, a small ResNet trained through the Trainer on both devices, and
// its whole step captured in a CUDA graph. main() is in numeric_cuda_test.cu and skips (exit 77)
// without a device.
//
// Bounds as tests/support/tolerances.hpp gives them for a GEMM whose K is the length of the element's
// sum: KH KW C/groups for y, at most KH KW O/groups for dx, N OH OW for the weight gradient, N OH OW
// for the bias gradient. Each side is within (K + 16) eps_fp32 of the element's magnitude (the sum of
// its terms' absolute values, computed here in double) plus one rounding into the result's type, so
// the two are within twice that; the GPU's TF32 may truncate operands instead of rounding them.
// First, with nothing before it: this file is conv2d.cuh's compiles-alone check (tests/CMakeLists.txt).
#include <mpx/backend/cuda/conv2d.cuh>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <mpx/cuda.hpp>
#include <mpx/experiment/resnet.hpp>

#include "../support/mismatch_log.hpp"
#include "../support/tolerances.hpp"
#include "comparisons.hpp"
#include "support.hpp"

namespace {

using mpx::to_host;
using mpx_test::random_host;
using mpx_test::require_same_bits;
using mpx_test::to_double;

struct ConvCase {
  const char* name;
  std::int64_t batch, height, width, in_channels, out_channels;
  mpx::Window2d window;
  std::int64_t groups;
};

// The geometries every precision runs.
const ConvCase conv_cases[] = {
    {"3x3 padding 1", 2, 8, 8, 16, 32, {.kernel = 3, .padding = 1}, 1},
    {"3x3 stride 2", 2, 9, 9, 8, 16, {.kernel = 3, .stride = 2, .padding = 1}, 1},
    {"1x1 projection", 2, 7, 7, 32, 16, {.kernel = 1}, 1},
    {"1x1 stride 2 projection", 2, 8, 8, 16, 24, {.kernel = 1, .stride = 2}, 1},
    {"3x3 dilation 2", 2, 10, 10, 8, 8, {.kernel = 3, .padding = 2, .dilation = 2}, 1},
    {"3x3 groups 2", 2, 8, 8, 16, 16, {.kernel = 3, .padding = 1}, 2},
    {"3x3 depthwise", 2, 8, 8, 16, 16, {.kernel = 3, .padding = 1}, 16},
    {"odd sizes", 3, 11, 7, 3, 5, {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 0}}, 1},
    {"batch 1", 1, 6, 6, 4, 8, {.kernel = 3, .padding = 1}, 1},
};

mpx::Conv2dGeometry geometry_of(const ConvCase& c) {
  return {.batch = c.batch,
          .input = mpx::Size2d{c.height, c.width},
          .in_channels = c.in_channels,
          .out_channels = c.out_channels,
          .window = c.window,
          .groups = c.groups};
}

// Flat indices of the channels-last layouts (conv2d_spec.hpp).
struct Layout {
  const mpx::Conv2dGeometry& g;
  mpx::Size2d out = g.output();

  std::int64_t x(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c) const {
    return ((n * g.input.h + h) * g.input.w + w) * g.in_channels + c;
  }
  std::int64_t weight(std::int64_t o, std::int64_t kh, std::int64_t kw, std::int64_t ci) const {
    return ((o * g.window.kernel.h + kh) * g.window.kernel.w + kw) * g.group_in_channels() + ci;
  }
  std::int64_t y(std::int64_t n, std::int64_t oh, std::int64_t ow, std::int64_t o) const {
    return ((n * out.h + oh) * out.w + ow) * g.out_channels + o;
  }
};

// Each output's magnitude: the sum of |x w| over its terms, plus |bias|.
template <class T>
std::vector<double> forward_magnitudes(const mpx::Tensor<T>& x, const mpx::Tensor<T>& w,
                                       const mpx::Tensor<T>* bias, const mpx::Conv2dGeometry& g) {
  const Layout at{g};
  const std::int64_t cg = g.group_in_channels(), og = g.group_out_channels();
  std::vector<double> magnitude(static_cast<std::size_t>(g.output_shape().numel()), 0.0);
  for (std::int64_t n = 0; n < g.batch; ++n)
    for (std::int64_t oh = 0; oh < at.out.h; ++oh)
      for (std::int64_t ow = 0; ow < at.out.w; ++ow)
        for (std::int64_t o = 0; o < g.out_channels; ++o) {
          const std::int64_t group = o / og;
          double sum = bias != nullptr ? std::abs(to_double((*bias)[o])) : 0.0;
          for (std::int64_t kh = 0; kh < g.window.kernel.h; ++kh) {
            const std::int64_t ih = g.window.input_row(oh, kh);
            if (ih < 0 || ih >= g.input.h) continue;
            for (std::int64_t kw = 0; kw < g.window.kernel.w; ++kw) {
              const std::int64_t iw = g.window.input_column(ow, kw);
              if (iw < 0 || iw >= g.input.w) continue;
              for (std::int64_t ci = 0; ci < cg; ++ci) {
                sum += std::abs(to_double(x[at.x(n, ih, iw, group * cg + ci)]) *
                                to_double(w[at.weight(o, kh, kw, ci)]));
              }
            }
          }
          magnitude[static_cast<std::size_t>(at.y(n, oh, ow, o))] = sum;
        }
  return magnitude;
}

// Each input gradient's magnitude: the sum of |dy w| over the (tap, output channel) pairs that read it.
template <class T>
std::vector<double> input_grad_magnitudes(const mpx::Tensor<T>& dy, const mpx::Tensor<T>& w,
                                          const mpx::Conv2dGeometry& g) {
  const Layout at{g};
  const std::int64_t cg = g.group_in_channels(), og = g.group_out_channels();
  std::vector<double> magnitude(static_cast<std::size_t>(g.input_shape().numel()), 0.0);
  for (std::int64_t n = 0; n < g.batch; ++n)
    for (std::int64_t h = 0; h < g.input.h; ++h)
      for (std::int64_t iw = 0; iw < g.input.w; ++iw)
        for (std::int64_t c = 0; c < g.in_channels; ++c) {
          const std::int64_t group = c / cg;
          double sum = 0;
          for (std::int64_t kh = 0; kh < g.window.kernel.h; ++kh) {
            const std::int64_t oh = g.window.output_row(h, kh, at.out.h);
            if (oh < 0) continue;
            for (std::int64_t kw = 0; kw < g.window.kernel.w; ++kw) {
              const std::int64_t ow = g.window.output_column(iw, kw, at.out.w);
              if (ow < 0) continue;
              for (std::int64_t o = group * og; o < (group + 1) * og; ++o) {
                sum +=
                    std::abs(to_double(dy[at.y(n, oh, ow, o)]) * to_double(w[at.weight(o, kh, kw, c % cg)]));
              }
            }
          }
          magnitude[static_cast<std::size_t>(at.x(n, h, iw, c))] = sum;
        }
  return magnitude;
}

// Each weight gradient's magnitude: the sum of |dy x| over every image and output position, plus the
// previous value's size when the gradient is added to it.
template <class T>
std::vector<double> weight_grad_magnitudes(const mpx::Tensor<T>& x, const mpx::Tensor<T>& dy,
                                           const mpx::Tensor<float>* previous, const mpx::Conv2dGeometry& g) {
  const Layout at{g};
  const std::int64_t cg = g.group_in_channels(), og = g.group_out_channels();
  std::vector<double> magnitude(static_cast<std::size_t>(g.weight_shape().numel()), 0.0);
  for (std::int64_t o = 0; o < g.out_channels; ++o)
    for (std::int64_t kh = 0; kh < g.window.kernel.h; ++kh)
      for (std::int64_t kw = 0; kw < g.window.kernel.w; ++kw)
        for (std::int64_t ci = 0; ci < cg; ++ci) {
          const std::int64_t index = at.weight(o, kh, kw, ci);
          double sum = previous != nullptr ? std::abs(static_cast<double>((*previous)[index])) : 0.0;
          for (std::int64_t n = 0; n < g.batch; ++n)
            for (std::int64_t oh = 0; oh < at.out.h; ++oh) {
              const std::int64_t ih = g.window.input_row(oh, kh);
              if (ih < 0 || ih >= g.input.h) continue;
              for (std::int64_t ow = 0; ow < at.out.w; ++ow) {
                const std::int64_t iw = g.window.input_column(ow, kw);
                if (iw < 0 || iw >= g.input.w) continue;
                sum += std::abs(to_double(dy[at.y(n, oh, ow, o)]) *
                                to_double(x[at.x(n, ih, iw, (o / og) * cg + ci)]));
              }
            }
          magnitude[static_cast<std::size_t>(index)] = sum;
        }
  return magnitude;
}

// Each bias gradient's magnitude: the sum of |dy| over its channel, plus the previous value's size.
template <class T>
std::vector<double> bias_grad_magnitudes(const mpx::Tensor<T>& dy, const mpx::Tensor<float>* previous) {
  const std::int64_t channels = dy.shape().cols();
  std::vector<double> magnitude(static_cast<std::size_t>(channels), 0.0);
  for (std::int64_t o = 0; o < channels; ++o) {
    magnitude[static_cast<std::size_t>(o)] =
        previous != nullptr ? std::abs(static_cast<double>((*previous)[o])) : 0.0;
  }
  for (std::int64_t i = 0; i < dy.numel(); ++i)
    magnitude[static_cast<std::size_t>(i % channels)] += std::abs(to_double(dy[i]));
  return magnitude;
}

// Compares element by element: within twice the tolerance of the magnitude.
template <class E>
void require_close(const mpx::Tensor<E>& gpu, const mpx::Tensor<E>& cpu, const std::vector<double>& magnitude,
                   const mpx::test::GemmTolerance& tolerance, const std::string& what) {
  REQUIRE(gpu.shape() == cpu.shape());
  mpx_test::MismatchLog log(what);
  for (std::int64_t i = 0; i < cpu.numel(); ++i) {
    const double actual = to_double(gpu[i]);
    const double expected = to_double(cpu[i]);
    const double bound = 2 * tolerance.bound(magnitude[static_cast<std::size_t>(i)], expected);
    log.check(std::abs(actual - expected) <= bound, [&] {
      return "[" + std::to_string(i) + "] gpu " + std::to_string(actual) + " cpu " +
             std::to_string(expected) + " bound " + std::to_string(bound);
    });
  }
  INFO(log.summary());
  CHECK(log.failures() == 0);
}

// Every pass of one geometry in `Compute` on both backends.
template <class Compute>
void check_case(const ConvCase& c, std::mt19937& rng) {
  using T = mpx::storage_t<Compute>;
  using Acc = mpx::accumulate_t<Compute>;
  using OutTag = mpx::tag_of_t<T>;
  using AccTag = mpx::tag_of_t<Acc>;
  constexpr auto rounding = mpx::test::OperandRounding::nearest_or_truncated;
  const mpx::Conv2dGeometry g = geometry_of(c);
  INFO(std::string(mpx::numeric_traits<Compute>::name) + " " + c.name);
  const mpx::Size2d out = g.output();
  const std::int64_t rows = g.batch * out.h * out.w;

  const auto x = random_host<T>(g.input_shape(), rng);
  const auto w = random_host<T>(g.weight_shape(), rng);
  const auto bias = random_host<T>(mpx::Shape{g.out_channels}, rng);
  const auto dy = random_host<T>(g.output_shape(), rng);
  const auto dw0 = random_host<float>(g.weight_shape(), rng);
  const auto db0 = random_host<float>(mpx::Shape{g.out_channels}, rng);

  // CPU reference.
  mpx::Tensor<T> y_cpu(g.output_shape()), yb_cpu(g.output_shape()), dx_cpu(g.input_shape());
  mpx::Tensor<float> dw_cpu(g.weight_shape()), db_cpu(mpx::Shape{g.out_channels});
  auto dw_added_cpu = dw0.clone();
  auto db_added_cpu = db0.clone();
  const mpx::Tensor<T>* no_bias = nullptr;
  mpx::cpu::conv2d_forward<Compute>(x, w, no_bias, y_cpu, g);
  mpx::cpu::conv2d_forward<Compute>(x, w, &bias, yb_cpu, g);
  mpx::cpu::conv2d_backward_input<Compute>(dy, w, dx_cpu, g);
  mpx::cpu::conv2d_backward_weight<Compute>(x, dy, dw_cpu, true, g);
  mpx::cpu::conv2d_backward_weight<Compute>(x, dy, dw_added_cpu, false, g);
  mpx::cpu::conv2d_backward_bias(dy, db_cpu, true);
  mpx::cpu::conv2d_backward_bias(dy, db_added_cpu, false);

  // GPU.
  const auto x_gpu = mpx::to_device(x), w_gpu = mpx::to_device(w), bias_gpu = mpx::to_device(bias),
             dy_gpu = mpx::to_device(dy);
  mpx::Tensor<T, mpx::Cuda> y_gpu(g.output_shape()), yb_gpu(g.output_shape()), dx_gpu(g.input_shape());
  mpx::Tensor<float, mpx::Cuda> dw_gpu(g.weight_shape()), db_gpu(mpx::Shape{g.out_channels});
  auto dw_added_gpu = mpx::to_device(dw0), db_added_gpu = mpx::to_device(db0);
  mpx::cuda::conv2d_forward<Compute>(x_gpu, w_gpu, nullptr, y_gpu, g);
  mpx::cuda::conv2d_forward<Compute>(x_gpu, w_gpu, &bias_gpu, yb_gpu, g);
  mpx::cuda::conv2d_backward_input<Compute>(dy_gpu, w_gpu, dx_gpu, g);
  mpx::cuda::conv2d_backward_weight<Compute>(x_gpu, dy_gpu, dw_gpu, true, g);
  mpx::cuda::conv2d_backward_weight<Compute>(x_gpu, dy_gpu, dw_added_gpu, false, g);
  mpx::cuda::conv2d_backward_bias(dy_gpu, db_gpu, true);
  mpx::cuda::conv2d_backward_bias(dy_gpu, db_added_gpu, false);

  const std::int64_t patch = g.patch_size();
  const std::int64_t dx_terms = g.window.kernel.h * g.window.kernel.w * g.group_out_channels();
  require_close(to_host(y_gpu), y_cpu, forward_magnitudes(x, w, no_bias, g),
                mpx::test::gemm_tolerance<Compute, OutTag>(patch, rounding), "y");
  require_close(to_host(yb_gpu), yb_cpu, forward_magnitudes(x, w, &bias, g),
                mpx::test::gemm_tolerance<Compute, OutTag>(patch, rounding), "y with bias");
  require_close(to_host(dx_gpu), dx_cpu, input_grad_magnitudes(dy, w, g),
                mpx::test::gemm_tolerance<Compute, OutTag>(dx_terms, rounding), "dx");
  require_close(to_host(dw_gpu), dw_cpu, weight_grad_magnitudes(x, dy, nullptr, g),
                mpx::test::gemm_tolerance<Compute, AccTag>(rows, rounding), "dw written");
  require_close(to_host(dw_added_gpu), dw_added_cpu, weight_grad_magnitudes(x, dy, &dw0, g),
                mpx::test::gemm_tolerance<Compute, AccTag>(rows, rounding), "dw added");
  require_close(to_host(db_gpu), db_cpu, bias_grad_magnitudes(dy, nullptr),
                mpx::test::gemm_bias_grad_tolerance<Compute>(0, rows), "db written");
  require_close(to_host(db_added_gpu), db_added_cpu, bias_grad_magnitudes(dy, &db0),
                mpx::test::gemm_bias_grad_tolerance<Compute>(0, rows), "db added");

  // The same call twice gives the same bits (no engine with atomics, no float atomics in the bias sum).
  mpx::Tensor<float, mpx::Cuda> dw_again(g.weight_shape()), db_again(mpx::Shape{g.out_channels});
  mpx::cuda::conv2d_backward_weight<Compute>(x_gpu, dy_gpu, dw_again, true, g);
  mpx::cuda::conv2d_backward_bias(dy_gpu, db_again, true);
  require_same_bits(to_host(dw_again), to_host(dw_gpu), "dw repeated");
  require_same_bits(to_host(db_again), to_host(db_gpu), "db repeated");
}

}  // namespace

TEMPLATE_TEST_CASE("cuda conv2d matches the cpu in every pass and geometry", "[cuda][conv2d]", mpx::Float,
                   mpx::TF32, mpx::Half, mpx::BFloat16) {
  std::mt19937 rng(2024);
  mpx::cuda::reset_conv2d_path_counts();
  for (const ConvCase& c : conv_cases) check_case<TestType>(c, rng);
  const mpx::cuda::Conv2dPathCounts counts = mpx::cuda::conv2d_path_counts();
  // Which path cuDNN let each precision take (both are correct; the log of a GPU run shows it).
  WARN(std::string(mpx::numeric_traits<TestType>::name)
       << " conv2d calls: " << counts.direct << " direct, " << counts.widened << " widened to fp32");
  // Per geometry: y, y with bias, dx, dw written, added and written again.
  CHECK(counts.direct + counts.widened == 6 * static_cast<std::int64_t>(std::size(conv_cases)));
}

// A TF32 product drops the 13 low bits of an fp32 operand. Here every x (dy in the input gradient)
// is +-(1 + k 2^-12), below TF32's resolution, and every other operand a small integer, so each
// product and every partial sum is exact in fp32 in any order: strict fp32 gives the CPU's bits,
// and a TF32 engine would not.
TEST_CASE("cuda conv2d in mpx::Float uses no TF32", "[cuda][conv2d]") {
  const mpx::Conv2dGeometry g{.batch = 2,
                              .input = mpx::Size2d{7, 9},
                              .in_channels = 16,
                              .out_channels = 8,
                              .window = {.kernel = 3, .padding = 1},
                              .groups = 1};
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> pick(0, 3);
  const auto fine = [&](const mpx::Shape& shape) {  // +-(1 + 2^-12) or +-(1 + 3 2^-12)
    mpx::Tensor<float> t(shape);
    for (float& v : t.values()) {
      const int k = pick(rng);
      v = (k % 2 == 0 ? 1.0f : -1.0f) * (1.0f + (k < 2 ? 1.0f : 3.0f) * 0x1p-12f);
    }
    return t;
  };
  const auto small = [&](const mpx::Shape& shape) {  // -2, -1, 1 or 2
    mpx::Tensor<float> t(shape);
    for (float& v : t.values()) v = static_cast<float>(pick(rng) - 2 + (pick(rng) >= 2 ? 1 : 0));
    return t;
  };
  const auto x = fine(g.input_shape()), w = small(g.weight_shape()), bias = small(mpx::Shape{8});
  const auto dy_fine = fine(g.output_shape()), dy_small = small(g.output_shape());
  mpx::Tensor<float> y(g.output_shape()), dx(g.input_shape()), dw(g.weight_shape());
  mpx::cpu::conv2d_forward<mpx::Float>(x, w, &bias, y, g);
  mpx::cpu::conv2d_backward_input<mpx::Float>(dy_fine, w, dx, g);
  mpx::cpu::conv2d_backward_weight<mpx::Float>(x, dy_small, dw, true, g);

  const auto x_gpu = mpx::to_device(x), w_gpu = mpx::to_device(w), bias_gpu = mpx::to_device(bias),
             dy_fine_gpu = mpx::to_device(dy_fine), dy_small_gpu = mpx::to_device(dy_small);
  mpx::Tensor<float, mpx::Cuda> y_gpu(g.output_shape()), dx_gpu(g.input_shape()), dw_gpu(g.weight_shape());
  mpx::cuda::conv2d_forward<mpx::Float>(x_gpu, w_gpu, &bias_gpu, y_gpu, g);
  mpx::cuda::conv2d_backward_input<mpx::Float>(dy_fine_gpu, w_gpu, dx_gpu, g);
  mpx::cuda::conv2d_backward_weight<mpx::Float>(x_gpu, dy_small_gpu, dw_gpu, true, g);
  require_same_bits(to_host(y_gpu), y, "strict fp32 y");
  require_same_bits(to_host(dx_gpu), dx, "strict fp32 dx");
  require_same_bits(to_host(dw_gpu), dw, "strict fp32 dw");
}

TEST_CASE("cuda conv2d builds a plan once per shape and reuses it", "[cuda][conv2d]") {
  using T = Eigen::bfloat16;
  std::mt19937 rng(9);
  mpx::Conv2dGeometry g{.batch = 4,
                        .input = mpx::Size2d{12, 12},
                        .in_channels = 8,
                        .out_channels = 16,
                        .window = {.kernel = 3, .padding = 1},
                        .groups = 1};
  const auto x = mpx::to_device(random_host<T>(g.input_shape(), rng));
  const auto w = mpx::to_device(random_host<T>(g.weight_shape(), rng));
  mpx::Tensor<T, mpx::Cuda> y(g.output_shape());
  mpx::cuda::clear_conv2d_cache();
  mpx::cuda::reset_conv2d_path_counts();
  REQUIRE(mpx::cuda::conv2d_cache_size() == 0);
  mpx::cuda::conv2d_forward<mpx::BFloat16>(x, w, nullptr, y, g);
  const std::size_t built = mpx::cuda::conv2d_cache_size();
  CHECK(built >= 1);  // 2 when cuDNN refused the direct graph and the widened one ran
  for (int call = 0; call < 3; ++call) mpx::cuda::conv2d_forward<mpx::BFloat16>(x, w, nullptr, y, g);
  CHECK(mpx::cuda::conv2d_cache_size() == built);
  const auto counts = mpx::cuda::conv2d_path_counts();
  CHECK(counts.direct + counts.widened == 4);
  CHECK((counts.direct == 4 || counts.widened == 4));  // one path for one key, every time

  // Another batch is another plan.
  g.batch = 3;
  const auto x3 = mpx::to_device(random_host<T>(g.input_shape(), rng));
  mpx::Tensor<T, mpx::Cuda> y3(g.output_shape());
  mpx::cuda::conv2d_forward<mpx::BFloat16>(x3, w, nullptr, y3, g);
  CHECK(mpx::cuda::conv2d_cache_size() > built);

  // Bad shapes are refused before cuDNN sees them.
  mpx::Tensor<T, mpx::Cuda> wrong(mpx::Shape{3, 12, 12, 8});
  CHECK_THROWS_AS(mpx::cuda::conv2d_forward<mpx::BFloat16>(x3, w, nullptr, wrong, g), mpx::shape_error);
}

// One eager call per pass sizes the workspace and builds the plans; the same calls captured into a
// CUDA graph then replay with the eager bits, and a shape without a plan is refused during capture.
TEMPLATE_TEST_CASE("cuda conv2d passes captured in a CUDA graph replay the eager bits",
                   "[cuda][conv2d][graph]", mpx::Float, mpx::BFloat16) {
  using T = mpx::storage_t<TestType>;
  std::mt19937 rng(77);
  const mpx::Conv2dGeometry g{.batch = 4,
                              .input = mpx::Size2d{10, 10},
                              .in_channels = 16,
                              .out_channels = 32,
                              .window = {.kernel = 3, .stride = 2, .padding = 1},
                              .groups = 1};
  const auto x = mpx::to_device(random_host<T>(g.input_shape(), rng));
  const auto w = mpx::to_device(random_host<T>(g.weight_shape(), rng));
  const auto bias = mpx::to_device(random_host<T>(mpx::Shape{g.out_channels}, rng));
  const auto dy = mpx::to_device(random_host<T>(g.output_shape(), rng));
  const auto dw0 = random_host<float>(g.weight_shape(), rng);
  mpx::Tensor<T, mpx::Cuda> y(g.output_shape()), dx(g.input_shape());
  mpx::Tensor<float, mpx::Cuda> dw(g.weight_shape()), dw_added(g.weight_shape()),
      db(mpx::Shape{g.out_channels});
  const auto queue = [&] {
    mpx::cuda::conv2d_forward<TestType>(x, w, &bias, y, g);
    mpx::cuda::conv2d_backward_input<TestType>(dy, w, dx, g);
    mpx::cuda::conv2d_backward_weight<TestType>(x, dy, dw, true, g);
    mpx::cuda::conv2d_backward_weight<TestType>(x, dy, dw_added, false, g);
    mpx::cuda::conv2d_backward_bias(dy, db, true);
  };
  mpx::copy(dw_added, dw0);
  queue();
  const auto eager_y = to_host(y), eager_dx = to_host(dx);
  const auto eager_dw = to_host(dw), eager_dw_added = to_host(dw_added), eager_db = to_host(db);
  y.set_zero();
  dx.set_zero();
  dw.set_zero();
  db.set_zero();
  mpx::copy(dw_added, dw0);

  mpx::cuda::Graph graph;
  graph.capture(queue);
  graph.launch();
  mpx::cuda_context().synchronize();
  require_same_bits(to_host(y), eager_y, "y replayed");
  require_same_bits(to_host(dx), eager_dx, "dx replayed");
  require_same_bits(to_host(dw), eager_dw, "dw replayed");
  require_same_bits(to_host(dw_added), eager_dw_added, "dw added replayed");
  require_same_bits(to_host(db), eager_db, "db replayed");

  // A batch no eager call has run has no plan, which cannot be built while capturing.
  mpx::Conv2dGeometry other = g;
  other.batch = 3;
  const auto x3 = mpx::to_device(random_host<T>(other.input_shape(), rng));
  mpx::Tensor<T, mpx::Cuda> y3(other.output_shape());
  mpx::cuda::Graph refused;
  CHECK_THROWS_WITH(refused.capture([&] { mpx::cuda::conv2d_forward<TestType>(x3, w, &bias, y3, other); }),
                    Catch::Matchers::Contains("being captured"));
}

// ---- a whole CNN through the Trainer: conv, BatchNorm, pooling, residual blocks ------------------

namespace {

// Random 12 x 12 single-channel images and labels: the stem and three stages of the ResNet
// (12 -> 6 -> 3 -> 2 pixels) on a batch small enough to train in well under a second.
struct ImageBatches {
  std::vector<mpx::Tensor<float>> images;
  std::vector<mpx::Tensor<std::int32_t>> labels;
};

ImageBatches random_images(int count) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, 9);
  ImageBatches data;
  for (int b = 0; b < count; ++b) {
    mpx::Tensor<float> x(mpx::Shape{8, 12, 12, 1});
    mpx::Tensor<std::int32_t> y(mpx::Shape{8});
    for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = normal(rng);
    for (std::int64_t i = 0; i < y.numel(); ++i) y[i] = label(rng);
    data.images.push_back(std::move(x));
    data.labels.push_back(std::move(y));
  }
  return data;
}

template <class P, class Device>
struct CnnSetup {
  decltype(mpx::experiment::resnet<P, Device>(4, 10)) model = mpx::experiment::resnet<P, Device>(4, 10);
  decltype(mpx::nn::layers<P, Device>::softmax_cross_entropy()) loss =
      mpx::nn::layers<P, Device>::softmax_cross_entropy();
  mpx::optim::SGD<decltype(model)> optimizer{model, {.lr = 0.05, .momentum = 0.9, .nesterov = true}};
  mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)> trainer{model, loss, optimizer};
  CnnSetup() { model.initialize(5); }
};

template <class Model>
std::vector<float> cnn_state(Model& model) {
  std::vector<float> all;
  model.for_each_parameter([&](std::string_view, auto& p) {
    const auto& host = mpx::to<mpx::Host>(p.master());
    for (std::int64_t i = 0; i < host.numel(); ++i) all.push_back(static_cast<float>(host[i]));
  });
  mpx::nn::for_each_buffer(model, [&](std::string_view, auto& buffer) {
    const auto& host = mpx::to<mpx::Host>(buffer);
    for (std::int64_t i = 0; i < host.numel(); ++i) all.push_back(static_cast<float>(host[i]));
  });
  return all;
}

}  // namespace

// The GPU and the CPU differ only in summation orders (cuDNN's and oneDNN's or Eigen's convolutions,
// the BatchNorm reductions' trees): the first step's loss agrees to a few fp32 (16-bit: compute-type)
// roundings, and 20 steps of training carry the difference forward without a jump.
TEMPLATE_TEST_CASE("a small ResNet trains on the GPU as on the CPU", "[cuda][conv2d][trainer]", mpx::fp32,
                   mpx::bf16_mixed, mpx::fp16_mixed) {
  using P = TestType;
  const ImageBatches data = random_images(20);
  CnnSetup<P, mpx::Host> cpu;
  CnnSetup<P, mpx::Cuda> gpu;
  const double first_bound = std::is_same_v<P, mpx::fp32> ? 1e-5 : 1e-2;
  const double run_bound = std::is_same_v<P, mpx::fp32> ? 1e-2 : 0.2;
  double worst = 0.0;
  for (std::size_t s = 0; s < data.images.size(); ++s) {
    const auto host = cpu.trainer.step(data.images[s], data.labels[s]);
    const auto device_images = mpx::to<mpx::Cuda>(data.images[s]);
    const auto device_labels = mpx::to<mpx::Cuda>(data.labels[s]);
    const auto device = gpu.trainer.step(device_images, device_labels);
    REQUIRE(std::isfinite(device.loss));
    REQUIRE(device.stepped == host.stepped);
    const double difference = std::abs(device.loss - host.loss) / std::max(1.0, host.loss);
    CAPTURE(s, host.loss, device.loss);
    if (s == 0) CHECK(difference <= first_bound);
    worst = std::max(worst, difference);
  }
  WARN(P::name << ": largest relative loss difference GPU vs CPU over 20 steps " << worst);
  CHECK(worst <= run_bound);
  const std::vector<float> g = cnn_state(gpu.model), c = cnn_state(cpu.model);
  REQUIRE(g.size() == c.size());
  double squares = 0.0, differences = 0.0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    squares += double(c[i]) * double(c[i]);
    differences += (double(g[i]) - double(c[i])) * (double(g[i]) - double(c[i]));
  }
  CHECK(std::sqrt(differences / squares) <= run_bound);  // weights and running statistics
}

// The whole CNN step (cuDNN graphs, BatchNorm's scratch, the optimizer) captured once and replayed
// gives the eager step's bits.
TEMPLATE_TEST_CASE("a replayed CUDA graph of a CNN step equals the eager step bit for bit",
                   "[cuda][conv2d][trainer][graph]", mpx::fp32, mpx::bf16_mixed) {
  const ImageBatches data = random_images(8);
  CnnSetup<TestType, mpx::Cuda> eager;
  CnnSetup<TestType, mpx::Cuda> graphed;
  auto images = mpx::to<mpx::Cuda>(data.images[0]);
  auto labels = mpx::to<mpx::Cuda>(data.labels[0]);
  graphed.trainer.capture_step(images, labels);  // runs step 1 eagerly, captures step 2
  const auto first_images = mpx::to<mpx::Cuda>(data.images[0]);
  const auto first_labels = mpx::to<mpx::Cuda>(data.labels[0]);
  (void)eager.trainer.step(first_images, first_labels);
  for (std::size_t s = 1; s < data.images.size(); ++s) {
    const auto step_images = mpx::to<mpx::Cuda>(data.images[s]);
    const auto step_labels = mpx::to<mpx::Cuda>(data.labels[s]);
    (void)eager.trainer.step(step_images, step_labels);
    mpx::copy(images, step_images);
    mpx::copy(labels, step_labels);
    graphed.trainer.replay_step();
  }
  CHECK(graphed.trainer.read_result().loss == eager.trainer.read_result().loss);
  CHECK(cnn_state(graphed.model) == cnn_state(eager.model));
}
