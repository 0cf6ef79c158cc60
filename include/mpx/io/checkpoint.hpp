// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Checkpoints and weight files: `save_checkpoint` / `load_checkpoint` keep a whole training
/// state in one safetensors file, written atomically, loaded all-or-nothing; `save_weights` /
/// `load_weights` keep only the master weights, for a bare model of any precision.
///
/// Tensors (see docs/checkpoints.md):
/// - `<parameter>`: the master weights under `Model::for_each_parameter`'s names ("layers.0.weight"),
///   as F32 (F64 for fp64 masters; fp16/bf16 masters are widened to F32, which is exact);
/// - `optimizer.<parameter>.<slot>` (checkpoints only): each allocated optimizer state slot under
///   PyTorch's name (`momentum_buffer` for SGD, `exp_avg` and `exp_avg_sq` for AdamW), in the
///   gradient type.
///
/// `__metadata__` (all strings): `mpx.format` = "mpx.checkpoint" (or "mpx.weights"),
/// `mpx.format_version` = "1", `precision`, `model` (the model's layers as JSON, see
/// io/model_json.hpp; written when the model can describe itself), and in checkpoints `step`,
/// `optimizer`, `optimizer.steps`, `optimizer.lr`, `optimizer.rounding_seed` (the seed of
/// stochastic updates of fp16/bf16 masters), `scaler.policy` and `scaler.<field>` for the nine fields
/// of `LossScalerState`, plus whatever the caller adds (for instance `batcher_state`'s `data.*` keys).
/// Numbers are written so that they read back exactly (shortest round-trip decimal); the scaler's
/// factors are doubles, and a file written while they were floats (`0.3f` as "0.3") loads too, its
/// decimal read as a double.

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpx/data/batcher.hpp"
#include "mpx/data/input_normalization.hpp"
#include "mpx/data/text_windows.hpp"
#include "mpx/error.hpp"
#include "mpx/io/description_differences.hpp"
#include "mpx/io/json.hpp"
#include "mpx/io/model_json.hpp"
#include "mpx/io/safetensors.hpp"
#include "mpx/log.hpp"
#include "mpx/nn/description.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/optim/adamw.hpp"
#include "mpx/optim/sgd.hpp"
#include "mpx/train/loss_scaler.hpp"
#include "mpx/train/trainer.hpp"

