// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The schema of mpx's safetensors files: their metadata (`Metadata`, the `mpx.format` and
/// `mpx.format_version` values, the keys mpx reserves, the scaler's fields), the model description
/// they carry and how a load compares it, and the typed reading of metadata values. Checkpoints
/// (checkpoint.hpp) and weight files (weights.hpp) share it.

#include <charconv>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/io/description_differences.hpp"
#include "mpx/io/json.hpp"
#include "mpx/io/model_json.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/policy/loss_scale_update.hpp"

namespace mpx::io {

/// @brief String-to-string metadata, as safetensors' `__metadata__` holds it.
using Metadata = std::map<std::string, std::string>;

/// @brief The value of checkpoint metadata key `mpx.format`.
inline constexpr std::string_view checkpoint_format = "mpx.checkpoint";
/// @brief The value of checkpoint metadata key `mpx.format_version`.
inline constexpr std::string_view checkpoint_format_version = "1";
/// @brief The value of metadata key `mpx.format` in a file `save_weights` wrote (its
/// `mpx.format_version` is `checkpoint_format_version`).
inline constexpr std::string_view weights_format = "mpx.weights";

/// @brief How `load_weights` and `load_checkpoint` treat a file.
struct LoadOptions {
  /// @brief Load a file whose model description (its `model` metadata) differs from the model's —
  /// another activation, LayerNorm epsilon, head count, dropout probability, a layer of another kind
  /// — as long as its tensors fit: the descriptions are then not compared. Off by default, so that
  /// weights trained for one network do not load silently into another of the same shapes;
  /// precision never has to agree.
  bool allow_description_mismatch = false;
  /// @brief `load_weights` only: set the master weights from the checkpoint's weight average (its
  /// `ema.<parameter>` tensors, `Trainer::keep_weight_average`) instead of its weights, for
  /// evaluation or sampling with the averaged model. Buffers (BatchNorm's running statistics), which
  /// are not averaged, still come from the file's own. Off by default; `load_checkpoint` refuses it
  /// (a trainer that keeps an average restores it).
  bool weight_average = false;
};

/// @brief The prefix of a checkpoint's weight average tensors: the average of parameter
/// "layers.0.weight" is saved as "ema.layers.0.weight" (as diffusers' `EMAModel` state is kept apart
/// from the model's), with metadata `ema.decay`, `ema.warmup` and `ema.updates`.
inline constexpr std::string_view weight_average_prefix = "ema.";

namespace detail {

using mpx::detail::concat;

using mpx::detail::exact_text;

/// Parses what `exact_text` wrote; false for anything else (including trailing characters).
template <class T>
[[nodiscard]] bool parse_exact(std::string_view text, T& value) {
  if (text.empty()) return false;
  const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
  return status == std::errc() && end == text.data() + text.size();
}

/// Reads typed metadata fields, collecting every missing or unreadable one instead of stopping at
/// the first.
class MetadataReader {
 public:
  MetadataReader(const Metadata& metadata, std::vector<std::string>& problems)
      : metadata_(metadata), problems_(problems) {}

  template <class T>
  T get(const std::string& key) {
    T value{};
    const auto it = metadata_.find(key);
    if (it == metadata_.end()) {
      problems_.push_back(concat("metadata \"", key, "\" is missing"));
    } else if (!parse_exact(it->second, value)) {
      problems_.push_back(concat("metadata \"", key, "\" = \"", it->second, "\" is not a valid ",
                                 std::is_floating_point_v<T> ? "number" : "integer"));
    }
    return value;
  }

 private:
  const Metadata& metadata_;
  std::vector<std::string>& problems_;
};

/// The scaler fields in the order of `LossScalerState`, with their keys.
template <class F>
void for_each_scaler_field(LossScalerState& s, F&& f) {
  f("scaler.scale", s.scale);
  f("scaler.growth_factor", s.growth_factor);
  f("scaler.backoff_factor", s.backoff_factor);
  f("scaler.growth_interval", s.growth_interval);
  f("scaler.growth_tracker", s.growth_tracker);
  f("scaler.hysteresis_tracker", s.hysteresis_tracker);
  f("scaler.steps_taken", s.steps_taken);
  f("scaler.steps_skipped", s.steps_skipped);
  f("scaler.backoffs", s.backoffs);
}

/// Keys mpx writes itself; a caller's extra metadata may not use them.
[[nodiscard]] inline bool is_reserved_key(std::string_view key) {
  return key == "mpx.format" || key == "mpx.format_version" || key == "precision" || key == "model" ||
         key == "step" || key == "optimizer" || key.starts_with("optimizer.") || key.starts_with("scaler.") ||
         key.starts_with(weight_average_prefix);
}

/// The metadata every mpx file starts with: `extra` (which may not use a reserved key; `caller`
/// names the function in the message), the format, the precision and the model's description.
template <class Model>
[[nodiscard]] Metadata file_metadata(const char* caller, std::string_view format, const Model& model,
                                     const Metadata& extra) {
  Metadata metadata;
  for (const auto& [key, value] : extra) {
    if (is_reserved_key(key)) {
      throw invalid_argument(
          concat(caller, ": extra metadata key \"", key, "\" is reserved for mpx's own fields"));
    }
    metadata.emplace(key, value);
  }
  metadata["mpx.format"] = format;
  metadata["mpx.format_version"] = checkpoint_format_version;
  metadata["precision"] = Model::precision::name;
  if constexpr (nn::DescribableModel<Model>) metadata["model"] = model_json(model);
  return metadata;
}

/// Adds a problem for each difference between the file's model description and `model`'s (see
/// io/description_differences.hpp), unless `options` allows them; returns the note the error then
/// ends with (empty when there is none). Nothing is compared when the file holds no description (a
/// file from another tool, or from mpx before files described their model, format version 1 as
/// now) or the model cannot describe itself.
template <class Model>
[[nodiscard]] std::string check_model_description([[maybe_unused]] const Metadata& metadata,
                                                  [[maybe_unused]] const Model& model,
                                                  [[maybe_unused]] const LoadOptions& options,
                                                  [[maybe_unused]] std::vector<std::string>& problems) {
  if constexpr (nn::DescribableModel<Model>) {
    const auto saved = metadata.find("model");
    if (options.allow_description_mismatch || saved == metadata.end()) return {};
    std::vector<std::string> differences;
    try {
      differences = description_differences(json::parse(saved->second, "metadata \"model\""),
                                            json::parse(model_json(model)));
    } catch (const io_error& e) {
      differences.emplace_back(e.what());
    }
    if (differences.empty()) return {};
    problems.insert(problems.end(), differences.begin(), differences.end());
    return "(the file's metadata \"model\" describes another model than this one; "
           "LoadOptions{.allow_description_mismatch = true} loads it anyway if its tensors fit)";
  }
  return {};
}

/// Adds a problem unless the file's `mpx.format_version` is the one this mpx reads (checkpoints and
/// weights files share it).
inline void check_format_version(const Metadata& metadata, std::vector<std::string>& problems) {
  const auto version = metadata.find("mpx.format_version");
  if (version != metadata.end() && version->second == checkpoint_format_version) return;
  problems.push_back(
      concat("metadata \"mpx.format_version\" is ",
             version == metadata.end() ? std::string("missing") : "\"" + version->second + "\"",
             "; this mpx reads version ", checkpoint_format_version));
}

}  // namespace detail

}  // namespace mpx::io
