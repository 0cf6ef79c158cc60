// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// nn::Conv2d: forward, input, weight and bias gradients against a direct convolution in fp64 over the
// same (compute-type) operands, within the GEMM's tolerance, for every geometry the layer takes
// (stride, padding, dilation, groups, depthwise, rectangular kernels, 1 x 1, blocks of patches) and
// every compute type; fp64 gradients against finite differences; the errors' messages.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../support/error_matchers.hpp"
#include "../support/gradient_check.hpp"
#include "../support/tolerances.hpp"
#include "../support/window_text.hpp"
#include "mpx/backend/cpu/backend.hpp"
#include "mpx/backend/cpu/conv2d.hpp"
#include "mpx/backend/cpu/conv2d_patches.hpp"
#include "mpx/nn/conv2d.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/policy/precision.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Conv2dGeometry;
using mpx::Shape;
using mpx::Size2d;
using mpx::Tensor;
using mpx::test::widen;

// A direct convolution of the definition, in fp64: y[n, oh, ow, o] = b[o] + sum over (kh, kw, c) of
// x[n, oh s - p + kh d, ow s - p + kw d, g Cg + c] W[o, kh, kw, c]; `magnitude` gets the sum of the
// terms' absolute values (the tolerance's scale). Also the two gradients, by the same loops.
struct Reference {
  std::vector<double> y, y_magnitude;    // [N, OH, OW, O]
  std::vector<double> dx, dx_magnitude;  // [N, H, W, C]
  std::vector<double> dw, dw_magnitude;  // [O, KH, KW, Cg]
  std::vector<double> db, db_magnitude;  // [O]
};

// The values as the GEMM reads them: rounded into `Compute` (TF32 rounds fp32 storage), then widened.
template <class Compute = void, class T>
std::vector<double> widened(const Tensor<T>& t) {
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if constexpr (std::is_same_v<Compute, mpx::TF32>) {
      v[static_cast<std::size_t>(i)] = widen(mpx::round_to<mpx::TF32>(t[i]));
    } else {
      v[static_cast<std::size_t>(i)] = widen(t[i]);
    }
  }
  return v;
}

// `dy_for_bias`: dy as the bias gradient reads it (a reduction, not a GEMM: not rounded to TF32).
Reference direct_convolution(const Conv2dGeometry& g, const std::vector<double>& x,
                             const std::vector<double>& w, const std::vector<double>* b,
                             const std::vector<double>& dy, const std::vector<double>& dy_for_bias) {
  const Size2d out = g.output();
  const std::int64_t cg = g.group_in_channels(), og = g.group_out_channels();
  Reference r;
  const auto size = [](const Shape& s) { return static_cast<std::size_t>(s.numel()); };
  r.y.assign(size(g.output_shape()), 0.0);
  r.y_magnitude = r.y;
  r.dx.assign(size(g.input_shape()), 0.0);
  r.dx_magnitude = r.dx;
  r.dw.assign(size(g.weight_shape()), 0.0);
  r.dw_magnitude = r.dw;
  r.db.assign(static_cast<std::size_t>(g.out_channels), 0.0);
  r.db_magnitude = r.db;
  for (std::int64_t n = 0; n < g.batch; ++n)
    for (std::int64_t oh = 0; oh < out.h; ++oh)
      for (std::int64_t ow = 0; ow < out.w; ++ow)
        for (std::int64_t o = 0; o < g.out_channels; ++o) {
          const std::size_t yi =
              static_cast<std::size_t>(((n * out.h + oh) * out.w + ow) * g.out_channels + o);
          const std::int64_t group = o / og;
          double sum = b ? (*b)[static_cast<std::size_t>(o)] : 0.0;
          double magnitude = std::abs(sum);
          for (std::int64_t kh = 0; kh < g.window.kernel.h; ++kh)
            for (std::int64_t kw = 0; kw < g.window.kernel.w; ++kw) {
              const std::int64_t h = oh * g.window.stride.h - g.window.padding.h + kh * g.window.dilation.h;
              const std::int64_t wc = ow * g.window.stride.w - g.window.padding.w + kw * g.window.dilation.w;
              if (h < 0 || h >= g.input.h || wc < 0 || wc >= g.input.w) continue;
              for (std::int64_t c = 0; c < cg; ++c) {
                const std::size_t xi = static_cast<std::size_t>(
                    ((n * g.input.h + h) * g.input.w + wc) * g.in_channels + group * cg + c);
                const std::size_t wi = static_cast<std::size_t>(
                    ((o * g.window.kernel.h + kh) * g.window.kernel.w + kw) * cg + c);
                sum += x[xi] * w[wi];
                magnitude += std::abs(x[xi] * w[wi]);
                r.dx[xi] += dy[yi] * w[wi];
                r.dx_magnitude[xi] += std::abs(dy[yi] * w[wi]);
                r.dw[wi] += dy[yi] * x[xi];
                r.dw_magnitude[wi] += std::abs(dy[yi] * x[xi]);
              }
            }
          r.y[yi] = sum;
          r.y_magnitude[yi] = magnitude;
          r.db[static_cast<std::size_t>(o)] += dy_for_bias[yi];
          r.db_magnitude[static_cast<std::size_t>(o)] += std::abs(dy_for_bias[yi]);
        }
  return r;
}

