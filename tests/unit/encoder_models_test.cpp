// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The encoder example's models (mpx/experiment/encoder.hpp): the masked-LM and the classifier share
// the body's parameter names, copy_encoder_body copies the body and leaves the heads, and a few
// AdamW steps of masked-LM pretraining on a fixed batch lower its loss in each precision.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/experiment/encoder.hpp>
#include <mpx/mpx.hpp>

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

TEST_CASE("The masked-LM and the classifier share the encoder body, which copy_encoder_body copies",
          "[experiment][encoder]") {
  auto mlm = mpx::experiment::masked_lm<mpx::fp32>(shape);
  auto classifier = mpx::experiment::sequence_classifier<mpx::fp32>(shape);
  mlm.initialize(1);
  classifier.initialize(2);
  const auto mlm_names = names_of(mlm), classifier_names = names_of(classifier);
  std::vector<std::string> body_names;
  for (const auto& name : mlm_names) {
    if (name.rfind("layers.0.", 0) == 0) body_names.push_back(name);
  }
  REQUIRE(body_names.size() + 2 == mlm_names.size());  // the head: layers.2.weight, layers.2.bias
  CHECK(std::vector<std::string>(classifier_names.begin(),
                                 classifier_names.begin() + long(body_names.size())) == body_names);

  // The classifier's head before the copy, to check it is left alone.
  std::vector<float> head_before;
  classifier.for_each_parameter([&](std::string_view name, auto& parameter) {
    if (std::string(name).rfind("layers.0.", 0) != 0) {
      for (std::int64_t i = 0; i < parameter.master().numel(); ++i)
        head_before.push_back(parameter.master()[i]);
    }
  });
  const std::vector<std::string> copied = mpx::experiment::copy_encoder_body(mlm, classifier);
  CHECK(copied == body_names);
  std::vector<const mpx::Tensor<float>*> mlm_masters;
  mlm.for_each_parameter(
      [&](std::string_view, auto& parameter) { mlm_masters.push_back(&parameter.master()); });
  std::size_t index = 0, head_index = 0;
  classifier.for_each_parameter([&](std::string_view name, auto& parameter) {
    const bool body = std::string(name).rfind("layers.0.", 0) == 0;
    for (std::int64_t i = 0; i < parameter.master().numel(); ++i) {
      if (body) {
        REQUIRE(parameter.master()[i] == (*mlm_masters[index])[i]);
      } else {
        REQUIRE(parameter.master()[i] == head_before[head_index++]);
      }
    }
    ++index;
  });
  const auto three_blocks = [] { return mpx::experiment::encoder_body<mpx::fp32, mpx::Host, 3>(shape); };
  CHECK_THROWS_AS(three_blocks(), mpx::invalid_argument);
}

TEMPLATE_TEST_CASE("Masked-LM pretraining steps on a padded batch lower the loss", "[experiment][encoder]",
                   mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed) {
  using P = TestType;
  auto model = mpx::experiment::masked_lm<P>(shape);
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

}  // namespace MPX_UNITY_ID
}  // namespace
