// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// nn::BatchNorm2d: training and evaluation forward, the running statistics' update (PyTorch's
// momentum and unbiased variance) and backward against the definitions in fp64, in fp32, bf16 and
// fp16; fp64 gradients against finite differences; the running statistics saved and loaded with the
// weights; the errors' messages; synchronised statistics (a StatisticsReducer) against one layer
// over the whole batch.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"
#include "../support/gradient_check.hpp"
#include "../support/temp_dir.hpp"
#include "mpx/backend/cpu/backend.hpp"
#include "mpx/io/weights.hpp"
#include "mpx/nn/activation.hpp"
#include "mpx/nn/batch_norm.hpp"
#include "mpx/nn/batch_statistics.hpp"
#include "mpx/nn/conv2d.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/policy/precision.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Tensor;
using mpx::test::widen;

struct Statistics {
  std::vector<double> mean, var;  // biased variance
};

// Per channel of x [rows, C] (row-major, channels last), in fp64.
Statistics statistics(const std::vector<double>& x, std::int64_t channels) {
  const std::int64_t rows = static_cast<std::int64_t>(x.size()) / channels;
  Statistics s{std::vector<double>(static_cast<std::size_t>(channels), 0.0),
               std::vector<double>(static_cast<std::size_t>(channels), 0.0)};
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < channels; ++c)
      s.mean[static_cast<std::size_t>(c)] += x[static_cast<std::size_t>(r * channels + c)];
  for (auto& m : s.mean) m /= static_cast<double>(rows);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < channels; ++c) {
      const double d = x[static_cast<std::size_t>(r * channels + c)] - s.mean[static_cast<std::size_t>(c)];
      s.var[static_cast<std::size_t>(c)] += d * d;
    }
  for (auto& v : s.var) v /= static_cast<double>(rows);
  return s;
}

