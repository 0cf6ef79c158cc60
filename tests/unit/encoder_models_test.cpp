// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The encoder example's models (mpx/experiment/encoder.hpp): the masked-LM and the classifier share
// the body's parameter names, load_matching_weights loads a pretrained body into a classifier and
// leaves the heads, saying why, a post-LN body normalises where BERT's does, and a few AdamW steps of
// masked-LM pretraining on a fixed batch lower its loss in each precision, pre-LN and post-LN.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/experiment/encoder.hpp>
#include <mpx/mpx.hpp>

#include "../support/error_matchers.hpp"
#include "../support/temp_dir.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

const mpx::experiment::EncoderShape shape{
    .vocabulary = 40, .max_length = 8, .width = 16, .blocks = 2, .heads = 2, .classes = 3};

template <class Model>
std::vector<std::string> names_of(Model& model) {
  std::vector<std::string> names;
  model.for_each_parameter([&](std::string_view name, auto&) { names.emplace_back(name); });
  return names;
}

// Every master weight of `model`, by name.
template <class Model>
std::map<std::string, std::vector<float>> weights_of(Model& model) {
  std::map<std::string, std::vector<float>> weights;
  model.for_each_parameter([&](std::string_view name, auto& parameter) {
    const auto values = parameter.master().values();
    weights[std::string(name)] = std::vector<float>(values.begin(), values.end());
  });
  return weights;
}

TEST_CASE("A pretrained masked-LM's body loads into a classifier; the heads stay, each with its reason",
          "[experiment][encoder][io]") {
  mpx::test::TempDir dir("mpx-encoder-models");
  // vocabulary == width: the masked-LM's output layer and the classifier's pooler have the same shape
  // [16, 16], and only their descriptions (no activation vs GELU) tell them apart.
  auto same_width = shape;
  same_width.vocabulary = shape.width;
  auto mlm = mpx::experiment::masked_lm<mpx::fp32>(same_width);
  auto classifier = mpx::experiment::sequence_classifier<mpx::bf16_mixed>(same_width);
  mlm.initialize(1);
  classifier.initialize(2);
  const auto pretrained = weights_of(mlm), before = weights_of(classifier);
  mpx::io::save_weights(mlm, dir.path() / "mlm.safetensors");

  const mpx::io::WeightMatch match =
      mpx::io::load_matching_weights(classifier, dir.path() / "mlm.safetensors");
  INFO(match.summary());
  const auto after = weights_of(classifier);
  std::vector<std::string> body;
  for (const auto& [name, values] : pretrained) {
    if (name.starts_with("layers.0.")) body.push_back(name);
  }
  CHECK(body.size() == 3 + 2 * 12 + 2);  // three tables, 12 tensors a block, the final LayerNorm
  auto loaded = match.loaded;
  std::sort(loaded.begin(), loaded.end());
  CHECK(loaded == body);
  for (const auto& [name, values] : after) {
    INFO(name);
    if (name.starts_with("layers.0.")) {
      std::vector<float> expected = pretrained.at(name);
      // bf16_mixed keeps fp32 masters: the file's fp32 weights load exactly.
      CHECK(values == expected);
    } else {
      CHECK(values == before.at(name));
    }
  }
  REQUIRE(match.kept.size() == 4);
  CHECK_THAT(match.kept[0],
             Catch::Matchers::StartsWith("layers.2.weight: its layer is described otherwise") &&
                 Catch::Matchers::Contains("activation \"None\" in the file, \"GELU\" in the model"));
  CHECK_THAT(match.kept[2], Catch::Matchers::Equals("layers.3.weight: not in the file"));
  CHECK(match.unused.empty());  // the file's head has the names of the pooler, which kept them
  CHECK_THAT(match.summary(), Catch::Matchers::StartsWith("loaded 29 of 33 tensors") &&
                                  Catch::Matchers::Contains("layers.1 is a GatherTokens in the file, a "
                                                            "FirstToken in the model"));

  // A classifier of other sizes: the body's tensors of another shape stay, each named with both.
  auto wider = shape;
  wider.vocabulary = 50;
  auto other = mpx::experiment::sequence_classifier<mpx::fp32>(wider);
  const mpx::io::WeightMatch partly = mpx::io::load_matching_weights(other, dir.path() / "mlm.safetensors");
  CHECK_THAT(partly.kept[0],
             Catch::Matchers::Equals(
                 "layers.0.layers.0.layers.0.weight: [16, 16] in the file, [50, 16] in the model"));
  CHECK(partly.loaded.size() == 28);

  // Nothing fits: an error naming the file, and the model untouched.
  auto unrelated = mpx::nn::Sequential{mpx::nn::layers<mpx::fp32>::linear(3, 5)};
  unrelated.initialize(4);
  const auto unrelated_before = weights_of(unrelated);
  CHECK_THROWS_MATCHES(mpx::io::load_matching_weights(unrelated, dir.path() / "mlm.safetensors"),
                       mpx::io_error,
                       mpx::test::MessageContains({"mlm.safetensors", "no tensor of the file fits the model",
                                                   "nothing was loaded"}));
  CHECK(weights_of(unrelated) == unrelated_before);
  // Another tool's file of the right tensors loads whole; with a description that cannot be read,
  // nothing is taken for described alike.
  const std::vector<float> weight(15, 0.5f), bias(5, 0.25f);
  const std::vector<mpx::io::TensorToWrite> tensors{
      {"layers.0.weight", mpx::io::Dtype::F32, {5, 3}, std::as_bytes(std::span(weight))},
      {"layers.0.bias", mpx::io::Dtype::F32, {5}, std::as_bytes(std::span(bias))}};
  mpx::io::save_safetensors(dir.path() / "foreign.safetensors", tensors);
  CHECK(mpx::io::load_matching_weights(unrelated, dir.path() / "foreign.safetensors").loaded.size() == 2);
  CHECK(weights_of(unrelated).at("layers.0.bias") == bias);
  mpx::io::save_safetensors(dir.path() / "unreadable.safetensors", tensors, {{"model", "{not json"}});
  CHECK_THROWS_MATCHES(mpx::io::load_matching_weights(unrelated, dir.path() / "unreadable.safetensors"),
                       mpx::io_error,
                       mpx::test::MessageContains({"the file's model description cannot be read"}));
  CHECK_THROWS_AS(mpx::io::load_matching_weights(unrelated, dir.path() / "missing.safetensors"),
                  mpx::io_error);
  const auto three_blocks = [] { return mpx::experiment::encoder_body<mpx::fp32, mpx::Host, 3>(shape); };
  CHECK_THROWS_AS(three_blocks(), mpx::invalid_argument);
}

