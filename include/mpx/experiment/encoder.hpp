// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief A BERT-style encoder over padded token sequences (`experiment::encoder_body`), with the two
/// heads people train on it: masked-language-model pretraining (`experiment::masked_lm`) and
/// sentence classification from the [CLS] token (`experiment::sequence_classifier`), and the
/// transfer of a pretrained body into a classifier (`experiment::copy_encoder_body`).

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/padded_sequences.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/transfer.hpp"

namespace mpx::experiment {

/// @brief The encoder's sizes.
struct EncoderShape {
  std::int64_t vocabulary = 0;   ///< token ids, the special tokens included
  std::int64_t max_length = 64;  ///< positions the positional embedding holds (the longest sequence)
  std::int64_t width = 128;      ///< features per token (C)
  std::int64_t blocks = 2;       ///< encoder blocks
  std::int64_t heads = 4;        ///< attention heads (width / heads features each)
  std::int64_t classes = 0;      ///< the classifier's classes
};

/// @brief One pre-LN encoder block: x + attention(LN(x)) over each sequence's real tokens, then
/// x + MLP(LN(x)) with a 4x GELU hidden layer (the char-GPT's block with `PaddedSelfAttention` in
/// place of the causal attention).
template <PrecisionPolicy P, class Device = Host>
auto encoder_block(const EncoderShape& s) {
  using L = nn::layers<P, Device>;
  return nn::Sequential{
      nn::Residual{nn::Sequential{L::layer_norm(s.width), L::padded_self_attention(s.width, s.heads)}},
      nn::Residual{nn::Sequential{L::layer_norm(s.width), L::linear(s.width, 4 * s.width, nn::gelu),
                                  L::linear(4 * s.width, s.width)}}};
}

namespace detail {
template <PrecisionPolicy P, class Device, std::size_t... Block>
auto encoder_body(const EncoderShape& s, std::index_sequence<Block...>) {
  using L = nn::layers<P, Device>;
  return nn::Sequential{L::embedding(s.vocabulary, s.width, {.init_std = 0.02}),
                        L::positional_embedding(s.max_length, s.width),
                        (static_cast<void>(Block), encoder_block<P, Device>(s))..., L::layer_norm(s.width)};
}
}  // namespace detail

/// @brief The encoder: token and learned positional embeddings, `Blocks` pre-LN blocks, a final
/// LayerNorm; ids [batch, T] to features [batch, T, width]. Its `PaddedSelfAttention` layers need
/// the `nn::PaddedSequences` model the heads below put around it.
/// @tparam Blocks the number of blocks (`shape.blocks` must equal it).
template <PrecisionPolicy P, class Device = Host, std::size_t Blocks = 2>
auto encoder_body(const EncoderShape& s) {
  if (s.blocks != static_cast<std::int64_t>(Blocks) || s.vocabulary <= 0) {
    throw invalid_argument(mpx::detail::concat("mpx::experiment::encoder_body: ", s.blocks,
                                               " blocks asked of a body built with ", Blocks, ", vocabulary ",
                                               s.vocabulary, " (must be positive)"));
  }
  return detail::encoder_body<P, Device>(s, std::make_index_sequence<Blocks>{});
}

/// @brief Masked-language-model pretraining: the encoder, the chosen (masked) tokens only
/// (`nn::GatherTokens`, BERT's `gather_indexes`), then a linear layer to the vocabulary: logits
/// [M, vocabulary] for the M tokens of `select_tokens(rows)`, against their original ids
/// (data::mask_tokens corrupts a batch, data::chosen_tokens lists its rows and targets). Parameters
/// "layers.0.<the body's>" and "layers.2.weight/bias".
template <PrecisionPolicy P, class Device = Host, std::size_t Blocks = 2>
auto masked_lm(const EncoderShape& s) {
  using L = nn::layers<P, Device>;
  return nn::PaddedSequences{nn::Sequential{encoder_body<P, Device, Blocks>(s), L::gather_tokens(),
                                            L::linear(s.width, s.vocabulary)}};
}

/// @brief Sentence classification: the encoder, its [CLS] (first) token, a GELU pooler and the
/// classifier, logits [batch, classes]. Parameters "layers.0.<the body's>" (as `masked_lm`'s, so a
/// pretrained body transfers), then the pooler's and the classifier's.
template <PrecisionPolicy P, class Device = Host, std::size_t Blocks = 2>
auto sequence_classifier(const EncoderShape& s) {
  using L = nn::layers<P, Device>;
  if (s.classes <= 0) {
    throw invalid_argument(mpx::detail::concat("mpx::experiment::sequence_classifier: classes = ", s.classes,
                                               " (must be positive)"));
  }
  return nn::PaddedSequences{nn::Sequential{encoder_body<P, Device, Blocks>(s), L::first_token(),
                                            L::linear(s.width, s.width, nn::gelu),
                                            L::linear(s.width, s.classes)}};
}

/// @brief Copies the encoder body of `from` (a `masked_lm` or `sequence_classifier`) into `to`'s,
/// parameter by parameter (master weights, then the compute copies refreshed), and returns the
/// names copied ("layers.0...."): the heads are left as they are.
/// @throws mpx::shape_error naming the parameter when the two bodies' shapes differ.
template <class From, class To>
std::vector<std::string> copy_encoder_body(From& from, To& to) {
  auto& source = from.body().template layer<0>();
  auto& target = to.body().template layer<0>();
  static_assert(
      std::is_same_v<std::remove_cvref_t<decltype(source)>, std::remove_cvref_t<decltype(target)>>,
      "mpx::experiment::copy_encoder_body: both models need the same body (precision, device, blocks)");
  std::vector<const void*> masters;
  source.for_each_parameter(
      [&](std::string_view, auto& parameter) { masters.push_back(&parameter.master()); });
  std::vector<std::string> copied;
  std::size_t index = 0;
  target.for_each_parameter([&](std::string_view name, auto& parameter) {
    using Master = std::remove_cvref_t<decltype(parameter.master())>;
    const auto& master = *static_cast<const Master*>(masters.at(index++));
    if (!(master.shape() == parameter.master().shape())) {
      throw shape_error(mpx::detail::concat("mpx::experiment::copy_encoder_body: layers.0.", name, " is ",
                                            master.shape(), " in the source and ", parameter.master().shape(),
                                            " in the target"));
    }
    mpx::copy(parameter.master(), master);
    parameter.refresh_compute_copy();
    copied.push_back(mpx::detail::concat("layers.0.", name));
  });
  return copied;
}

}  // namespace mpx::experiment