template <class T>
std::vector<double> widened(const Tensor<T>& t) {
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  for (std::int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = widen(t[i]);
  return v;
}

template <class P>
void check_against_definition() {
  using T = mpx::compute_t<P>;
  INFO(P::name);
  constexpr std::int64_t channels = 6;
  const Shape shape{4, 5, 3, channels};  // 60 values per channel
  std::mt19937_64 rng(21);
  mpx::nn::BatchNorm2d<P> layer(channels, {.epsilon = 1e-3f, .momentum = 0.25});
  mpx::test::randomize_parameters(layer, rng);
  auto x = mpx::test::uniform_tensor<T>(shape, rng, -1.0, 3.0);  // a mean far from zero
  const std::vector<double> xd = widened(x);
  const Statistics s = statistics(xd, channels);
  const std::vector<double> gamma = widened(layer.weight().master()), beta = widened(layer.bias().master());

  const Tensor<T>& y = layer.forward(x);
  const double out_ulp = mpx::epsilon_v<mpx::tag_of_t<T>>;
  const double acc = 64 * 0x1p-24;  // fp32 statistics and arithmetic: a few dozen roundings at most
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const auto c = static_cast<std::size_t>(i % channels);
    const double xhat = (xd[static_cast<std::size_t>(i)] - s.mean[c]) / std::sqrt(s.var[c] + 1e-3);
    const double expected = xhat * gamma[c] + beta[c];
    REQUIRE(std::abs(widen(y[i]) - expected) <=
            out_ulp / 2 * std::abs(expected) + acc * (std::abs(xhat * gamma[c]) + std::abs(beta[c]) + 1));
  }
  // Running statistics from 0 and 1 after one batch: 0.25 mean and 0.75 + 0.25 var * 60 / 59.
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto k = static_cast<std::size_t>(c);
    CHECK(layer.running_mean()[c] == Approx(0.25 * s.mean[k]).epsilon(1e-5).margin(1e-6));
    CHECK(layer.running_var()[c] == Approx(0.75 + 0.25 * s.var[k] * 60.0 / 59.0).epsilon(1e-5));
  }

  // Backward: dx, dgamma, dbeta against the closed form in fp64.
  auto dy = mpx::test::uniform_tensor<T>(shape, rng, -1.0, 1.0);
  const std::vector<double> g = widened(dy);
  layer.for_each_parameter([](const auto&, auto& p) { p.zero_grad(); });
  const Tensor<T>* dx = layer.backward(dy);
  REQUIRE(dx != nullptr);
  const std::int64_t rows = shape.rows();
  std::vector<double> sum_g(channels, 0.0), sum_gx(channels, 0.0), size_g(channels, 0.0),
      size_gx(channels, 0.0);
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const auto c = static_cast<std::size_t>(i % channels);
    const double xhat = (xd[static_cast<std::size_t>(i)] - s.mean[c]) / std::sqrt(s.var[c] + 1e-3);
    sum_g[c] += g[static_cast<std::size_t>(i)];
    sum_gx[c] += g[static_cast<std::size_t>(i)] * xhat;
    size_g[c] += std::abs(g[static_cast<std::size_t>(i)]);
    size_gx[c] += std::abs(g[static_cast<std::size_t>(i)] * xhat);
  }
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto k = static_cast<std::size_t>(c);
    CHECK(std::abs(layer.bias().grad()[c] - sum_g[k]) <= acc * size_g[k]);
    CHECK(std::abs(layer.weight().grad()[c] - sum_gx[k]) <= acc * size_gx[k]);
  }
  for (std::int64_t i = 0; i < dx->numel(); ++i) {
    const auto c = static_cast<std::size_t>(i % channels);
    const double rstd = 1.0 / std::sqrt(s.var[c] + 1e-3);
    const double xhat = (xd[static_cast<std::size_t>(i)] - s.mean[c]) * rstd;
    const double expected =
        gamma[c] * rstd * (g[static_cast<std::size_t>(i)] - sum_g[c] / rows - xhat * sum_gx[c] / rows);
    const double size = std::abs(gamma[c] * rstd) * (std::abs(g[static_cast<std::size_t>(i)]) +
                                                     size_g[c] / rows + std::abs(xhat) * size_gx[c] / rows);
    REQUIRE(std::abs(widen((*dx)[i]) - expected) <= out_ulp / 2 * std::abs(expected) + acc * size);
  }

  // Evaluation: the running statistics normalise, nothing is updated, backward refuses.
  const std::vector<double> running_mean = widened(layer.running_mean()),
                            running_var = widened(layer.running_var());
  mpx::nn::set_training(layer, false);
  const Tensor<T>& z = layer.forward(x);
  for (std::int64_t i = 0; i < z.numel(); ++i) {
    const auto c = static_cast<std::size_t>(i % channels);
    const double xhat =
        (xd[static_cast<std::size_t>(i)] - running_mean[c]) / std::sqrt(running_var[c] + 1e-3);
    const double expected = xhat * gamma[c] + beta[c];
    REQUIRE(std::abs(widen(z[i]) - expected) <=
            out_ulp / 2 * std::abs(expected) + acc * (std::abs(xhat * gamma[c]) + std::abs(beta[c]) + 1));
  }
  CHECK(widened(layer.running_mean()) == running_mean);
  CHECK_THROWS_AS(layer.backward(dy), mpx::error);
}

// The sums of `ranks` threads, each holding one layer: every thread's values become the rank-order
// sum of all threads' (a data-parallel job's reducer, in one process). Counts every call.
class ThreadReducer {
 public:
  explicit ThreadReducer(int ranks)
      : values_(static_cast<std::size_t>(ranks)), counts_(static_cast<std::size_t>(ranks)), barrier_(ranks) {}

  // The reducer rank `rank`'s layer holds.
  class Rank final : public mpx::nn::StatisticsReducer<float, mpx::Host> {
   public:
    Rank(ThreadReducer& all, int rank) : all_(&all), rank_(static_cast<std::size_t>(rank)) {}
    std::int64_t sum_over_ranks(Tensor<float>& values, std::int64_t count) override {
      ++calls;
      auto& all = *all_;
      all.values_[rank_].assign(values.data(), values.data() + values.numel());
      all.counts_[rank_] = count;
      all.barrier_.arrive_and_wait();  // everyone's values are in
      std::int64_t total = 0;
      for (std::int64_t i = 0; i < values.numel(); ++i) {
        float sum = 0.0f;
        for (std::size_t r = 0; r < all.values_.size(); ++r)
          sum = r == 0 ? all.values_[r][static_cast<std::size_t>(i)]
                       : sum + all.values_[r][static_cast<std::size_t>(i)];
        values[i] = sum;
      }
      for (const std::int64_t n : all.counts_) total += n;
      all.barrier_.arrive_and_wait();  // everyone has read them
      return total;
    }
    int calls = 0;

