// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `TextWindows` (random training windows, batch k a pure function of (seed, k)) and
/// `SequentialTextWindows` (one deterministic pass in non-overlapping windows, for evaluation) over a
/// sequence of token ids.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "mpx/data/batcher.hpp"
#include "mpx/error.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::data {

/// @brief Rows per batch and tokens per row of a batch of text windows.
struct TextWindowOptions {
  /// @brief Windows per batch (B).
  std::int64_t batch_size = 32;
  /// @brief Tokens per window (T), the model's context length.
  std::int64_t context = 128;
  /// @brief Seed of the window starts (`TextWindows`; `SequentialTextWindows` ignores it). Give data
  /// its own seed: dropout and initialisation draw other Philox streams under theirs.
  std::uint64_t seed = 0;
  /// @brief This process's rows of each batch in data-parallel training (`TextWindows`;
  /// `SequentialTextWindows` ignores it): with `count` > 1, batch k is drawn as a global batch of
  /// `batch_size * count` windows, the same on every process, and this process takes rows
  /// [index * batch_size, (index + 1) * batch_size) of it, so the processes train on different
  /// draws and together on the batch one process would draw with `batch_size * count`. `position()`
  /// counts global batches, so a checkpoint resumes on any number of processes.
  Batcher::Options::Shard shard{};
};

namespace detail {

/// Throws `mpx::invalid_argument` naming `where` unless `options` fit `tokens` tokens: B >= 1,
/// T >= 1, at least T + 1 tokens (a window's targets reach one token past its inputs), and for
/// random windows (`starts_drawn`) fewer than 2^32 starts, which 32-bit draws reach.
inline void check_text_windows(const char* where, std::int64_t tokens, const TextWindowOptions& options,
                               bool starts_drawn) {
  if (options.batch_size < 1) {
    throw invalid_argument(
        mpx::detail::concat(where, ": batch_size = ", options.batch_size, " is invalid; expected >= 1"));
  }
  if (options.context < 1) {
    throw invalid_argument(
        mpx::detail::concat(where, ": context = ", options.context, " is invalid; expected >= 1"));
  }
  if (tokens < options.context + 1) {
    throw invalid_argument(mpx::detail::concat(
        where, ": ", tokens, " tokens are too few for windows of context ", options.context,
        "; need at least context + 1 = ", options.context + 1, " (targets are the inputs shifted by one)"));
  }
  if (starts_drawn &&
      (options.shard.count < 1 || options.shard.index < 0 || options.shard.index >= options.shard.count ||
       options.batch_size > (std::int64_t{1} << 32) / options.shard.count)) {
    throw invalid_argument(
        mpx::detail::concat(where, ": shard = {index ", options.shard.index, ", count ", options.shard.count,
                            "} with batch_size ", options.batch_size,
                            " is invalid; expected 0 <= index < count and batch_size * count <= 2^32"));
  }
  if (starts_drawn && tokens - options.context > std::int64_t{std::numeric_limits<std::uint32_t>::max()}) {
    throw invalid_argument(mpx::detail::concat(where, ": ", tokens, " tokens give ", tokens - options.context,
                                               " window starts; at most 2^32 - 1 are supported"));
  }
}

/// Reallocates `tensor` to `shape` unless it already has it, so a training loop reuses its buffers.
inline void ensure_token_shape(Tensor<std::int32_t, Host>& tensor, const Shape& shape) {
  if (!(tensor.shape() == shape)) tensor = Tensor<std::int32_t, Host>::uninitialized(shape);
}

/// Row `row` of a batch: `context` inputs from `start` and the `context` tokens after each as targets.
inline void copy_window(std::span<const std::int32_t> tokens, std::int64_t start, std::int64_t context,
                        std::int64_t row, Tensor<std::int32_t, Host>& inputs,
                        Tensor<std::int32_t, Host>& targets) {
  const auto bytes = static_cast<std::size_t>(context) * sizeof(std::int32_t);
  std::memcpy(inputs.data() + row * context, tokens.data() + start, bytes);
  std::memcpy(targets.data() + row * context, tokens.data() + start + 1, bytes);
}

}  // namespace detail

/// @brief Random windows of a token sequence for training: an endless stream of batches in which
/// batch k depends only on (seed, k), so training is reproducible and resumes from a batch index.
///
/// Row b of batch k is the window starting at s = the b-th value drawn uniformly from
/// [0, N - T) (N tokens, T = context): drawn by Lemire's multiply-and-reject method (the `Batcher`'s)
/// from the words `random_bits(seed, k, 0)`, `random_bits(seed, k, 1)`, ... of Philox stream k, a
/// rejected word simply skipped. Its inputs are tokens [s, s + T) and its targets tokens
/// [s + 1, s + T + 1): `targets[b, t] == tokens[s + t + 1]`, the next token after `inputs[b, t]`.
/// Windows are drawn with replacement, and every token but the first can be a target.
///
/// The windows refer to the tokens (e.g. `TextCorpus::train_tokens()`), which must outlive them.
class TextWindows {
 public:
  /// @brief Batch size, context and seed.
  using Options = TextWindowOptions;

  /// @brief Windows over `tokens`, positioned at batch 0.
  /// @throws mpx::invalid_argument naming the values for batch_size < 1, context < 1, fewer than
  /// context + 1 tokens, or 2^32 window starts or more.
  TextWindows(std::span<const std::int32_t> tokens, const TextWindowOptions& options)
      : tokens_(tokens), options_(options) {
    detail::check_text_windows("mpx::data::TextWindows", static_cast<std::int64_t>(tokens.size()), options,
                               true);
  }

