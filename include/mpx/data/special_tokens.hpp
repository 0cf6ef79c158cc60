// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `SpecialTokens`: the ids of an encoder's [PAD], [UNK], [CLS], [SEP] and [MASK] tokens,
/// shared by the vocabulary, the padded batches and the masked-LM corruption.

#include <cstdint>

namespace mpx::data {

/// @brief Ids of the special tokens of an encoder's vocabulary; the defaults are `WordVocabulary`'s
/// fixed ids ([PAD] = 0, [UNK] = 1, [CLS] = 2, [SEP] = 3, [MASK] = 4).
struct SpecialTokens {
  std::int32_t pad = 0;   ///< [PAD]: fills a batch's rows past their length
  std::int32_t unk = 1;   ///< [UNK]: a word the vocabulary lacks
  std::int32_t cls = 2;   ///< [CLS]: first token of a sequence; its output feeds a classifier
  std::int32_t sep = 3;   ///< [SEP]: last token of a sequence (kept when a sequence is truncated)
  std::int32_t mask = 4;  ///< [MASK]: what the masked-LM corruption writes over a chosen token

  /// @brief Whether `id` is one of the five special ids.
  /// @param id a token id
  [[nodiscard]] constexpr bool contains(std::int32_t id) const noexcept {
    return id == pad || id == unk || id == cls || id == sep || id == mask;
  }
};

}  // namespace mpx::data
