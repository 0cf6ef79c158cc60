// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A diffusion model's timestep conditioning: the sinusoidal features against their definition, the
// per-sample shift kernels against a loop in their order (bit for bit, every storage type), the
// TimeConditioned model's fp64 gradients (input, time network and body) against finite differences,
// its parameter names, and the errors' messages.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"
#include "../support/gradient_check.hpp"
#include "../support/temp_dir.hpp"
#include "mpx/experiment/diffusion.hpp"
#include "mpx/mpx.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Tensor;
// Whether two values have the same bits.
template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
void check_sample_shift(const Shape& shape) {
  INFO(mpx::numeric_traits<mpx::tag_of_t<T>>::name << " " << shape);
  std::mt19937_64 rng(7);
  const std::int64_t n = shape[0], c = shape.cols(), positions = shape.numel() / (n * c);
  const auto x = mpx::test::uniform_tensor<T>(shape, rng, -3.0, 3.0);
  const auto shift = mpx::test::uniform_tensor<T>(Shape{n, c}, rng, -2.0, 2.0);
  Tensor<T> y(shape);
  mpx::cpu::add_sample_shift(x, shift, y);
  using Acc = mpx::accumulate_t<T>;
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::int64_t sample = i / (positions * c), channel = i % c;
    const T expected = mpx::round_to<mpx::tag_of_t<T>>(static_cast<Acc>(x[i]) +
                                                       static_cast<Acc>(shift[sample * c + channel]));
    wrong += same_bits(y[i], expected) ? 0 : 1;
  }
  CHECK(wrong == 0);

  const auto dy = mpx::test::uniform_tensor<T>(shape, rng, -1.0, 1.0);
  Tensor<Acc> dshift(Shape{n, c});
  dshift.fill(Acc(123));  // written, not accumulated
  mpx::cpu::sample_shift_backward(dy, dshift);
  wrong = 0;
  for (std::int64_t sample = 0; sample < n; ++sample) {
    for (std::int64_t channel = 0; channel < c; ++channel) {
      Acc sum = 0;  // positions in order
      for (std::int64_t p = 0; p < positions; ++p)
        sum += static_cast<Acc>(dy[(sample * positions + p) * c + channel]);
      wrong += same_bits(dshift[sample * c + channel], sum) ? 0 : 1;
    }
  }
  CHECK(wrong == 0);
}

// The fp64 model of the gradient test: a time network and a two-convolution body with two
// AddTimeEmbedding layers (two readers of the embedding, so the gradient sums).
auto small_conditioned_model() {
  using L = mpx::nn::layers<mpx::fp64>;
  return mpx::nn::TimeConditioned{
      mpx::nn::TimestepFeatures{.dim = 8},
      mpx::nn::Sequential{L::linear(8, 12), L::silu(), L::linear(12, 12), L::silu()},
      mpx::nn::Sequential{L::conv2d(2, 4, 3, {.padding = 1}), L::add_time_embedding(12, 4), L::silu(),
                          L::conv2d(4, 3, 3, {.padding = 1}), L::add_time_embedding(12, 3)}};
}

}  // namespace

TEST_CASE("timestep_features are cos(t f) then sin(t f), f_i = 10000^(-i / half)", "[nn][time]") {
  const std::vector<float> timesteps{0.0f, 1.0f, 37.0f, 999.0f};
  Tensor<float> features(Shape{4, 10});
  mpx::nn::timestep_features<float>(timesteps, {.dim = 10}, features);
  for (std::int64_t n = 0; n < 4; ++n) {
    for (std::int64_t i = 0; i < 5; ++i) {
      const double f = std::pow(10000.0, -static_cast<double>(i) / 5.0);
      const double t = timesteps[static_cast<std::size_t>(n)];
      CHECK(features[n * 10 + i] == static_cast<float>(std::cos(t * f)));
      CHECK(features[n * 10 + 5 + i] == static_cast<float>(std::sin(t * f)));
    }
  }
  CHECK(features[0] == 1.0f);  // t = 0: cosines 1, sines 0
  CHECK(features[5] == 0.0f);
  CHECK_THROWS_WITH(mpx::nn::timestep_features<float>(timesteps, {.dim = 9}, features),
                    Catch::Contains("dim must be even") && Catch::Contains("dim = 9"));
}

