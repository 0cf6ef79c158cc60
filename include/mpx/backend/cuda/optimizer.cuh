// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Optimizer updates on the GPU: one pass that reads the (unscaled) gradients, updates the
/// optimizer state and the master weights, and refreshes the compute copies, for all the parameters
/// of a step in one launch per type combination (multi_tensor.cuh). Mirrors cpu/optimizer.hpp
/// through the same per-element functions (backend/optimizer_math.hpp), so the two backends give
/// the same bits.
///
/// Two forms of each update: the training step's, which reads its learning rate, update count, skip
/// flag and clipping coefficient from an `UpdateControl` in device memory (no host synchronisation;
/// capturable in a CUDA graph), and the CPU's signature with host values, for `Backend<Cuda>`.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/optimizer.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <concepts>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/multi_tensor.cuh"
#include "mpx/backend/optimizer_math.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/backend/update_control.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// Elements one block of an update kernel works on: 16 per thread, so that a small model's few
// tensors still make a grid that fills the device (each element is independent: the partition does
// not change any result).
inline constexpr std::int64_t update_chunk = 4096;

// One parameter of an SGD update: its tensors and its rounding (per parameter: the stochastic
// rounding's stream holds the parameter's index).
template <class M, class C, class G, class Rounding>
struct SgdTensors {
  using master_type = M;
  using compute_type = C;
  using grad_type = G;
  M* master;
  C* compute;  // null: the compute weights are the master weights
  const G* grad;
  G* momentum;  // null without momentum
  Rounding rounding;
};

// One parameter of an AdamW update.
template <class M, class C, class G, class Rounding>
struct AdamWTensors {
  using master_type = M;
  using compute_type = C;
  using grad_type = G;
  M* master;
  C* compute;
  const G* grad;
  G* exp_avg;
  G* exp_avg_sq;
  Rounding rounding;
};

// Tensors one launch takes: what fits in the portable 4 KB of parameters beside the settings and
// the controls: 49 to 64 by the entry's size (49 for AdamW with a per-update stochastic rounding,
// 64 for SGD rounding to nearest).
template <class Entry>
inline constexpr int update_capacity = static_cast<int>((portable_kernel_parameter_bytes - 512) /
                                                        (sizeof(Entry) + 2 * sizeof(std::int64_t)));

template <class Entry>
using UpdateList = TensorChunks<Entry, update_capacity<Entry>, update_chunk>;

// The update's control: the training step's in device memory, or `host` when that is null.
__device__ inline UpdateControl read_control(const UpdateControl& host, const UpdateControl* device) {
  return device != nullptr ? *device : host;
}

// One block per chunk of one parameter; every element runs exactly the CPU's sgd_step and
// store_weight. Nothing happens when the control says skip (the same in every block).
template <class Entry>
__global__ void __launch_bounds__(elementwise_threads)
    sgd_update_kernel(__grid_constant__ const UpdateList<Entry> list, SgdSettings settings,
                      UpdateControl host, const UpdateControl* device) {
  using G = typename Entry::grad_type;
  const UpdateControl control = read_control(host, device);
  if (control.skip != 0) return;
  const auto range = list.range(blockIdx.x);
  const Entry t = list.entries[range.tensor];
  const SgdCoefficients<G> coefficients =
      sgd_coefficients<G>(settings, control.lr, control.optimizer_step == 0);
  const G clip = clip_factor<G>(control);
  const auto round = rounding_at(t.rounding, control.optimizer_step + 1);
  for (std::int64_t i = range.begin + threadIdx.x; i < range.end; i += elementwise_threads) {
    const G g = clipped_gradient(t.grad[i], control, clip);
    const G weight = sgd_step(static_cast<G>(t.master[i]), g,
                              t.momentum != nullptr ? t.momentum + i : nullptr, coefficients);
    mpx::detail::store_weight(t.master, t.compute, i, weight, round);
  }
}

// As sgd_update_kernel. The coefficients come from the control's bias corrections, derived once per
// step where the step's decisions are taken (AdamWBiasCorrections): a few double operations per
// thread, no power, no barrier. (A control without them, which only a caller's own device control
// can be, derives them in every thread: correct, slower.)
template <class Entry>
__global__ void __launch_bounds__(elementwise_threads)
    adamw_update_kernel(__grid_constant__ const UpdateList<Entry> list, AdamWSettings settings,
                        UpdateControl host, const UpdateControl* device) {
  using G = typename Entry::grad_type;
  const UpdateControl control = read_control(host, device);
  if (control.skip != 0) return;
  const auto range = list.range(blockIdx.x);
  const Entry t = list.entries[range.tensor];
  const AdamWCoefficients<G> coefficients = adamw_coefficients<G>(settings, control);
  const G clip = clip_factor<G>(control);
  const auto round = rounding_at(t.rounding, control.optimizer_step + 1);
  for (std::int64_t i = range.begin + threadIdx.x; i < range.end; i += elementwise_threads) {
    const G g = clipped_gradient(t.grad[i], control, clip);
    G m = t.exp_avg[i];
    G v = t.exp_avg_sq[i];
    const G weight = adamw_step(static_cast<G>(t.master[i]), g, m, v, coefficients);
    t.exp_avg[i] = m;
    t.exp_avg_sq[i] = v;
    mpx::detail::store_weight(t.master, t.compute, i, weight, round);
  }
}

