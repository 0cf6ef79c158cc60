// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Batcher`: reproducible shuffled mini-batches over a `Dataset`.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpx/data/dataset.hpp"
#include "mpx/data/image_augmentation.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/random.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::data {

namespace detail {

/// Uniform integer in [0, bound), bound >= 1, by Lemire's method: the high word of a 32x32-bit
/// product, with the few low words below 2^32 mod bound rejected so that no value is favoured.
/// Consumes words `random_bits(seed, stream, draw)`, `draw + 1`, ... and advances `draw` past them.
[[nodiscard]] inline std::uint32_t uniform_below(std::uint32_t bound, std::uint64_t seed,
                                                 std::uint64_t stream, std::uint64_t& draw) noexcept {
  std::uint64_t product = std::uint64_t{random_bits(seed, stream, draw++)} * bound;
  auto low = static_cast<std::uint32_t>(product);
  if (low < bound) {
    const std::uint32_t threshold = static_cast<std::uint32_t>(-bound) % bound;
    while (low < threshold) {
      product = std::uint64_t{random_bits(seed, stream, draw++)} * bound;
      low = static_cast<std::uint32_t>(product);
    }
  }
  return static_cast<std::uint32_t>(product >> 32);
}

/// `[count, sample...]`: the shape of a batch of `count` samples of shape `sample` (rank 1 to 3).
[[nodiscard]] inline Shape batch_shape(std::int64_t count, const Shape& sample) {
  switch (sample.rank()) {
    case 1: return Shape{count, sample[0]};
    case 2: return Shape{count, sample[0], sample[1]};
    case 3: return Shape{count, sample[0], sample[1], sample[2]};
    default:
      throw shape_error(mpx::detail::concat("mpx::data::Batcher: samples of shape ", sample,
                                            " do not fit in a batch; expected rank 1 to 3"));
  }
}

}  // namespace detail

/// @brief What happens to the samples left over when the batch size does not divide the set.
enum class LastBatch {
  Keep,  ///< return them as a smaller final batch (evaluation: every sample counts)
  Drop,  ///< skip them (training: every step sees a full batch; a new shuffle covers them next epoch)
};

/// @brief Deals a `Dataset` out in mini-batches, in an order that depends only on (seed, epoch).
///
/// The order of epoch e is a Fisher-Yates shuffle of 0..N-1: for i = N-1 down to 1, swap position i
/// with position j, j uniform in [0, i], drawn by Lemire's multiply-and-reject method from successive
/// words `random_bits(seed, e, k)`, k = 0, 1, 2, ... (a rejected word is simply skipped). Being a pure
/// function of counter-based Philox output, the order is the same on every machine and compiler, and
/// any epoch can be regenerated without replaying the ones before it (for resuming from a checkpoint).
///
/// With `Options::augmentation` enabled, each sample is also randomly cropped and/or mirrored as it
/// is gathered (`ImageAugmentation`), with draws keyed by (seed, epoch, sample index) in a Philox
/// stream of their own: the batches stay a pure function of (seed, epoch, position).
///
/// The batcher refers to the dataset, which must outlive it.
class Batcher {
 public:
  /// @brief Batch size, shuffling and what to do with a final partial batch.
  struct Options {
    /// @brief Samples per batch.
    std::int64_t batch_size = 64;
    /// @brief Seed of the shuffle; the same seed gives the same batches.
    std::uint64_t seed = 0;
    bool shuffle = true;  ///< false: samples in dataset order every epoch (evaluation)
    /// @brief What happens to a final batch smaller than `batch_size`.
    LastBatch last_batch = LastBatch::Keep;

    /// @brief This process's part of each batch in data-parallel training (docs/distributed.md).
    struct Shard {
      std::int64_t index = 0;  ///< this process's rank
      std::int64_t count = 1;  ///< the number of processes (the world size)
    };
    /// @brief With `count` > 1, the batcher deals global batches of `batch_size * count` samples
    /// of the epoch's order (the same order on every process, from the same seed) and returns
    /// samples [index * batch_size, (index + 1) * batch_size) of each: the processes' batches are
    /// disjoint, and together they are the batch one process would draw with `batch_size * count`.
    /// `position()` counts global samples, so a checkpoint resumes on any number of processes.
    /// Needs `LastBatch::Drop`: the remainder of an epoch (fewer than `batch_size * count` samples)
    /// is skipped on every process, and the next epoch's shuffle covers it.
    Shard shard{};
    /// @brief Random crop with padding and horizontal flip of `[H, W, C]` samples (training); off by
    /// default. The draws use `seed` and are the same for a sample whichever batch or shard it lands in.
    ImageAugmentation augmentation{};