   private:
    ThreadReducer* all_;
    std::size_t rank_;
  };

 private:
  std::vector<std::vector<float>> values_;
  std::vector<std::int64_t> counts_;
  std::barrier<> barrier_;
};

// Rows [begin, end) of x [rows, ...] as a tensor of their own.
Tensor<float> rows_of(const Tensor<float>& x, std::int64_t begin, std::int64_t end) {
  const std::int64_t per_image = x.numel() / x.shape()[0];
  Tensor<float> part(x.shape().with_first(end - begin));
  for (std::int64_t i = 0; i < part.numel(); ++i) part[i] = x[begin * per_image + i];
  return part;
}

}  // namespace

TEST_CASE("BatchNorm2d matches its definition in training and evaluation", "[nn][batch_norm]") {
  check_against_definition<mpx::fp32>();
  check_against_definition<mpx::bf16_mixed>();
  check_against_definition<mpx::fp16_mixed>();
}

TEST_CASE("BatchNorm2d's fp64 gradients match finite differences", "[nn][batch_norm][gradient]") {
  std::mt19937_64 rng(23);
  mpx::nn::BatchNorm2d<mpx::fp64> layer(3);
  mpx::test::randomize_parameters(layer, rng);
  auto x = mpx::test::uniform_tensor(Shape{2, 3, 2, 3}, rng, -1.0, 2.0);
  const auto w = mpx::test::uniform_tensor(Shape{2, 3, 2, 3}, rng, -1.0, 1.0);
  mpx::test::check_layer_gradients(layer, x, w);
}

TEST_CASE("BatchNorm2d's running statistics are saved and loaded with the weights", "[nn][batch_norm][io]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  std::mt19937_64 rng(29);
  mpx::nn::Sequential model{mpx::nn::Conv2d<P>(2, 4, 3, {.padding = 1, .bias = false}),
                            mpx::nn::BatchNorm2d<P>(4)};
  auto x = mpx::test::uniform_tensor<T>(Shape{3, 5, 5, 2}, rng, -1.0, 1.0);
  model.forward(x);
  model.forward(x);
  std::vector<std::string> names;
  model.for_each_buffer([&](std::string_view name, auto&) { names.emplace_back(name); });
  CHECK(names == std::vector<std::string>{"layers.1.running_mean", "layers.1.running_var"});

  const mpx::test::TempDir dir("batch_norm_weights");
  const auto path = dir.path() / "model.safetensors";
  mpx::io::save_weights(model, path);
  mpx::nn::Sequential fresh{mpx::nn::Conv2d<P>(2, 4, 3, {.padding = 1, .bias = false}),
                            mpx::nn::BatchNorm2d<P>(4)};
  CHECK(fresh.layer<1>().running_var()[0] == 1.0f);
  mpx::io::load_weights(fresh, path);
  for (std::int64_t c = 0; c < 4; ++c) {
    CHECK(fresh.layer<1>().running_mean()[c] == model.layer<1>().running_mean()[c]);
    CHECK(fresh.layer<1>().running_var()[c] == model.layer<1>().running_var()[c]);
  }
}