namespace mpx::io {

/// @brief String-to-string metadata, as safetensors' `__metadata__` holds it.
using Metadata = std::map<std::string, std::string>;

/// @brief What a checkpoint calls an optimizer and its state slots; specialise it for your own
/// optimizer (slot i of each parameter is saved as `optimizer.<parameter>.<slots[i]>`).
template <class Optimizer>
struct optimizer_state_names;

/// @brief SGD's names: its one slot is PyTorch's `momentum_buffer`.
template <class Model>
struct optimizer_state_names<optim::SGD<Model>> {
  static constexpr std::string_view optimizer = "SGD";                        ///< metadata `optimizer`
  static constexpr std::array<std::string_view, 1> slots{"momentum_buffer"};  ///< slot names
};

/// @brief AdamW's names: PyTorch's `exp_avg` and `exp_avg_sq`.
template <class Model>
struct optimizer_state_names<optim::AdamW<Model>> {
  static constexpr std::string_view optimizer = "AdamW";                            ///< metadata `optimizer`
  static constexpr std::array<std::string_view, 2> slots{"exp_avg", "exp_avg_sq"};  ///< slot names
};

/// @brief The value of checkpoint metadata key `mpx.format`.
inline constexpr std::string_view checkpoint_format = "mpx.checkpoint";
/// @brief The value of checkpoint metadata key `mpx.format_version`.
inline constexpr std::string_view checkpoint_format_version = "1";
/// @brief The value of metadata key `mpx.format` in a file `save_weights` wrote (its
/// `mpx.format_version` is `checkpoint_format_version`).
inline constexpr std::string_view weights_format = "mpx.weights";

/// @brief What `load_checkpoint` loaded besides the weights, the step count and the metadata.
struct LoadedCheckpoint {
  /// @brief The file's metadata, so that the caller can restore its own keys (e.g. with
  /// `restore_batcher`).
  Metadata metadata;
  /// @brief Whether the optimizer's state (its slots, update count, learning rate and rounding
  /// seed) came from the file. False when the file was saved with another optimizer, or with a
  /// setting that changes which state it keeps (SGD with momentum and without); the optimizer then
  /// starts from its initial state.
  bool optimizer_restored = true;
  /// @brief Why the optimizer state was not restored, naming both optimizers (the message also
  /// logged through `mpx::log` as a warning); empty when it was restored.
  std::string optimizer_warning;
  /// @brief Whether the loss scaler's state came from the file (it does when the file's
  /// `scaler.policy` is the trainer's).
  bool scaler_restored = true;
};

/// @brief How `load_weights` and `load_checkpoint` treat a file.
struct LoadOptions {
  /// @brief Load a file whose model description (its `model` metadata) differs from the model's —
  /// another activation, LayerNorm epsilon, head count, dropout probability, a layer of another kind
  /// — as long as its tensors fit: the descriptions are then not compared. Off by default, so that
  /// weights trained for one network do not load silently into another of the same shapes;
  /// precision never has to agree.
  bool allow_description_mismatch = false;
};

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

/// The safetensors dtype a host element is saved as.
template <class T>
constexpr Dtype saved_dtype = std::is_same_v<T, double> ? Dtype::F64 : Dtype::F32;

/// Converts `count` elements of a floating-point `dtype` into `out` (rounding to nearest where the
/// target is narrower).
template <class T>
void convert_into(Dtype dtype, std::span<const std::byte> bytes, T* out, std::size_t count) {
  using Tag = tag_of_t<T>;
  const std::byte* in = bytes.data();
  for (std::size_t i = 0; i < count; ++i) {
    switch (dtype) {
      case Dtype::F64: {
        double v;
        std::memcpy(&v, in + 8 * i, 8);
        out[i] = round_to<Tag>(v);
        break;
      }
      case Dtype::F32: {
        float v;
        std::memcpy(&v, in + 4 * i, 4);
        out[i] = round_to<Tag>(v);
        break;
      }
      case Dtype::F16:
      case Dtype::BF16: {
        std::uint16_t b;
        std::memcpy(&b, in + 2 * i, 2);
        const float v = dtype == Dtype::F16 ? static_cast<float>(from_bits<Eigen::half>(b))
                                            : static_cast<float>(from_bits<Eigen::bfloat16>(b));
        out[i] = round_to<Tag>(v);
        break;
      }
      default: break;  // rejected before conversion
    }
  }
}

[[nodiscard]] inline bool is_floating(Dtype dtype) noexcept {
  return dtype == Dtype::F64 || dtype == Dtype::F32 || dtype == Dtype::F16 || dtype == Dtype::BF16;
}

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
         key == "step" || key == "optimizer" || key.starts_with("optimizer.") || key.starts_with("scaler.");
}

