// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// nn::Dropout: the drop rate within a binomial bound, kept elements x / (1 - p) rounded once, the
// documented key -> Philox mapping, backward's regenerated mask equal to forward's, identity in
// evaluation and for p = 0, masks keyed by (seed, layer, step, micro-batch), reproducibility through a
// Sequential and a resumed Trainer, gradients in fp64, and the error messages.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <Random123/philox.h>
#include <catch2/catch.hpp>

#include "mpx/nn/dropout.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/loss.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/optim/sgd.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/train/trainer.hpp"

#include "../support/gradient_check.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace nn = mpx::nn;
using mpx::Shape;
using mpx::Tensor;
using mpx::test::uniform_tensor;

template <class T>
double as_double(T value) {
  return mpx::test::widen(value);
}

template <class T>
bool same_bits(const Tensor<T>& a, const Tensor<T>& b) {
  if (!(a.shape() == b.shape())) return false;
  return std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size_bytes())) == 0;
}

template <class T>
bool same_bits_scalar(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Which elements an output dropped (x was nowhere zero).
template <class T>
std::vector<bool> dropped(const Tensor<T>& y) {
  std::vector<bool> out(static_cast<std::size_t>(y.numel()));
  for (std::int64_t i = 0; i < y.numel(); ++i) out[static_cast<std::size_t>(i)] = as_double(y[i]) == 0.0;
  return out;
}

// |value| in [0.25, 2), random sign: never zero, so a zero output means a dropped element.
template <class T>
Tensor<T> nonzero_tensor(const Shape& shape, std::mt19937_64& rng) {
  Tensor<double> values = mpx::test::away_from_zero(shape, rng, 0.25, 2.0);
  Tensor<T> out(shape);
  for (std::int64_t i = 0; i < out.numel(); ++i) out[i] = static_cast<T>(static_cast<float>(values[i]));
  return out;
}

// The kept value as the layer documents it, computed another way: 1 - p in double rounded into the
// accumulate type, the quotient in double (exact enough that rounding it to fp32 is the correctly rounded
// fp32 quotient), then rounded once into T.
template <class P>
mpx::compute_t<P> expected_kept(mpx::compute_t<P> x, float p) {
  using T = mpx::compute_t<P>;
  using Acc = mpx::accumulate_t<T>;
  const double keep = static_cast<double>(static_cast<Acc>(1.0 - static_cast<double>(p)));
  const double quotient = as_double(x) / keep;
  return mpx::round_to<mpx::tag_of_t<T>>(static_cast<Acc>(quotient));
}

// The mask the header documents (backend/dropout_spec.hpp), written out with Random123 directly:
// L = Philox(key seed, counter (step, stream)); B = Philox(key (L0, L1), counter (i/4, micro, L2, L3));
// element i is dropped when B[i % 4] < round(p 2^32).
std::vector<bool> documented_mask(std::int64_t count, float p, std::uint64_t seed, std::uint64_t stream,
                                  std::int64_t step, std::uint32_t micro_batch) {
  using Philox = r123::Philox4x32;
  const auto s = static_cast<std::uint64_t>(step);
  const Philox::ctr_type level1 =
      Philox{}({{static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(s >> 32),
                 static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}},
               {{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}});
  const auto threshold = static_cast<std::uint64_t>(std::llround(static_cast<double>(p) * 4294967296.0));
  std::vector<bool> mask(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const Philox::ctr_type bits =
        Philox{}({{static_cast<std::uint32_t>(i / 4), micro_batch, level1.v[2], level1.v[3]}},
                 {{level1.v[0], level1.v[1]}});
    mask[static_cast<std::size_t>(i)] = bits.v[i % 4] < threshold;
  }
  return mask;
}

// The mask a layer draws for `key` on a tensor of `shape`.
template <class P>
std::vector<bool> layer_mask(nn::Dropout<P>& layer, const Shape& shape, std::int64_t step,
                             std::int64_t micro_batch) {
  using T = mpx::compute_t<P>;
  Tensor<T> ones(shape);
  for (auto& v : ones.values()) v = static_cast<T>(1.0f);
  layer.bind_step(nn::StepKey{&step, micro_batch});
  return dropped(layer.forward(ones));
}

template <class P>
void check_rate_and_values(float p) {
  using T = mpx::compute_t<P>;
  CAPTURE(P::name, p);
  nn::Dropout<P> layer(p);
  layer.initialize(11, 3);
  std::mt19937_64 rng(5);
  const Shape shape{8, 50, 500};  // 200000 elements, as [batch, sequence, features]
  const Tensor<T> x = nonzero_tensor<T>(shape, rng);
  std::int64_t step = 7;
  layer.bind_step(nn::StepKey{&step, 0});
  const Tensor<T>& y = layer.forward(x);
  REQUIRE(y.shape() == shape);
  REQUIRE(&y != &x);

  // The number of zeros is Binomial(n, p) (the drop probability is p exactly: 0.1f and 0.5f are
  // multiples of 2^-32); a correct mask stays within 5 sigma with probability 1 - 6e-7.
  const double n = static_cast<double>(x.numel());
  std::int64_t zeros = 0;
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    if (as_double(y[i]) == 0.0) {
      ++zeros;
    } else if (!same_bits_scalar(y[i], expected_kept<P>(x[i], p))) {
      ++wrong;
    }
  }
  const double sigma = std::sqrt(n * p * (1.0 - p));
  CHECK(std::abs(static_cast<double>(zeros) - n * p) <= 5.0 * sigma);
  CHECK(wrong == 0);  // every kept element is x / (1 - p) rounded once, bit for bit
  CHECK(dropped(y) == documented_mask(x.numel(), p, 11, 3, 7, 0));
}

}  // namespace