// A unique address per type: the key of a group of tensors of one type combination.
template <class T>
inline constexpr char type_key = 0;

// The parameters of one optimizer step, grouped by type combination (one kernel instantiation
// serves one combination), each group filling lists of up to update_capacity tensors. `Launch` has
// `operator()(const UpdateList<Entry>&)`, which queues one kernel.
template <class Launch>
class GroupedUpdates {
 public:
  explicit GroupedUpdates(const Launch& launch) : launch_(launch) {}

  template <class Entry>
  void add(const Entry& entry, std::int64_t numel) {
    group<Entry>().launches.add(entry, numel,
                                [this](const UpdateList<Entry>& list, std::int64_t, bool) { launch_(list); });
  }

  // Launches every group's last list; the object is empty afterwards.
  void queue() {
    for (auto& g : groups_) g->finish(launch_);
    groups_.clear();
  }

 private:
  struct Group {
    virtual ~Group() = default;
    virtual void finish(const Launch& launch) = 0;
    const void* key = nullptr;
  };
  template <class Entry>
  struct Typed final : Group {
    ChunkedLaunches<UpdateList<Entry>> launches;
    void finish(const Launch& launch) override {
      launches.finish([&](const UpdateList<Entry>& list, std::int64_t, bool) { launch(list); });
    }
  };

  template <class Entry>
  Typed<Entry>& group() {
    for (auto& g : groups_) {
      if (g->key == &type_key<Entry>) return static_cast<Typed<Entry>&>(*g);
    }
    auto created = std::make_unique<Typed<Entry>>();
    created->key = &type_key<Entry>;
    Typed<Entry>& result = *created;
    groups_.push_back(std::move(created));
    return result;
  }

  Launch launch_;
  std::vector<std::unique_ptr<Group>> groups_;
};

// Launches an optimizer's kernel over one list of tensors; the settings' type picks the kernel.
template <class Settings>
struct UpdateLaunch {
  Settings settings;
  UpdateControl host;
  const UpdateControl* device;

  template <class Entry>
  void operator()(const UpdateList<Entry>& list) const {
    static_assert(
        sizeof(UpdateList<Entry>) + sizeof(Settings) + sizeof(UpdateControl) + sizeof(const UpdateControl*) <=
            portable_kernel_parameter_bytes,
        "mpx::cuda: an optimizer kernel's parameters exceed 4 KB");
    const auto blocks = static_cast<unsigned int>(list.first_chunk[list.count]);
    if constexpr (std::is_same_v<Settings, SgdSettings>) {
      sgd_update_kernel<Entry><<<blocks, elementwise_threads, 0, stream()>>>(list, settings, host, device);
      MPX_CUDA_CHECK_LAUNCH("mpx::cuda::sgd_update_kernel");
    } else {
      static_assert(std::is_same_v<Settings, AdamWSettings>,
                    "mpx::cuda::UpdateLaunch: SGD or AdamW settings");
      adamw_update_kernel<Entry><<<blocks, elementwise_threads, 0, stream()>>>(list, settings, host, device);
      MPX_CUDA_CHECK_LAUNCH("mpx::cuda::adamw_update_kernel");
    }
  }
};
using SgdLaunch = UpdateLaunch<SgdSettings>;
using AdamWLaunch = UpdateLaunch<AdamWSettings>;

template <Element M, Element C, Element G>
void require_same_shapes(const char* where, const Tensor<M, Cuda>& master, const Tensor<C, Cuda>* compute,
                         const Tensor<G, Cuda>& grad) {
  require_shape(where, "gradient", grad.shape(), master.shape());
  if (compute != nullptr) require_shape(where, "compute copy", compute->shape(), master.shape());
}

template <Element M, Element C, Element G>
void check_sgd(const Tensor<M, Cuda>& master, const Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
               const Tensor<G, Cuda>* momentum_buffer, const SgdSettings& s) {
  require_same_shapes("mpx::cuda::sgd_update", master, compute, grad);
  if (s.momentum != 0.0 && momentum_buffer == nullptr)
    throw invalid_argument("mpx::cuda::sgd_update: momentum is not 0 but the momentum buffer is null");
  if (momentum_buffer != nullptr)
    require_shape("mpx::cuda::sgd_update", "momentum buffer", momentum_buffer->shape(), master.shape());
}

