// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `load_matching_weights`: the weights of a file that fit a model which is not the file's
/// own (a pretrained encoder's body into a classifier with a new head, as PyTorch's
/// `load_state_dict(strict=False)`), with a report of what was loaded and what was not, and why.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/io/description_differences.hpp"
#include "mpx/io/file_format.hpp"
#include "mpx/io/json.hpp"
#include "mpx/io/model_json.hpp"
#include "mpx/io/safetensors.hpp"
#include "mpx/io/weights.hpp"
#include "mpx/nn/layer.hpp"

namespace mpx::io {

/// @brief What `load_matching_weights` did, tensor by tensor.
struct WeightMatch {
  std::vector<std::string> loaded;       ///< the model's tensors set from the file, by name
  std::vector<std::string> kept;         ///< the model's tensors left as they were: "name: why"
  std::vector<std::string> unused;       ///< the file's tensors nothing took: "name [shape]"
  std::vector<std::string> differences;  ///< where the file's model description differs from the model's

  /// @brief A report of a few lines: how many tensors loaded, then every tensor kept, every tensor
  /// unused and every difference of the descriptions, one per line.
  [[nodiscard]] std::string summary() const {
    std::string text =
        mpx::detail::concat("loaded ", loaded.size(), " of ", loaded.size() + kept.size(), " tensors");
    const auto list = [&](const char* title, const std::vector<std::string>& lines) {
      if (lines.empty()) return;
      text.append(mpx::detail::concat("\n", title, " (", lines.size(), "):"));
      for (const std::string& line : lines) text.append("\n  ").append(line);
    };
    list("kept as they were", kept);
    list("in the file, not loaded", unused);
    list("where the file's model description differs", differences);
    return text;
  }
};

namespace detail {

// The layer path a description difference names ("layers.2 (Linear): ..." -> "layers.2"); empty
// for a difference of the whole model ("the model is a ...", "the file's model description ...").
[[nodiscard]] inline std::string_view difference_path(std::string_view difference) {
  if (difference.starts_with("the ")) return {};
  return difference.substr(0, difference.find(' '));
}

// Whether tensor `name` belongs to the layer at `path` or to a layer inside it.
[[nodiscard]] inline bool is_inside(std::string_view name, std::string_view path) {
  return path.empty() || (name.starts_with(path) && name.size() > path.size() && name[path.size()] == '.');
}

}  // namespace detail

/// @brief Loads, from a weights file or checkpoint, every tensor that fits `model` and leaves the
/// others as they are: pretrained weights into a model that shares only part of the network that
/// made them (an encoder body pretrained under a masked-LM head, loaded into a classifier).
///
/// A tensor of the model (a parameter's master weights, or a buffer) is loaded when the file holds a
/// floating tensor of its name and shape, and, when the file describes its model (metadata `model`),
/// the layer it belongs to and every layer around it are described alike in the file and in the
/// model (`description_differences`: same kinds and settings; precision never has to agree). So a
/// head of another width stays as initialised because its shape differs, and one of the same shape
/// but another activation because its description does. Tensors of another precision's state
/// (`fp8_*`) follow the same rule; a checkpoint's optimizer state and weight average are ignored.
///
/// Returns what happened to every tensor (`WeightMatch::summary()` prints it). Validated before
/// anything changes, as `load_weights`: a corrupt file, an mpx file of another format or version,
/// or a file of which no tensor fits throws `mpx::io_error` naming the path and the reasons, and the
/// model is left exactly as it was.
/// @code
/// auto classifier = mpx::experiment::sequence_classifier<mpx::bf16_mixed>(shape);
/// const mpx::io::WeightMatch match = mpx::io::load_matching_weights(classifier, "pretrained.safetensors");
/// std::cout << match.summary() << "\n";  // loaded 37 of 41 tensors; kept as they were (4): ...
/// @endcode
template <class Model>
WeightMatch load_matching_weights(Model& model, const std::filesystem::path& path) {
  using mpx::detail::concat;
  const SafetensorsFile file = load_safetensors(path);
  const Metadata& metadata = file.metadata();
  std::vector<std::string> problems;
  detail::check_weights_format(metadata, problems);
  detail::throw_if_problems("mpx::io::load_matching_weights", path, "this model", problems);

  WeightMatch match;
  if constexpr (nn::DescribableModel<Model>) {
    if (const auto saved = metadata.find("model"); saved != metadata.end()) {
      try {
        match.differences = description_differences(json::parse(saved->second, "metadata \"model\""),
                                                    json::parse(model_json(model)));
      } catch (const io_error& e) {  // a difference of the whole model: nothing is described alike
        match.differences.push_back(
            mpx::detail::concat("the file's model description cannot be read: ", e.what()));
      }
    }
  }
  // Decides tensor by tensor; the copies wait until every decision is made.
  std::vector<std::string> taken;
  const auto decide = [&](std::string_view name_view, const Shape& shape) {
    const std::string name(name_view);
    const TensorEntry* entry = file.find(name);
    const std::vector<std::int64_t> extents = detail::extents_of(shape);
    std::string why;
    if (entry == nullptr) {
      why = "not in the file";
    } else if (!detail::is_floating(entry->dtype)) {
      why = concat("dtype ", dtype_name(entry->dtype), " in the file, not floating point");
    } else if (!std::equal(extents.begin(), extents.end(), entry->shape.begin(), entry->shape.end())) {
      why = concat(detail::shape_text(entry->shape), " in the file, ", detail::shape_text(extents),
                   " in the model");
    } else {
      for (const std::string& difference : match.differences) {
        if (detail::is_inside(name, detail::difference_path(difference))) {
          why = concat("its layer is described otherwise (", difference, ")");
          break;
        }
      }
    }
    if (entry != nullptr) taken.push_back(name);
    if (why.empty()) {
      match.loaded.push_back(name);
    } else {
      match.kept.push_back(concat(name, ": ", why));
    }
  };
  model.for_each_parameter([&](std::string_view name, auto& p) { decide(name, p.shape()); });
  nn::for_each_buffer(model, [&](std::string_view name, auto& buffer) { decide(name, buffer.shape()); });
  for (const auto& [name, entry] : file.tensors()) {
    if (std::find(taken.begin(), taken.end(), name) != taken.end() || name.starts_with("optimizer.") ||
        name.starts_with(weight_average_prefix))
      continue;
    match.unused.push_back(concat(name, " ", detail::shape_text(entry.shape)));
  }
  if (match.loaded.empty()) {
    problems.push_back(concat("no tensor of the file fits the model (", match.kept.size(), " in the model, ",
                              match.unused.size(), " in the file)"));
    for (std::size_t i = 0; i < match.kept.size() && i < 8; ++i) problems.push_back(match.kept[i]);
    detail::throw_if_problems("mpx::io::load_matching_weights", path, "this model", problems);
  }

  const auto chosen = [&](std::string_view name) {
    return std::find(match.loaded.begin(), match.loaded.end(), name) != match.loaded.end();
  };
  model.for_each_parameter([&](std::string_view name, auto& p) {
    if (!chosen(name)) return;
    detail::convert_into_tensor(file, *file.find(std::string(name)), p.master());
    p.refresh_compute_copy();
  });
  nn::for_each_buffer(model, [&](std::string_view name, auto& buffer) {
    if (chosen(name)) detail::convert_into_tensor(file, *file.find(std::string(name)), buffer);
  });
  return match;
}

}  // namespace mpx::io
