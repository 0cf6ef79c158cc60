// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `load_fashion_mnist`: the four Fashion-MNIST IDX files as standardised train and test sets.

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "mpx/data/dataset.hpp"
#include "mpx/data/idx.hpp"
#include "mpx/data/input_normalization.hpp"
#include "mpx/error.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::data {

/// @brief Number of Fashion-MNIST classes (T-shirt/top ... Ankle boot).
inline constexpr std::int32_t fashion_mnist_classes = 10;

/// @brief Where the Debian package `dataset-fashion-mnist` installs the four .gz files.
inline constexpr const char* fashion_mnist_system_dir = "/usr/share/datasets/fashion-mnist";

/// @brief The Fashion-MNIST training and test sets, standardised with the training set's statistics.
struct FashionMnist {
  Dataset train;  ///< 60000 images of 784 features
  Dataset test;   ///< 10000 images of 784 features
  /// Mean and standard deviation of the training pixels scaled to [0, 1]; every pixel p of both sets
  /// became (p / 255 - pixel_mean) / pixel_std. Kept so that new images can be normalised alike.
  double pixel_mean = 0.0;
  /// @brief Standard deviation used to normalise pixels.
  double pixel_std = 1.0;

  /// @brief {pixel_mean, pixel_std}: what a model trained on these sets needs at inference, applied
  /// to pixels p scaled as here (p / 255.0); save it beside the weights with
  /// `io::input_normalization_metadata`.
  [[nodiscard]] InputNormalization input_normalization() const { return {pixel_mean, pixel_std}; }
};

/// @brief `$MPX_FASHION_MNIST_DIR` if set and not empty, else `/usr/share/datasets/fashion-mnist`.
[[nodiscard]] inline std::filesystem::path default_fashion_mnist_dir() {
  const char* from_environment = std::getenv("MPX_FASHION_MNIST_DIR");
  if (from_environment != nullptr && from_environment[0] != '\0') return from_environment;
  return fashion_mnist_system_dir;
}

namespace detail {

/// Throws `io_error` "load_fashion_mnist: <file> at byte <offset>: <what>".
template <class... Parts>
[[noreturn]] void fail_fashion_mnist(const std::filesystem::path& file, std::uint64_t at, Parts&&... what) {
  throw io_error(concat("mpx::data::load_fashion_mnist: \"", file.string(), "\" at byte ", at, ": ",
                        std::forward<Parts>(what)...));
}

/// One split's images and labels, checked against each other and against the Fashion-MNIST layout
/// ([N, rows, cols] images, [N] labels in 0..9) but not against fixed sizes, so that small files of
/// the same layout (tests, subsets) load too.
struct RawSplit {
  IdxArray images;
  IdxArray labels;
  std::filesystem::path images_path;
  std::filesystem::path labels_path;
};

[[nodiscard]] inline RawSplit read_fashion_mnist_split(const std::filesystem::path& dir,
                                                       const char* images_name, const char* labels_name) {
  RawSplit split{read_idx(dir / images_name), read_idx(dir / labels_name), dir / images_name,
                 dir / labels_name};
  if (split.images.dims.size() != 3) {
    fail_fashion_mnist(split.images_path, 3, "images have rank ", split.images.dims.size(),
                       ", expected 3 ([images, rows, columns])");
  }
  if (split.labels.dims.size() != 1) {
    fail_fashion_mnist(split.labels_path, 3, "labels have rank ", split.labels.dims.size(),
                       ", expected 1 ([labels])");
  }
  if (split.images.dims[0] != split.labels.dims[0]) {
    fail_fashion_mnist(split.labels_path, 4, "holds ", split.labels.dims[0], " labels but \"",
                       split.images_path.string(), "\" holds ", split.images.dims[0],
                       " images; expected one label per image");
  }
  // Label i sits after the 8-byte header of a rank-1 IDX file.
  for (std::size_t i = 0; i < split.labels.bytes.size(); ++i) {
    if (split.labels.bytes[i] >= fashion_mnist_classes) {
      fail_fashion_mnist(split.labels_path, 8 + i, "label ", int{split.labels.bytes[i]}, " of image ", i,
                         " is not a class; expected 0 to ", fashion_mnist_classes - 1);
    }
  }
  return split;
}

/// Builds a `Dataset` from raw bytes through a 256-entry table: one lookup per pixel, and every pixel
/// value normalises to the same float in both splits.
[[nodiscard]] inline Dataset make_fashion_mnist_dataset(const RawSplit& split,
                                                        const std::array<float, 256>& table) {
  const std::int64_t count = split.images.dims[0];
  const std::int64_t features = split.images.dims[1] * split.images.dims[2];
  Tensor<float, Host> images = Tensor<float, Host>::uninitialized(Shape{count, features});
  float* out = images.data();
  for (const std::uint8_t pixel : split.images.bytes) *out++ = table[pixel];
  std::vector<std::int32_t> labels(split.labels.bytes.begin(), split.labels.bytes.end());
  return Dataset(std::move(images), std::move(labels), fashion_mnist_classes);
}

}  // namespace detail