template <Element M, Element C, Element G>
void check_adamw(const Tensor<M, Cuda>& master, const Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                 const Tensor<G, Cuda>& exp_avg, const Tensor<G, Cuda>& exp_avg_sq) {
  require_same_shapes("mpx::cuda::adamw_update", master, compute, grad);
  require_shape("mpx::cuda::adamw_update", "exp_avg", exp_avg.shape(), master.shape());
  require_shape("mpx::cuda::adamw_update", "exp_avg_sq", exp_avg_sq.shape(), master.shape());
}

}  // namespace detail

/// @brief The SGD update of a whole optimizer step as few launches: `add` each parameter (checked
/// at once, as `sgd_update` checks it), then `queue()` launches one kernel per combination of
/// master, compute, gradient and rounding types for up to 49 to 64 parameters each (their pointers in the
/// kernel's parameters; multi_tensor.cuh), instead of one kernel per parameter. Every element runs
/// the CPU's arithmetic (backend/optimizer_math.hpp), so the bits are `cpu::sgd_update`'s, whatever
/// the grouping. Nothing is queued before `queue()`; no synchronisation.
class SgdUpdates {
 public:
  /// @brief A training step's updates under `control` (an `UpdateControl` in device memory, read on
  /// the device: see `sgd_update`).
  SgdUpdates(const SgdSettings& s, const UpdateControl* control)
      : momentum_(s.momentum != 0.0), settings_(s), updates_(detail::SgdLaunch{s, {}, control}) {
    if (control == nullptr) throw invalid_argument("mpx::cuda::sgd_update: the update control is null");
  }
  /// @brief Updates under a control known on the host (the CPU signature's).
  SgdUpdates(const SgdSettings& s, const UpdateControl& host)
      : momentum_(s.momentum != 0.0), settings_(s), updates_(detail::SgdLaunch{s, host, nullptr}) {}

  /// @brief Adds one parameter: `momentum_buffer` may be null when momentum is 0 (and is not read
  /// then); `compute` is the compute copy to refresh (null when the compute weights are the master
  /// weights); `rounding` is `RoundNearest`, `RoundStochastic` or `RoundStochasticPerUpdate`.
  template <Element M, Element C, std::floating_point G, class Rounding>
  void add(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
           Tensor<G, Cuda>* momentum_buffer, const Rounding& rounding) {
    static_assert(
        is_optimizer_rounding<Rounding>,
        "mpx::cuda::sgd_update: Rounding must be RoundNearest, RoundStochastic or RoundStochasticPerUpdate");
    detail::check_sgd(master, compute, grad, momentum_buffer, settings_);
    updates_.add(
        detail::SgdTensors<M, C, G, Rounding>{
            master.data(), compute != nullptr ? compute->data() : nullptr, grad.data(),
            momentum_buffer != nullptr && momentum_ ? momentum_buffer->data() : nullptr, rounding},
        master.numel());
  }

  /// @brief Queues the launches (the object is empty afterwards).
  void queue() { updates_.queue(); }

 private:
  bool momentum_;
  SgdSettings settings_;  // for the checks (the launches keep their own copy)
  detail::GroupedUpdates<detail::SgdLaunch> updates_;
};

/// @brief The AdamW update of a whole optimizer step as few launches; see `SgdUpdates`. The bias
/// corrections are the control's (`AdamWBiasCorrections`, derived once per training step), so no
/// kernel derives a power.
class AdamWUpdates {
 public:
  /// @brief A training step's updates under `control` (device memory; see `adamw_update`).
  AdamWUpdates(const AdamWSettings& s, const UpdateControl* control)
      : updates_(detail::AdamWLaunch{s, {}, control}) {
    if (control == nullptr) throw invalid_argument("mpx::cuda::adamw_update: the update control is null");
  }
  /// @brief Updates under a control known on the host (the CPU signature's); its bias corrections
  /// are derived here, on the host, when it does not hold them.
  AdamWUpdates(const AdamWSettings& s, const UpdateControl& host)
      : updates_(detail::AdamWLaunch{s, with_bias_corrections(s, host), nullptr}) {}

  /// @brief Adds one parameter; `rounding` as for `SgdUpdates::add`.
  template <Element M, Element C, std::floating_point G, class Rounding>
  void add(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
           Tensor<G, Cuda>& exp_avg, Tensor<G, Cuda>& exp_avg_sq, const Rounding& rounding) {
    static_assert(is_optimizer_rounding<Rounding>,
                  "mpx::cuda::adamw_update: Rounding must be RoundNearest, RoundStochastic or "
                  "RoundStochasticPerUpdate");
    detail::check_adamw(master, compute, grad, exp_avg, exp_avg_sq);
    updates_.add(
        detail::AdamWTensors<M, C, G, Rounding>{master.data(), compute != nullptr ? compute->data() : nullptr,
                                                grad.data(), exp_avg.data(), exp_avg_sq.data(), rounding},
        master.numel());
  }