TEST_CASE("BatchNorm2d rejects bad settings and inputs, naming the layer and the values",
          "[nn][batch_norm][errors]") {
  using mpx::test::MessageContains;
  using B = mpx::nn::BatchNorm2d<mpx::fp32>;
  CHECK_THROWS_MATCHES(B(0), mpx::invalid_argument,
                       MessageContains({"num_features must be positive, got 0"}));
  CHECK_THROWS_MATCHES(B(4, {.epsilon = 0.0f}), mpx::invalid_argument, MessageContains({"epsilon = 0"}));
  CHECK_THROWS_MATCHES(B(4, {.momentum = 1.5}), mpx::invalid_argument, MessageContains({"momentum = 1.5"}));
  B layer(4);
  layer.set_label("layers.1 (BatchNorm2d)");
  const Tensor<float> wrong(Shape{2, 3, 3, 5}), single(Shape{1, 1, 1, 4});
  CHECK_THROWS_MATCHES(
      layer.forward(wrong), mpx::shape_error,
      MessageContains({"layers.1 (BatchNorm2d): expected input of shape [batch, height, width, 4]",
                       "received [2, 3, 3, 5]"}));
  CHECK_THROWS_MATCHES(layer.forward(single), mpx::shape_error,
                       MessageContains({"more than one value per channel", "[1, 1, 1, 4]"}));
  CHECK_THROWS_MATCHES(layer.backward(Tensor<float>(Shape{2, 3, 3, 4})), mpx::error,
                       MessageContains({"layers.1 (BatchNorm2d): backward called before forward"}));
}

TEST_CASE("Synchronised BatchNorm2d over one rank computes what it computes alone, bit for bit",
          "[nn][batch_norm][sync]") {
  // The steps a synchronised layer takes (sums, squared deviations, normalisation; backward's sums,
  // then dx) are the unsynchronised layer's computation cut where the ranks' sums go.
  class OneRank final : public mpx::nn::StatisticsReducer<float, mpx::Host> {
   public:
    std::int64_t sum_over_ranks(Tensor<float>&, std::int64_t count) override {
      ++calls;
      return count;
    }
    int calls = 0;
  };
  std::mt19937_64 rng(31), same_rng(31);
  mpx::nn::BatchNorm2d<mpx::fp32> alone(5, {.momentum = 0.3}), synchronised(5, {.momentum = 0.3});
  mpx::test::randomize_parameters(alone, rng);
  mpx::test::randomize_parameters(synchronised, same_rng);
  auto reducer = std::make_shared<OneRank>();
  synchronised.set_statistics_reducer(reducer);
  CHECK(synchronised.synchronised());
  const auto x = mpx::test::uniform_tensor<float>(Shape{3, 7, 5, 5}, rng, -2.0, 5.0);
  const auto dy = mpx::test::uniform_tensor<float>(x.shape(), rng, -1.0, 1.0);
  for (auto* layer : {&alone, &synchronised})
    layer->for_each_parameter([](const auto&, auto& p) { p.zero_grad(); });
  CHECK(widened(synchronised.forward(x)) == widened(alone.forward(x)));
  CHECK(widened(synchronised.backward(dy)[0]) == widened(alone.backward(dy)[0]));
  CHECK(reducer->calls == 3);  // x's sums, the squared deviations, dy's sums
  CHECK(widened(synchronised.running_mean()) == widened(alone.running_mean()));
  CHECK(widened(synchronised.running_var()) == widened(alone.running_var()));
  CHECK(widened(synchronised.weight().grad()) == widened(alone.weight().grad()));
  CHECK(widened(synchronised.bias().grad()) == widened(alone.bias().grad()));
}