TEST_CASE("Dropout drops a binomial fraction and keeps x / (1 - p) rounded once, by the documented mask",
          "[nn][dropout]") {
  for (const float p : {0.1f, 0.5f}) {
    check_rate_and_values<mpx::fp32>(p);
    check_rate_and_values<mpx::bf16_mixed>(p);
    check_rate_and_values<mpx::fp16_mixed>(p);
    check_rate_and_values<mpx::fp64>(p);
  }
  // A p that is not a multiple of 2^-32 drops with probability round(p 2^32) / 2^32.
  CHECK(mpx::dropout_threshold(0.1f) == 429496736u);  // 0.1f = 0x1.99999ap-4, times 2^32
  CHECK(mpx::dropout_threshold(0.0f) == 0u);
  CHECK(mpx::dropout_threshold(0.5f) == 2147483648u);
}

TEST_CASE("Dropout backward regenerates forward's mask: dx = dy * keep / (1 - p), nothing stored",
          "[nn][dropout]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(8);
  const Shape shape{3, 7, 33};  // an odd count: the last Philox block is partial
  const Tensor<T> x = nonzero_tensor<T>(shape, rng);
  const Tensor<T> dy = nonzero_tensor<T>(shape, rng);
  const float p = 0.3f;
  for (const bool bound : {true, false}) {
    CAPTURE(bound);
    nn::Dropout<P> layer(p);
    layer.initialize(2, 9);
    std::int64_t step = 4;
    if (bound) layer.bind_step(nn::StepKey{&step, 1});
    for (int repeat = 0; repeat < 2; ++repeat) {  // the own count advances; backward still follows forward
      const std::vector<bool> forward_mask = dropped(layer.forward(x));
      const Tensor<T>* dx = layer.backward(dy, true);
      REQUIRE(dx != nullptr);
      REQUIRE(dx != &dy);
      CHECK(dropped(*dx) == forward_mask);
      for (std::int64_t i = 0; i < dy.numel(); ++i) {
        if (!forward_mask[static_cast<std::size_t>(i)])
          CHECK(same_bits_scalar((*dx)[i], expected_kept<P>(dy[i], p)));
      }
      CHECK(layer.backward(dy, false) == nullptr);
    }
  }
}

