// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Gradient accumulation is what data-parallel ranks compute: every micro-batch's backward is seeded
// with the whole loss scale, the fp32 sum of their gradients is divided by their count once, and
// micro-batches are numbered across ranks (rank-major), so dropout draws the same masks. Checked here
// without MPI: "ranks" are trainers whose GradientSync is a world of one that reports a rank and
// keeps a copy of the gradient sum it is handed, which is what a real sync would add up in rank order.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>  // with experiment::char_gpt

#include "../support/capturing_sync.hpp"
#include "../support/model_state.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

constexpr std::int64_t rows = 8;  // per micro-batch
constexpr std::int64_t features = 6;
constexpr std::int64_t micro_batches = 3;

template <class P>
auto make_model() {
  mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(features, 16),
                            mpx::nn::Dropout<P>(0.25f), mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(16, 16),
                            mpx::nn::Linear<mpx::fp32>(16, 3)};
  model.initialize(11);
  return model;
}

using CapturingSync = mpx::test::CapturingSync<mpx::Host>;

template <class Model>
std::vector<mpx::Tensor<float>> gradients_of(Model& model) {
  std::vector<mpx::Tensor<float>> out;
  model.for_each_parameter([&](std::string_view, auto& p) { out.push_back(p.grad().clone()); });
  return out;
}

/// One step of one "rank": a trainer with a CapturingSync.
struct RankStep {
  std::vector<mpx::Tensor<float>> sums;       // the gradient sum its sync was handed
  std::vector<mpx::Tensor<float>> gradients;  // after the step: divided and unscaled
  mpx::StepResult result;
};

template <class MakeModel, class MakeLoss, class Inputs, class Targets>
RankStep rank_step(MakeModel make_model, MakeLoss make_loss, int rank, const Inputs& x, const Targets& y) {
  auto model = make_model();
  auto loss = make_loss();
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  CapturingSync sync(rank);
  mpx::Trainer trainer(model, loss, optimizer, sync);
  RankStep out;
  out.result = trainer.step(x, y);
  out.sums = std::move(sync.sums);
  out.gradients = gradients_of(model);
  return out;
}

/// Trains one step of `micro_batches` micro-batches (rows of x and y) in one process, and one step
/// of each micro-batch alone as the rank of its number; requires the process's gradient sum to be
/// the ranks' sums added in rank order, bit for bit, and its final gradient that sum divided by the
/// count once, then unscaled.
template <class MakeModel, class MakeLoss, class Inputs, class Targets>
void require_ranks_equal_micro_batches(MakeModel make_model, MakeLoss make_loss, Inputs& x, Targets& y) {
  auto model = make_model();
  auto loss = make_loss();
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  CapturingSync alone(0);
  mpx::Trainer trainer(model, loss, optimizer, alone);
  using Batch = typename decltype(trainer)::Batch;
  const std::int64_t part_rows = x.shape()[0] / micro_batches;
  std::vector<Inputs> x_parts;
  std::vector<Targets> y_parts;
  for (std::int64_t m = 0; m < micro_batches; ++m) {
    x_parts.push_back(x.rows(m * part_rows, part_rows));
    y_parts.push_back(y.rows(m * part_rows, part_rows));
  }
  const Batch batches[] = {{x_parts[0], y_parts[0]}, {x_parts[1], y_parts[1]}, {x_parts[2], y_parts[2]}};
  const mpx::StepResult result = trainer.step(std::span<const Batch>(batches));
  REQUIRE(result.stepped);
  const std::vector<mpx::Tensor<float>> gradients = gradients_of(model);

  std::vector<RankStep> ranks;
  for (int r = 0; r < micro_batches; ++r)
    ranks.push_back(rank_step(make_model, make_loss, r, x_parts[static_cast<std::size_t>(r)],
                              y_parts[static_cast<std::size_t>(r)]));

  // A micro-batch seeded with scale / 3, a layer adding its terms into the gradient one by one, or
  // rank 1's dropout mask drawn for micro-batch 0 fails here.
  const float inverse = static_cast<float>(1.0 / static_cast<double>(result.loss_scale));
  REQUIRE(alone.sums.size() == gradients.size());
  for (std::size_t t = 0; t < gradients.size(); ++t) {
    for (std::int64_t i = 0; i < gradients[t].numel(); ++i) {
      const float sum = (ranks[0].sums[t][i] + ranks[1].sums[t][i]) + ranks[2].sums[t][i];
      CAPTURE(t, i, sum, alone.sums[t][i]);
      REQUIRE(alone.sums[t][i] == sum);
      // ... divided by their count once, then unscaled: two roundings in fp32.
      const float mean = sum / static_cast<float>(micro_batches);
      REQUIRE(gradients[t][i] == mean * inverse);
    }
  }
  CHECK(result.loss == (ranks[0].result.loss + ranks[1].result.loss + ranks[2].result.loss) / 3.0);
  for (const auto& rank : ranks) CHECK(rank.result.loss_scale == result.loss_scale);

  // The same step, split by the trainer itself: MicroBatches{3} over the whole batch.
  auto split_model = make_model();
  mpx::optim::SGD split_optimizer(split_model, {.lr = 0.1});
  mpx::Trainer split_trainer(split_model, loss, split_optimizer);
  const mpx::StepResult split = split_trainer.step(x, y, mpx::MicroBatches{micro_batches});
  CHECK(split.loss == result.loss);
  CHECK(split.grad_norm == result.grad_norm);
  CHECK(mpx::test::state_bytes(split_model) == mpx::test::state_bytes(model));
}

}  // namespace