TEST_CASE("cpu::add_sample_shift adds once rounded; sample_shift_backward sums positions in order",
          "[nn][time][cpu]") {
  check_sample_shift<float>(Shape{3, 4, 5, 70});  // channels past one 64-channel task
  check_sample_shift<Eigen::bfloat16>(Shape{2, 7, 3, 8});
  check_sample_shift<Eigen::half>(Shape{2, 6, 9});
  check_sample_shift<double>(Shape{4, 5});  // rows: one position each
  Tensor<float> x(Shape{2, 3, 4}), bad(Shape{3, 4}), y(Shape{2, 3, 4});
  CHECK_THROWS_AS(mpx::cpu::add_sample_shift(x, bad, y), mpx::shape_error);
  CHECK_THROWS_WITH(mpx::cpu::add_sample_shift(x, bad, y), Catch::Contains("add_sample_shift") &&
                                                               Catch::Contains("shift") &&
                                                               Catch::Contains("[2, 4]"));
}

TEST_CASE("TimeConditioned: input, time-network and body gradients match finite differences in fp64",
          "[nn][time][gradient]") {
  std::mt19937_64 rng(45);
  auto model = small_conditioned_model();
  mpx::test::randomize_parameters(model, rng);
  const std::vector<float> timesteps{3.0f, 250.0f};
  model.set_timesteps(timesteps);
  auto x = mpx::test::uniform_tensor(Shape{2, 5, 4, 2}, rng, -1.0, 1.0);
  const auto w = mpx::test::uniform_tensor(Shape{2, 5, 4, 3}, rng, -1.0, 1.0);
  mpx::test::check_layer_gradients(model, x, w);

  // The timesteps matter: other ones give another output.
  const Tensor<double> before = model.forward(x).clone();
  model.set_timesteps(std::vector<float>{4.0f, 250.0f});
  const Tensor<double>& after = model.forward(x);
  CHECK(after[0] != before[0]);
  CHECK(after[after.numel() - 1] == before[before.numel() - 1]);  // sample 1 kept its timestep
}

TEST_CASE("TimeConditioned names its parts' parameters time.* and body.*", "[nn][time]") {
  auto model = small_conditioned_model();
  std::vector<std::string> names;
  model.for_each_parameter([&](std::string_view name, auto&) { names.emplace_back(name); });
  CHECK(names == std::vector<std::string>{
                     "time.layers.0.weight", "time.layers.0.bias", "time.layers.2.weight",
                     "time.layers.2.bias", "body.layers.0.weight", "body.layers.0.bias",
                     "body.layers.1.proj.weight", "body.layers.1.proj.bias", "body.layers.3.weight",
                     "body.layers.3.bias", "body.layers.4.proj.weight", "body.layers.4.proj.bias"});
  // A moved model's layers still read its embedding.
  auto moved = std::move(model);
  moved.set_timesteps(std::vector<float>{1.0f});
  const Tensor<double> x(Shape{1, 3, 3, 2});
  CHECK(moved.forward(x).shape() == Shape{1, 3, 3, 3});
}

