// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Weight files: `save_weights` / `load_weights` keep only a model's master weights (and its
/// description), for a bare model of any precision; and the tensor checks and copies that
/// `load_checkpoint` shares.
///
/// Tensors: `<parameter>`, the master weights under `Model::for_each_parameter`'s names
/// ("layers.0.weight"), as F32 (F64 for fp64 masters; narrower masters are widened to F32, which is
/// exact). A file's floating tensors of any built-in format's dtype load, rounded to nearest into the
/// master type where it is narrower (io/dtype.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/io/dtype.hpp"
#include "mpx/io/file_format.hpp"
#include "mpx/io/safetensors.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/shape.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::io {

namespace detail {

[[nodiscard]] inline std::vector<std::int64_t> extents_of(const Shape& shape) {
  std::vector<std::int64_t> extents;
  for (int d = 0; d < shape.rank(); ++d) extents.push_back(shape[d]);
  return extents;
}

[[nodiscard]] inline std::string shape_text(std::span<const std::int64_t> shape) {
  std::string out = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d != 0) out.append(", ");
    out.append(std::to_string(shape[d]));
  }
  return out.append("]");
}

/// Copies tensor `entry` of `file` into `tensor`, converting to its element type.
template <class T>
void convert_into_tensor(const SafetensorsFile& file, const TensorEntry& entry, Tensor<T, Host>& tensor) {
  convert_into(entry.dtype, file.data(entry), tensor.data(), static_cast<std::size_t>(tensor.numel()));
}

/// Appends `model`'s master weights to `tensors`, under their parameter names; narrower masters are
/// widened to fp32 into `widened`, which must outlive the write.
template <class Model>
void append_master_weights(Model& model, std::vector<TensorToWrite>& tensors,
                           std::vector<std::vector<float>>& widened) {
  model.for_each_parameter([&](std::string_view name, auto& p) {
    using Master = typename std::remove_cvref_t<decltype(p)>::master_element;
    static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(p.master())>::device_type, Host>,
                  "mpx::io: checkpoints and weight files are saved from and loaded into host tensors");
    const std::vector<std::int64_t> shape = extents_of(p.shape());
    if constexpr (std::is_same_v<Master, accumulate_t<Master>>) {  // fp32, fp64: saved as they are
      tensors.push_back({std::string(name), saved_dtype<Master>, shape, std::as_bytes(p.master().values())});
    } else {
      auto& wide = widened.emplace_back(static_cast<std::size_t>(p.master().numel()));
      for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<float>(p.master().values()[i]);
      tensors.push_back({std::string(name), Dtype::F32, shape, std::as_bytes(std::span<const float>(wide))});
    }
  });
  nn::for_each_buffer(model, [&](std::string_view name, auto& buffer) {
    using Element = typename std::remove_cvref_t<decltype(buffer)>::value_type;
    static_assert(std::is_same_v<Element, float> || std::is_same_v<Element, double>,
                  "mpx::io: buffers are saved as they are, in fp32 or fp64");
    tensors.push_back({std::string(name), saved_dtype<Element>, extents_of(buffer.shape()),
                       std::as_bytes(buffer.values())});
  });
}

/// Checks that tensor `name` is in `file`, floating point and of `shape`; records it in `expected`.
inline void check_tensor(const SafetensorsFile& file, const std::string& name,
                         const std::vector<std::int64_t>& shape, std::vector<std::string>& expected,
                         std::vector<std::string>& problems) {
  expected.push_back(name);
  const TensorEntry* entry = file.find(name);
  if (entry == nullptr) {
    problems.push_back(concat("missing tensor \"", name, "\" of shape ", shape_text(shape)));
    return;
  }
  if (!is_floating(entry->dtype)) {
    problems.push_back(concat("tensor \"", name, "\" has dtype ", dtype_name(entry->dtype),
                              ", expected a floating-point dtype (", floating_dtypes(), ")"));
  }
  if (!std::equal(shape.begin(), shape.end(), entry->shape.begin(), entry->shape.end())) {
    problems.push_back(concat("tensor \"", name, "\" has shape ", shape_text(entry->shape), " in the file, ",
                              shape_text(shape), " in the model"));
  }
}

