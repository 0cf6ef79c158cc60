// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Where the data was, as file metadata: a batcher's or text windows' position (to resume
/// dealing the same batches) and the input normalisation a model was trained with (so that a weights
/// file is all inference needs).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mpx/data/batcher.hpp"
#include "mpx/data/input_normalization.hpp"
#include "mpx/data/text_windows.hpp"
#include "mpx/error.hpp"
#include "mpx/io/file_format.hpp"

namespace mpx::io {

namespace detail {
// Throws io_error naming `where` and every problem (a missing key, a seed other than the data
// source's, which would deal other batches) unless there are none.
inline void check_data_seed(const char* where, std::uint64_t saved_seed, std::uint64_t seed,
                            std::vector<std::string>& problems) {
  if (problems.empty() && saved_seed != seed) {
    problems.push_back(
        mpx::detail::concat("metadata \"data.seed\" = ", saved_seed, " but the data's seed is ", seed));
  }
  if (!problems.empty()) {
    std::string message = mpx::detail::concat(where, ":");
    for (const std::string& problem : problems) message.append(" ").append(problem).append(";");
    throw io_error(message);
  }
}
}  // namespace detail

/// @brief A batcher's position as checkpoint metadata: `data.seed`, `data.epoch`, `data.position`.
[[nodiscard]] inline Metadata batcher_state(const data::Batcher& batcher) {
  return {{"data.seed", detail::exact_text(batcher.options().seed)},
          {"data.epoch", detail::exact_text(batcher.epoch())},
          {"data.position", detail::exact_text(batcher.position())}};
}

/// @brief Moves `batcher` to the position `batcher_state` recorded in `metadata`, so that it deals
/// the same batches the saved run would have dealt next.
/// @throws mpx::io_error when a key is missing or unreadable, or the seed differs from the
/// batcher's (the order would differ); mpx::invalid_argument for a position outside the data set.
inline void restore_batcher(data::Batcher& batcher, const Metadata& metadata) {
  std::vector<std::string> problems;
  detail::MetadataReader read(metadata, problems);
  const auto seed = read.get<std::uint64_t>("data.seed");
  const auto epoch = read.get<std::uint64_t>("data.epoch");
  const auto position = read.get<std::int64_t>("data.position");
  detail::check_data_seed("mpx::io::restore_batcher", seed, batcher.options().seed, problems);
  batcher.resume(epoch, position);
}

/// @brief The input normalisation a model was trained with as metadata, `input.mean` and
/// `input.std` (exact decimals), to pass to `save_weights` or `save_checkpoint` so that the file is
/// all inference needs: `input_normalization` reads it back.
/// @code
/// const auto data = mpx::data::load_fashion_mnist();
/// // ... train `model` on data.train ...
/// const mpx::io::Metadata normalization = mpx::io::input_normalization_metadata(data.input_normalization());
/// mpx::io::save_weights(model, "mlp.safetensors", normalization);
/// @endcode
/// @throws mpx::invalid_argument unless the mean is finite and the standard deviation finite and > 0.
[[nodiscard]] inline Metadata input_normalization_metadata(const data::InputNormalization& normalization) {
  normalization.validate("mpx::io::input_normalization_metadata");
  return {{"input.mean", detail::exact_text(normalization.mean)},
          {"input.std", detail::exact_text(normalization.std_dev)}};
}

/// @brief The input normalisation `input_normalization_metadata` recorded in `metadata` (what
/// `load_weights` returns, or `LoadedCheckpoint::metadata`); nothing when the file holds none.
/// @code
/// const auto normalization = mpx::io::input_normalization(mpx::io::load_weights(model, "mlp.safetensors"));
/// if (normalization) normalization->apply(images);
/// @endcode
/// @throws mpx::io_error when only one of the two keys is present, or a value is not a number or not
/// a valid normalisation.
[[nodiscard]] inline std::optional<data::InputNormalization> input_normalization(const Metadata& metadata) {
  if (!metadata.contains("input.mean") && !metadata.contains("input.std")) return std::nullopt;
  std::vector<std::string> problems;
  detail::MetadataReader read(metadata, problems);
  const data::InputNormalization normalization{read.get<double>("input.mean"), read.get<double>("input.std")};
  if (problems.empty()) {
    try {
      normalization.validate("metadata \"input.mean\", \"input.std\"");
    } catch (const invalid_argument& e) {
      problems.emplace_back(e.what());
    }
  }
  if (!problems.empty()) {
    std::string message = "mpx::io::input_normalization:";
    for (const std::string& problem : problems) message.append(" ").append(problem).append(";");
    throw io_error(message);
  }
  return normalization;
}

/// @brief Random text windows' position as checkpoint metadata: `data.seed`, `data.position` (the
/// index of the next batch).
[[nodiscard]] inline Metadata text_windows_state(const data::TextWindows& windows) {
  return {{"data.seed", detail::exact_text(windows.options().seed)},
          {"data.position", detail::exact_text(windows.position())}};
}

/// @brief Moves `windows` to the position `text_windows_state` recorded in `metadata`, so that they
/// deal the batches the saved run would have dealt next.
/// @throws mpx::io_error when a key is missing or unreadable, or the seed differs from the windows'.
inline void restore_text_windows(data::TextWindows& windows, const Metadata& metadata) {
  std::vector<std::string> problems;
  detail::MetadataReader read(metadata, problems);
  const auto seed = read.get<std::uint64_t>("data.seed");
  const auto position = read.get<std::uint64_t>("data.position");
  detail::check_data_seed("mpx::io::restore_text_windows", seed, windows.options().seed, problems);
  windows.set_position(position);
}

}  // namespace mpx::io