TEST_CASE("TimeConditioned and AddTimeEmbedding name what is missing", "[nn][time][errors]") {
  using L = mpx::nn::layers<mpx::fp32>;
  CHECK_THROWS_WITH(
      (mpx::nn::TimeConditioned{mpx::nn::TimestepFeatures{.dim = 4}, mpx::nn::Sequential{L::linear(4, 4)},
                                mpx::nn::Sequential{L::linear(3, 3)}}),
      Catch::Contains("no AddTimeEmbedding"));
  auto model =
      mpx::nn::TimeConditioned{mpx::nn::TimestepFeatures{.dim = 4}, mpx::nn::Sequential{L::linear(4, 6)},
                               mpx::nn::Sequential{L::linear(3, 5), L::add_time_embedding(6, 5)}};
  const Tensor<float> x(Shape{2, 3});
  CHECK_THROWS_WITH(model.forward(x), Catch::Contains("set_timesteps") && Catch::Contains("before forward"));
  model.set_timesteps(std::vector<float>{1.0f, 2.0f, 3.0f});
  CHECK_THROWS_AS(model.forward(x), mpx::shape_error);
  CHECK_THROWS_WITH(model.forward(x), Catch::Contains("[2, 3]") && Catch::Contains("3 timesteps"));

  auto alone = L::add_time_embedding(6, 3);
  CHECK_THROWS_WITH(alone.forward(x),
                    Catch::Contains("AddTimeEmbedding") && Catch::Contains("TimeConditioned"));
  // An AddTimeEmbedding of 4 channels after a layer of 3.
  auto mismatched =
      mpx::nn::TimeConditioned{mpx::nn::TimestepFeatures{.dim = 4}, mpx::nn::Sequential{L::linear(4, 6)},
                               mpx::nn::Sequential{L::linear(3, 3), L::add_time_embedding(6, 4)}};
  mismatched.set_timesteps(std::vector<float>{1.0f, 2.0f});
  CHECK_THROWS_AS(mismatched.forward(x), mpx::shape_error);
  CHECK_THROWS_WITH(mismatched.forward(x), Catch::Contains("body.layers.1 (AddTimeEmbedding)") &&
                                               Catch::Contains("[2, ..., 4]") && Catch::Contains("[2, 3]"));
}

TEST_CASE("A TimeConditioned model trains with a Trainer: replays read new timesteps, checkpoints round-trip",
          "[nn][time][train]") {
  using L = mpx::nn::layers<mpx::fp32>;
  const auto make = [] {
    auto model = mpx::nn::TimeConditioned{
        mpx::nn::TimestepFeatures{.dim = 8}, mpx::nn::Sequential{L::linear(8, 12), L::silu()},
        mpx::nn::Sequential{L::linear(3, 6), L::add_time_embedding(12, 6), L::silu(), L::linear(6, 2)}};
    model.initialize(4);
    return model;
  };
  auto eager_model = make(), replay_model = make();
  auto eager_loss = L::mse_loss(), replay_loss = L::mse_loss();
  mpx::optim::AdamW eager_optimizer(eager_model, {.lr = 0.01}), replay_optimizer(replay_model, {.lr = 0.01});
  mpx::Trainer eager(eager_model, eager_loss, eager_optimizer);
  mpx::Trainer replayed(replay_model, replay_loss, replay_optimizer);
  std::mt19937_64 rng(9);
  const auto x = mpx::test::uniform_tensor<float>(Shape{4, 5, 3}, rng, -1.0, 1.0);
  const auto target = mpx::test::uniform_tensor<float>(Shape{4, 5, 2}, rng, -1.0, 1.0);
  // Each step its own timesteps: the replayed recording must read them, as the eager steps do.
  for (int s = 0; s < 6; ++s) {
    const std::vector<float> timesteps{float(s), float(3 * s + 1), 500.0f - float(s), 7.0f};
    eager_model.set_timesteps(timesteps);
    eager.step(x, target);
    replay_model.set_timesteps(timesteps);
    if (s == 0) {
      replayed.capture_step(x, target);
    } else {
      replayed.replay_step();
    }
  }
  CHECK(replayed.read_result().loss == eager.read_result().loss);
  std::vector<Tensor<float>> eager_weights;
  eager_model.for_each_parameter(
      [&](std::string_view, auto& p) { eager_weights.push_back(p.master().clone()); });
  const auto same_weights = [&](auto& model) {
    std::size_t index = 0;
    model.for_each_parameter([&](std::string_view name, auto& p) {
      INFO(name);
      const Tensor<float>& expected = eager_weights.at(index++);
      CHECK(std::memcmp(p.master().data(), expected.data(), expected.size_bytes()) == 0);
    });
    CHECK(index == eager_weights.size());
  };
  same_weights(replay_model);

  // A checkpoint restores the weights bit for bit; the description names the parts.
  const mpx::test::TempDir dir("mpx_time_conditioned");
  mpx::io::save_checkpoint(dir.path() / "diffusion.safetensors", eager);
  auto restored_model = make();
  auto restored_loss = L::mse_loss();
  mpx::optim::AdamW restored_optimizer(restored_model, {.lr = 0.01});
  mpx::Trainer restored(restored_model, restored_loss, restored_optimizer);
  mpx::io::load_checkpoint(dir.path() / "diffusion.safetensors", restored);
  same_weights(restored_model);
  const std::string json = mpx::io::model_json(eager_model);
  CHECK(json.find("\"kind\":\"TimeConditioned\"") != std::string::npos);
  CHECK(json.find("\"kind\":\"TimestepFeatures\",\"dim\":8") != std::string::npos);
  CHECK(json.find("\"kind\":\"AddTimeEmbedding\"") != std::string::npos);

  // Micro-batches would split x but not the timesteps: refused, saying so.
  eager_model.set_timesteps(std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f});
  CHECK_THROWS_WITH(eager.step(x, target, mpx::MicroBatches{2}), Catch::Contains("micro-batch"));

  // nn::for_each_layer reaches the projection inside the AddTimeEmbedding layer.
  std::int64_t linear_layers = 0;
  mpx::nn::for_each_layer(eager_model, [&](auto& layer) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(layer)>, mpx::nn::Linear<mpx::fp32>>)
      ++linear_layers;
  });
  CHECK(linear_layers == 4);  // the time network's, the body's two, the projection
}

