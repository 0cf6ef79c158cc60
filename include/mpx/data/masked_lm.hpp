// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `mask_tokens`: BERT's masked-LM corruption of a padded batch (choose 15% of the real
/// tokens, replace 80% of those by [MASK], 10% by a random token), with targets for the loss.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "mpx/backend/cross_entropy_spec.hpp"
#include "mpx/data/batcher.hpp"
#include "mpx/data/special_tokens.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/random.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::data {

/// @brief Rates, vocabulary and seed of the masked-LM corruption (`mask_tokens`).
struct MaskedLmOptions {
  /// @brief Number of token ids, the size of the vocabulary (required): random replacements are
  /// drawn below it, and real tokens must lie below it.
  std::int32_t vocabulary_size = 0;
  /// @brief Share of each sequence's eligible tokens chosen for prediction, in (0, 1].
  double probability = 0.15;
  /// @brief Share of the chosen tokens replaced by [MASK].
  double mask_fraction = 0.8;
  /// @brief Share of the chosen tokens replaced by a random non-special token; the rest
  /// (1 - mask_fraction - random_fraction, 10% by default) keep their token.
  double random_fraction = 0.1;
  /// @brief The special tokens: never chosen, never drawn as a replacement; [MASK] is written.
  SpecialTokens tokens{};
  /// @brief Target of the positions not chosen: the loss's ignore index
  /// (`nn::SoftmaxCrossEntropy::Options::ignore_index`, -100 by default, as in PyTorch).
  std::int32_t ignore_index = default_ignore_index;
  /// @brief Seed of the draws; give the corruption a seed of its own.
  std::uint64_t seed = 0;

  /// @brief Throws `mpx::invalid_argument` naming the field unless `vocabulary_size` holds every
  /// special id and at least one other, 0 < `probability` <= 1, both fractions are in [0, 1] with a
  /// sum <= 1, and `ignore_index` is not a token id (outside [0, `vocabulary_size`)).
  void validate() const {
    const auto fail = [](auto&&... what) {
      throw invalid_argument(mpx::detail::concat("mpx::data::MaskedLmOptions: ", what...));
    };
    const std::int32_t ids[] = {tokens.pad, tokens.unk, tokens.cls, tokens.sep, tokens.mask};
    for (const std::int32_t id : ids) {
      if (id < 0 || id >= vocabulary_size) {
        fail("special token id ", id, " is outside [0, vocabulary_size = ", vocabulary_size,
             "); set vocabulary_size to the vocabulary's size");
      }
    }
    if (vocabulary_size <= special_count()) {
      fail("vocabulary_size = ", vocabulary_size, " leaves no token besides the ", special_count(),
           " special ones");
    }
    if (!(probability > 0.0 && probability <= 1.0)) {
      fail("probability = ", mpx::detail::exact_text(probability), " is invalid; expected a value in (0, 1]");
    }
    if (!(mask_fraction >= 0.0 && random_fraction >= 0.0 && mask_fraction + random_fraction <= 1.0)) {
      fail("mask_fraction = ", mpx::detail::exact_text(mask_fraction),
           ", random_fraction = ", mpx::detail::exact_text(random_fraction),
           " are invalid; expected both >= 0 with a sum <= 1");
    }
    if (ignore_index >= 0 && ignore_index < vocabulary_size) {
      fail("ignore_index = ", ignore_index, " is a token id (below vocabulary_size = ", vocabulary_size,
           "); expected a value outside [0, vocabulary_size), such as -100");
    }
  }

  /// @brief Number of distinct special token ids (5 unless some share an id).
  [[nodiscard]] std::int32_t special_count() const {
    std::vector<std::int32_t> ids{tokens.pad, tokens.unk, tokens.cls, tokens.sep, tokens.mask};
    std::sort(ids.begin(), ids.end());
    return static_cast<std::int32_t>(std::unique(ids.begin(), ids.end()) - ids.begin());
  }
};

