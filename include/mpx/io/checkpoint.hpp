// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Checkpoints: `save_checkpoint` / `load_checkpoint` keep a whole training state in one
/// safetensors file, written atomically, loaded all-or-nothing. Including this header brings every
/// part of mpx's files: weight files (weights.hpp), the metadata schema (file_format.hpp), optimizer
/// names (optimizer_names.hpp), dtype decoding (dtype.hpp) and data positions (data_state.hpp).
///
/// Tensors (see docs/checkpoints.md):
/// - `<parameter>`: the master weights under `Model::for_each_parameter`'s names ("layers.0.weight"),
///   as F32 (F64 for fp64 masters; narrower masters are widened to F32, which is exact);
/// - `optimizer.<parameter>.<slot>`: each allocated optimizer state slot under PyTorch's name
///   (`momentum_buffer` for SGD, `exp_avg` and `exp_avg_sq` for AdamW), in the gradient type;
/// - `ema.<parameter>`: the weight average of a trainer that keeps one (`keep_weight_average`), in
///   the gradient type, with metadata `ema.decay`, `ema.warmup` ("true"/"false") and `ema.updates`.
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
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/io/data_state.hpp"
#include "mpx/io/dtype.hpp"
#include "mpx/io/file_format.hpp"
#include "mpx/io/optimizer_names.hpp"
#include "mpx/io/safetensors.hpp"
#include "mpx/io/weights.hpp"
#include "mpx/log.hpp"
#include "mpx/train/loss_scaler.hpp"
#include "mpx/train/trainer.hpp"

namespace mpx::io {

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
  /// @brief Whether the trainer's weight average (its tensors and update count) came from the file;
  /// false for a trainer that keeps none.
  bool weight_average_restored = false;
  /// @brief When the file's `ema.decay` or `ema.warmup` differ from the trainer's (which the
  /// average goes on with), a message naming both (also logged through `mpx::log` as a warning):
  /// the run then no longer continues as the saved one would have; empty otherwise.
  std::string weight_average_warning;
};

/// @brief Saves the training state of `trainer` (model weights, optimizer state and settings, loss
/// scaler, step count, and its weight average if it keeps one), the model's description and `extra`
/// metadata to `path`, atomically: the file
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
  std::vector<std::vector<float>> widened;  // narrower masters, widened to fp32
  detail::append_master_weights(trainer.model(), tensors, widened);
  detail::for_each_optimizer_state<Names>(trainer.model(), [&](const std::string& state_name, auto& state) {
    using Grad = typename std::remove_cvref_t<decltype(state)>::value_type;
    tensors.push_back({state_name, detail::saved_dtype<Grad>, detail::extents_of(state.shape()),
                       std::as_bytes(std::span<const Grad>(state.values()))});
  });
  if (const auto* average = trainer.weight_average(); average != nullptr) {
    metadata["ema.decay"] = detail::exact_text(average->options().decay);
    metadata["ema.warmup"] = average->options().warmup ? "true" : "false";
    metadata["ema.updates"] = detail::exact_text(average->updates());
    average->for_each([&](std::string_view name, const auto& tensor) {
      using Value = typename std::remove_cvref_t<decltype(tensor)>::value_type;
      tensors.push_back({detail::concat(weight_average_prefix, name), detail::saved_dtype<Value>,
                         detail::extents_of(tensor.shape()), std::as_bytes(tensor.values())});
    });
  }
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
/// A trainer that keeps a weight average (`keep_weight_average`, called before loading) restores it
/// from the file's `ema.<parameter>` tensors and `ema.updates`, bit for bit; its decay and warmup
/// stay the trainer's (where they differ from the file's, `weight_average_warning` says so). A file without
/// an average, loaded into such a trainer, or a file with one, loaded into a trainer without, throws (the
/// average would be lost or invented); a missing or misshapen `ema.*` tensor is listed by name like any
/// other. To start an average on a run saved without one, load the checkpoint first, then call
/// `keep_weight_average`.
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
  if (options.weight_average) {
    throw invalid_argument(
        concat("mpx::io::load_checkpoint(\"", path.string(),
               "\"): LoadOptions::weight_average is load_weights' option; a trainer restores "
               "its average when it keeps one (keep_weight_average before loading)"));
  }
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

  // ---- weight average: the file has one exactly when the trainer keeps one ----
  auto* const average = trainer.weight_average();
  std::int64_t saved_average_tensors = 0;
  for (const auto& [name, entry] : file.tensors())
    saved_average_tensors += name.starts_with(weight_average_prefix) ? 1 : 0;
  const bool file_has_average = saved_average_tensors > 0 || metadata.contains("ema.updates");
  std::int64_t average_updates = 0;
  if (average != nullptr && !file_has_average) {
    std::string first;
    average->for_each([&](std::string_view name, const auto&) {
      if (first.empty()) first = concat(weight_average_prefix, name);
    });
    problems.push_back(
        concat("this trainer keeps a weight average (keep_weight_average) but the checkpoint "
               "holds none (no tensor \"",
               first,
               "\", no metadata \"ema.updates\"): it was saved without one; load it "
               "before calling keep_weight_average, which then starts from the loaded weights"));
  } else if (average != nullptr) {
    average_updates = read.template get<std::int64_t>("ema.updates");
    if (average_updates < 0)
      problems.push_back(concat("metadata \"ema.updates\" = ", average_updates, " is negative"));
    average->for_each([&](std::string_view name, const auto& tensor) {
      detail::check_tensor(file, concat(weight_average_prefix, name), detail::extents_of(tensor.shape()),
                           expected, problems);
    });
  } else if (file_has_average) {
    problems.push_back(concat("the checkpoint holds a weight average (", saved_average_tensors,
                              " \"ema.*\" tensors) but this trainer keeps none: call "
                              "trainer.keep_weight_average(...) before loading to restore it (or load the "
                              "weights alone with mpx::io::load_weights)"));
  }
  // The state of an optimizer that is not restored is not read, so not checked either; nor is an
  // average the trainer does not keep (reported above).
  detail::check_unexpected(
      file, expected,
      [&](const std::string& name) {
        return (!restore_optimizer && name.starts_with("optimizer.")) ||
               (average == nullptr && name.starts_with(weight_average_prefix));
      },
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
  if (average != nullptr) {
    average->for_each([&](std::string_view name, auto& tensor) {
      detail::convert_into_tensor(file, *file.find(concat(weight_average_prefix, name)), tensor);
    });
    average->set_updates(average_updates);
    loaded.weight_average_restored = true;
    const std::string decay = detail::exact_text(average->options().decay);
    const std::string warmup = average->options().warmup ? "true" : "false";
    const auto saved = [&](const char* key) {
      const auto found = metadata.find(key);
      return found == metadata.end() ? std::string("(none)") : found->second;
    };
    if (saved("ema.decay") != decay || saved("ema.warmup") != warmup) {
      loaded.weight_average_warning =
          concat("mpx::io::load_checkpoint(\"", path.string(),
                 "\"): the weight average was saved with decay ", saved("ema.decay"), ", warmup ",
                 saved("ema.warmup"), "; it goes on with this trainer's decay ", decay, ", warmup ", warmup);
      mpx::log(LogLevel::Warning, loaded.weight_average_warning);
    }
  }
  if (restore_scaler) trainer.scaler().load_state(scaler.state());
  trainer.set_steps(step);
  return loaded;
}

}  // namespace mpx::io