TEST_CASE("Dropout in evaluation mode and with p = 0 returns its input and dy themselves", "[nn][dropout]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(9);
  const Tensor<T> x = nonzero_tensor<T>(Shape{4, 5, 6}, rng);
  const Tensor<T> dy = nonzero_tensor<T>(Shape{4, 5, 6}, rng);
  const Tensor<T> x_before = x.clone();

  nn::Dropout<P> zero(0.0f);
  CHECK(&zero.forward(x) == &x);
  CHECK(zero.backward(dy, true) == &dy);

  nn::Dropout<P> layer(0.5f);
  layer.set_training(false);
  CHECK_FALSE(nn::is_training(layer));
  CHECK(&layer.forward(x) == &x);
  CHECK(layer.backward(dy, true) == &dy);
  CHECK(layer.backward(dy, false) == nullptr);
  CHECK(same_bits(x, x_before));
  // Back in training it draws (and returns its own buffer).
  layer.set_training(true);
  CHECK(&layer.forward(x) != &x);
  CHECK(layer.backward(dy, true) != &dy);

  // Through a model: EvaluationMode reaches nested dropouts.
  using L = nn::layers<P>;
  nn::Sequential model{L::dropout(0.5f), nn::Sequential{L::dropout(0.2f)}};
  {
    nn::EvaluationMode evaluating(model);
    CHECK(&model.forward(x) == &x);
  }
  CHECK(&model.forward(x) != &x);
}

TEST_CASE("Dropout masks differ by step, micro-batch, layer stream and seed; the same key repeats",
          "[nn][dropout]") {
  using P = mpx::fp32;
  const Shape shape{6, 101};
  nn::Dropout<P> layer(0.5f);
  layer.initialize(1, 4);
  const std::vector<bool> base = layer_mask(layer, shape, 10, 0);
  CHECK(layer_mask(layer, shape, 10, 0) == base);
  CHECK(layer_mask(layer, shape, 11, 0) != base);
  CHECK(layer_mask(layer, shape, 10, 1) != base);
  CHECK(layer_mask(layer, shape, -10, 0) != base);  // any step value keys a mask
  layer.initialize(1, 5);
  CHECK(layer_mask(layer, shape, 10, 0) != base);
  layer.initialize(2, 4);
  CHECK(layer_mask(layer, shape, 10, 0) != base);
  // The same key in another layer object and another view of the elements: the same mask.
  nn::Dropout<P> other(0.5f);
  other.initialize(1, 4);
  CHECK(layer_mask(other, Shape{2, 3, 101}, 10, 0) == base);
  CHECK(base == documented_mask(shape.numel(), 0.5f, 1, 4, 10, 0));

  // Without a bound step the layer counts its training forwards from 1: the masks of steps 1, 2, ...
  nn::Dropout<P> counting(0.5f);
  counting.initialize(1, 4);
  Tensor<float> ones(shape);
  for (auto& v : ones.values()) v = 1.0f;
  CHECK(dropped(counting.forward(ones)) == documented_mask(shape.numel(), 0.5f, 1, 4, 1, 0));
  CHECK(dropped(counting.forward(ones)) == documented_mask(shape.numel(), 0.5f, 1, 4, 2, 0));
  // Binding a step takes over; StepKey{} hands back to the own count, which goes on from where it was.
  std::int64_t step = 10;
  counting.bind_step(nn::StepKey{&step, 0});
  CHECK(dropped(counting.forward(ones)) == base);
  counting.bind_step(nn::StepKey{});
  CHECK(dropped(counting.forward(ones)) == documented_mask(shape.numel(), 0.5f, 1, 4, 3, 0));
  // Evaluation forwards do not count.
  counting.set_training(false);
  (void)counting.forward(ones);
  counting.set_training(true);
  CHECK(dropped(counting.forward(ones)) == documented_mask(shape.numel(), 0.5f, 1, 4, 4, 0));
}