template <class T>
void check_close(const std::string& what, const Tensor<T>& actual, const std::vector<double>& expected,
                 const std::vector<double>& magnitude, const mpx::test::GemmTolerance& tolerance) {
  REQUIRE(static_cast<std::size_t>(actual.numel()) == expected.size());
  int failures = 0;
  for (std::size_t i = 0; i < expected.size() && failures < 5; ++i) {
    const double error = std::abs(widen(actual[static_cast<std::int64_t>(i)]) - expected[i]);
    if (error > tolerance.bound(magnitude[i], expected[i])) {
      ++failures;
      FAIL_CHECK(what << "[" << i << "] = " << widen(actual[static_cast<std::int64_t>(i)]) << ", expected "
                      << expected[i] << " (error " << error << ", bound "
                      << tolerance.bound(magnitude[i], expected[i]) << ")");
    }
  }
}

struct Case {
  const char* name;
  std::int64_t batch, height, width, in_channels, out_channels;
  Size2d kernel;
  mpx::nn::Conv2dOptions options;
};

// Every geometry the layer takes; "blocks" has more output rows than one patch block (1820 rows
// of 576 taps), so the GEMMs run block by block and the weight gradient sums across blocks.
const std::vector<Case>& cases() {
  static const std::vector<Case> list{
      {"3x3 same padding", 2, 7, 6, 3, 4, 3, {.padding = 1}},
      {"stride 2, no padding", 2, 9, 8, 4, 5, 3, {.stride = 2}},
      {"rectangular kernel, stride and padding per dimension",
       1,
       8,
       10,
       3,
       2,
       {2, 3},
       {.stride = {2, 1}, .padding = {1, 0}}},
      {"dilation 2", 2, 9, 9, 2, 3, 3, {.padding = 2, .dilation = 2}},
      {"groups 2, no bias", 2, 6, 5, 4, 6, 3, {.padding = 1, .groups = 2, .bias = false}},
      {"depthwise", 2, 6, 6, 4, 8, 3, {.stride = 2, .padding = 1, .groups = 4}},
      {"1x1 pointwise", 2, 5, 4, 6, 3, 1, {}},
      {"1x1 stride 2 (downsampling shortcut)", 2, 6, 6, 4, 8, 1, {.stride = 2, .bias = false}},
      {"blocks", 4, 28, 28, 64, 8, 3, {.padding = 1}},
  };
  return list;
}

// Which code computes the convolution: the layer (on oneDNN where mpx is built with it), or the
// patch gathers feeding mpx's GEMM that the CPU backend falls back on, called directly.
enum class Path { layer, patches };

