// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Pure bf16 (bf16 weights, no fp32 master): why its updates must round stochastically, and that they
// do exactly as documented. The expected values are computed here from the definition (optimizer
// stream (1 << 63) | (update << 24) | parameter index, element index within the parameter), not by
// calling the optimizer's own helpers.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string_view>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::BFloat16;

constexpr std::int64_t inputs = 16;
constexpr std::int64_t batch = 64;
constexpr int pool = 16;  // batches, cycled

/// y = x . teacher: inputs are bf16 values (so every precision sees the same inputs) and the teacher
/// is reachable from the starting weights in every precision; it lies between bf16 grid points.
struct Regression {
  std::vector<mpx::Tensor<Eigen::bfloat16>> x;
  std::vector<mpx::Tensor<float>> y;
  std::vector<float> start;    // the initial weights: magnitudes in [1, 2), where a bf16 ulp is 2^-7
  std::vector<float> teacher;  // start + an offset of 0.25 to 0.5
};

Regression make_regression() {
  Regression r;
  std::mt19937 random(2026);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::int64_t i = 0; i < inputs; ++i) {
    const float sign = i % 2 == 0 ? 1.0f : -1.0f;
    r.start.push_back(sign * (1.0f + float(i) / 16.0f));  // exact in bf16
    r.teacher.push_back(r.start.back() - sign * (0.25f + 0.0157f * float(i)));
  }
  for (int b = 0; b < pool; ++b) {
    mpx::Tensor<Eigen::bfloat16> x(mpx::Shape{batch, inputs});
    mpx::Tensor<float> y(mpx::Shape{batch, 1});
    for (std::int64_t row = 0; row < batch; ++row) {
      double target = 0.0;
      for (std::int64_t i = 0; i < inputs; ++i) {
        x[row * inputs + i] = Eigen::bfloat16(normal(random));
        target += double(static_cast<float>(x[row * inputs + i])) * r.teacher[static_cast<std::size_t>(i)];
      }
      y[row] = static_cast<float>(target);
    }
    r.x.push_back(std::move(x));
    r.y.push_back(std::move(y));
  }
  return r;
}

template <class P>
auto make_regressor(const std::vector<float>& start) {
  mpx::nn::Sequential model{mpx::nn::Linear<P>(inputs, 1, {.bias = false})};
  model.for_each_parameter([&](std::string_view, auto& p) {
    using M = typename std::remove_cvref_t<decltype(p)>::master_element;
    for (std::int64_t i = 0; i < inputs; ++i)
      p.master()[i] = static_cast<M>(start[static_cast<std::size_t>(i)]);
    p.refresh_compute_copy();
  });
  return model;
}

template <class Model>
double mean_loss(Model& model, const Regression& r) {
  mpx::nn::MSELoss<typename Model::precision> loss;
  double sum = 0.0;
  for (int b = 0; b < pool; ++b) sum += loss.forward(model.forward(r.x[std::size_t(b)]), r.y[std::size_t(b)]);
  model.forget_inputs();
  return sum / pool;
}

struct Trained {
  double initial_loss = 0.0;
  double final_loss = 0.0;
};

/// Plain SGD with a small learning rate: each update moves a weight by about 2e-3 * (its error), less
/// than half a bf16 ulp (2^-8) wherever |weight| >= 1.
template <class P>
Trained train_regression(const Regression& r, int steps, std::uint64_t rounding_seed = 1) {
  auto model = make_regressor<P>(r.start);
  mpx::nn::MSELoss<P> loss;
  mpx::optim::SGD optimizer(model, {.lr = 1e-3, .rounding_seed = rounding_seed});
  mpx::Trainer trainer(model, loss, optimizer);
  Trained result;
  result.initial_loss = mean_loss(model, r);
  for (int step = 0; step < steps; ++step) {
    const auto b = static_cast<std::size_t>(step % pool);
    REQUIRE(trainer.step(r.x[b], r.y[b]).stepped);
  }
  result.final_loss = mean_loss(model, r);
  return result;
}

