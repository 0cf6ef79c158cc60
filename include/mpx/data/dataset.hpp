// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Dataset`: a labelled set of feature vectors held in host memory.

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/tensor/device.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::data {

/// @brief N samples of `features()` floats each, with an integer class label per sample.
///
/// Images are a row-major `[N, features]` host tensor, already normalised by whoever built the set
/// (`load_fashion_mnist` standardises with the training set's statistics). Each sample's features
/// may be given a shape (`set_sample_shape(Shape{28, 28, 1})` for channels-last images), which
/// `Batcher::next` gives its batches: `[batch, 28, 28, 1]` for a convolutional network instead of
/// the default `[batch, features]` for an MLP. Move-only, like `Tensor`; `subset` makes explicit
/// copies.
class Dataset {
 public:
  /// @brief An empty dataset (no samples, no features, no classes).
  Dataset() = default;

  /// @brief Takes ownership of `images` ([N, features]) and `labels` (N values in [0, classes)).
  /// @throws mpx::shape_error if `images` is not rank 2 or its row count differs from the label count;
  /// mpx::invalid_argument if `classes` < 1 or a label lies outside [0, classes).
  Dataset(Tensor<float, Host> images, std::vector<std::int32_t> labels, std::int32_t classes)
      : images_(std::move(images)), labels_(std::move(labels)), classes_(classes) {
    if (images_.rank() != 2) {
      throw shape_error(mpx::detail::concat("mpx::data::Dataset: images have shape ", images_.shape(),
                                            ", expected rank 2 [samples, features]"));
    }
    if (images_.shape()[0] != static_cast<std::int64_t>(labels_.size())) {
      throw shape_error(mpx::detail::concat("mpx::data::Dataset: images have shape ", images_.shape(), " (",
                                            images_.shape()[0], " samples) but there are ", labels_.size(),
                                            " labels"));
    }
    if (classes_ < 1) {
      throw invalid_argument(
          mpx::detail::concat("mpx::data::Dataset: classes = ", classes_, " is invalid; expected >= 1"));
    }
    for (std::size_t i = 0; i < labels_.size(); ++i) {
      if (labels_[i] < 0 || labels_[i] >= classes_) {
        throw invalid_argument(mpx::detail::concat("mpx::data::Dataset: label ", labels_[i], " of sample ", i,
                                                   " is outside [0, ", classes_, ")"));
      }
    }
    sample_shape_ = Shape{features()};
  }

  /// @brief Number of samples N.
  [[nodiscard]] std::int64_t size() const noexcept { return static_cast<std::int64_t>(labels_.size()); }
  /// @brief Floats per sample (784 for Fashion-MNIST); 0 for an empty default-constructed set.
  [[nodiscard]] std::int64_t features() const noexcept {
    return images_.rank() == 2 ? images_.shape()[1] : 0;
  }
  /// @brief The shape of one sample: `Shape{features()}` unless `set_sample_shape` gave another.
  [[nodiscard]] const Shape& sample_shape() const noexcept { return sample_shape_; }

  /// @brief Gives each sample the shape `shape` (e.g. `Shape{28, 28, 1}`, [H, W, C]), which batches
  /// take after their first dimension; the images stay `[size(), features()]` in memory.
  /// @throws mpx::shape_error naming both shapes unless `shape` has rank 1 to 3 (a batch adds one
  /// dimension, and tensors have at most 4) and `features()` elements.
  void set_sample_shape(const Shape& shape) {
    if (shape.rank() < 1 || shape.rank() >= Shape::max_rank || shape.numel() != features()) {
      throw shape_error(mpx::detail::concat("mpx::data::Dataset::set_sample_shape: sample shape ", shape,
                                            " (", shape.numel(), " elements, rank ", shape.rank(),
                                            ") does not fit samples of shape ", sample_shape_, " (",
                                            features(), " features); expected rank 1 to ",
                                            Shape::max_rank - 1, " and ", features(), " elements"));
    }
    sample_shape_ = shape;
  }

  /// @brief Number of classes labels are drawn from (10 for Fashion-MNIST).
  [[nodiscard]] std::int32_t classes() const noexcept { return classes_; }

  /// @brief All images, `[size(), features()]`.
  [[nodiscard]] const Tensor<float, Host>& images() const noexcept { return images_; }
  /// @brief All labels, one per image.
  [[nodiscard]] const std::vector<std::int32_t>& labels() const noexcept { return labels_; }

  /// @brief The `features()` floats of sample `index` (unchecked, like `operator[]`).
  [[nodiscard]] std::span<const float> image(std::int64_t index) const noexcept {
    return images_.values().subspan(static_cast<std::size_t>(index * features()),
                                    static_cast<std::size_t>(features()));
  }

  /// @brief A copy of samples [first, first + count), with the same sample shape: for short CI runs
  /// and validation splits.
  /// @throws mpx::invalid_argument if the range does not lie inside [0, size()).
  [[nodiscard]] Dataset subset(std::int64_t first, std::int64_t count) const {
    if (first < 0 || count < 0 || first > size() || count > size() - first) {
      throw invalid_argument(mpx::detail::concat("mpx::data::Dataset::subset: samples [", first, ", ",
                                                 first + count, ") are outside the ", size(),
                                                 " samples of the dataset"));
    }
    if (images_.rank() != 2) return Dataset{};  // the only subset of an empty set is empty
    Tensor<float, Host> images = images_.rows(first, count).clone();
    std::vector<std::int32_t> labels(labels_.begin() + first, labels_.begin() + first + count);
    Dataset part(std::move(images), std::move(labels), classes_);
    part.sample_shape_ = sample_shape_;
    return part;
  }

 private:
  Tensor<float, Host> images_;
  std::vector<std::int32_t> labels_;
  std::int32_t classes_ = 0;
  Shape sample_shape_ = Shape{std::int64_t{0}};  // Shape{features()} until set_sample_shape
};

}  // namespace mpx::data