TEST_CASE("A Sequential with two Dropouts reproduces its masks for the same bound step (resume)",
          "[nn][dropout][sequential]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  using L = nn::layers<P>;
  auto make = [] {
    nn::Sequential model{L::dropout(0.5f), L::linear(16, 16), nn::Sequential{L::dropout(0.25f)}};
    model.initialize(21);
    return model;
  };
  auto model = make();
  std::mt19937_64 rng(10);
  const Tensor<T> x = nonzero_tensor<T>(Shape{2, 5, 16}, rng);
  std::int64_t step = 5;
  model.bind_step(nn::StepKey{&step, 0});
  const Tensor<T> y5 = model.forward(x).clone();
  step = 6;
  CHECK_FALSE(same_bits(model.forward(x), y5));
  step = 5;
  CHECK(same_bits(model.forward(x), y5));
  model.bind_step(nn::StepKey{&step, 1});
  CHECK_FALSE(same_bits(model.forward(x), y5));

  // A model rebuilt from the same seed (as a resumed run is) at the same step: the same output.
  auto resumed = make();
  resumed.bind_step(nn::StepKey{&step, 0});
  CHECK(same_bits(resumed.forward(x), y5));

  // The two dropouts draw from different streams: equal-shaped inputs get different masks.
  nn::Sequential twins{L::dropout(0.5f), L::dropout(0.5f)};
  twins.initialize(21);
  Tensor<T> ones(Shape{4, 64});
  for (auto& v : ones.values()) v = static_cast<T>(1.0f);
  twins.bind_step(nn::StepKey{&step, 0});
  const std::vector<bool> both = dropped(twins.forward(ones));
  nn::Dropout<P> first(0.5f);
  first.initialize(21, 0);
  const std::vector<bool> first_mask = layer_mask(first, ones.shape(), step, 0);
  CHECK(both != first_mask);  // the second layer dropped more
  std::int64_t extra = 0;
  for (std::size_t i = 0; i < both.size(); ++i) {
    CHECK((!first_mask[i] || both[i]));  // what the first dropped stays dropped
    if (both[i] && !first_mask[i]) ++extra;
  }
  CHECK(extra > 0);
}

TEST_CASE("Dropout in fp64 inside a model: gradients match finite differences with a bound step",
          "[nn][dropout][gradient]") {
  using P64 = mpx::fp64;
  using L = nn::layers<P64>;
  nn::Sequential model{L::linear(5, 9), L::dropout(0.4f), L::linear(9, 4), L::dropout(0.1f)};
  model.initialize(3);
  std::int64_t step = 2;
  model.bind_step(nn::StepKey{&step, 0});
  std::mt19937_64 rng(11);
  mpx::test::randomize_parameters(model, rng);
  Tensor<double> x = uniform_tensor(Shape{2, 7, 5}, rng, -1.0, 1.0);
  const Tensor<double> w = uniform_tensor(Shape{2, 7, 4}, rng, -1.0, 1.0);
  mpx::test::check_layer_gradients(model, x, w);
}