template <class P>
void check_against_direct_convolution(const Case& c, Path path = Path::layer) {
  using T = mpx::compute_t<P>;
  using Compute = typename P::compute_type;
  using Acc = mpx::accumulate_t<P>;
  INFO(c.name << " in " << P::name << (path == Path::patches ? " by patches" : ""));
  std::mt19937_64 rng(7);
  mpx::nn::Conv2d<P> layer(c.in_channels, c.out_channels, c.kernel, c.options);
  mpx::test::randomize_parameters(layer, rng);
  auto x = mpx::test::uniform_tensor<T>(Shape{c.batch, c.height, c.width, c.in_channels}, rng, -1.0, 1.0);
  Tensor<T> y = layer.forward(x).clone();
  Conv2dGeometry g = layer.settings();
  g.batch = c.batch;
  g.input = {c.height, c.width};
  REQUIRE(y.shape() == g.output_shape());
  auto dy = mpx::test::uniform_tensor<T>(y.shape(), rng, -1.0, 1.0);
  layer.for_each_parameter([](const auto&, auto& parameter) { parameter.zero_grad(); });
  const Tensor<T>* layer_dx = layer.backward(dy, true);
  REQUIRE(layer_dx != nullptr);
  Tensor<T> dx = layer_dx->clone();
  Tensor<Acc> dw = layer.weight().grad().clone();
  if (path == Path::patches) {
    const Tensor<T>* bias = layer.bias() ? &layer.bias()->compute() : nullptr;
    mpx::cpu::conv2d_forward_by_patches<Compute>(x, layer.weight().compute(), bias, y, g);
    mpx::cpu::conv2d_backward_input_by_patches<Compute>(dy, layer.weight().compute(), dx, g);
    mpx::cpu::conv2d_backward_weight_by_patches<Compute>(x, dy, dw, true, g);
  }

  const std::vector<double> w = widened<Compute>(layer.weight().compute());
  std::vector<double> b;  // added in the accumulate type: not rounded into the compute type
  if (layer.bias() != nullptr) b = widened(layer.bias()->compute());
  const Reference r = direct_convolution(g, widened<Compute>(x), w, layer.bias() ? &b : nullptr,
                                         widened<Compute>(dy), widened(dy));
  using OutTag = mpx::tag_of_t<T>;
  using AccTag = mpx::tag_of_t<Acc>;
  check_close("y", y, r.y, r.y_magnitude, mpx::test::gemm_tolerance<Compute, OutTag>(g.patch_size() + 1));
  const std::int64_t taps = g.window.kernel.h * g.window.kernel.w;
  check_close("dx", dx, r.dx, r.dx_magnitude,
              mpx::test::gemm_tolerance<Compute, OutTag>(taps * g.group_out_channels()));
  const std::int64_t rows = g.output_shape().rows();
  check_close("dw", dw, r.dw, r.dw_magnitude, mpx::test::gemm_tolerance<Compute, AccTag>(rows));
  if (layer.bias() != nullptr) {
    check_close("db", layer.bias()->grad(), r.db, r.db_magnitude,
                mpx::test::gemm_bias_grad_tolerance<Compute>(0, rows));
  }
}

}  // namespace

TEST_CASE("Conv2d matches a direct convolution in every geometry and compute type", "[nn][conv2d]") {
  for (const Case& c : cases()) {
    check_against_direct_convolution<mpx::fp32>(c);
    check_against_direct_convolution<mpx::bf16_mixed>(c);
    check_against_direct_convolution<mpx::fp16_mixed>(c);
    check_against_direct_convolution<mpx::tf32>(c);
  }
}

TEST_CASE("The patch gathers the CPU falls back on match a direct convolution", "[nn][conv2d]") {
  // What a build without oneDNN runs for every convolution, and every build for fp64 and for
  // geometries oneDNN has only reference code for.
  for (const Case& c : cases()) {
    check_against_direct_convolution<mpx::fp32>(c, Path::patches);
    check_against_direct_convolution<mpx::bf16_mixed>(c, Path::patches);
    check_against_direct_convolution<mpx::fp16_mixed>(c, Path::patches);
  }
}

TEST_CASE("Conv2d's fp64 gradients match finite differences", "[nn][conv2d][gradient]") {
  std::mt19937_64 rng(11);
  for (const Case& c : cases()) {
    if (std::string(c.name) == "blocks") continue;  // the same code as the others, 200x the differences
    INFO(c.name);
    mpx::nn::Conv2d<mpx::fp64> layer(c.in_channels, c.out_channels, c.kernel, c.options);
    mpx::test::randomize_parameters(layer, rng);
    auto x = mpx::test::uniform_tensor(Shape{c.batch, c.height, c.width, c.in_channels}, rng, -1.0, 1.0);
    const Shape y_shape = layer.forward(x).shape();
    const auto w = mpx::test::uniform_tensor(y_shape, rng, -1.0, 1.0);
    mpx::test::check_layer_gradients(layer, x, w);
  }
}

