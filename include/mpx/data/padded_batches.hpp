// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `PaddedBatches`: variable-length token sequences dealt in shuffled batches padded to each
/// batch's longest sequence, optionally bucketed by length, for an encoder.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include "mpx/data/batcher.hpp"
#include "mpx/data/special_tokens.hpp"
#include "mpx/error.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::data {

/// @brief Batch size, truncation, shuffling and bucketing of `PaddedBatches`.
struct PaddedBatchOptions {
  /// @brief Sequences per batch.
  std::int64_t batch_size = 32;
  /// @brief Tokens a sequence keeps at most (see `PaddedBatches` for which); at least 2.
  std::int64_t max_length = 128;
  /// @brief Seed of the shuffles; the same seed gives the same batches.
  std::uint64_t seed = 0;
  bool shuffle = true;  ///< false: sequences in input order (bucketing still sorts within chunks)
  /// @brief Sort sequences by length within chunks of `bucket_batches` batches, so that a batch holds
  /// sequences of similar lengths and little padding (then the batches are shuffled).
  bool bucket_by_length = false;
  /// @brief Batches per bucketing chunk: larger chunks pad less and mix less.
  std::int64_t bucket_batches = 50;
  /// @brief What happens to a final batch smaller than `batch_size`.
  LastBatch last_batch = LastBatch::Keep;
  /// @brief [PAD], written past each sequence's end, and [SEP], kept by truncation.
  SpecialTokens tokens{};

  /// @brief Throws `mpx::invalid_argument` naming the field unless 1 <= `batch_size` <= 2^32,
  /// `max_length` >= 2 and `bucket_batches` >= 1.
  void validate() const {
    if (batch_size < 1 || batch_size > (std::int64_t{1} << 32)) {
      throw invalid_argument(mpx::detail::concat("mpx::data::PaddedBatchOptions: batch_size = ", batch_size,
                                                 " is invalid; expected an integer in [1, 2^32]"));
    }
    if (max_length < 2 || max_length > std::numeric_limits<std::int32_t>::max()) {
      throw invalid_argument(
          mpx::detail::concat("mpx::data::PaddedBatchOptions: max_length = ", max_length,
                              " is invalid; expected 2 to 2^31 - 1 (room for [CLS] and [SEP])"));
    }
    if (bucket_batches < 1 || bucket_batches > (std::int64_t{1} << 32) / batch_size) {
      throw invalid_argument(
          mpx::detail::concat("mpx::data::PaddedBatchOptions: bucket_batches = ", bucket_batches,
                              " is invalid; expected >= 1 and bucket_batches * batch_size <= 2^32"));
    }
  }
};

/// @brief One batch of `PaddedBatches`: rows of token ids padded with [PAD], their lengths and the
/// sequences they came from.
struct PaddedBatch {
  /// @brief [rows, T] token ids, row-major; row r holds `lengths[r]` tokens, then [PAD] up to T, the
  /// batch's longest (truncated) sequence. The input of an `nn::Embedding`.
  Tensor<std::int32_t, Host> ids;
  /// @brief [rows] real tokens per row, in [1, T]: the attention's key counts (a key-padding mask).
  Tensor<std::int32_t, Host> lengths;
  /// @brief [rows] index of each row's sequence in the input, to gather its label.
  std::vector<std::int64_t> indices;
};

/// @brief Deals variable-length token sequences in batches padded to their longest member, in an
/// order that depends only on (seed, epoch).
///
/// Truncation: a sequence longer than `max_length` keeps its first `max_length` tokens, except that
/// when its last token is [SEP] it keeps its first `max_length - 1` tokens and that [SEP] (so
/// `[CLS] w1 ... wn [SEP]` stays framed). Shorter sequences are kept whole; an empty one is an error.
///
/// The order of epoch e:
/// 1. With `shuffle`, a Fisher-Yates shuffle of the sequence indices, the `Batcher`'s (Lemire draws
///    from the words `random_bits(seed, e, k)`, k = 0, 1, ...); without, input order.
/// 2. With `bucket_by_length`, the order is cut into chunks of `bucket_batches * batch_size`
///    sequences and each chunk is sorted by truncated length, stably (ties keep step 1's order).
/// 3. The order is cut into batches of `batch_size`; the last one is smaller (`LastBatch::Keep`) or
///    dropped (`LastBatch::Drop`).
/// 4. With `shuffle` and `bucket_by_length`, the batches are shuffled, Fisher-Yates again, drawing on
///    from the words after step 1's; without bucketing, step 1 has mixed them already.
/// Each epoch thus deals every sequence exactly once (with `Keep`), and `order()` lists them as dealt.
///
/// The batches refer to the sequences, which must outlive them.
class PaddedBatches {
 public:
  /// @brief Batch size, truncation, seed, shuffling and bucketing.
  using Options = PaddedBatchOptions;