/// Copies tensor `entry` of `file` into `tensor`, converting to its element type.
template <class T>
void convert_into_tensor(const SafetensorsFile& file, const TensorEntry& entry, Tensor<T, Host>& tensor) {
  convert_into(entry.dtype, file.data(entry), tensor.data(), static_cast<std::size_t>(tensor.numel()));
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

/// Appends `model`'s master weights to `tensors`, under their parameter names; 16-bit masters are
/// widened to fp32 into `widened`, which must outlive the write.
template <class Model>
void append_master_weights(Model& model, std::vector<TensorToWrite>& tensors,
                           std::vector<std::vector<float>>& widened) {
  model.for_each_parameter([&](std::string_view name, auto& p) {
    using Master = typename std::remove_cvref_t<decltype(p)>::master_element;
    static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(p.master())>::device_type, Host>,
                  "mpx::io: checkpoints and weight files are saved from and loaded into host tensors");
    const std::vector<std::int64_t> shape = extents_of(p.shape());
    if constexpr (std::is_same_v<Master, float> || std::is_same_v<Master, double>) {
      tensors.push_back({std::string(name), saved_dtype<Master>, shape, std::as_bytes(p.master().values())});
    } else {
      auto& wide = widened.emplace_back(static_cast<std::size_t>(p.master().numel()));
      for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<float>(p.master().values()[i]);
      tensors.push_back({std::string(name), Dtype::F32, shape, std::as_bytes(std::span<const float>(wide))});
    }
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
                              ", expected a floating-point dtype (F32, F64, F16 or BF16)"));
  }
  if (!std::equal(shape.begin(), shape.end(), entry->shape.begin(), entry->shape.end())) {
    problems.push_back(concat("tensor \"", name, "\" has shape ", shape_text(entry->shape), " in the file, ",
                              shape_text(shape), " in the model"));
  }
}

/// Checks every parameter of `model` with `check_tensor`.
template <class Model>
void check_master_weights(const SafetensorsFile& file, Model& model, std::vector<std::string>& expected,
                          std::vector<std::string>& problems) {
  model.for_each_parameter([&](std::string_view name, auto& p) {
    check_tensor(file, std::string(name), extents_of(p.shape()), expected, problems);
  });
}