TEST_CASE("Conv2d's results do not depend on the batch it is in", "[nn][conv2d]") {
  // Image i of a batch of 4 gives the bits image i gives alone: the patch blocks and GEMM tiles
  // change with the batch, the sums of one output element do not.
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(3);
  mpx::nn::Conv2d<P> layer(8, 16, 3, {.padding = 1});
  mpx::test::randomize_parameters(layer, rng);
  auto batch = mpx::test::uniform_tensor<T>(Shape{4, 12, 12, 8}, rng, -1.0, 1.0);
  const Tensor<T> together = layer.forward(batch).clone();
  const std::int64_t per_image = together.numel() / 4;
  for (std::int64_t i = 0; i < 4; ++i) {
    const Tensor<T> image = batch.rows(i, 1).clone();
    const Tensor<T>& alone = layer.forward(image);
    for (std::int64_t e = 0; e < per_image; ++e) REQUIRE(alone[e] == together[i * per_image + e]);
  }
}

TEST_CASE("Conv2d gives the same bits on one thread and on several", "[nn][conv2d][threads]") {
#ifdef _OPENMP
  // 100 images of 12 x 12 are 3 oneDNN calls of 37 (the last smaller), and 3 partial weight
  // gradients summed in call order, whichever thread runs which call.
  const int threads = omp_get_max_threads();
  const auto run = [&]<class P>(P, int thread_count) {
    using T = mpx::compute_t<P>;
    mpx::cpu::release_conv2d_primitives();  // no primitive carried over from another thread count
    omp_set_num_threads(thread_count);
    std::mt19937_64 same(9);
    mpx::nn::Conv2d<P> layer(8, 16, 3, {.stride = 1, .padding = 1});
    mpx::test::randomize_parameters(layer, same);
    auto x = mpx::test::uniform_tensor<T>(Shape{100, 12, 12, 8}, same, -1.0, 1.0);
    Tensor<T> y = layer.forward(x).clone();
    auto dy = mpx::test::uniform_tensor<T>(y.shape(), same, -1.0, 1.0);
    layer.for_each_parameter([](const auto&, auto& parameter) { parameter.zero_grad(); });
    Tensor<T> dx = layer.backward(dy, true)->clone();
    Tensor<float> dw = layer.weight().grad().clone();
    omp_set_num_threads(threads);
    return std::tuple{std::move(y), std::move(dx), std::move(dw)};
  };
  const auto same_bits = [](const auto& a, const auto& b) {
    return a.size_bytes() == b.size_bytes() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
  };
  const auto check = [&](auto precision) {
    INFO(decltype(precision)::name);
    const auto [y1, dx1, dw1] = run(precision, 1);
    const auto [y3, dx3, dw3] = run(precision, 3);
    CHECK(same_bits(y1, y3));
    CHECK(same_bits(dx1, dx3));
    CHECK(same_bits(dw1, dw3));
  };
  check(mpx::fp32{});
  check(mpx::bf16_mixed{});
  check(mpx::fp16_mixed{});
#else
  WARN("built without OpenMP: one thread only, nothing to compare");
#endif
}

TEST_CASE("Conv2d rejects bad settings and inputs, naming the layer and the values", "[nn][conv2d][errors]") {
  using C = mpx::nn::Conv2d<mpx::fp32>;
  using mpx::test::MessageContains;
  CHECK_THROWS_MATCHES(C(6, 4, 3, {.groups = 4}), mpx::invalid_argument,
                       MessageContains({"groups = 4 must divide in_channels = 6 and out_channels = 4"}));
  CHECK_THROWS_MATCHES(C(0, 4, 3), mpx::invalid_argument, MessageContains({"in_channels = 0"}));
  CHECK_THROWS_MATCHES(C(3, 4, {3, 0}), mpx::invalid_argument,
                       MessageContains({"kernel_size 3 x 0 must be positive"}));
  CHECK_THROWS_MATCHES(C(3, 4, 3, {.stride = 0}), mpx::invalid_argument, MessageContains({"stride 0 x 0"}));
  CHECK_THROWS_MATCHES(C(3, 4, 3, {.padding = -1}), mpx::invalid_argument,
                       MessageContains({"padding -1 x -1 must not be negative"}));

  C layer(3, 4, 5, {.dilation = 2});
  layer.set_label("layers.0 (Conv2d)");
  const Tensor<float> wrong_channels(Shape{2, 9, 9, 4});
  CHECK_THROWS_MATCHES(
      layer.forward(wrong_channels), mpx::shape_error,
      MessageContains({"layers.0 (Conv2d): expected input of shape [batch, height, width, 3] "
                       "(channels last), received [2, 9, 9, 4]"}));
  const Tensor<float> rank3(Shape{9, 9, 3});
  CHECK_THROWS_MATCHES(layer.forward(rank3), mpx::shape_error, MessageContains({"received [9, 9, 3]"}));
  const Tensor<float> too_small(Shape{2, 8, 12, 3});  // the dilated 5x5 kernel spans 9 rows
  CHECK_THROWS_MATCHES(
      layer.forward(too_small), mpx::shape_error,
      MessageContains({"layers.0 (Conv2d): the kernel 5 x 5 (dilation 2 x 2, so it spans 9 x 9) "
                       "is larger than the padded input 8 x 12"}));
  const Tensor<float> empty_batch(Shape{0, 9, 9, 3});
  CHECK_THROWS_MATCHES(layer.forward(empty_batch), mpx::shape_error, MessageContains({"is empty"}));
  CHECK_THROWS_MATCHES(layer.backward(Tensor<float>(Shape{2, 1, 1, 4})), mpx::error,
                       MessageContains({"layers.0 (Conv2d): backward called before forward"}));
}