/// @brief Loads Fashion-MNIST from `dir`: train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
/// t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (gzip'd or not; read with `read_idx`).
///
/// Pixels are scaled to [0, 1] and standardised with the mean and standard deviation of all training
/// pixels (computed here, not hard-coded); the test set gets the same transform, as it must to stay
/// unseen. Images come out flattened to `[N, rows * columns]`.
///
/// With `normalization`, pixels become `normalization(p / 255.0)` instead: `{.mean = 0.5,
/// .std_dev = 0.5}` gives 2 p / 255 - 1, the [-1, 1] range diffusion models are trained in
/// (`pixel_mean` and `pixel_std` then hold the given values).
///
/// @throws mpx::io_error for a missing directory or file (with how to install the dataset), any
/// corrupt file (see `read_idx`), image and label counts that differ, a label outside 0..9,
/// train and test images of different sizes, or constant training images (nothing to standardise);
/// mpx::invalid_argument for a `normalization` whose mean is not finite or whose deviation is not
/// finite and positive.
[[nodiscard]] inline FashionMnist load_fashion_mnist(
    const std::filesystem::path& dir = default_fashion_mnist_dir(),
    std::optional<InputNormalization> normalization = std::nullopt) {
  if (normalization) normalization->validate("mpx::data::load_fashion_mnist");
  std::error_code status;
  if (!std::filesystem::is_directory(dir, status)) {
    throw io_error(mpx::detail::concat("mpx::data::load_fashion_mnist: directory \"", dir.string(),
                                       "\" not found; ", detail::fashion_mnist_install_hint));
  }
  const detail::RawSplit train =
      detail::read_fashion_mnist_split(dir, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz");
  const detail::RawSplit test =
      detail::read_fashion_mnist_split(dir, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz");
  if (test.images.dims[1] != train.images.dims[1] || test.images.dims[2] != train.images.dims[2]) {
    detail::fail_fashion_mnist(test.images_path, 8, "images are ", test.images.dims[1], "x",
                               test.images.dims[2], " but the training images are ", train.images.dims[1],
                               "x", train.images.dims[2], "; expected the same size");
  }

  // Integer sums are exact and order-independent, so the statistics are identical on every machine.
  std::uint64_t sum = 0;
  std::uint64_t sum_of_squares = 0;
  for (const std::uint8_t pixel : train.images.bytes) {
    sum += pixel;
    sum_of_squares += std::uint64_t{pixel} * pixel;
  }
  const auto n = static_cast<double>(train.images.bytes.size());
  const double mean = static_cast<double>(sum) / n;
  const double variance = static_cast<double>(sum_of_squares) / n - mean * mean;
  if (!(variance > 0.0)) {
    detail::fail_fashion_mnist(train.images_path, 16, "every training pixel is ", mean,
                               "; expected varying pixels to standardise");
  }

  FashionMnist result;
  result.pixel_mean = normalization ? normalization->mean : mean / 255.0;
  result.pixel_std = normalization ? normalization->std_dev : std::sqrt(variance) / 255.0;
  const InputNormalization applied = result.input_normalization();
  std::array<float, 256> table{};
  for (int pixel = 0; pixel < 256; ++pixel) table[static_cast<std::size_t>(pixel)] = applied(pixel / 255.0);
  result.train = detail::make_fashion_mnist_dataset(train, table);
  result.test = detail::make_fashion_mnist_dataset(test, table);
  return result;
}

}  // namespace mpx::data