TEST_CASE("A Trainer step with dropout, resumed from the same weights and step count, repeats its loss",
          "[nn][dropout][trainer]") {
  using P = mpx::bf16_mixed;
  using L = nn::layers<P>;
  auto make = [] {
    nn::Sequential model{L::linear(8, 32, nn::gelu), L::dropout(0.3f), L::linear(32, 8), L::dropout(0.1f)};
    model.initialize(4);
    return model;
  };
  std::mt19937_64 rng(12);
  std::vector<Tensor<float>> inputs;
  std::vector<Tensor<float>> targets;
  for (int i = 0; i < 3; ++i) {
    inputs.push_back(uniform_tensor<float>(Shape{4, 6, 8}, rng, -1.0, 1.0));
    targets.push_back(uniform_tensor<float>(Shape{4, 6, 8}, rng, -1.0, 1.0));
  }
  auto copy_weights = [](auto& from, auto& to) {
    std::vector<Tensor<float>> masters;
    from.for_each_parameter([&](auto, auto& p) { masters.push_back(p.master().clone()); });
    std::size_t k = 0;
    to.for_each_parameter([&](auto, auto& p) {
      p.master() = masters[k++].clone();
      p.refresh_compute_copy();
    });
  };

  // The original run: three steps; the state after two is the weights (SGD without momentum).
  auto model = make();
  auto loss = L::mse_loss();
  mpx::optim::SGD optimizer(model, {.lr = 0.05});
  mpx::Trainer trainer(model, loss, optimizer);
  (void)trainer.step(inputs[0], targets[0]);
  (void)trainer.step(inputs[1], targets[1]);
  auto saved = make();
  copy_weights(model, saved);
  const double third = trainer.step(inputs[2], targets[2]).loss;

  // Resumed: the saved weights and the step count 2, then the third batch: the same masks, the same loss.
  auto resumed = make();
  copy_weights(saved, resumed);
  auto resumed_loss = L::mse_loss();
  mpx::optim::SGD resumed_optimizer(resumed, {.lr = 0.05});
  mpx::Trainer resumed_trainer(resumed, resumed_loss, resumed_optimizer);
  resumed_trainer.set_steps(2);
  CHECK(resumed_trainer.step(inputs[2], targets[2]).loss == third);

  // Control: the same weights at another step count draw other masks, so the loss differs.
  auto restarted = make();
  copy_weights(saved, restarted);
  auto restarted_loss = L::mse_loss();
  mpx::optim::SGD restarted_optimizer(restarted, {.lr = 0.05});
  mpx::Trainer restarted_trainer(restarted, restarted_loss, restarted_optimizer);
  CHECK(restarted_trainer.step(inputs[2], targets[2]).loss != third);
}

TEST_CASE("Dropout checks p, the order of calls, the micro-batch and describes itself", "[nn][dropout]") {
  using P = mpx::fp32;
  using L = nn::layers<P>;
  static_assert(std::is_same_v<decltype(L::dropout(0.1f)), nn::Dropout<P>>);
  static_assert(nn::Layer<nn::Dropout<P>>);
  for (const float bad : {1.0f, -0.1f, 1.5f, std::nanf("")}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(nn::Dropout<P>(bad), mpx::invalid_argument);
  }
  CHECK_THROWS_WITH(nn::Dropout<P>(1.0f), Catch::Contains("mpx::nn::Dropout: p = 1 is not in [0, 1)"));

  nn::Sequential model{L::linear(3, 4), L::dropout(0.25f)};
  Tensor<float> dy(Shape{2, 4});
  auto& dropout = model.layer<1>();
  CHECK_THROWS_WITH(dropout.backward(dy, true),
                    Catch::Contains("layers.1 (Dropout): backward called before forward"));
  Tensor<float> x(Shape{2, 4});
  (void)dropout.forward(x);
  Tensor<float> wrong(Shape{2, 5});
  CHECK_THROWS_AS(dropout.backward(wrong, true), mpx::shape_error);
  std::int64_t step = 0;
  CHECK_THROWS_WITH(dropout.bind_step(nn::StepKey{&step, -1}), Catch::Contains("micro-batch -1 is outside"));

  const nn::LayerDescription description = nn::describe_layer(dropout);
  REQUIRE(description.size() == 3);
  CHECK(description[0].key == "kind");
  CHECK(std::get<std::string>(description[0].value) == "Dropout");
  CHECK(description[2].key == "p");
  CHECK(std::get<float>(description[2].value) == 0.25f);

  // The kernel's own checks name the place and the values.
  mpx::DropoutMask mask{.p = 0.5f, .step = &step};
  Tensor<float> y(Shape{2, 3});
  CHECK_THROWS_AS(mpx::cpu::dropout(x, y, mask), mpx::shape_error);
  mask.step = nullptr;
  CHECK_THROWS_WITH(mpx::cpu::dropout(x, dy, mask), Catch::Contains("mpx::cpu::dropout: no step count"));
}

}  // namespace MPX_UNITY_ID
}  // namespace