/// The master weights' bytes, to compare runs bit for bit.
template <class Model>
std::vector<unsigned char> master_bytes(Model& model) {
  std::vector<unsigned char> bytes;
  model.for_each_parameter([&](std::string_view, auto& p) {
    const auto* data = reinterpret_cast<const unsigned char*>(p.master().data());
    bytes.insert(bytes.end(), data, data + p.master().size_bytes());
  });
  return bytes;
}

/// The optimizer's rounding stream for update `update` (from 1) of parameter `index`, as documented.
std::uint64_t documented_stream(std::uint64_t update, std::uint64_t index) {
  return (std::uint64_t{1} << 63) | (update << 24) | index;
}

/// Each parameter's weights (as floats) and the gradients set into it, in visit order.
struct Snapshot {
  std::vector<std::vector<float>> weights;
  std::vector<std::vector<float>> gradients;
};

/// Sets every gradient of `model` to normal(0, sigma) draws and returns them with the weights.
template <class Model>
Snapshot set_random_gradients(Model& model, std::uint32_t seed, float sigma) {
  Snapshot snapshot;
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  model.for_each_parameter([&](std::string_view, auto& p) {
    std::vector<float> w, g;
    for (std::int64_t e = 0; e < p.master().numel(); ++e) {
      w.push_back(static_cast<float>(p.master()[e]));
      g.push_back(normal(random));
      p.grad()[e] = g.back();
    }
    snapshot.weights.push_back(std::move(w));
    snapshot.gradients.push_back(std::move(g));
  });
  return snapshot;
}

/// A bf16_pure / bf16_pure_nearest model with a LayerNorm, gradients set by hand, and one SGD step
/// checked element by element against the definition. Returns how many elements the stochastic
/// rounding rounded differently from nearest (so the check cannot pass vacuously).
template <class P>
std::int64_t check_one_sgd_step(std::uint64_t update) {
  mpx::nn::Sequential model{mpx::nn::Linear<P>(32, 24), mpx::nn::LayerNorm<P>(24), mpx::nn::Linear<P>(24, 8)};
  model.initialize(3);
  constexpr double lr = 0.01;
  constexpr std::uint64_t seed = 0x5EED;
  mpx::optim::SGD optimizer(model, {.lr = lr, .rounding_seed = seed});
  optimizer.set_steps(static_cast<std::int64_t>(update) - 1);

  // Gradients whose updates are mostly below half an ulp, so rounding decides everything.
  const Snapshot snapshot = set_random_gradients(model, 9, 0.3f);
  const auto& before = snapshot.weights;
  const auto& gradients = snapshot.gradients;
  optimizer.step();

  std::int64_t differs_from_nearest = 0;
  std::int64_t checked = 0;
  std::uint64_t index = 0;
  const float minus_lr = static_cast<float>(-lr);
  model.for_each_parameter([&](std::string_view, auto& p) {
    static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(p)>::master_element, Eigen::bfloat16>);
    for (std::int64_t e = 0; e < p.master().numel(); ++e) {
      const float exact = before[index][std::size_t(e)] + minus_lr * gradients[index][std::size_t(e)];
      const auto nearest = mpx::round_to<BFloat16>(exact);
      Eigen::bfloat16 expected = nearest;
      if constexpr (std::is_same_v<typename P::update_rounding, mpx::RoundStochastic>) {
        expected = mpx::round_stochastic<BFloat16>(
            exact, mpx::random_bits(seed, documented_stream(update, index), static_cast<std::uint64_t>(e)));
      }
      differs_from_nearest += mpx::bits_of(expected) != mpx::bits_of(nearest) ? 1 : 0;
      INFO("parameter " << index << ", element " << e << ": " << before[index][std::size_t(e)] << " + "
                        << minus_lr << " * " << gradients[index][std::size_t(e)]);
      REQUIRE(mpx::bits_of(p.master()[e]) == mpx::bits_of(expected));
      ++checked;
    }
    ++index;
  });
  CHECK(index == 6);  // weight, bias; gamma, beta; weight, bias
  CHECK(checked == 32 * 24 + 24 + 2 * 24 + 24 * 8 + 8);
  return differs_from_nearest;
}

}  // namespace

