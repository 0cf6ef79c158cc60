// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief A BERT-style encoder over padded token sequences (`experiment::encoder_body`), with the two
/// heads people train on it: masked-language-model pretraining (`experiment::masked_lm`) and
/// sentence classification from the [CLS] token (`experiment::sequence_classifier`), whose
/// parameters share the body's names so that `io::load_matching_weights` moves a pretrained body
/// into a classifier.

#include <cstdint>
#include <utility>

#include "mpx/error.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/padded_sequences.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::experiment {

/// @brief The encoder's sizes.
struct EncoderShape {
  std::int64_t vocabulary = 0;   ///< token ids, the special tokens included
  std::int64_t max_length = 64;  ///< positions the positional embedding holds (the longest sequence)
  std::int64_t width = 128;      ///< features per token (C)
  std::int64_t blocks = 2;       ///< encoder blocks
  std::int64_t heads = 4;        ///< attention heads (width / heads features each)
  std::int64_t classes = 0;      ///< the classifier's classes
  std::int64_t token_types = 2;  ///< rows of the token-type (segment) embedding, BERT's 2
};

/// @brief Where an encoder block normalises: before each sublayer, inside the residual branch
/// (`Pre`, GPT-2's and most recent encoders', which train stably without warm-up), or after each
/// residual sum (`Post`, the original Transformer's and BERT's).
enum class LayerNormPlacement {
  Pre,   ///< x + f(LN(x)) per sublayer; a LayerNorm after the last block
  Post,  ///< LN(x + f(x)) per sublayer; a LayerNorm after the embeddings
};

/// @brief One encoder block: self-attention over each sequence's real tokens
/// (`PaddedSelfAttention`), then an MLP with a 4x GELU hidden layer, each in a residual branch,
/// normalised as `Norm` says: pre-LN x + attention(LN(x)), then x + MLP(LN(x)) (the char-GPT's
/// block, bidirectional); post-LN LN(x + attention(x)), then LN(x + MLP(x)) (BERT's).
template <PrecisionPolicy P, class Device = Host, LayerNormPlacement Norm = LayerNormPlacement::Pre>
auto encoder_block(const EncoderShape& s) {
  using L = nn::layers<P, Device>;
  auto mlp = [&] {
    return nn::Sequential{L::linear(s.width, 4 * s.width, nn::gelu), L::linear(4 * s.width, s.width)};
  };
  if constexpr (Norm == LayerNormPlacement::Pre) {
    return nn::Sequential{
        nn::Residual{nn::Sequential{L::layer_norm(s.width), L::padded_self_attention(s.width, s.heads)}},
        nn::Residual{nn::Sequential{L::layer_norm(s.width), mlp()}}};
  } else {
    return nn::Sequential{nn::Residual{L::padded_self_attention(s.width, s.heads)}, L::layer_norm(s.width),
                          nn::Residual{mlp()}, L::layer_norm(s.width)};
  }
}

namespace detail {
template <PrecisionPolicy P, class Device, LayerNormPlacement Norm, std::size_t... Block>
auto encoder_body(const EncoderShape& s, std::index_sequence<Block...>) {
  using L = nn::layers<P, Device>;
  auto embeddings = [&] {
    return nn::Sequential{L::embedding(s.vocabulary, s.width, {.init_std = 0.02}),
                          L::positional_embedding(s.max_length, s.width),
                          L::token_type_embedding(s.token_types, s.width)};
  };
  if constexpr (Norm == LayerNormPlacement::Pre) {
    return nn::Sequential{embeddings(), (static_cast<void>(Block), encoder_block<P, Device, Norm>(s))...,
                          L::layer_norm(s.width)};
  } else {
    return nn::Sequential{embeddings(), L::layer_norm(s.width),
                          (static_cast<void>(Block), encoder_block<P, Device, Norm>(s))...};
  }
}
}  // namespace detail

/// @brief The encoder: token, learned positional and token-type embeddings (summed, as BERT's), `Blocks`
/// blocks normalised as `Norm` says, and the LayerNorm that placement needs (after the blocks for
/// pre-LN, after the embeddings for post-LN); ids [batch, T] to features [batch, T, width]. Its
/// `PaddedSelfAttention` and `TokenTypeEmbedding` layers need the `nn::PaddedSequences` model the
/// heads below put around it. Parameters "layers.0.layers.{0,1,2}.weight" (token, position and
/// type tables), then the blocks' and the LayerNorm's.
/// @tparam Blocks the number of blocks (`shape.blocks` must equal it).
/// @tparam Norm pre-LN (the default) or post-LN blocks.
template <PrecisionPolicy P, class Device = Host, std::size_t Blocks = 2,
          LayerNormPlacement Norm = LayerNormPlacement::Pre>
auto encoder_body(const EncoderShape& s) {
  if (s.blocks != static_cast<std::int64_t>(Blocks) || s.vocabulary <= 0) {
    throw invalid_argument(mpx::detail::concat("mpx::experiment::encoder_body: ", s.blocks,
                                               " blocks asked of a body built with ", Blocks, ", vocabulary ",
                                               s.vocabulary, " (must be positive)"));
  }
  return detail::encoder_body<P, Device, Norm>(s, std::make_index_sequence<Blocks>{});
}

/// @brief Masked-language-model pretraining: the encoder, the chosen (masked) tokens only
/// (`nn::GatherTokens`, BERT's `gather_indexes`), then a linear layer to the vocabulary: logits
/// [M, vocabulary] for the M tokens of `select_tokens(rows)`, against their original ids
/// (data::mask_tokens corrupts a batch, data::chosen_tokens lists its rows and targets). Parameters
/// "layers.0.<the body's>" and "layers.2.weight/bias".
template <PrecisionPolicy P, class Device = Host, std::size_t Blocks = 2,
          LayerNormPlacement Norm = LayerNormPlacement::Pre>
auto masked_lm(const EncoderShape& s) {
  using L = nn::layers<P, Device>;
  return nn::PaddedSequences{nn::Sequential{encoder_body<P, Device, Blocks, Norm>(s), L::gather_tokens(),
                                            L::linear(s.width, s.vocabulary)}};
}

/// @brief Sentence classification: the encoder, its [CLS] (first) token, a GELU pooler and the
/// classifier, logits [batch, classes]. Parameters "layers.0.<the body's>" (as `masked_lm`'s, so a
/// pretrained body transfers), then the pooler's and the classifier's.
template <PrecisionPolicy P, class Device = Host, std::size_t Blocks = 2,
          LayerNormPlacement Norm = LayerNormPlacement::Pre>
auto sequence_classifier(const EncoderShape& s) {
  using L = nn::layers<P, Device>;
  if (s.classes <= 0) {
    throw invalid_argument(mpx::detail::concat("mpx::experiment::sequence_classifier: classes = ", s.classes,
                                               " (must be positive)"));
  }
  return nn::PaddedSequences{nn::Sequential{encoder_body<P, Device, Blocks, Norm>(s), L::first_token(),
                                            L::linear(s.width, s.width, nn::gelu),
                                            L::linear(s.width, s.classes)}};
}

}  // namespace mpx::experiment