/// @brief BERT's masked-LM corruption of a padded batch: writes the model's input to `inputs` and
/// the loss's targets to `targets` (both [B, T], like `ids`), returns the number of chosen positions.
///
/// In row b, the eligible positions are t < `lengths[b]` whose token is not special ([PAD], [UNK],
/// [CLS], [SEP], [MASK]). Of n eligible positions, k = max(1, round(n * probability)) are chosen
/// (round half away from zero, in double; k = 0 when n = 0), uniformly without replacement: the
/// count of BERT's `create_pretraining_data.py`, so a sequence with one eligible token or more always
/// has a target, and the rate is exact rather than binomial. Each chosen token is then, by one
/// uniform draw u: replaced by [MASK] if u < mask_fraction (80%); by a token drawn uniformly from the
/// `vocabulary_size` minus special ids if u < mask_fraction + random_fraction (10%; it may draw the
/// original); else kept (10%). `targets` holds the original id at the chosen positions and
/// `ignore_index` everywhere else (padding included); `inputs` equals `ids` elsewhere.
///
/// The draws are a pure function of (seed, step, row): row b takes the words `random_bits(seed,
/// step, b * 2^32 + i)`, i = 0, 1, ...: first those of the choice (a partial Fisher-Yates with the
/// `Batcher`'s Lemire draws), then, for each chosen position in the order chosen, one for its fate
/// (`uniform_from_bits`) and, if it gets a random token, that token's Lemire draw.
/// Pass the training step (or any counter) as `step`, so each step masks afresh and a resumed run
/// masks alike. `inputs` may be `ids` itself (corrupted in place); `targets` may not.
/// @param ids [B, T] token ids, each row's real tokens first (`PaddedBatch::ids`)
/// @param lengths [B] real tokens per row, each in [0, T] (`PaddedBatch::lengths`)
/// @param options vocabulary size, rates, special ids, ignore index and seed
/// @param step which draws to use: the same step gives the same corruption
/// @param inputs receives the corrupted ids [B, T]; reallocated only when its shape differs
/// @param targets receives the targets [B, T]; reallocated only when its shape differs
/// @throws mpx::invalid_argument for invalid options, a length outside [0, T] or a real token outside
/// [0, vocabulary_size) (naming its row and position); mpx::shape_error unless `ids` is [B, T] and
/// `lengths` [B].
inline std::int64_t mask_tokens(const Tensor<std::int32_t, Host>& ids,
                                const Tensor<std::int32_t, Host>& lengths, const MaskedLmOptions& options,
                                std::uint64_t step, Tensor<std::int32_t, Host>& inputs,
                                Tensor<std::int32_t, Host>& targets) {
  options.validate();
  if (ids.shape().rank() != 2 || lengths.shape().rank() != 1 || lengths.shape()[0] != ids.shape()[0]) {
    throw shape_error(mpx::detail::concat("mpx::data::mask_tokens: ids of shape ", ids.shape(),
                                          " and lengths of shape ", lengths.shape(),
                                          " do not fit; expected ids [B, T] and lengths [B]"));
  }
  if (&targets == &ids) {
    throw invalid_argument("mpx::data::mask_tokens: targets is the ids tensor; pass a tensor of its own");
  }
  const std::int64_t rows = ids.shape()[0];
  const std::int64_t columns = ids.shape()[1];
  for (std::int64_t b = 0; b < rows; ++b) {
    if (lengths[b] < 0 || lengths[b] > columns) {
      throw invalid_argument(mpx::detail::concat("mpx::data::mask_tokens: lengths[", b, "] = ", lengths[b],
                                                 " is outside [0, T = ", columns, "]"));
    }
    for (std::int64_t t = 0; t < lengths[b]; ++t) {
      const std::int32_t id = ids[b * columns + t];
      if (id < 0 || id >= options.vocabulary_size) {
        throw invalid_argument(
            mpx::detail::concat("mpx::data::mask_tokens: token ", id, " at row ", b, ", position ", t,
                                " is outside [0, vocabulary_size = ", options.vocabulary_size, ")"));
      }
    }
  }

  if (&inputs != &ids) {
    if (!(inputs.shape() == ids.shape())) inputs = Tensor<std::int32_t, Host>::uninitialized(ids.shape());
    std::copy_n(ids.data(), ids.numel(), inputs.data());
  }
  if (!(targets.shape() == ids.shape())) targets = Tensor<std::int32_t, Host>::uninitialized(ids.shape());
  targets.fill(options.ignore_index);

  std::vector<std::int32_t> specials{options.tokens.pad, options.tokens.unk, options.tokens.cls,
                                     options.tokens.sep, options.tokens.mask};
  std::sort(specials.begin(), specials.end());
  specials.erase(std::unique(specials.begin(), specials.end()), specials.end());
  const auto replacements =
      static_cast<std::uint32_t>(options.vocabulary_size - static_cast<std::int32_t>(specials.size()));

  std::int64_t chosen_total = 0;
  std::vector<std::int64_t> eligible;
  for (std::int64_t b = 0; b < rows; ++b) {
    const std::int64_t row = b * columns;
    eligible.clear();
    for (std::int64_t t = 0; t < lengths[b]; ++t) {
      if (!options.tokens.contains(ids[row + t])) eligible.push_back(t);
    }
    const auto n = static_cast<std::int64_t>(eligible.size());
    if (n == 0) continue;
    const std::int64_t chosen =
        std::min(n, std::max<std::int64_t>(1, std::llround(static_cast<double>(n) * options.probability)));
    std::uint64_t draw = static_cast<std::uint64_t>(b) << 32;
    for (std::int64_t i = 0; i < chosen; ++i) {
      const std::int64_t j =
          i + detail::uniform_below(static_cast<std::uint32_t>(n - i), options.seed, step, draw);
      std::swap(eligible[static_cast<std::size_t>(i)], eligible[static_cast<std::size_t>(j)]);
    }
    for (std::int64_t i = 0; i < chosen; ++i) {
      const std::int64_t at = row + eligible[static_cast<std::size_t>(i)];
      targets[at] = ids[at];
      const double u = uniform_from_bits(random_bits(options.seed, step, draw++));
      if (u < options.mask_fraction) {
        inputs[at] = options.tokens.mask;
      } else if (u < options.mask_fraction + options.random_fraction) {
        // The r-th non-special id: step over each special id at or below it, in increasing order.
        auto id = static_cast<std::int32_t>(detail::uniform_below(replacements, options.seed, step, draw));
        for (const std::int32_t special : specials) id += special <= id ? 1 : 0;
        inputs[at] = id;
      }
    }
    chosen_total += chosen;
  }
  return chosen_total;
}