// The options as written, defaults included, reach the layer's window: GCC 12.2 at -O2 with
// -march=native on an AVX-512 CPU (GCC bug 108599) copied an `Options` passed by value with its
// first 32 bytes, {stride, padding} = {s, s, 0, 0}, broadcast from s, so that the UNet's and the
// ResNet's 1 x 1 shortcuts got padding s and mapped [N, H, W, C] to [N, H + 2, W + 2, O].
TEST_CASE("Conv2d keeps the options it is given", "[nn][conv2d]") {
  using L = mpx::nn::layers<mpx::fp32>;
  using C = mpx::nn::Conv2d<mpx::fp32>;
  const auto check = [&](auto&& layer, const mpx::Window2d& window, bool bias, const Shape& x_shape,
                         const Shape& y_shape) {
    CHECK(mpx::test::window_text(layer.settings().window) == mpx::test::window_text(window));
    CHECK((layer.bias() != nullptr) == bias);
    Tensor<float> x(x_shape);
    x.set_zero();
    CHECK(layer.forward(x).shape() == y_shape);
  };
  const mpx::Window2d one{.kernel = 1}, one_strided{.kernel = 1, .stride = 2};
  const mpx::Window2d down{.kernel = 3, .stride = 2, .padding = 1};
  // The UNet's projected shortcut (experiment/unet.hpp) and the ResNet's (experiment/resnet.hpp).
  check(L::conv2d(16, 32, 1), one, true, Shape{2, 14, 14, 16}, Shape{2, 14, 14, 32});
  check(L::conv2d(8, 16, 1, {.stride = 2, .bias = false}), one_strided, false, Shape{2, 8, 8, 8},
        Shape{2, 4, 4, 16});
  check(L::conv2d(8, 16, 3, {.stride = 2, .padding = 1, .bias = false}), down, false, Shape{2, 8, 8, 8},
        Shape{2, 4, 4, 16});
  check(C(16, 32, 1), one, true, Shape{2, 14, 14, 16}, Shape{2, 14, 14, 32});
  check(C(8, 16, 1, {.stride = 2}), one_strided, true, Shape{2, 8, 8, 8}, Shape{2, 4, 4, 16});
}

TEST_CASE("Conv2d describes itself under torch.nn.Conv2d's names", "[nn][conv2d]") {
  const mpx::nn::Conv2d<mpx::bf16_mixed> layer(4, 8, {3, 1}, {.stride = 2, .padding = {1, 0}, .groups = 2});
  const auto d = mpx::nn::describe_layer(layer);
  const auto value = [&](const std::string& key) {
    for (const auto& field : d)
      if (field.key == key) return field.value;
    FAIL("no field " << key);
    return mpx::nn::DescriptionValue{};
  };
  CHECK(std::get<std::string>(value("kind")) == "Conv2d");
  CHECK(std::get<std::int64_t>(value("in_channels")) == 4);
  CHECK(std::get<std::int64_t>(value("kernel_size_h")) == 3);
  CHECK(std::get<std::int64_t>(value("kernel_size_w")) == 1);
  CHECK(std::get<std::int64_t>(value("stride_w")) == 2);
  CHECK(std::get<std::int64_t>(value("padding_w")) == 0);
  CHECK(std::get<std::int64_t>(value("groups")) == 2);
  CHECK(std::get<bool>(value("bias")));
}

}  // namespace MPX_UNITY_ID
}  // namespace
