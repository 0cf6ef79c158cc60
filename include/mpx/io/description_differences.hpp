// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `description_differences`: where a file's model description (its `model` metadata, see
/// io/model_json.hpp) and a model's differ, so that `load_weights` and `load_checkpoint` refuse
/// ReLU-trained weights for a GELU model of the same shapes instead of loading them without a word.
///
/// Each difference names the layer as error messages do ("layers.3.layers.0.block.layers.1
/// (CausalSelfAttention)": its path, which is also its parameters' prefix, and its kind), the setting
/// and both values. Precision is not compared: weights load into a model of any precision
/// (docs/checkpoints.md), so neither a layer's `precision` nor a hand-written `Cast`'s element types
/// (`from`, `to`), which follow from the precisions, has to agree.

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/io/json.hpp"

namespace mpx::io {

namespace detail {

// A setting as a message shows it: strings quoted, numbers and flags as written.
[[nodiscard]] inline std::string setting_text(const json::Value& value) {
  switch (value.kind) {
    case json::Value::Kind::string: return json::quote(value.text);
    case json::Value::Kind::number: return value.text;
    case json::Value::Kind::boolean: return value.boolean ? "true" : "false";
    case json::Value::Kind::null: return "null";
    case json::Value::Kind::array: return mpx::detail::concat("a list of ", value.items.size());
    case json::Value::Kind::object: return "an object";
  }
  return "?";
}

// Two settings agree when they are the same string or flag, or the same number however written.
[[nodiscard]] inline bool same_setting(const json::Value& a, const json::Value& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == json::Value::Kind::number && a.text != b.text) {
    double x = 0.0, y = 0.0;
    const auto read = [](const std::string& text, double& out) {
      return std::from_chars(text.data(), text.data() + text.size(), out).ec == std::errc();
    };
    return read(a.text, x) && read(b.text, y) && x == y;
  }
  return a.kind == json::Value::Kind::boolean ? a.boolean == b.boolean : a.text == b.text;
}

[[nodiscard]] inline std::string kind_of(const json::Value& layer) {
  const json::Value* kind = layer.find("kind");
  return kind != nullptr && kind->kind == json::Value::Kind::string ? kind->text : "?";
}

// Settings that need not agree: the kind (compared first) and the precision's.
[[nodiscard]] inline bool not_compared(std::string_view kind, std::string_view key) {
  return key == "kind" || key == "precision" || (kind == "Cast" && (key == "from" || key == "to"));
}

inline void compare_layer_lists(const json::Value& file, const json::Value& model, const std::string& path,
                                const std::string& key, std::vector<std::string>& differences);

// Compares one layer's settings, and its inner layers through `compare_layer_lists`.
inline void compare_layer(const json::Value& file, const json::Value& model, const std::string& path,
                          std::vector<std::string>& differences) {
  const std::string kind = kind_of(model);
  if (kind_of(file) != kind) {
    differences.push_back(
        mpx::detail::concat(path, " is a ", kind_of(file), " in the file, a ", kind, " in the model"));
    return;  // the other settings belong to other layers
  }
  const std::string label = mpx::detail::concat(path, " (", kind, ")");
  for (std::size_t i = 0; i < model.keys.size(); ++i) {
    const std::string& key = model.keys[i];
    const json::Value& ours = model.items[i];
    if (not_compared(kind, key)) continue;
    const json::Value* theirs = file.find(key);
    if (theirs == nullptr) {
      differences.push_back(
          mpx::detail::concat(label, ": ", key, " ", setting_text(ours), " in the model, not in the file"));
    } else if (ours.kind == json::Value::Kind::array && theirs->kind == json::Value::Kind::array) {
      compare_layer_lists(*theirs, ours, path, key, differences);
    } else if (!same_setting(*theirs, ours)) {
      differences.push_back(mpx::detail::concat(label, ": ", key, " ", setting_text(*theirs),
                                                " in the file, ", setting_text(ours), " in the model"));
    }
  }
  for (std::size_t i = 0; i < file.keys.size(); ++i) {
    if (not_compared(kind, file.keys[i]) || model.find(file.keys[i]) != nullptr) continue;
    differences.push_back(mpx::detail::concat(label, ": ", file.keys[i], " ", setting_text(file.items[i]),
                                              " in the file, not in the model"));
  }
}

// Compares the inner layers under `key` of the layer at `path`, naming them as their labels and
// parameters are: a Sequential's "layers" are "<path>.layers.<i>", a Residual's one "block" is
// "<path>.block".
inline void compare_layer_lists(const json::Value& file, const json::Value& model, const std::string& path,
                                const std::string& key, std::vector<std::string>& differences) {
  const std::size_t count = std::max(file.items.size(), model.items.size());
  const std::string base = path.empty() ? key : path + "." + key;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string inner = key == "layers" || count != 1 ? mpx::detail::concat(base, ".", i) : base;
    if (i >= model.items.size()) {
      differences.push_back(
          mpx::detail::concat(inner, " (", kind_of(file.items[i]), ") is in the file, not in the model"));
    } else if (i >= file.items.size()) {
      differences.push_back(
          mpx::detail::concat(inner, " (", kind_of(model.items[i]), ") is in the model, not in the file"));
    } else {
      compare_layer(file.items[i], model.items[i], inner, differences);
    }
  }
}

}  // namespace detail

/// @brief Where the model description `file` (a file's `model` metadata, parsed) differs from
/// `model` (`json::parse(model_json(model))`): one line per difference, naming the layer by its path
/// and kind, the setting and both values, e.g.
/// `layers.1 (Linear): activation "ReLU" in the file, "GELU" in the model`; empty when they agree.
/// Precision settings are not compared (see the file's comment). A layer of another kind is one
/// difference (its settings are not compared further); a layer only one side has is one too.
[[nodiscard]] inline std::vector<std::string> description_differences(const json::Value& file,
                                                                      const json::Value& model) {
  const json::Value* file_layers = file.find("layers");
  if (file.kind != json::Value::Kind::object || file_layers == nullptr ||
      file_layers->kind != json::Value::Kind::array) {
    return {"the file's model description is not {\"kind\": ..., \"layers\": [...]}"};
  }
  std::vector<std::string> differences;
  if (detail::kind_of(file) != detail::kind_of(model)) {
    differences.push_back(mpx::detail::concat("the model is a ", detail::kind_of(file), " in the file, a ",
                                              detail::kind_of(model), " here"));
  }
  json::Value none;  // a model without layers
  none.kind = json::Value::Kind::array;
  const json::Value* model_layers = model.find("layers");
  detail::compare_layer_lists(*file_layers, model_layers != nullptr ? *model_layers : none, "", "layers",
                              differences);
  return differences;
}

}  // namespace mpx::io