/// Adds a problem for each tensor of `file` not in `expected`, except those `ignored(name)` accepts.
template <class Ignored>
void check_unexpected(const SafetensorsFile& file, const std::vector<std::string>& expected, Ignored ignored,
                      std::vector<std::string>& problems) {
  for (const auto& [name, entry] : file.tensors()) {
    if (std::find(expected.begin(), expected.end(), name) != expected.end() || ignored(name)) continue;
    problems.push_back(concat("unexpected tensor \"", name, "\" of shape ", shape_text(entry.shape),
                              " (not in the model",
                              name.starts_with("optimizer.") ? " or its optimizer's state" : "", ")"));
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

/// Copies the file's master weights into `model` (checked by `check_master_weights` first) and
/// refreshes the compute copies.
template <class Model>
void load_master_weights(const SafetensorsFile& file, Model& model) {
  model.for_each_parameter([&](std::string_view name, auto& p) {
    convert_into_tensor(file, *file.find(name), p.master());
    p.refresh_compute_copy();
  });
}

/// "exp_avg, exp_avg_sq", or "no state".
inline std::string slot_list(const std::vector<std::string>& slots) {
  if (slots.empty()) return "no state";
  std::string out = "state ";
  for (std::size_t i = 0; i < slots.size(); ++i) out.append(i == 0 ? "" : ", ").append(slots[i]);
  return out;
}

/// Calls f("optimizer.<parameter>.<slot name>", state tensor) for every allocated optimizer state
/// slot of `model`, in the order the file lists them (PyTorch's slot names, from `Names`).
template <class Names, class Model, class F>
void for_each_optimizer_state(Model& model, F&& f) {
  model.for_each_parameter([&](std::string_view name, auto& p) {
    for (std::size_t slot = 0; slot < Names::slots.size(); ++slot) {
      if (!p.has_state(static_cast<int>(slot))) continue;
      std::string state_name = "optimizer.";
      state_name.append(name).append(".").append(Names::slots[slot]);
      f(state_name, p.state(static_cast<int>(slot)));
    }
  });
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

/// @brief Saves the training state of `trainer` (model weights, optimizer state and settings, loss
/// scaler, step count), the model's description and `extra` metadata to `path`, atomically: the file
/// is either the previous one or the new one, never a mix, whatever happens (crash, kill, full disk).
///
/// @code
/// mpx::io::save_checkpoint("run.safetensors", trainer, mpx::io::batcher_state(batcher));
/// @endcode
/// @throws mpx::invalid_argument when `extra` uses a key mpx writes itself; mpx::io_error when the
/// file cannot be written (the previous file is then untouched).
template <class Model, class Loss, class Optimizer, class Scaling>
void save_checkpoint(const std::filesystem::path& path, Trainer<Model, Loss, Optimizer, Scaling>& trainer,
                     const Metadata& extra = {}) {
  using Names = optimizer_state_names<Optimizer>;
  Metadata metadata =
      detail::file_metadata("mpx::io::save_checkpoint", checkpoint_format, trainer.model(), extra);
  metadata["step"] = detail::exact_text(trainer.steps());
  metadata["optimizer"] = Names::optimizer;
  metadata["optimizer.steps"] = detail::exact_text(trainer.optimizer().steps());
  metadata["optimizer.lr"] = detail::exact_text(trainer.optimizer().options().lr);
  metadata["optimizer.rounding_seed"] = detail::exact_text(trainer.optimizer().options().rounding_seed);
  metadata["scaler.policy"] = Scaling::name;
  LossScalerState scaler = trainer.scaler().state();
  detail::for_each_scaler_field(
      scaler, [&](const char* key, auto value) { metadata[key] = detail::exact_text(value); });

  std::vector<TensorToWrite> tensors;
  std::vector<std::vector<float>> widened;  // 16-bit masters, widened to fp32
  detail::append_master_weights(trainer.model(), tensors, widened);
  detail::for_each_optimizer_state<Names>(trainer.model(), [&](const std::string& state_name, auto& state) {
    using Grad = typename std::remove_cvref_t<decltype(state)>::value_type;
    tensors.push_back({state_name, detail::saved_dtype<Grad>, detail::extents_of(state.shape()),
                       std::as_bytes(std::span<const Grad>(state.values()))});
  });
  save_safetensors(path, tensors, metadata);
}

/// @brief Loads a checkpoint written by `save_checkpoint` into `trainer`; returns the file's
/// metadata and what of the optimizer and scaler state was restored.
///
/// Everything is validated before anything changes: a file that is corrupt, or that does not fit the
/// model — missing, unexpected, wrongly shaped or non-floating tensors, a model description other
/// than the model's (as `load_weights`; `options.allow_description_mismatch` allows it), unreadable
/// metadata, an invalid scaler state or learning rate — throws one `mpx::io_error` listing every
/// problem, and the trainer, model and optimizer are left exactly as they were.
///
/// Weights and optimizer state convert to the model's types (round to nearest where narrower), so a
/// model trained under one precision resumes under another. The scaler state is restored only when
/// the file's `scaler.policy` is the trainer's; otherwise the trainer keeps its fresh scaler (an fp16
/// run resumed from bf16 starts dynamic scaling at its initial scale, not at bf16's 1).
/// The optimizer's hyper-parameters other than lr come from the optimizer as constructed.
///
/// A checkpoint saved with another optimizer (AdamW, loaded with SGD), or with a setting that
/// changes which state the optimizer keeps (SGD with momentum, loaded into SGD without), still loads
/// the weights, the step count and the scaler: the optimizer then starts from its initial state
/// (state zero, update count 0, its own learning rate and rounding seed), the file's optimizer
/// tensors are ignored, and a warning naming both optimizers goes to `mpx::log` and into the
/// result's `optimizer_warning`.
template <class Model, class Loss, class Optimizer, class Scaling>
LoadedCheckpoint load_checkpoint(const std::filesystem::path& path,
                                 Trainer<Model, Loss, Optimizer, Scaling>& trainer,
                                 const LoadOptions& options = {}) {
  using Names = optimizer_state_names<Optimizer>;
  using mpx::detail::concat;
  const SafetensorsFile file = load_safetensors(path);
  const Metadata& metadata = file.metadata();
  std::vector<std::string> problems;

  // ---- metadata ----
  const auto format = metadata.find("mpx.format");
  if (format == metadata.end() || format->second != checkpoint_format) {
    problems.push_back("metadata \"mpx.format\" is not \"mpx.checkpoint\" (not an mpx checkpoint)");
  } else {
    detail::check_format_version(metadata, problems);
  }
  const std::string note = detail::check_model_description(metadata, trainer.model(), options, problems);
  detail::MetadataReader read(metadata, problems);
  const auto step = read.template get<std::int64_t>("step");
  const auto optimizer_steps = read.template get<std::int64_t>("optimizer.steps");
  const auto lr = read.template get<double>("optimizer.lr");
  const auto rounding_seed = read.template get<std::uint64_t>("optimizer.rounding_seed");
  if (step < 0) problems.push_back(concat("metadata \"step\" = ", step, " is negative"));
  if (optimizer_steps < 0)
    problems.push_back(concat("metadata \"optimizer.steps\" = ", optimizer_steps, " is negative"));
  const auto saved_optimizer = metadata.find("optimizer");
  if (saved_optimizer == metadata.end()) problems.push_back("metadata \"optimizer\" is missing");

  // ---- optimizer: restored when the file's is of the same kind and keeps the same state slots ----
  std::vector<std::string> own_slots;  // the slots this optimizer keeps, in its order
  for (std::size_t slot = 0; slot < Names::slots.size(); ++slot) {
    bool kept = false;
    trainer.model().for_each_parameter(
        [&](std::string_view, auto& p) { kept = kept || p.has_state(static_cast<int>(slot)); });
    if (kept) own_slots.emplace_back(Names::slots[slot]);
  }
  std::vector<std::string> saved_slots;  // the slot names of the file's optimizer.<parameter>.<slot>
  for (const auto& [name, entry] : file.tensors()) {
    if (!name.starts_with("optimizer.")) continue;
    std::string slot = name.substr(name.rfind('.') + 1);
    if (std::find(saved_slots.begin(), saved_slots.end(), slot) == saved_slots.end())
      saved_slots.push_back(std::move(slot));
  }
  const std::string saved_name = saved_optimizer == metadata.end() ? "?" : saved_optimizer->second;
  const bool same_kind = saved_name == Names::optimizer;
  const bool same_slots =
      std::is_permutation(own_slots.begin(), own_slots.end(), saved_slots.begin(), saved_slots.end());
  const bool restore_optimizer = same_kind && same_slots;
  if (restore_optimizer) {
    auto optimizer_options = trainer.optimizer().options();
    optimizer_options.lr = lr;
    try {
      Optimizer::validate(optimizer_options);
    } catch (const invalid_argument& e) {
      problems.push_back(concat("metadata \"optimizer.lr\": ", e.what()));
    }
  }

  // ---- scaler ----
  const auto policy = metadata.find("scaler.policy");
  const bool restore_scaler = policy != metadata.end() && policy->second == Scaling::name;
  LossScalerState scaler_state;
  detail::for_each_scaler_field(scaler_state, [&](const char* key, auto& field) {
    field = read.template get<std::remove_reference_t<decltype(field)>>(key);
  });
  LossScaler<Scaling> scaler(trainer.scaler().options());
  if (restore_scaler) {
    try {
      scaler.load_state(scaler_state);
    } catch (const invalid_argument& e) {
      problems.push_back(concat("metadata \"scaler.*\": ", e.what()));
    }
  }

  // ---- tensors: every expected one present, floating, of the model's shape; nothing else ----
  std::vector<std::string> expected;
  detail::check_master_weights(file, trainer.model(), expected, problems);
  if (restore_optimizer) {
    detail::for_each_optimizer_state<Names>(trainer.model(), [&](const std::string& state_name, auto& state) {
      detail::check_tensor(file, state_name, detail::extents_of(state.shape()), expected, problems);
    });
  }
  // The state of an optimizer that is not restored is not read, so not checked either.
  detail::check_unexpected(
      file, expected,
      [&](const std::string& name) { return !restore_optimizer && name.starts_with("optimizer."); },
      problems);
  detail::throw_if_problems("mpx::io::load_checkpoint", path, "this trainer", problems, note);

  // ---- commit: nothing below can fail (every target tensor exists and has the right size) ----
  detail::load_master_weights(file, trainer.model());
  LoadedCheckpoint loaded;
  loaded.metadata = metadata;
  loaded.scaler_restored = restore_scaler;
  if (restore_optimizer) {
    detail::for_each_optimizer_state<Names>(trainer.model(), [&](const std::string& state_name, auto& state) {
      detail::convert_into_tensor(file, *file.find(state_name), state);
    });
    trainer.optimizer().set_lr(lr);
    trainer.optimizer().set_rounding_seed(rounding_seed);
    trainer.optimizer().set_steps(optimizer_steps);
  } else {
    // The optimizer starts over, as constructed: its state belonged to other weights.
    trainer.model().for_each_parameter([&](std::string_view, auto& p) {
      for (int slot = 0; slot < static_cast<int>(Names::slots.size()); ++slot) {
        if (p.has_state(slot)) p.state(slot).set_zero();
      }
    });
    trainer.optimizer().set_steps(0);
    loaded.optimizer_restored = false;
    loaded.optimizer_warning = concat(
        "mpx::io::load_checkpoint: \"", path.string(), "\": the optimizer state was not restored: ",
        same_kind ? concat("the checkpoint's ", saved_name, " keeps ", detail::slot_list(saved_slots),
                           ", this trainer's ", Names::optimizer, " keeps ", detail::slot_list(own_slots),
                           " (a setting that changes its state, such as SGD's momentum, differs)")
                  : concat("the checkpoint was saved with optimizer ", saved_name, " (",
                           detail::slot_list(saved_slots), "), this trainer's optimizer is ",
                           Names::optimizer, " (", detail::slot_list(own_slots), ")"),
        "; loaded the weights, the step count (", step, ")", restore_scaler ? " and the scaler" : "", "; ",
        Names::optimizer, " starts from its initial state (update count 0, its own learning rate ",
        trainer.optimizer().options().lr, ")");
    mpx::log(LogLevel::Warning, loaded.optimizer_warning);
  }
  if (restore_scaler) trainer.scaler().load_state(scaler.state());
  trainer.set_steps(step);
  return loaded;
}

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
  std::vector<std::vector<float>> widened;  // 16-bit masters, widened to fp32
  detail::append_master_weights(model, tensors, widened);
  save_safetensors(path, tensors, metadata);
}

/// @brief Loads the master weights of a checkpoint (`save_checkpoint`), a weights file
/// (`save_weights`) or any safetensors file holding the model's parameters under their names into
/// `model`, whatever precision either was trained in, and returns the file's metadata.
///
/// Each parameter's master weights are set (converted to the master type: exact from F32 into fp32
/// masters, rounded to nearest where narrower) and its compute copy refreshed. A checkpoint's
/// optimizer state (`optimizer.*` tensors) is ignored; no trainer, optimizer or loss is involved.
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
  // Files without mpx.format come from other tools; mpx's own must be a format this mpx reads.
  if (const auto format = metadata.find("mpx.format"); format != metadata.end()) {
    if (format->second != checkpoint_format && format->second != weights_format) {
      problems.push_back(concat("metadata \"mpx.format\" is \"", format->second, "\", expected \"",
                                checkpoint_format, "\" or \"", weights_format, "\""));
    } else {
      detail::check_format_version(metadata, problems);
    }
  }
  const std::string note = detail::check_model_description(metadata, model, options, problems);
  std::vector<std::string> expected;
  detail::check_master_weights(file, model, expected, problems);
  detail::check_unexpected(
      file, expected, [](const std::string& name) { return name.starts_with("optimizer."); }, problems);
  detail::throw_if_problems("mpx::io::load_weights", path, "this model", problems, note);
  detail::load_master_weights(file, model);
  return metadata;
}

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
