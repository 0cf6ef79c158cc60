// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Evaluation mode saves nothing for backward: CausalSelfAttention frees Q, K, V, the scores, P and
// the heads' output when forward returns, Linear<GELU> skips its pre-activation, both keep no input
// pointer, so backward is refused with a message; the outputs are the training forward's, bit for
// bit. The byte counts come from the host allocator's accounting (memory_stats<Host>), which counts
// exactly the bytes each tensor asks for.

#include <cstdint>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include "mpx/error.hpp"
#include "mpx/experiment/char_gpt.hpp"
#include "mpx/nn/causal_self_attention.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/memory_stats.hpp"
#include "mpx/tensor/tensor.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace nn = mpx::nn;
using mpx::Shape;
using mpx::Tensor;

template <class T>
Tensor<T> ramp(const Shape& shape) {
  Tensor<T> x(shape);
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x[i] = static_cast<T>(0.25f * static_cast<float>((i * 7) % 13 - 6));
  return x;
}

template <class T>
bool same_bits(const Tensor<T>& a, const Tensor<T>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// Bytes a forward leaves allocated, and the most it held at once, for a layer that has not run yet.
struct ForwardMemory {
  std::int64_t kept = 0;
  std::int64_t peak = 0;
};

template <class Layer, class Input>
ForwardMemory first_forward(Layer& layer, const Input& x, Tensor<typename Layer::output_type>& output) {
  auto& stats = mpx::memory_stats<mpx::Host>();
  const mpx::PeakWindow window(stats);
  const auto& y = layer.forward(x);
  ForwardMemory memory{stats.live_bytes() - window.live_at_start(), window.peak() - window.live_at_start()};
  output = Tensor<typename Layer::output_type>(y.shape());
  std::memcpy(output.data(), y.data(), y.size_bytes());
  return memory;
}

}  // namespace

TEMPLATE_TEST_CASE("CausalSelfAttention in evaluation mode frees its intermediates and matches training",
                   "[nn][attention][mode]", mpx::fp32, mpx::bf16_mixed) {
  using P = TestType;
  using T = mpx::compute_t<P>;
  const std::int64_t batch = 2, sequence = 7, width = 24, heads = 3;
  const std::int64_t tokens = batch * sequence;
  const auto s = static_cast<std::int64_t>(sizeof(T));
  const Tensor<T> x = ramp<T>(Shape{batch, sequence, width});

  nn::CausalSelfAttention<P> trained(width, heads);
  nn::CausalSelfAttention<P> evaluated(width, heads);  // the same weights: both start from seed 0
  nn::set_training(evaluated, false);
  CHECK_FALSE(evaluated.qkv().training());
  CHECK_FALSE(evaluated.proj().training());
  Tensor<T> y_trained, y_evaluated;
  const ForwardMemory training = first_forward(trained, x, y_trained);
  const ForwardMemory evaluation = first_forward(evaluated, x, y_evaluated);
  CHECK(same_bits(y_trained, y_evaluated));

  // Kept by both: the qkv output (3C), the merged heads (C) and the output (C), in the compute type.
  const std::int64_t outputs = tokens * 5 * width * s;
  // Saved only in training: Q, K, V and the heads' output (4C, compute type), the fp32 scores and
  // P in the compute type (H T each).
  const std::int64_t intermediates = tokens * (4 * width * s + heads * sequence * (4 + s));
  CHECK(evaluation.kept == outputs);
  CHECK(training.kept == outputs + intermediates);
  // Evaluation's peak holds the intermediates once, while the merged heads are written (plus what
  // the CPU GEMM converts its 16-bit operands into, which training's peak holds too).
  CHECK(evaluation.peak >= tokens * (3 * width + width) * s + intermediates);
  CHECK(evaluation.peak <= training.peak);

  try {
    (void)evaluated.backward(y_evaluated);
    FAIL("backward after an evaluation-mode forward did not throw");
  } catch (const mpx::error& e) {
    const std::string message = e.what();
    CHECK(message.find("CausalSelfAttention") != std::string::npos);
    CHECK(message.find("evaluation-mode forward, which saves nothing for backward") != std::string::npos);
  }
  // Back in training mode, a forward saves again and backward runs.
  nn::set_training(evaluated, true);
  (void)evaluated.forward(x);
  CHECK(evaluated.backward(y_evaluated) != nullptr);
}

TEST_CASE("Linear<GELU> in evaluation mode keeps no pre-activation and matches training", "[nn][mode]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  using L = nn::layers<P>;
  const Tensor<T> x = ramp<T>(Shape{3, 5, 8});
  auto trained = L::linear(8, 12, nn::gelu);
  auto evaluated = L::linear(8, 12, nn::gelu);
  nn::set_training(evaluated, false);
  Tensor<T> y_trained, y_evaluated;
  const ForwardMemory training = first_forward(trained, x, y_trained);
  const ForwardMemory evaluation = first_forward(evaluated, x, y_evaluated);
  CHECK(same_bits(y_trained, y_evaluated));
  const std::int64_t output = 15 * 12 * static_cast<std::int64_t>(sizeof(T));
  CHECK(evaluation.kept == output);
  CHECK(training.kept == 2 * output);  // the output and GELU's pre-activation
  CHECK_THROWS_WITH(evaluated.backward(y_evaluated), Catch::Contains("evaluation-mode forward"));
  CHECK_THROWS_WITH(L::linear(8, 12).backward(y_evaluated),
                    Catch::Contains("backward called before forward"));
}

TEST_CASE("A char-GPT evaluates with less memory than it trains with and gives the same logits",
          "[nn][mode][char_gpt]") {
  using P = mpx::bf16_mixed;
  using T = mpx::compute_t<P>;
  const mpx::experiment::GptShape shape{.vocabulary = 11, .context = 8, .width = 16, .heads = 2};
  auto trained = mpx::experiment::char_gpt<P, mpx::Host, 2>(shape);
  auto evaluated = mpx::experiment::char_gpt<P, mpx::Host, 2>(shape);
  trained.initialize(3);
  evaluated.initialize(3);
  Tensor<std::int32_t> ids(Shape{2, 8});
  for (std::int64_t i = 0; i < ids.numel(); ++i) ids[i] = static_cast<std::int32_t>((i * 5) % 11);

  Tensor<T> logits_trained, logits_evaluated;
  const ForwardMemory training = first_forward(trained, ids, logits_trained);
  ForwardMemory evaluation;
  {
    const nn::EvaluationMode evaluating(evaluated);
    evaluation = first_forward(evaluated, ids, logits_evaluated);
  }
  CHECK(same_bits(logits_trained, logits_evaluated));
  // Per block: attention's intermediates and the MLP's GELU pre-activation (4C) are not kept.
  const std::int64_t tokens = 16, width = 16, heads = 2, sequence = 8;
  const auto s = static_cast<std::int64_t>(sizeof(T));
  const std::int64_t per_block =
      tokens * (4 * width * s + heads * sequence * (4 + s)) + tokens * 4 * width * s;
  CHECK(training.kept - evaluation.kept == 2 * per_block);
  // The intermediates are one layer's at a time: the whole evaluation peaks below what training keeps.
  CHECK(evaluation.peak < training.kept);
  UNSCOPED_INFO("training keeps " << training.kept << " B, peaks at " << training.peak
                                  << " B; evaluation keeps " << evaluation.kept << " B, peaks at "
                                  << evaluation.peak << " B");
}

}  // namespace MPX_UNITY_ID
}  // namespace