  /// @brief Queues the launches (the object is empty afterwards).
  void queue() { updates_.queue(); }

 private:
  static UpdateControl with_bias_corrections(const AdamWSettings& s, UpdateControl control) {
    if (control.bias_correction1 == 0.0 || control.bias_correction2 == 0.0)
      AdamWBiasCorrections{s.beta1, s.beta2}(control);
    return control;
  }

  detail::GroupedUpdates<detail::AdamWLaunch> updates_;
};

/// @brief The SGD updates of one training step under `control` (device memory); see `SgdUpdates`.
inline SgdUpdates sgd_updates(const SgdSettings& s, const UpdateControl* control) {
  return {s, control};
}
/// @brief The AdamW updates of one training step under `control` (device memory); see
/// `AdamWUpdates`.
inline AdamWUpdates adamw_updates(const AdamWSettings& s, const UpdateControl* control) {
  return {s, control};
}

/// @brief One SGD update of a training step, as `cpu::sgd_update` computes it, with `control` (an
/// `UpdateControl` in device memory) read on the device: nothing happens when `skip`; lr =
/// `control->lr` (settings.lr is not read); the momentum buffer starts when `optimizer_step == 0`;
/// the gradient is multiplied by the clipping factor when `clipped` (in registers: `grad` is not
/// written). `momentum_buffer` may be null when momentum is 0; `compute` is the compute copy to
/// refresh (null when the compute weights are the master weights). `rounding` is `RoundNearest`,
/// `RoundStochastic` or `RoundStochasticPerUpdate` (update number `optimizer_step + 1`). One
/// launch (`SgdUpdates` with one parameter); no synchronisation.
template <Element M, Element C, std::floating_point G, class Rounding>
void sgd_update(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                Tensor<G, Cuda>* momentum_buffer, const SgdSettings& s, const Rounding& rounding,
                const UpdateControl* control) {
  SgdUpdates updates(s, control);
  updates.add(master, compute, grad, momentum_buffer, rounding);
  updates.queue();
}

/// @brief The CPU signature (`cpu::sgd_update`): one SGD step at `s.lr`, the momentum buffer starting
/// when `first_step`, on the same kernel. No synchronisation.
template <Element M, Element C, std::floating_point G, class Rounding = RoundNearest>
void sgd_update(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                Tensor<G, Cuda>* momentum_buffer, bool first_step, const SgdSettings& s,
                const Rounding& rounding = {}) {
  static_assert(std::is_same_v<Rounding, RoundNearest> || std::is_same_v<Rounding, RoundStochastic>,
                "mpx::cuda::sgd_update: Rounding must be RoundNearest or RoundStochastic");
  SgdUpdates updates(s, UpdateControl{.lr = s.lr, .optimizer_step = first_step ? 0 : 1});
  updates.add(master, compute, grad, momentum_buffer, rounding);
  updates.queue();
}

/// @brief One AdamW update of a training step, as `cpu::adamw_update` computes it, with `control`
/// (device memory) read on the device: nothing happens when `skip`; lr = `control->lr` (settings.lr
/// is not read); t = `optimizer_step + 1`, the bias corrections the control's when it holds them;
/// the gradient is multiplied by the clipping factor when `clipped` (in registers). `rounding` as
/// for `sgd_update`. One launch; no synchronisation.
template <Element M, Element C, std::floating_point G, class Rounding>
void adamw_update(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                  Tensor<G, Cuda>& exp_avg, Tensor<G, Cuda>& exp_avg_sq, const AdamWSettings& s,
                  const Rounding& rounding, const UpdateControl* control) {
  AdamWUpdates updates(s, control);
  updates.add(master, compute, grad, exp_avg, exp_avg_sq, rounding);
  updates.queue();
}

/// @brief The CPU signature (`cpu::adamw_update`): one AdamW step number `step` (from 1) at `s.lr`,
/// on the same kernel. No synchronisation.
template <Element M, Element C, std::floating_point G, class Rounding = RoundNearest>
void adamw_update(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                  Tensor<G, Cuda>& exp_avg, Tensor<G, Cuda>& exp_avg_sq, std::int64_t step,
                  const AdamWSettings& s, const Rounding& rounding = {}) {
  static_assert(std::is_same_v<Rounding, RoundNearest> || std::is_same_v<Rounding, RoundStochastic>,
                "mpx::cuda::adamw_update: Rounding must be RoundNearest or RoundStochastic");
  AdamWUpdates updates(s, UpdateControl{.lr = s.lr, .optimizer_step = step - 1});
  updates.add(master, compute, grad, exp_avg, exp_avg_sq, rounding);
  updates.queue();
}

}  // namespace mpx::cuda