TEMPLATE_TEST_CASE(
    "One process's micro-batches compute what ranks of one micro-batch each compute, bit for bit",
    "[trainer][accumulation]", mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed) {
  using P = TestType;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  mpx::Tensor<float> x(mpx::Shape{micro_batches * rows, features});  // fp32 inputs in every precision
  mpx::Tensor<std::int32_t> y(mpx::Shape{micro_batches * rows});
  for (float& v : x.values()) v = normal(rng);
  for (std::int64_t i = 0; i < y.numel(); ++i) y[i] = static_cast<std::int32_t>((i * 7) % 3);
  require_ranks_equal_micro_batches([] { return make_model<P>(); },
                                    [] { return mpx::nn::SoftmaxCrossEntropy<mpx::fp32>(); }, x, y);
}

TEMPLATE_TEST_CASE("A char-GPT's micro-batches compute what ranks compute: embeddings, LayerNorm, attention",
                   "[trainer][accumulation]", mpx::fp32, mpx::bf16_mixed) {
  // Every layer with parameters adds its micro-batch's finished gradient to the parameter's once:
  // the GEMMs (beta = 1 adds to the finished product), LayerNorm, Embedding, PositionalEmbedding.
  using P = TestType;
  const mpx::experiment::GptShape shape{
      .vocabulary = 11, .context = 8, .width = 16, .heads = 2, .dropout = 0.1};
  std::mt19937 rng(8);
  std::uniform_int_distribution<std::int32_t> token(0, 10);
  mpx::Tensor<std::int32_t> ids(mpx::Shape{micro_batches * 2, 8});
  mpx::Tensor<std::int32_t> next(mpx::Shape{micro_batches * 2, 8});
  for (std::int32_t& v : ids.values()) v = token(rng);
  for (std::int32_t& v : next.values()) v = token(rng);
  require_ranks_equal_micro_batches(
      [&] {
        auto model = mpx::experiment::char_gpt<P, mpx::Host, 1>(shape);
        model.initialize(4);
        return model;
      },
      [] { return mpx::nn::layers<P>::softmax_cross_entropy(); }, ids, next);
}

TEST_CASE("A rank's micro-batches are numbered after those of the ranks before it",
          "[trainer][accumulation]") {
  // The same micro-batch on rank 0 and on rank 1 draws different dropout masks (micro-batch 0 and 1),
  // so the test above would notice ranks that all numbered their micro-batches from 0.
  mpx::Tensor<float> x(mpx::Shape{rows, features});
  mpx::Tensor<std::int32_t> y(mpx::Shape{rows});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = 0.1f * static_cast<float>(i % 13) - 0.5f;
  const auto make = [] { return make_model<mpx::fp32>(); };
  const auto make_loss = [] { return mpx::nn::SoftmaxCrossEntropy<mpx::fp32>(); };
  const auto as_rank_0 = rank_step(make, make_loss, 0, x, y);
  const auto as_rank_1 = rank_step(make, make_loss, 1, x, y);
  bool differ = false;
  for (std::size_t t = 0; t < as_rank_0.sums.size(); ++t)
    for (std::int64_t i = 0; i < as_rank_0.sums[t].numel(); ++i)
      differ = differ || as_rank_0.sums[t][i] != as_rank_1.sums[t][i];
  CHECK(differ);
}

TEST_CASE("Trainer::step with MicroBatches refuses a count that does not divide the batch",
          "[trainer][accumulation]") {
  auto model = make_model<mpx::bf16_mixed>();
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::Trainer trainer(model, loss, optimizer);
  mpx::Tensor<float> x(mpx::Shape{10, features});
  mpx::Tensor<std::int32_t> y(mpx::Shape{10});
  const auto before = mpx::test::state_bytes(model);
  CHECK_THROWS_WITH(
      trainer.step(x, y, mpx::MicroBatches{3}),
      Catch::Matchers::Contains("cannot split inputs of shape [10, 6] and targets of shape [10] "
                                "into 3 micro-batches"));
  mpx::Tensor<std::int32_t> short_y(mpx::Shape{8});
  CHECK_THROWS_AS(trainer.step(x, short_y, mpx::MicroBatches{2}), mpx::invalid_argument);
  CHECK_THROWS_AS(trainer.step(x, y, mpx::MicroBatches{0}), mpx::invalid_argument);
  CHECK(mpx::test::state_bytes(model) == before);  // nothing ran
  CHECK(trainer.steps() == 0);
}

}  // namespace MPX_UNITY_ID
}  // namespace