TEST_CASE("Pure bf16 with stochastic rounding learns a regression that round-to-nearest stalls on",
          "[optim][pure][stochastic]") {
  const Regression r = make_regression();
  constexpr int steps = 3000;
  const Trained nearest = train_regression<mpx::bf16_pure_nearest>(r, steps);
  const Trained stochastic = train_regression<mpx::bf16_pure>(r, steps);
  const Trained mixed = train_regression<mpx::bf16_mixed>(r, steps);
  INFO("MSE after " << steps << " SGD steps (initial " << nearest.initial_loss << "): bf16_pure_nearest "
                    << nearest.final_loss << ", bf16_pure " << stochastic.final_loss << ", bf16_mixed "
                    << mixed.final_loss);
  // All three start from the same bf16 weights.
  CHECK(stochastic.initial_loss == nearest.initial_loss);
  CHECK(mixed.initial_loss == nearest.initial_loss);
  // Nearest: every update is below half an ulp and rounds back to the old weight.
  CHECK(nearest.final_loss > 0.5 * nearest.initial_loss);
  // Stochastic: the same updates, unbiased in expectation, get there.
  CHECK(stochastic.final_loss < 0.01 * stochastic.initial_loss);
  CHECK(stochastic.final_loss < 0.2 * nearest.final_loss);
  // ... about as well as with an fp32 master copy (both end within bf16's resolution of the teacher).
  CHECK(mixed.final_loss < 0.01 * mixed.initial_loss);
  CHECK(stochastic.final_loss < 10.0 * mixed.final_loss + 1e-3 * mixed.initial_loss);
}

TEST_CASE("A bf16_pure SGD step rounds every element with random_bits(seed, optimizer stream, element)",
          "[optim][pure][stochastic]") {
  // Update numbers 1 and 3: the update count is part of the stream, so both must match.
  const std::int64_t first = check_one_sgd_step<mpx::bf16_pure>(1);
  const std::int64_t third = check_one_sgd_step<mpx::bf16_pure>(3);
  // Most updates are below half an ulp, so stochastic rounding moves a good share of the elements
  // off the nearest value: the check above compares with something other than nearest.
  CHECK(first > 100);
  CHECK(third > 100);
}

TEST_CASE("A bf16_pure_nearest SGD step rounds every element to nearest", "[optim][pure]") {
  CHECK(check_one_sgd_step<mpx::bf16_pure_nearest>(1) == 0);
}

TEST_CASE(
    "A bf16_pure AdamW step is the fp32 AdamW step rounded with random_bits(seed, optimizer stream, element)",
    "[optim][pure][stochastic]") {
  // The same AdamW step on an fp32 master (bf16_mixed) from the same bf16 weights and gradients gives
  // the exact fp32 update, whatever AdamW's formula; the pure model must hold its stochastic rounding.
  mpx::nn::Sequential pure{mpx::nn::Linear<mpx::bf16_pure>(32, 24), mpx::nn::LayerNorm<mpx::bf16_pure>(24),
                           mpx::nn::Linear<mpx::bf16_pure>(24, 8)};
  mpx::nn::Sequential mixed{mpx::nn::Linear<mpx::bf16_mixed>(32, 24), mpx::nn::LayerNorm<mpx::bf16_mixed>(24),
                            mpx::nn::Linear<mpx::bf16_mixed>(24, 8)};
  pure.initialize(3);
  const Snapshot snapshot = set_random_gradients(pure, 4, 1.0f);
  const auto& weights = snapshot.weights;
  const auto& gradients = snapshot.gradients;
  std::size_t index = 0;
  mixed.for_each_parameter([&](std::string_view, auto& p) {
    REQUIRE(p.master().numel() == static_cast<std::int64_t>(weights[index].size()));
    for (std::int64_t e = 0; e < p.master().numel(); ++e) {
      p.master()[e] = weights[index][std::size_t(e)];
      p.grad()[e] = gradients[index][std::size_t(e)];
    }
    p.refresh_compute_copy();
    ++index;
  });

  constexpr std::uint64_t seed = 77;
  const mpx::AdamWSettings settings{.lr = 1e-3, .weight_decay = 0.1, .rounding_seed = seed};
  mpx::optim::AdamW pure_optimizer(pure, settings);
  mpx::optim::AdamW mixed_optimizer(mixed, settings);
  pure_optimizer.set_steps(4);  // this is update 5
  mixed_optimizer.set_steps(4);
  pure_optimizer.step();
  mixed_optimizer.step();

  std::vector<std::vector<float>> exact;
  mixed.for_each_parameter([&](std::string_view, auto& p) {
    const auto values = p.master().values();
    exact.emplace_back(values.begin(), values.end());
  });
  index = 0;
  std::int64_t differs_from_nearest = 0;
  pure.for_each_parameter([&](std::string_view, auto& p) {
    for (std::int64_t e = 0; e < p.master().numel(); ++e) {
      const float value = exact[index][std::size_t(e)];
      const auto expected = mpx::round_stochastic<BFloat16>(
          value, mpx::random_bits(seed, documented_stream(5, index), std::uint64_t(e)));
      differs_from_nearest += mpx::bits_of(expected) != mpx::bits_of(mpx::round_to<BFloat16>(value)) ? 1 : 0;
      INFO("parameter " << index << ", element " << e << ": exact fp32 update " << value);
      REQUIRE(mpx::bits_of(p.master()[e]) == mpx::bits_of(expected));
    }
    ++index;
  });
  CHECK(index == 6);
  CHECK(differs_from_nearest > 100);
}