/// @brief The tokens `mask_tokens` chose, as a masked-language model's head reads them: `rows`
/// receives their rows b T + t in `targets` [B, T] (row-major order), `chosen` their targets [M],
/// for `nn::PaddedSequences::select_tokens(rows)` and the loss on the head's [M, vocabulary] logits.
/// @param targets      `mask_tokens`' targets [B, T]: a token id where chosen, `ignore_index` elsewhere
/// @param ignore_index the value of the positions not chosen
/// @param rows         receives the chosen rows (cleared first)
/// @param chosen       receives their targets; reallocated when M changes
/// @throws mpx::shape_error unless `targets` is [B, T].
inline void chosen_tokens(const Tensor<std::int32_t, Host>& targets, std::int32_t ignore_index,
                          std::vector<std::int32_t>& rows, Tensor<std::int32_t, Host>& chosen) {
  if (targets.shape().rank() != 2) {
    throw shape_error(
        mpx::detail::concat("mpx::data::chosen_tokens: expected targets [B, T], received ", targets.shape()));
  }
  rows.clear();
  for (std::int64_t i = 0; i < targets.numel(); ++i) {
    if (targets[i] != ignore_index) rows.push_back(static_cast<std::int32_t>(i));
  }
  const Shape shape{static_cast<std::int64_t>(rows.size())};
  if (!(chosen.shape() == shape)) chosen = Tensor<std::int32_t, Host>::uninitialized(shape);
  for (std::size_t m = 0; m < rows.size(); ++m) chosen[static_cast<std::int64_t>(m)] = targets[rows[m]];
}

}  // namespace mpx::data
