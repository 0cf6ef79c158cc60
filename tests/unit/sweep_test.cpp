// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// experiment::sweep: one compile-time instantiation and one record per configuration, in list order;
// every precision of the Fashion-MNIST sweep trains a tiny LayerNorm MLP on separable data; memory
// per parameter is what the precision's storage adds up to (counted by hand below); the product
// overload keeps exactly the sound precision x scaler pairs; a diverging run is a record, not a crash.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/hana/tuple.hpp>
#include <catch2/catch.hpp>

#include <mpx/experiment/classification.hpp>
#include <mpx/experiment/models.hpp>
#include <mpx/experiment/sweep.hpp>
#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace ex = mpx::experiment;

constexpr std::int64_t features = 8;
constexpr std::int64_t hidden = 16;
constexpr std::int32_t classes = 4;

/// Four Gaussian blobs, well apart: linearly separable, learnt to a low loss in a few dozen steps.
mpx::data::Dataset separable_blobs(std::int64_t samples, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> centres(static_cast<std::size_t>(classes * features));
  for (float& c : centres) c = 2.0f * normal(random);
  mpx::Tensor<float> images(mpx::Shape{samples, features});
  std::vector<std::int32_t> labels(static_cast<std::size_t>(samples));
  for (std::int64_t row = 0; row < samples; ++row) {
    const auto label = static_cast<std::int32_t>(row % classes);
    labels[static_cast<std::size_t>(row)] = label;
    for (std::int64_t f = 0; f < features; ++f) {
      images[row * features + f] =
          centres[static_cast<std::size_t>(label * features + f)] + 0.5f * normal(random);
    }
  }
  return mpx::data::Dataset(std::move(images), std::move(labels), classes);
}

/// What each run of the sweep reports.
struct RunRecord {
  std::string name;
  double loss_before = 0.0;
  double loss_after = 0.0;
  double accuracy_after = 0.0;
  mpx::StepMemory memory;
  std::int64_t diverged_at_step = 0;
  std::int64_t steps = 0;
  bool weights_finite = true;
};

// Master weights only: an fp16 compute copy of a huge but finite master weight is legitimately inf.
template <class Model>
bool master_weights_finite(Model& model) {
  bool finite = true;
  model.for_each_parameter([&](std::string_view, auto& p) {
    for (const auto value : p.master().values()) finite = finite && std::isfinite(static_cast<double>(value));
  });
  return finite;
}

/// Trains mlp3_layer_norm<Config::layers> with AdamW for `epochs` epochs of 8 batches of 32.
template <class Config>
RunRecord train_tiny(const mpx::data::Dataset& data, double lr, int epochs) {
  using Layers = typename Config::layers;
  auto model = ex::mlp3_layer_norm<Layers>(features, hidden, hidden, classes);
  model.initialize(7);
  mpx::nn::SoftmaxCrossEntropy<typename Layers::head> loss;
  mpx::optim::AdamW optimizer(model, {.lr = lr, .weight_decay = 0.0, .rounding_seed = 11});
  mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer), typename Config::scaling> trainer(
      model, loss, optimizer);
  mpx::data::Batcher batcher(data, {.batch_size = 32, .seed = 3});

  RunRecord record;
  record.name = Config::name();
  record.loss_before = ex::evaluate(model, loss, data).loss;
  for (int epoch = 0; epoch < epochs && record.diverged_at_step == 0; ++epoch) {
    const auto summary = ex::train_epoch(trainer, batcher, static_cast<std::uint64_t>(epoch),
                                         [](std::int64_t, std::int64_t, const mpx::StepResult&) {});
    record.steps += summary.steps;
    record.diverged_at_step = summary.diverged_at_step;
  }
  const auto after = ex::evaluate(model, loss, data);
  record.loss_after = after.loss;
  record.accuracy_after = after.accuracy;
  record.memory = trainer.first_step_memory();
  record.weights_finite = master_weights_finite(model);
  return record;
}

using Fp16Unscaled =
    ex::Config<ex::LayerPrecisions<mpx::fp16_mixed>, mpx::AllowFp16Underflow<mpx::NoLossScaling>>;
using Bf16Fp32HeadNorm = ex::LayerPrecisions<mpx::bf16_mixed, mpx::fp32, mpx::fp32>;

