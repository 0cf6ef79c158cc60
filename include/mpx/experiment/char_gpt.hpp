// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The character-level GPT of the examples, tests and benchmarks: a pre-LN decoder (GPT-2's
/// block) built from `nn::` layers, so that all three measure the same network, and sampling from it.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/tensor/transfer.hpp"

namespace mpx::experiment {

/// @brief The sizes of a `char_gpt`.
struct GptShape {
  std::int64_t vocabulary = 0;  ///< distinct tokens (characters)
  std::int64_t context = 128;   ///< longest sequence, the positional table's length
  std::int64_t width = 256;     ///< the residual stream's features
  std::int64_t heads = 4;       ///< attention heads (width / heads features each)
  double dropout = 0.0;         ///< dropout after the embeddings and each residual branch
};

/// @brief One decoder block: x + attention(LN(x)), then x + MLP(LN(x)) with a 4x GELU hidden layer.
// [block]
template <PrecisionPolicy P, class Device = Host>
auto gpt_block(const GptShape& s) {
  using L = nn::layers<P, Device>;
  return nn::Sequential{
      nn::Residual{nn::Sequential{L::layer_norm(s.width), L::causal_self_attention(s.width, s.heads),
                                  L::dropout(s.dropout)}},
      nn::Residual{nn::Sequential{L::layer_norm(s.width), L::linear(s.width, 4 * s.width, nn::gelu),
                                  L::linear(4 * s.width, s.width), L::dropout(s.dropout)}}};
}
// [block]

namespace detail {
template <PrecisionPolicy P, class Device, PrecisionPolicy Head, std::size_t... Block>
auto char_gpt(const GptShape& s, std::index_sequence<Block...>) {
  using L = nn::layers<P, Device>;
  return nn::Sequential{L::embedding(s.vocabulary, s.width, {.init_std = 0.02}),
                        L::positional_embedding(s.context, s.width),
                        L::dropout(s.dropout),
                        (static_cast<void>(Block), gpt_block<P, Device>(s))...,
                        L::layer_norm(s.width),
                        nn::layers<Head, Device>::linear(s.width, s.vocabulary)};
}
}  // namespace detail

/// @brief A GPT-2-style decoder over characters: token and learned positional embeddings, `Blocks`
/// pre-LN blocks, a final LayerNorm and a linear head to the vocabulary's logits; every layer in
/// precision `P` on `Device`, except the head, which runs in `Head` (by default also `P`: a block-scaled
/// precision's recipe may keep it in bf16). It maps int32 ids [batch, sequence] (sequence <= `s.context`) to
/// logits [batch, sequence, vocabulary]. Layer I of the outer `Sequential` is: 0 token embedding, 1
/// positions, 2 dropout, 3 .. 3 + Blocks - 1 the blocks, then the final LayerNorm and the head.
/// @code
/// auto model = mpx::experiment::char_gpt<mpx::bf16_mixed>({.vocabulary = 96, .context = 128});
/// @endcode
template <PrecisionPolicy P, class Device = Host, std::size_t Blocks = 4, PrecisionPolicy Head = P>
auto char_gpt(const GptShape& s) {
  if (s.vocabulary <= 0 || s.context <= 0 || s.width <= 0 || s.heads <= 0) {
    throw invalid_argument(
        mpx::detail::concat("mpx::experiment::char_gpt: sizes must be positive, got vocabulary ",
                            s.vocabulary, ", context ", s.context, ", width ", s.width, ", heads ", s.heads));
  }
  return detail::char_gpt<P, Device, Head>(s, std::make_index_sequence<Blocks>{});
}

/// @brief The type of `char_gpt<P, Device, Blocks, Head>(...)`.
template <PrecisionPolicy P, class Device = Host, std::size_t Blocks = 4, PrecisionPolicy Head = P>
using CharGpt = decltype(char_gpt<P, Device, Blocks, Head>(GptShape{1, 1, 1, 1}));

/// @brief Continues `prompt` by `length` tokens drawn from `model`'s softmax at `temperature` (> 0;
/// lower is more conservative), in evaluation mode; each step feeds the last `context` tokens. The
/// draws come from `std::mt19937_64(seed)`, so a seed gives the same text for the same weights.
/// @return the prompt followed by the drawn tokens.
template <class Model>
std::vector<std::int32_t> sample(Model& model, std::vector<std::int32_t> prompt, std::int64_t length,
                                 std::int64_t context, double temperature, std::uint64_t seed) {
  using Device = typename Model::device_type;
  if (prompt.empty() || !(temperature > 0.0) || context <= 0) {
    throw invalid_argument(
        mpx::detail::concat("mpx::experiment::sample: needs a prompt, temperature > 0 and "
                            "context > 0; got a prompt of ",
                            prompt.size(), " tokens, temperature ", temperature, ", context ", context));
  }
  const nn::EvaluationMode evaluating(model);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Tensor<std::int32_t, Device> ids;
  std::vector<double> weights;
  for (std::int64_t n = 0; n < length; ++n) {
    const std::int64_t window = std::min<std::int64_t>(context, static_cast<std::int64_t>(prompt.size()));
    Tensor<std::int32_t, Host> window_ids(Shape{1, window});
    std::copy(prompt.end() - window, prompt.end(), window_ids.data());
    const auto& x = to<Device>(window_ids, ids);
    const auto& logits = to<Host>(model.forward(x));  // a copy from a GPU, the tensor itself on the host
    // Softmax of the last position's logits over the temperature, in double.
    const std::int64_t vocabulary = logits.shape().cols();
    const auto* last = logits.data() + (window - 1) * vocabulary;
    double max_logit = -INFINITY;
    for (std::int64_t v = 0; v < vocabulary; ++v) max_logit = std::max(max_logit, double(float(last[v])));
    weights.assign(static_cast<std::size_t>(vocabulary), 0.0);
    double total = 0.0;
    for (std::int64_t v = 0; v < vocabulary; ++v) {
      weights[static_cast<std::size_t>(v)] = std::exp((double(float(last[v])) - max_logit) / temperature);
      total += weights[static_cast<std::size_t>(v)];
    }
    double u = uniform(rng) * total;
    std::int32_t next = static_cast<std::int32_t>(vocabulary - 1);
    for (std::int64_t v = 0; v < vocabulary; ++v) {
      u -= weights[static_cast<std::size_t>(v)];
      if (u < 0.0) {
        next = static_cast<std::int32_t>(v);
        break;
      }
    }
    prompt.push_back(next);
  }
  model.forget_inputs();  // the first layer saved a pointer into this function's buffer
  return prompt;
}

}  // namespace mpx::experiment