TEST_CASE("draw_samples: the same samples whatever the batch; bad counts and outputs named",
          "[nn][time][ddpm]") {
  using L = mpx::nn::layers<mpx::bf16_mixed>;
  auto model = mpx::nn::TimeConditioned{
      mpx::nn::TimestepFeatures{.dim = 4}, mpx::nn::Sequential{L::linear(4, 6), L::silu()},
      mpx::nn::Sequential{L::linear(2, 5), L::add_time_embedding(6, 5), L::silu(), L::linear(5, 2)}};
  model.initialize(3);
  const mpx::experiment::DdpmSchedule schedule({.timesteps = 20});
  const mpx::experiment::SamplerOptions options{
      .sampler = mpx::experiment::Sampler::Ddim, .steps = 5, .seed = 6};
  const Tensor<float> all = mpx::experiment::draw_samples(model, schedule, options, 5, Shape{3, 2}, 5);
  const Tensor<float> in_twos = mpx::experiment::draw_samples(model, schedule, options, 5, Shape{3, 2}, 2);
  CHECK(all.shape() == Shape{5, 3, 2});
  CHECK(std::memcmp(all.data(), in_twos.data(), all.size_bytes()) == 0);
  CHECK_THROWS_WITH(mpx::experiment::draw_samples(model, schedule, options, 0, Shape{3, 2}),
                    Catch::Contains("count = 0"));
  // A model whose output is not its input's shape: named, not read past its end.
  auto narrowing =
      mpx::nn::TimeConditioned{mpx::nn::TimestepFeatures{.dim = 4}, mpx::nn::Sequential{L::linear(4, 6)},
                               mpx::nn::Sequential{L::linear(2, 5), L::add_time_embedding(6, 5)}};
  CHECK_THROWS_AS(mpx::experiment::draw_samples(narrowing, schedule, options, 2, Shape{3, 2}),
                  mpx::shape_error);
}

}  // namespace MPX_UNITY_ID
}  // namespace