/// Whether buffer `name` is a precision's own state (an FP8 layer's scales and amax history, "fp8_*"):
/// weights trained in another precision carry none, and a model of another precision has none, so
/// such a buffer is loaded when the file has it and otherwise keeps its state (scales of 1), and the
/// file's is ignored when the model has no such buffer. Weights move across precisions either way.
inline bool is_precision_state(std::string_view name) {
  const std::size_t dot = name.rfind('.');
  return name.substr(dot == std::string_view::npos ? 0 : dot + 1).starts_with("fp8_");
}

/// Checks every parameter and buffer of `model` with `check_tensor` (a precision's state only when
/// the file has it); each parameter under its name after `parameter_prefix` (a checkpoint's weight
/// average: "ema.").
template <class Model>
void check_master_weights(const SafetensorsFile& file, Model& model, std::vector<std::string>& expected,
                          std::vector<std::string>& problems, std::string_view parameter_prefix = {}) {
  model.for_each_parameter([&](std::string_view name, auto& p) {
    check_tensor(file, concat(parameter_prefix, name), extents_of(p.shape()), expected, problems);
  });
  nn::for_each_buffer(model, [&](std::string_view name, auto& buffer) {
    if (is_precision_state(name) && file.find(std::string(name)) == nullptr) return;
    check_tensor(file, std::string(name), extents_of(buffer.shape()), expected, problems);
  });
}

/// Adds a problem for each tensor of `file` not in `expected`, except those `ignored(name)` accepts.
template <class Ignored>
void check_unexpected(const SafetensorsFile& file, const std::vector<std::string>& expected, Ignored ignored,
                      std::vector<std::string>& problems) {
  for (const auto& [name, entry] : file.tensors()) {
    if (std::find(expected.begin(), expected.end(), name) != expected.end() || ignored(name) ||
        is_precision_state(name))
      continue;
    problems.push_back(concat("unexpected tensor \"", name, "\" of shape ", shape_text(entry.shape),
                              " (not in the model",
                              name.starts_with("optimizer.") ? " or its optimizer's state" : "", ")"));
  }
}

/// Adds a problem unless the file is a weights file or checkpoint of a version this mpx reads, or a
/// file of another tool (no `mpx.format`).
inline void check_weights_format(const Metadata& metadata, std::vector<std::string>& problems) {
  const auto format = metadata.find("mpx.format");
  if (format == metadata.end()) return;
  if (format->second != checkpoint_format && format->second != weights_format) {
    problems.push_back(concat("metadata \"mpx.format\" is \"", format->second, "\", expected \"",
                              checkpoint_format, "\" or \"", weights_format, "\""));
  } else {
    check_format_version(metadata, problems);
  }
}

/// Throws one `io_error` listing every problem, then `note` on a line of its own when not empty,
/// unless there are no problems.
inline void throw_if_problems(const char* caller, const std::filesystem::path& path, const char* target,
                              const std::vector<std::string>& problems, std::string_view note = {}) {
  if (problems.empty()) return;
  std::string message =
      concat(caller, ": \"", path.string(), "\" does not fit ", target, " (", problems.size(),
             problems.size() == 1 ? " problem" : " problems", "); nothing was loaded:");
  for (const std::string& problem : problems) message.append("\n  - ").append(problem);
  if (!note.empty()) message.append("\n").append(note);
  throw io_error(message);
}

/// Copies the file's master weights (under `parameter_prefix`, as `check_master_weights` checked
/// them first) into `model` and refreshes the compute copies.
template <class Model>
void load_master_weights(const SafetensorsFile& file, Model& model, std::string_view parameter_prefix = {}) {
  model.for_each_parameter([&](std::string_view name, auto& p) {
    convert_into_tensor(file, *file.find(concat(parameter_prefix, name)), p.master());
    p.refresh_compute_copy();
  });
  nn::for_each_buffer(model, [&](std::string_view name, auto& buffer) {
    if (const TensorEntry* entry = file.find(std::string(name)); entry != nullptr) {
      convert_into_tensor(file, *entry, buffer);
    }
  });
}

}  // namespace detail