    /// @brief Throws `mpx::invalid_argument` naming the field unless 1 <= `batch_size` <= 2^32
    /// (a batch is never larger than a dataset can be), 0 <= `shard.index` < `shard.count`,
    /// `batch_size * shard.count` <= 2^32, and a sharded batcher drops the last partial batch.
    void validate() const {
      if (batch_size < 1 || batch_size > (std::int64_t{1} << 32)) {
        throw invalid_argument(mpx::detail::concat("mpx::data::Batcher::Options: batch_size = ", batch_size,
                                                   " is invalid; expected an integer in [1, 2^32]"));
      }
      if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count ||
          batch_size * shard.count > (std::int64_t{1} << 32)) {
        throw invalid_argument(
            mpx::detail::concat("mpx::data::Batcher::Options: shard = {index ", shard.index, ", count ",
                                shard.count, "} with batch_size ", batch_size,
                                " is invalid; expected 0 <= index < count and batch_size * count <= 2^32"));
      }
      if (shard.count > 1 && last_batch != LastBatch::Drop) {
        throw invalid_argument(mpx::detail::concat(
            "mpx::data::Batcher::Options: shard.count = ", shard.count,
            " needs last_batch = LastBatch::Drop: a partial last batch cannot be split evenly, and every "
            "process must take the same number of steps"));
      }
    }
  };

  /// @brief A batcher over `dataset`, positioned at the start of epoch 0.
  /// @throws mpx::invalid_argument for invalid options, an augmentation the dataset's sample shape
  /// cannot take (`ImageAugmentation::validate`: enabled needs `[H, W, C]` samples) or a dataset of
  /// 2^32 samples or more (the shuffle draws 32-bit words).
  Batcher(const Dataset& dataset, const Options& options) : dataset_(&dataset), options_(options) {
    options_.validate();
    options_.augmentation.validate("mpx::data::Batcher", dataset.sample_shape());
    if (static_cast<std::uint64_t>(dataset.size()) > std::numeric_limits<std::uint32_t>::max()) {
      throw invalid_argument(mpx::detail::concat("mpx::data::Batcher: dataset of ", dataset.size(),
                                                 " samples is too large; at most 2^32 - 1 are supported"));
    }
    start_epoch(0);
  }

  /// A temporary dataset would be destroyed while the batcher still points at it.
  Batcher(const Dataset&&, const Options&) = delete;

  /// @brief Shuffles for `epoch` (if shuffling) and rewinds to its first batch.
  void start_epoch(std::uint64_t epoch) {
    epoch_ = epoch;
    position_ = 0;
    const auto n = static_cast<std::size_t>(dataset_->size());
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), std::int64_t{0});
    if (!options_.shuffle) return;
    std::uint64_t draw = 0;
    for (std::size_t i = n; i > 1; --i) {
      const std::uint32_t j =
          detail::uniform_below(static_cast<std::uint32_t>(i), options_.seed, epoch, draw);
      std::swap(order_[i - 1], order_[j]);
    }
  }

  /// @brief Copies the next batch into `images` (`[batch, sample_shape...]`: `[batch, features]`
  /// unless the dataset's samples were given a shape) and `labels` ([batch]); false once the epoch is
  /// exhausted (or only a partial batch is left and `LastBatch::Drop` is set).
  ///
  /// Both are reallocated only when their shape differs from the batch's (the first batch, or a
  /// smaller last one), so a training loop reuses one pair of buffers. Images of another element
  /// type than float are rounded to nearest while they are gathered, so a bf16 model gets its input
  /// without a separate fp32 copy. With augmentation enabled, sample i of the dataset goes through
  /// `augmentation.apply` with `augmentation.draw(seed, epoch(), i)`. `mpx::to<Device>` moves the
  /// batch to the model's device.
  /// @throws mpx::invalid_argument if augmentation is enabled and the dataset's sample shape was
  /// changed since construction to one that is not `[H, W, C]`.
  template <FloatingElement T>
  bool next(Tensor<T, Host>& images, Tensor<std::int32_t, Host>& labels) {
    const std::int64_t global_batch = options_.batch_size * options_.shard.count;
    const std::int64_t remaining = dataset_->size() - position_;
    const std::int64_t global_count = std::min(remaining, global_batch);
    if (global_count <= 0 || (global_count < global_batch && options_.last_batch == LastBatch::Drop))
      return false;
    // A sharded batcher always has a full global batch here (it drops the rest): its slice is whole.
    const std::int64_t count = options_.shard.count == 1 ? global_count : options_.batch_size;
    const std::int64_t first = position_ + options_.shard.index * options_.batch_size;

    const std::int64_t features = dataset_->features();
    const Shape& sample_shape = dataset_->sample_shape();
    const ImageAugmentation& augmentation = options_.augmentation;
    const bool augment = augmentation.enabled();
    // The dataset's sample shape may have been changed since construction.
    if (augment) augmentation.validate("mpx::data::Batcher::next", sample_shape);
    const Shape shape = detail::batch_shape(count, sample_shape);
    if (!(images.shape() == shape)) images = Tensor<T, Host>::uninitialized(shape);
    if (!(labels.shape() == Shape{count})) labels = Tensor<std::int32_t, Host>::uninitialized(Shape{count});

    const float* source = dataset_->images().data();
    const std::vector<std::int32_t>& source_labels = dataset_->labels();
    const auto row_bytes = static_cast<std::size_t>(features) * sizeof(float);
    for (std::int64_t b = 0; b < count; ++b) {
      const std::int64_t sample = order_[static_cast<std::size_t>(first + b)];
      if (augment) {
        augmentation.apply(source + sample * features, sample_shape,
                           augmentation.draw(options_.seed, epoch_, sample), images.data() + b * features);
      } else if constexpr (std::is_same_v<T, float>) {
        if (row_bytes != 0) std::memcpy(images.data() + b * features, source + sample * features, row_bytes);
      } else {
        for (std::int64_t f = 0; f < features; ++f) {
          images[b * features + f] = round_to<tag_of_t<T>>(source[sample * features + f]);
        }
      }
      labels[b] = source_labels[static_cast<std::size_t>(sample)];
    }
    position_ += global_count;
    return true;
  }

  /// @brief Batches `next` returns per epoch: ceil(N / batch) with `LastBatch::Keep`, floor with `Drop`
  /// (batch: the global batch, `batch_size * shard.count`).
  [[nodiscard]] std::int64_t batches_per_epoch() const noexcept {
    const std::int64_t n = dataset_->size();
    const std::int64_t batch = options_.batch_size * options_.shard.count;
    return options_.last_batch == LastBatch::Drop ? n / batch : (n + batch - 1) / batch;
  }

  /// @brief The epoch set by the last `start_epoch` (0 after construction).
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// @brief Samples of the current epoch dealt so far (to all shards together).
  [[nodiscard]] std::int64_t position() const noexcept { return position_; }

  /// @brief Continues from sample `position` of `epoch`, as a batcher that had dealt that far would
  /// (resuming from a checkpoint); throws `mpx::invalid_argument` unless 0 <= position <= the data
  /// set's size.
  void resume(std::uint64_t epoch, std::int64_t position) {
    if (position < 0 || position > dataset_->size()) {
      throw invalid_argument(mpx::detail::concat("mpx::data::Batcher::resume: position ", position,
                                                 " is outside the data set of ", dataset_->size(),
                                                 " samples"));
    }
    start_epoch(epoch);
    position_ = position;
  }
  /// @brief The options this batcher was built with.
  [[nodiscard]] const Options& options() const noexcept { return options_; }
  /// @brief The sample indices of the current epoch in the order they are dealt.
  [[nodiscard]] std::span<const std::int64_t> order() const noexcept { return order_; }

 private:
  const Dataset* dataset_;
  Options options_;
  std::uint64_t epoch_ = 0;
  std::int64_t position_ = 0;
  std::vector<std::int64_t> order_;
};

}  // namespace mpx::data