TEST_CASE("Pure bf16 training is reproducible for one rounding_seed and differs for another",
          "[optim][pure][stochastic]") {
  const Regression r = make_regression();
  const auto run = [&](std::uint64_t rounding_seed) {
    auto model = make_regressor<mpx::bf16_pure>(r.start);
    mpx::nn::MSELoss<mpx::bf16_pure> loss;
    mpx::optim::AdamW optimizer(model, {.lr = 1e-4, .rounding_seed = rounding_seed});
    mpx::Trainer trainer(model, loss, optimizer);
    for (int step = 0; step < 20; ++step)
      trainer.step(r.x[std::size_t(step % pool)], r.y[std::size_t(step % pool)]);
    return master_bytes(model);
  };
  auto untrained = make_regressor<mpx::bf16_pure>(r.start);
  const auto initial = master_bytes(untrained);
  const auto a = run(7);
  CHECK(a == run(7));
  CHECK(a != run(8));
  CHECK(a != initial);  // the weights did move
}

TEST_CASE("Under bf16_pure every parameter, LayerNorm's included, is bf16 with no compute copy",
          "[optim][pure]") {
  using Pure = mpx::nn::Parameter<mpx::bf16_pure>;
  static_assert(std::is_same_v<Pure::master_element, Eigen::bfloat16>);
  static_assert(std::is_same_v<Pure::compute_element, Eigen::bfloat16>);
  static_assert(std::is_same_v<Pure::grad_element, float>);
  static_assert(!Pure::has_compute_copy);

  mpx::nn::Sequential model{mpx::nn::Linear<mpx::bf16_pure>(4, 8), mpx::nn::LayerNorm<mpx::bf16_pure>(8)};
  std::int64_t visited = 0;
  model.for_each_parameter([&](std::string_view, auto& p) {
    using Param = std::remove_cvref_t<decltype(p)>;
    static_assert(std::is_same_v<typename Param::master_element, Eigen::bfloat16>);
    static_assert(std::is_same_v<typename Param::precision::update_rounding, mpx::RoundStochastic>);
    static_assert(!Param::has_compute_copy);
    CHECK(p.compute_copy() == nullptr);
    CHECK(static_cast<const void*>(&p.compute()) == static_cast<const void*>(&p.master()));
    const auto memory = p.memory();
    CHECK(memory.weights == 2 * p.shape().numel());
    CHECK(memory.gradient == 4 * p.shape().numel());
    ++visited;
  });
  CHECK(visited == 4);

  // Under bf16_pure_nearest the LayerNorm rounds to nearest too.
  mpx::nn::LayerNorm<mpx::bf16_pure_nearest> nearest(8);
  nearest.for_each_parameter([](std::string_view, auto& p) {
    using Param = std::remove_cvref_t<decltype(p)>;
    static_assert(std::is_same_v<typename Param::master_element, Eigen::bfloat16>);
    static_assert(std::is_same_v<typename Param::precision::update_rounding, mpx::RoundNearest>);
  });
}

}  // namespace MPX_UNITY_ID
}  // namespace