/// @brief Saves `model`'s master weights (fp32; F64 for fp64 masters), its description and `extra`
/// metadata to `path`, atomically, as `save_checkpoint` does: no trainer, optimizer or loss needed.
/// `load_weights` reads the file back into a model of any precision.
///
/// @code
/// mpx::io::save_weights(model, "mlp.safetensors");
/// @endcode
/// @throws mpx::invalid_argument when `extra` uses a key mpx writes itself; mpx::io_error when the
/// file cannot be written (the previous file is then untouched).
template <class Model>
void save_weights(Model& model, const std::filesystem::path& path, const Metadata& extra = {}) {
  const Metadata metadata = detail::file_metadata("mpx::io::save_weights", weights_format, model, extra);
  std::vector<TensorToWrite> tensors;
  std::vector<std::vector<float>> widened;  // narrower masters, widened to fp32
  detail::append_master_weights(model, tensors, widened);
  save_safetensors(path, tensors, metadata);
}

/// @brief Loads the master weights of a checkpoint (`save_checkpoint`), a weights file
/// (`save_weights`) or any safetensors file holding the model's parameters under their names into
/// `model`, whatever precision either was trained in, and returns the file's metadata.
///
/// Each parameter's master weights are set (converted to the master type: exact from F32 into fp32
/// masters, rounded to nearest where narrower) and its compute copy refreshed. A checkpoint's
/// optimizer state (`optimizer.*` tensors) and weight average (`ema.*`) are ignored; no trainer,
/// optimizer or loss is involved. With `{.weight_average = true}` the parameters come from the
/// checkpoint's weight average instead (`ema.<parameter>`; its plain weights are then ignored), and a
/// file without one throws, naming the missing tensors.
///
/// Everything is validated before any parameter changes: a corrupt file, missing or unexpected
/// tensors, a shape that differs from the model's, a non-floating dtype, an mpx file of another
/// format or version, or a model description (metadata `model`) that differs from the model's in
/// anything but precision throws one `mpx::io_error` that names the path and lists every problem
/// with the tensor or layer and the values, and the model is left exactly as it was. A description
/// that differs loads with `{.allow_description_mismatch = true}`; a file without one (from another
/// tool, or from mpx before files described their model) loads without the comparison.
/// @code
/// auto model = mpx::experiment::mlp3<mpx::fp32>(784, 512, 256, 10);  // trained as bf16_mixed
/// mpx::io::load_weights(model, "run.safetensors");
/// @endcode
template <class Model>
Metadata load_weights(Model& model, const std::filesystem::path& path, const LoadOptions& options = {}) {
  using mpx::detail::concat;
  const SafetensorsFile file = load_safetensors(path);
  const Metadata& metadata = file.metadata();
  std::vector<std::string> problems;
  detail::check_weights_format(metadata, problems);
  const std::string note = detail::check_model_description(metadata, model, options, problems);
  std::vector<std::string> expected;
  const std::string_view prefix = options.weight_average ? weight_average_prefix : std::string_view{};
  detail::check_master_weights(file, model, expected, problems, prefix);
  detail::check_unexpected(
      file, expected,
      [&](const std::string& name) {
        // The weights that were not asked for: the average's, or the plain ones beside it.
        return options.weight_average
                   ? !name.starts_with(weight_average_prefix)
                   : name.starts_with("optimizer.") || name.starts_with(weight_average_prefix);
      },
      problems);
  detail::throw_if_problems("mpx::io::load_weights", path, "this model", problems, note);
  detail::load_master_weights(file, model, prefix);
  return metadata;
}

}  // namespace mpx::io
