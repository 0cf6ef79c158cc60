// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `InputNormalization`: the standardisation a model's inputs went through in training, so
/// that inference can apply the same one (weight files carry it: `io::input_normalization_metadata`).

#include <cmath>

#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::data {

/// @brief Each raw input feature x becomes (x - mean) / std_dev, as `torchvision`'s
/// `Normalize(mean, std)`; one mean and one standard deviation for every feature, as the data sets
/// here standardise (`FashionMnist::input_normalization()`: raw features are pixels scaled to [0, 1],
/// p / 255, as torchvision's `ToTensor` gives them).
struct InputNormalization {
  double mean = 0.0;     ///< subtracted from every raw feature
  double std_dev = 1.0;  ///< then divided by; finite and positive

  /// @brief (x - mean) / std_dev in double, rounded once to float: the value training saw for the
  /// raw feature x (`load_fashion_mnist` computes its pixels so, from p / 255.0).
  [[nodiscard]] float operator()(double x) const noexcept { return static_cast<float>((x - mean) / std_dev); }

  /// @brief Normalises every element of `x` in place (each read as a double first).
  void apply(Tensor<float, Host>& x) const {
    for (float& value : x.values()) value = (*this)(value);
  }

  /// @brief Throws `mpx::invalid_argument` naming `where` and the values unless mean is finite and
  /// std_dev finite and positive.
  void validate(const char* where) const {
    if (!std::isfinite(mean) || !std::isfinite(std_dev) || !(std_dev > 0.0)) {
      throw invalid_argument(mpx::detail::concat(
          where, ": input normalisation mean = ", mpx::detail::exact_text(mean), ", std_dev = ",
          mpx::detail::exact_text(std_dev), " is invalid; expected a finite mean and a finite std_dev > 0"));
    }
  }
};

}  // namespace mpx::data