// Parameters of mlp3_layer_norm(8, 16, 16, 4), by kind of layer.
constexpr std::int64_t body_parameters = (features * hidden + hidden) + (hidden * hidden + hidden);
constexpr std::int64_t norm_parameters = 2 * (2 * hidden);  // gamma and beta of two LayerNorms
constexpr std::int64_t head_parameters = hidden * classes + classes;
constexpr std::int64_t all_parameters = body_parameters + norm_parameters + head_parameters;

}  // namespace

TEST_CASE("sweep trains a tiny model under every precision and returns one record per config in order",
          "[experiment][sweep]") {
  const auto data = separable_blobs(256, 5);
  const auto records =
      ex::sweep(boost::hana::tuple_t<mpx::fp32, mpx::tf32, mpx::fp16_mixed, Fp16Unscaled, mpx::bf16_mixed,
                                     Bf16Fp32HeadNorm, mpx::bf16_pure_nearest, mpx::bf16_pure, mpx::fp64>,
                [&](auto config) { return train_tiny<decltype(config)>(data, 1e-2, 4); });
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(records)>, std::vector<RunRecord>>);

  const std::vector<std::string> expected_names{"fp32",
                                                "tf32",
                                                "fp16_mixed",
                                                "fp16_mixed/scaler:none_fp16_opt_in",
                                                "bf16_mixed",
                                                "bf16_mixed/head:fp32/norm:fp32",
                                                "bf16_pure_nearest",
                                                "bf16_pure",
                                                "fp64"};
  REQUIRE(records.size() == expected_names.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const RunRecord& run = records[i];
    INFO(run.name << ": loss " << run.loss_before << " -> " << run.loss_after << ", accuracy "
                  << run.accuracy_after << ", " << run.memory.bytes_per_parameter() << " bytes/parameter");
    CHECK(run.name == expected_names[i]);
    CHECK(run.steps == 4 * 8);
    CHECK(run.diverged_at_step == 0);
    CHECK(run.weights_finite);
    CHECK(run.memory.parameter_count == all_parameters);
    // Learnt, not just moved: chance-level loss is ln 4 = 1.39; every precision gets far below it.
    CHECK(run.loss_after < 0.5 * run.loss_before);
    CHECK(run.accuracy_after > 0.9);
  }

  // Bytes per parameter: weights (+ compute copy) + fp32 gradient + AdamW's two fp32 moments.
  const auto bytes = [&](const std::string& name) {
    for (const RunRecord& run : records) {
      if (run.name == name) return run.memory.bytes_per_parameter();
    }
    FAIL("no record named " << name);
    return 0.0;
  };
  // Mixed precisions keep an fp32 master and a 16-bit copy of matmul weights (4 + 2 + 4 + 8 = 18),
  // but LayerNorm reads gamma and beta in the master type, so they have no copy (4 + 4 + 8 = 16).
  const auto mean_bytes = [](std::int64_t body, std::int64_t norm, std::int64_t head) {
    return double(body * body_parameters + norm * norm_parameters + head * head_parameters) /
           double(all_parameters);
  };
  CHECK(bytes("fp32") == 4 + 4 + 8);
  CHECK(bytes("tf32") == 4 + 4 + 8);  // TF32 is a matmul mode: weights stay fp32, no copy
  CHECK(bytes("fp16_mixed") == mean_bytes(18, 16, 18));
  CHECK(bytes("fp16_mixed/scaler:none_fp16_opt_in") == mean_bytes(18, 16, 18));
  CHECK(bytes("bf16_mixed") == mean_bytes(18, 16, 18));  // (484 * 18 + 64 * 16) / 548 = 17.77
  CHECK(bytes("bf16_pure") == 2 + 4 + 8);                // bf16 weights only, LayerNorms' too
  CHECK(bytes("bf16_pure_nearest") == 2 + 4 + 8);
  CHECK(bytes("fp64") == 8 + 8 + 16);  // everything in double
  // The override: the body's matmuls are bf16 mixed (18 bytes), classifier and LayerNorms fp32 (16).
  CHECK(bytes("bf16_mixed/head:fp32/norm:fp32") == mean_bytes(18, 16, 16));
  // ... and pure bf16 LayerNorms hold bf16 gamma and beta too: no parameter anywhere has an fp32 copy.
  const auto& pure = records[7].memory;
  CHECK(pure.weights == 2 * all_parameters);
  CHECK(pure.gradients == 4 * all_parameters);
  CHECK(pure.optimizer_state == 8 * all_parameters);
}