TEST_CASE("A post-LN encoder normalises after each residual sum, as BERT", "[experiment][encoder]") {
  using mpx::experiment::LayerNormPlacement;
  auto post = mpx::experiment::sequence_classifier<mpx::fp32, mpx::Host, 2, LayerNormPlacement::Post>(shape);
  auto pre = mpx::experiment::sequence_classifier<mpx::fp32>(shape);
  CHECK(names_of(post).size() == names_of(pre).size());    // the LayerNorm moves, none is added
  CHECK(names_of(post)[3] == "layers.0.layers.1.weight");  // the LayerNorm after the embeddings
  post.initialize(5);
  // Each token leaves the body through a LayerNorm of unit weight and zero bias: mean 0, variance 1.
  auto& body = post.body().layer<0>();
  mpx::Tensor<std::int32_t> ids(mpx::Shape{2, 4});
  for (std::int64_t i = 0; i < ids.numel(); ++i) ids[i] = std::int32_t(7 * i % 40);
  const std::vector<std::int32_t> lengths = {4, 2};
  post.set_lengths(lengths);
  const mpx::Tensor<float>& features = body.forward(ids);
  REQUIRE(features.shape() == mpx::Shape{2, 4, shape.width});
  for (std::int64_t token = 0; token < 8; ++token) {
    double mean = 0, square = 0;
    for (std::int64_t c = 0; c < shape.width; ++c) mean += features[token * shape.width + c];
    mean /= double(shape.width);
    for (std::int64_t c = 0; c < shape.width; ++c)
      square += std::pow(features[token * shape.width + c] - mean, 2);
    INFO("token " << token);
    CHECK(std::abs(mean) < 1e-5);
    CHECK(square / double(shape.width) == Approx(1.0).epsilon(1e-3));
  }
}

// 30 AdamW steps of masked-LM pretraining on one padded batch at least halve the loss.
template <mpx::PrecisionPolicy P, mpx::experiment::LayerNormPlacement Norm>
void check_pretraining_lowers_the_loss() {
  auto model = mpx::experiment::masked_lm<P, mpx::Host, 2, Norm>(shape);
  model.initialize(3);
  auto loss = mpx::nn::layers<P>::softmax_cross_entropy();
  mpx::optim::AdamW optimizer(model, {.lr = 3e-3});
  mpx::Trainer trainer(model, loss, optimizer);
  // Three sequences padded to 6, with [MASK] (id 4) at the chosen tokens.
  mpx::Tensor<std::int32_t> ids(mpx::Shape{3, 6});
  const std::int32_t values[] = {2, 10, 4, 12, 3, 0, 2, 4, 3, 0, 0, 0, 2, 20, 21, 4, 23, 3};
  for (std::int64_t i = 0; i < 18; ++i) ids[i] = values[i];
  const std::vector<std::int32_t> lengths = {5, 3, 6}, rows = {2, 7, 15};
  mpx::Tensor<std::int32_t> targets(mpx::Shape{3});
  targets[0] = 11;
  targets[1] = 17;
  targets[2] = 22;
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    model.set_lengths(lengths);
    model.select_tokens(rows);
    const mpx::StepResult result = trainer.step(ids, targets);
    REQUIRE(std::isfinite(result.loss));
    if (step == 0) first = result.loss;
    last = result.loss;
  }
  INFO(P::name << ": loss " << first << " -> " << last);
  CHECK(last < 0.5 * first);
}

TEMPLATE_TEST_CASE("Masked-LM pretraining steps on a padded batch lower the loss", "[experiment][encoder]",
                   mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed) {
  check_pretraining_lowers_the_loss<TestType, mpx::experiment::LayerNormPlacement::Pre>();
}

TEST_CASE("Masked-LM pretraining of a post-LN encoder lowers the loss", "[experiment][encoder]") {
  check_pretraining_lowers_the_loss<mpx::bf16_mixed, mpx::experiment::LayerNormPlacement::Post>();
}

}  // namespace MPX_UNITY_ID
}  // namespace
