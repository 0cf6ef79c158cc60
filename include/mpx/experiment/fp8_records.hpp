// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `experiment::Fp8Record`: a model's FP8 diagnostics (nn/fp8_statistics.hpp) as records, a
/// row per layer, tensor and sampling step, for `write_csv` and scripts/plot_fp8.gp.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/hana/define_struct.hpp>

#include "mpx/nn/fp8_statistics.hpp"

namespace mpx::experiment {

/// @brief One FP8 tensor of one layer over the steps up to `step` since the previous record.
struct Fp8Record {
  /// The columns: precision, step, layer, tensor, format, amax, scale, saturated_share,
  /// flushed_share, values (`nn::Fp8TensorStatistics`'s fields, with the run's precision and step).
  BOOST_HANA_DEFINE_STRUCT(Fp8Record, (std::string, precision), (std::int64_t, step), (std::string, layer),
                           (std::string, tensor), (std::string, format), (double, amax), (float, scale),
                           (double, saturated_share), (double, flushed_share), (double, values));
};

/// @brief Appends a record per FP8 tensor of `model` (`nn::take_fp8_statistics`, which restarts the
/// counts) for the steps up to `step`; appends nothing for a model that does not collect them.
template <class Model>
void append_fp8_records(Model& model, std::string_view precision, std::int64_t step,
                        std::vector<Fp8Record>& records) {
  for (nn::Fp8TensorStatistics& s : nn::take_fp8_statistics(model)) {
    records.push_back({std::string(precision), step, std::move(s.layer), std::move(s.tensor),
                       std::move(s.format), s.amax, s.scale, s.saturated_share, s.flushed_share, s.values});
  }
}

}  // namespace mpx::experiment