TEST_CASE("sweep over precisions x scalers keeps exactly the sound pairs, precisions outermost",
          "[experiment][sweep]") {
  std::vector<std::string> names;
  std::vector<std::string> scalers;
  const auto records = ex::sweep(
      boost::hana::tuple_t<mpx::fp16_mixed, mpx::bf16_mixed>,
      boost::hana::tuple_t<mpx::DynamicLossScaling, mpx::NoLossScaling,
                           mpx::AllowFp16Underflow<mpx::NoLossScaling>>,
      [&](auto config) {
        using Config = decltype(config);
        static_assert(
            std::is_same_v<typename Config::layers, ex::LayerPrecisions<typename Config::precision>>);
        scalers.emplace_back(Config::scaling::name);
        names.push_back(Config::name());
        return Config::name();
      });
  // fp16 x NoLossScaling is unsound (fp16 gradients underflow) and left out; the opt-in is kept.
  const std::vector<std::string> expected{
      "fp16_mixed",                          // DynamicLossScaling: fp16's default, so not named
      "fp16_mixed/scaler:none_fp16_opt_in",  // the explicit opt-in
      "bf16_mixed/scaler:dynamic",           // bf16's default is none
      "bf16_mixed",                          // NoLossScaling
      "bf16_mixed/scaler:none_fp16_opt_in",
  };
  CHECK(records == expected);
  CHECK(names == expected);
  CHECK(scalers ==
        std::vector<std::string>{"dynamic", "none_fp16_opt_in", "dynamic", "none", "none_fp16_opt_in"});
}

TEST_CASE("Config names: the plan, then the scaler only when it is not the plan's default",
          "[experiment][sweep]") {
  CHECK(ex::Config<ex::LayerPrecisions<mpx::fp32>>::name() == "fp32");
  CHECK(ex::Config<ex::LayerPrecisions<mpx::fp16_mixed>>::name() == "fp16_mixed");
  CHECK(ex::Config<ex::LayerPrecisions<mpx::fp16_mixed>, mpx::StaticLossScaling>::name() ==
        "fp16_mixed/scaler:static");
  CHECK(ex::LayerPrecisions<mpx::bf16_pure, mpx::fp32>::name() == "bf16_pure/head:fp32");
  CHECK(ex::LayerPrecisions<mpx::bf16_pure, mpx::bf16_pure, mpx::fp32>::name() == "bf16_pure/norm:fp32");
  // A plan with an fp16 layer anywhere needs loss scaling by default.
  static_assert(std::is_same_v<ex::Config<ex::LayerPrecisions<mpx::bf16_mixed, mpx::fp16_mixed>>::scaling,
                               mpx::DynamicLossScaling>);
  static_assert(
      std::is_same_v<ex::Config<ex::LayerPrecisions<mpx::bf16_mixed, mpx::fp32, mpx::fp16_mixed>>::scaling,
                     mpx::DynamicLossScaling>);
  static_assert(std::is_same_v<ex::Config<Bf16Fp32HeadNorm>::scaling, mpx::NoLossScaling>);
  static_assert(std::is_same_v<ex::Config<Bf16Fp32HeadNorm>::precision, mpx::bf16_mixed>);
}

TEST_CASE("A diverging run is recorded with the step whose loss was not finite, without throwing",
          "[experiment][sweep]") {
  // AdamW moves every weight by about lr per step: with lr = 1e30 the first update leaves finite
  // weights of ~1e30, whose activations overflow the LayerNorms' variance, so a later loss is NaN.
  // That step's gradients are not finite and are skipped, so the master weights stay finite.
  const auto data = separable_blobs(256, 5);
  std::vector<RunRecord> records;
  REQUIRE_NOTHROW(records =
                      ex::sweep(boost::hana::tuple_t<mpx::fp32, mpx::fp16_mixed, mpx::bf16_pure>,
                                [&](auto config) { return train_tiny<decltype(config)>(data, 1e30, 4); }));
  REQUIRE(records.size() == 3);
  for (const RunRecord& run : records) {
    INFO(run.name << ": diverged at step " << run.diverged_at_step << " after " << run.steps
                  << " steps, loss " << run.loss_before << " -> " << run.loss_after);
    CHECK(run.diverged_at_step > 0);
    // The epoch stopped at the diverging step: nothing ran after it.
    CHECK(run.steps == run.diverged_at_step);
    CHECK(run.weights_finite);
  }
}

}  // namespace MPX_UNITY_ID
}  // namespace