  /// @brief Batches over `sequences`, positioned at the start of epoch 0.
  /// @param sequences token id sequences (with [CLS] ... [SEP] if the model wants them)
  /// @param options batch size, truncation, seed, shuffling and bucketing
  /// @throws mpx::invalid_argument for invalid options, an empty sequence (naming its index) or 2^32
  /// sequences or more.
  PaddedBatches(std::span<const std::vector<std::int32_t>> sequences, const Options& options)
      : sequences_(sequences), options_(options) {
    options_.validate();
    if (sequences.size() > std::numeric_limits<std::uint32_t>::max()) {
      throw invalid_argument(mpx::detail::concat("mpx::data::PaddedBatches: ", sequences.size(),
                                                 " sequences are too many; at most 2^32 - 1 are supported"));
    }
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      if (sequences[i].empty()) {
        throw invalid_argument(mpx::detail::concat("mpx::data::PaddedBatches: sequence ", i,
                                                   " is empty; expected at least one token"));
      }
    }
    start_epoch(0);
  }

  /// Temporary sequences would be destroyed while the batches still point at them.
  PaddedBatches(std::vector<std::vector<std::int32_t>>&&, const Options&) = delete;

  /// @brief The length of sequence `sequence` once truncated: min(its size, `max_length`).
  /// @param sequence an index into the sequences
  [[nodiscard]] std::int64_t length(std::int64_t sequence) const noexcept {
    return std::min(static_cast<std::int64_t>(sequences_[static_cast<std::size_t>(sequence)].size()),
                    options_.max_length);
  }

  /// @brief Builds the order of `epoch` (the four steps of the class comment) and rewinds to its
  /// first batch.
  /// @param epoch the epoch, which selects the shuffles' Philox stream
  void start_epoch(std::uint64_t epoch) {
    epoch_ = epoch;
    position_ = 0;
    const std::int64_t n = static_cast<std::int64_t>(sequences_.size());
    order_.resize(static_cast<std::size_t>(n));
    std::iota(order_.begin(), order_.end(), std::int64_t{0});
    std::uint64_t draw = 0;
    if (options_.shuffle) shuffle(order_, draw);
    if (options_.bucket_by_length) {
      const std::int64_t chunk = options_.bucket_batches * options_.batch_size;
      for (std::int64_t first = 0; first < n; first += chunk) {
        std::stable_sort(order_.begin() + first, order_.begin() + std::min(first + chunk, n),
                         [&](std::int64_t a, std::int64_t b) { return length(a) < length(b); });
      }
    }
    // Batch b of step 3 is order_[b * batch_size, min((b + 1) * batch_size, n)); lay the batches
    // out in dealing order (step 4), the sequences a dropped last batch would hold at the end.
    const std::int64_t batches = batches_per_epoch();
    std::vector<std::int64_t> batch_order(static_cast<std::size_t>(batches));
    std::iota(batch_order.begin(), batch_order.end(), std::int64_t{0});
    if (options_.shuffle && options_.bucket_by_length) shuffle(batch_order, draw);
    std::vector<std::int64_t> dealt;
    dealt.reserve(order_.size());
    bounds_.assign(1, 0);
    for (const std::int64_t b : batch_order) {
      const std::int64_t first = b * options_.batch_size;
      dealt.insert(dealt.end(), order_.begin() + first,
                   order_.begin() + std::min(first + options_.batch_size, n));
      bounds_.push_back(static_cast<std::int64_t>(dealt.size()));
    }
    dealt.insert(dealt.end(), order_.begin() + std::min(batches * options_.batch_size, n), order_.end());
    order_ = std::move(dealt);
  }

  /// @brief Fills `batch` with the next batch of the epoch; false once the epoch is exhausted. Its
  /// tensors are reallocated only when their shape differs.
  /// @param batch the batch to fill: ids [rows, T], lengths [rows], indices [rows]
  bool next(PaddedBatch& batch) {
    if (position_ + 1 >= static_cast<std::int64_t>(bounds_.size())) return false;
    const std::int64_t first = bounds_[static_cast<std::size_t>(position_)];
    const std::int64_t rows = bounds_[static_cast<std::size_t>(position_) + 1] - first;
    std::int64_t longest = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      longest = std::max(longest, length(order_[static_cast<std::size_t>(first + r)]));

    if (!(batch.ids.shape() == Shape{rows, longest}))
      batch.ids = Tensor<std::int32_t, Host>::uninitialized(Shape{rows, longest});
    if (!(batch.lengths.shape() == Shape{rows}))
      batch.lengths = Tensor<std::int32_t, Host>::uninitialized(Shape{rows});
    batch.indices.resize(static_cast<std::size_t>(rows));
    batch.ids.fill(options_.tokens.pad);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t sequence = order_[static_cast<std::size_t>(first + r)];
      const std::vector<std::int32_t>& tokens = sequences_[static_cast<std::size_t>(sequence)];
      const std::int64_t kept = length(sequence);
      std::int32_t* row = batch.ids.data() + r * longest;
      std::copy_n(tokens.begin(), kept, row);
      // The truncation rule: a final [SEP] survives it.
      if (kept < static_cast<std::int64_t>(tokens.size()) && tokens.back() == options_.tokens.sep) {
        row[kept - 1] = options_.tokens.sep;
      }
      batch.lengths[r] = static_cast<std::int32_t>(kept);
      batch.indices[static_cast<std::size_t>(r)] = sequence;
    }
    ++position_;
    return true;
  }

  /// @brief Batches `next` returns per epoch: ceil(N / batch_size) with `LastBatch::Keep`, floor
  /// with `Drop`.
  [[nodiscard]] std::int64_t batches_per_epoch() const noexcept {
    const auto n = static_cast<std::int64_t>(sequences_.size());
    return options_.last_batch == LastBatch::Drop ? n / options_.batch_size
                                                  : (n + options_.batch_size - 1) / options_.batch_size;
  }

  /// @brief The epoch set by the last `start_epoch` (0 after construction).
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// @brief Batches of the current epoch returned so far.
  [[nodiscard]] std::int64_t position() const noexcept { return position_; }

  /// @brief Continues from batch `position` of `epoch`, as batches that had dealt that far would
  /// (resuming from a checkpoint).
  /// @param epoch the epoch to rebuild
  /// @param position batches of it already dealt
  /// @throws mpx::invalid_argument unless 0 <= position <= `batches_per_epoch()`.
  void resume(std::uint64_t epoch, std::int64_t position) {
    if (position < 0 || position > batches_per_epoch()) {
      throw invalid_argument(mpx::detail::concat("mpx::data::PaddedBatches::resume: position ", position,
                                                 " is outside the epoch of ", batches_per_epoch(),
                                                 " batches"));
    }
    start_epoch(epoch);
    position_ = position;
  }

  /// @brief The sequence indices of the current epoch in the order they are dealt (with
  /// `LastBatch::Drop`, the dropped ones last).
  [[nodiscard]] std::span<const std::int64_t> order() const noexcept { return order_; }
  /// @brief The options the batches were built with.
  [[nodiscard]] const Options& options() const noexcept { return options_; }
  /// @brief Number of sequences.
  [[nodiscard]] std::int64_t size() const noexcept { return static_cast<std::int64_t>(sequences_.size()); }

 private:
  /// Fisher-Yates with the `Batcher`'s draws from Philox stream `epoch_`, continuing at word `draw`.
  void shuffle(std::vector<std::int64_t>& values, std::uint64_t& draw) const {
    for (std::size_t i = values.size(); i > 1; --i) {
      const std::uint32_t j =
          detail::uniform_below(static_cast<std::uint32_t>(i), options_.seed, epoch_, draw);
      std::swap(values[i - 1], values[j]);
    }
  }

  std::span<const std::vector<std::int32_t>> sequences_;
  Options options_;
  std::uint64_t epoch_ = 0;
  std::int64_t position_ = 0;
  std::vector<std::int64_t> order_;   // sequence indices, as dealt
  std::vector<std::int64_t> bounds_;  // batch b is order_[bounds_[b], bounds_[b + 1])
};

}  // namespace mpx::data
