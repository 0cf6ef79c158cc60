// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `save_checkpoint` / `load_checkpoint`: a whole training state in one safetensors file,
/// written atomically, loaded all-or-nothing.
///
/// Tensors (see docs/checkpoints.md):
/// - `<parameter>`: the master weights under `Model::for_each_parameter`'s names ("layers.0.weight"),
///   as F32 (F64 for fp64 masters; fp16/bf16 masters are widened to F32, which is exact);
/// - `optimizer.<parameter>.<slot>`: each allocated optimizer state slot under PyTorch's name
///   (`momentum_buffer` for SGD, `exp_avg` and `exp_avg_sq` for AdamW), in the gradient type.
///
/// `__metadata__` (all strings): `mpx.format` = "mpx.checkpoint", `mpx.format_version` = "1",
/// `precision`, `step`, `optimizer`, `optimizer.steps`, `optimizer.lr`, `optimizer.rounding_seed`
/// (the seed of stochastic updates of fp16/bf16 masters), `scaler.policy` and
/// `scaler.<field>` for the nine fields of `LossScalerState`, plus whatever the caller adds
/// (for instance `batcher_state`'s `data.*` keys). Numbers are written so that they read back exactly
/// (shortest round-trip decimal); the scaler's factors are doubles, and a file written while they
/// were floats (`0.3f` as "0.3") loads too, its decimal read as a double.

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpx/data/batcher.hpp"
#include "mpx/error.hpp"
#include "mpx/io/safetensors.hpp"
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
  return key == "mpx.format" || key == "mpx.format_version" || key == "precision" || key == "step" ||
         key == "optimizer" || key.starts_with("optimizer.") || key.starts_with("scaler.");
}

/// Copies tensor `entry` of `file` into `tensor`, converting to its element type.
template <class T>
void convert_into_tensor(const SafetensorsFile& file, const TensorEntry& entry, Tensor<T, Host>& tensor) {
  convert_into(entry.dtype, file.data(entry), tensor.data(), static_cast<std::size_t>(tensor.numel()));
}

}  // namespace detail

/// @brief Saves the training state of `trainer` (model weights, optimizer state and settings, loss
/// scaler, step count) and `extra` metadata to `path`, atomically: the file is either the previous
/// one or the new one, never a mix, whatever happens (crash, kill, full disk).
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
  Metadata metadata;
  for (const auto& [key, value] : extra) {
    if (detail::is_reserved_key(key)) {
      throw invalid_argument(mpx::detail::concat("mpx::io::save_checkpoint: extra metadata key \"", key,
                                                 "\" is reserved for mpx's own fields"));
    }
    metadata.emplace(key, value);
  }
  metadata["mpx.format"] = checkpoint_format;
  metadata["mpx.format_version"] = checkpoint_format_version;
  metadata["precision"] = Model::precision::name;
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
  std::vector<TensorToWrite> states;
  trainer.model().for_each_parameter([&](std::string_view name, auto& p) {
    using Master = typename std::remove_cvref_t<decltype(p)>::master_element;
    using Grad = typename std::remove_cvref_t<decltype(p)>::grad_element;
    static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(p.master())>::device_type, Host>,
                  "mpx::io::save_checkpoint: checkpoints are saved from host tensors");
    const std::vector<std::int64_t> shape = detail::extents_of(p.shape());
    if constexpr (std::is_same_v<Master, float> || std::is_same_v<Master, double>) {
      tensors.push_back(
          {std::string(name), detail::saved_dtype<Master>, shape, std::as_bytes(p.master().values())});
    } else {
      auto& wide = widened.emplace_back(static_cast<std::size_t>(p.master().numel()));
      for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<float>(p.master().values()[i]);
      tensors.push_back({std::string(name), Dtype::F32, shape, std::as_bytes(std::span<const float>(wide))});
    }
    for (std::size_t slot = 0; slot < Names::slots.size(); ++slot) {
      if (!p.has_state(static_cast<int>(slot))) continue;
      std::string state_name = "optimizer.";
      state_name.append(name).append(".").append(Names::slots[slot]);
      states.push_back({std::move(state_name), detail::saved_dtype<Grad>, shape,
                        std::as_bytes(std::span<const Grad>(p.state(static_cast<int>(slot)).values()))});
    }
  });
  tensors.insert(tensors.end(), states.begin(), states.end());
  save_safetensors(path, tensors, metadata);
}