  /// @brief Fills `inputs` and `targets` (both [batch_size, context]) with batch `position()` and
  /// advances to the next batch. The tensors are reallocated only when their shape differs.
  void next(Tensor<std::int32_t, Host>& inputs, Tensor<std::int32_t, Host>& targets) {
    const Shape shape{options_.batch_size, options_.context};
    detail::ensure_token_shape(inputs, shape);
    detail::ensure_token_shape(targets, shape);
    const std::vector<std::int64_t> starts = window_starts(position_);
    for (std::int64_t row = 0; row < options_.batch_size; ++row) {
      detail::copy_window(tokens_, starts[static_cast<std::size_t>(row)], options_.context, row, inputs,
                          targets);
    }
    ++position_;
  }

  /// @brief The start of each window of batch `batch`, in row order (what `next` copies from): this
  /// shard's rows of the global batch (all of it without a shard).
  [[nodiscard]] std::vector<std::int64_t> window_starts(std::uint64_t batch) const {
    const auto bound =
        static_cast<std::uint32_t>(static_cast<std::int64_t>(tokens_.size()) - options_.context);
    std::vector<std::int64_t> starts(static_cast<std::size_t>(options_.batch_size));
    std::uint64_t draw = 0;
    // The rows of the shards before this one are drawn and dropped: draws are sequential (a rejected
    // word is skipped), so a row's start depends on every row before it in the global batch.
    for (std::int64_t row = 0; row < options_.shard.index * options_.batch_size; ++row)
      static_cast<void>(detail::uniform_below(bound, options_.seed, batch, draw));
    for (std::int64_t& start : starts) start = detail::uniform_below(bound, options_.seed, batch, draw);
    return starts;
  }

  /// @brief Index of the batch the next call to `next` returns (the batches returned so far, after
  /// construction); a checkpoint stores it to resume.
  [[nodiscard]] std::uint64_t position() const noexcept { return position_; }
  /// @brief Makes batch `batch` the next one returned, as if `batch` batches had been taken.
  void set_position(std::uint64_t batch) noexcept { position_ = batch; }

  /// @brief Number of tokens the windows are drawn from.
  [[nodiscard]] std::int64_t tokens() const noexcept { return static_cast<std::int64_t>(tokens_.size()); }
  /// @brief The options the windows were built with.
  [[nodiscard]] const TextWindowOptions& options() const noexcept { return options_; }

 private:
  std::span<const std::int32_t> tokens_;
  TextWindowOptions options_;
  std::uint64_t position_ = 0;
};

/// @brief One pass over a token sequence in consecutive non-overlapping windows, for evaluation: the
/// same windows in the same order whatever the seed, so validation losses compare between runs.
///
/// Window w starts at w × T (T = context) and there are (N - 1) / T of them (N tokens, integer
/// division), so every token but the first is a target at most once and the final (N - 1) mod T
/// targets (fewer than T) are not scored. Batches hold `batch_size` windows, the last one fewer;
/// a model averages the loss over the rows it is given, so weight a batch's mean loss by its rows
/// (`inputs.shape()[0]`) to average over all scored tokens.
///
/// The windows refer to the tokens (e.g. `TextCorpus::validation_tokens()`), which must outlive them.
class SequentialTextWindows {
 public:
  /// @brief Batch size and context (the seed is not used).
  using Options = TextWindowOptions;

  /// @brief Windows over `tokens`, positioned at the first one; `options.seed` is not used.
  /// @throws mpx::invalid_argument naming the values for batch_size < 1, context < 1 or fewer than
  /// context + 1 tokens.
  SequentialTextWindows(std::span<const std::int32_t> tokens, const TextWindowOptions& options)
      : tokens_(tokens), options_(options) {
    detail::check_text_windows("mpx::data::SequentialTextWindows", static_cast<std::int64_t>(tokens.size()),
                               options, false);
  }

  /// @brief Fills `inputs` and `targets` ([rows, context], rows = batch_size except perhaps for the
  /// last batch) with the next windows; false once the pass is over (then `rewind` starts another).
  bool next(Tensor<std::int32_t, Host>& inputs, Tensor<std::int32_t, Host>& targets) {
    const std::int64_t rows = std::min(options_.batch_size, windows() - window_);
    if (rows <= 0) return false;
    const Shape shape{rows, options_.context};
    detail::ensure_token_shape(inputs, shape);
    detail::ensure_token_shape(targets, shape);
    for (std::int64_t row = 0; row < rows; ++row) {
      detail::copy_window(tokens_, (window_ + row) * options_.context, options_.context, row, inputs,
                          targets);
    }
    window_ += rows;
    return true;
  }

  /// @brief Starts the pass again from the first window.
  void rewind() noexcept { window_ = 0; }

  /// @brief Windows in one pass: (N - 1) / context.
  [[nodiscard]] std::int64_t windows() const noexcept {
    return (static_cast<std::int64_t>(tokens_.size()) - 1) / options_.context;
  }
  /// @brief Batches in one pass: ceil(windows / batch_size).
  [[nodiscard]] std::int64_t batches() const noexcept {
    return (windows() + options_.batch_size - 1) / options_.batch_size;
  }
  /// @brief Targets scored in one pass: windows × context.
  [[nodiscard]] std::int64_t scored_tokens() const noexcept { return windows() * options_.context; }
  /// @brief The options the windows were built with.
  [[nodiscard]] const TextWindowOptions& options() const noexcept { return options_; }

 private:
  std::span<const std::int32_t> tokens_;
  TextWindowOptions options_;
  std::int64_t window_ = 0;
};

}  // namespace mpx::data