TEST_CASE("Synchronised BatchNorm2d on three ranks' batches matches one layer on the whole batch",
          "[nn][batch_norm][sync]") {
  constexpr int ranks = 3;
  constexpr std::int64_t channels = 6;
  std::mt19937_64 rng(37);
  const auto x = mpx::test::uniform_tensor<float>(Shape{ranks * 2, 4, 3, channels}, rng, 1.0, 4.0);
  const auto dy = mpx::test::uniform_tensor<float>(x.shape(), rng, -1.0, 1.0);
  mpx::nn::BatchNorm2d<mpx::fp32> whole(channels);
  whole.for_each_parameter([](const auto&, auto& p) { p.zero_grad(); });
  const std::vector<double> y = widened(whole.forward(x)), dx = widened(*whole.backward(dy));

  ThreadReducer all(ranks);
  std::vector<std::unique_ptr<mpx::nn::BatchNorm2d<mpx::fp32>>> layers;
  std::vector<std::shared_ptr<ThreadReducer::Rank>> reducers;
  for (int r = 0; r < ranks; ++r) {
    layers.push_back(std::make_unique<mpx::nn::BatchNorm2d<mpx::fp32>>(channels));
    reducers.push_back(std::make_shared<ThreadReducer::Rank>(all, r));
    layers.back()->set_statistics_reducer(reducers.back());
    layers.back()->for_each_parameter([](const auto&, auto& p) { p.zero_grad(); });
  }
  std::vector<std::vector<double>> ys(ranks), dxs(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      const auto xr = rows_of(x, 2 * r, 2 * r + 2), dyr = rows_of(dy, 2 * r, 2 * r + 2);
      ys[static_cast<std::size_t>(r)] = widened(layers[static_cast<std::size_t>(r)]->forward(xr));
      dxs[static_cast<std::size_t>(r)] = widened(*layers[static_cast<std::size_t>(r)]->backward(dyr));
    });
  }
  for (auto& t : threads) t.join();

  // The same values up to the order of fp32 sums: each rank's rows of the whole layer's y and dx; the
  // same running statistics on every rank; parameter gradients that add up to the whole batch's.
  const auto per_rank = static_cast<std::size_t>(x.numel() / ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    CHECK(reducers[r]->calls == 3);
    for (std::size_t i = 0; i < per_rank; ++i) {
      REQUIRE(ys[r][i] == Approx(y[r * per_rank + i]).margin(2e-6));
      REQUIRE(dxs[r][i] == Approx(dx[r * per_rank + i]).margin(2e-6));
    }
    CHECK(widened(layers[r]->running_mean()) == widened(layers[0]->running_mean()));
    CHECK(widened(layers[r]->running_var()) == widened(layers[0]->running_var()));
  }
  for (std::int64_t c = 0; c < channels; ++c) {
    CHECK(layers[0]->running_mean()[c] == Approx(whole.running_mean()[c]).epsilon(1e-6));
    CHECK(layers[0]->running_var()[c] == Approx(whole.running_var()[c]).epsilon(1e-6));
    double dgamma = 0.0, dbeta = 0.0;
    for (const auto& layer : layers) {
      dgamma += layer->weight().grad()[c];
      dbeta += layer->bias().grad()[c];
    }
    CHECK(dgamma == Approx(whole.weight().grad()[c]).margin(1e-5));
    CHECK(dbeta == Approx(whole.bias().grad()[c]).margin(1e-5));
  }
  // Each rank's own statistics (the default) would not normalise alike: the ranks' batches differ.
  mpx::nn::BatchNorm2d<mpx::fp32> own(channels);
  const auto first = rows_of(x, 0, 2);
  const std::vector<double> own_y = widened(own.forward(first));
  double largest = 0.0;
  for (std::size_t i = 0; i < per_rank; ++i) largest = std::max(largest, std::abs(own_y[i] - y[i]));
  CHECK(largest > 1e-2);
}

TEST_CASE("synchronise_batch_statistics reaches every BatchNorm2d inside a model's containers",
          "[nn][batch_norm][sync]") {
  using P = mpx::fp32;
  mpx::nn::Sequential model{
      mpx::nn::Conv2d<P>(2, 4, 3, {.padding = 1, .bias = false}), mpx::nn::BatchNorm2d<P>(4),
      mpx::nn::Residual{mpx::nn::Sequential{mpx::nn::Conv2d<P>(4, 4, 3, {.padding = 1, .bias = false}),
                                            mpx::nn::BatchNorm2d<P>(4), mpx::nn::ReLU<P>()}}};
  int layers = 0;
  mpx::nn::for_each_layer(model, [&](auto&) { ++layers; });
  CHECK(layers == 8);  // the Sequential and its 3 layers, the Residual's block and its 3 layers
  ThreadReducer one(1);
  auto reducer = std::make_shared<ThreadReducer::Rank>(one, 0);
  CHECK(mpx::nn::synchronise_batch_statistics(
            model, std::shared_ptr<mpx::nn::StatisticsReducer<float, mpx::Host>>(reducer)) == 2);
  CHECK(model.layer<1>().synchronised());
  CHECK(mpx::nn::synchronise_batch_statistics(
            model, std::shared_ptr<mpx::nn::StatisticsReducer<float, mpx::Host>>{}) == 2);
  CHECK_FALSE(model.layer<1>().synchronised());
}

}  // namespace MPX_UNITY_ID
}  // namespace