/// @brief Loads a checkpoint written by `save_checkpoint` into `trainer` and returns its metadata
/// (so that the caller can restore its own keys, e.g. with `restore_batcher`).
///
/// Everything is validated before anything changes: a file that is corrupt, or that does not fit the
/// model — missing, unexpected, wrongly shaped or non-floating tensors, unreadable metadata, an
/// invalid scaler state or learning rate — throws one `mpx::io_error` listing every problem, and the
/// trainer, model and optimizer are left exactly as they were.
///
/// Weights and optimizer state convert to the model's types (round to nearest where narrower), so a
/// model trained under one precision resumes under another. The scaler state is restored only when
/// the file's `scaler.policy` is the trainer's; otherwise the trainer keeps its fresh scaler (an fp16
/// run resumed from bf16 starts dynamic scaling at its initial scale, not at bf16's 1).
/// The optimizer's hyper-parameters other than lr come from the optimizer as constructed.
template <class Model, class Loss, class Optimizer, class Scaling>
Metadata load_checkpoint(const std::filesystem::path& path,
                         Trainer<Model, Loss, Optimizer, Scaling>& trainer) {
  using Names = optimizer_state_names<Optimizer>;
  using mpx::detail::concat;
  const SafetensorsFile file = load_safetensors(path);
  const Metadata& metadata = file.metadata();
  std::vector<std::string> problems;

  // ---- metadata ----
  const auto format = metadata.find("mpx.format");
  if (format == metadata.end() || format->second != checkpoint_format) {
    problems.push_back("metadata \"mpx.format\" is not \"mpx.checkpoint\" (not an mpx checkpoint)");
  } else if (const auto version = metadata.find("mpx.format_version");
             version == metadata.end() || version->second != checkpoint_format_version) {
    problems.push_back(
        concat("metadata \"mpx.format_version\" is ",
               version == metadata.end() ? std::string("missing") : "\"" + version->second + "\"",
               "; this mpx reads version ", checkpoint_format_version));
  }
  detail::MetadataReader read(metadata, problems);
  const auto step = read.template get<std::int64_t>("step");
  const auto optimizer_steps = read.template get<std::int64_t>("optimizer.steps");
  const auto lr = read.template get<double>("optimizer.lr");
  const auto rounding_seed = read.template get<std::uint64_t>("optimizer.rounding_seed");
  if (step < 0) problems.push_back(concat("metadata \"step\" = ", step, " is negative"));
  if (optimizer_steps < 0)
    problems.push_back(concat("metadata \"optimizer.steps\" = ", optimizer_steps, " is negative"));
  auto optimizer_options = trainer.optimizer().options();
  optimizer_options.lr = lr;
  try {
    Optimizer::validate(optimizer_options);
  } catch (const invalid_argument& e) {
    problems.push_back(concat("metadata \"optimizer.lr\": ", e.what()));
  }
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
  trainer.model().for_each_parameter([&](std::string_view name, auto& p) {
    const std::vector<std::int64_t> shape = detail::extents_of(p.shape());
    const auto check = [&](const std::string& tensor_name) {
      expected.push_back(tensor_name);
      const TensorEntry* entry = file.find(tensor_name);
      if (entry == nullptr) {
        problems.push_back(
            concat("missing tensor \"", tensor_name, "\" of shape ", detail::shape_text(shape)));
        return;
      }
      if (!detail::is_floating(entry->dtype)) {
        problems.push_back(concat("tensor \"", tensor_name, "\" has dtype ", dtype_name(entry->dtype),
                                  ", expected a floating-point dtype (F32, F64, F16 or BF16)"));
      }
      if (!std::equal(shape.begin(), shape.end(), entry->shape.begin(), entry->shape.end())) {
        problems.push_back(concat("tensor \"", tensor_name, "\" has shape ", detail::shape_text(entry->shape),
                                  " in the file, ", detail::shape_text(shape), " in the model"));
      }
    };
    check(std::string(name));
    for (std::size_t slot = 0; slot < Names::slots.size(); ++slot) {
      if (!p.has_state(static_cast<int>(slot))) continue;
      std::string state_name = "optimizer.";
      check(state_name.append(name).append(".").append(Names::slots[slot]));
    }
  });
  for (const auto& [name, entry] : file.tensors()) {
    if (std::find(expected.begin(), expected.end(), name) == expected.end()) {
      problems.push_back(concat("unexpected tensor \"", name, "\" of shape ", detail::shape_text(entry.shape),
                                " (not in the model",
                                name.starts_with("optimizer.") ? " or its optimizer's state" : "", ")"));
    }
  }
  if (!problems.empty()) {
    std::string message =
        concat("mpx::io::load_checkpoint: \"", path.string(), "\" does not fit this trainer (",
               problems.size(), problems.size() == 1 ? " problem" : " problems", "); nothing was loaded:");
    for (const std::string& problem : problems) message.append("\n  - ").append(problem);
    throw io_error(message);
  }

  // ---- commit: nothing below can fail (every target tensor exists and has the right size) ----
  trainer.model().for_each_parameter([&](std::string_view name, auto& p) {
    const TensorEntry& weights = *file.find(name);
    detail::convert_into_tensor(file, weights, p.master());
    p.refresh_compute_copy();
    for (std::size_t slot = 0; slot < Names::slots.size(); ++slot) {
      if (!p.has_state(static_cast<int>(slot))) continue;
      std::string state_name = "optimizer.";
      state_name.append(name).append(".").append(Names::slots[slot]);
      detail::convert_into_tensor(file, *file.find(state_name), p.state(static_cast<int>(slot)));
    }
  });
  trainer.optimizer().set_lr(lr);
  trainer.optimizer().set_rounding_seed(rounding_seed);
  trainer.optimizer().set_steps(optimizer_steps);
  if (restore_scaler) trainer.scaler().load_state(scaler.state());
  trainer.set_steps(step);
  return metadata;
}

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
  if (problems.empty() && seed != batcher.options().seed) {
    problems.push_back(mpx::detail::concat("metadata \"data.seed\" = ", seed, " but the batcher's seed is ",
                                           batcher.options().seed));
  }
  if (!problems.empty()) {
    std::string message = "mpx::io::restore_batcher:";
    for (const std::string& problem : problems) message.append(" ").append(problem).append(";");
    throw io_error(message);
  }
  batcher.resume(epoch, position);
}

}  // namespace mpx::io
