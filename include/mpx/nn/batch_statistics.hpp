// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::StatisticsReducer`: what makes `BatchNorm2d` normalise with the statistics of the
/// whole data-parallel batch (PyTorch's SyncBatchNorm) instead of each rank's own. The gradient syncs
/// implement it (`dist::SyncOptions::sync_batch_norm`); nn knows no MPI or NCCL.

#include <cstdint>
#include <memory>
#include <string_view>
#include <type_traits>

#include "mpx/error.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

/// @brief Sums per-channel values over the ranks of a data-parallel job. `BatchNorm2d` calls it three
/// times per training step: for the sums of x and the sums of squared deviations in forward, and
/// for the sums of dy and dy xhat in backward. Each call is collective: every rank makes the same
/// calls, in the same order, with values of the same size.
/// @tparam Acc the statistics' type (accumulate_t); @tparam Device where they live.
template <class Acc, class Device>
class StatisticsReducer {
 public:
  virtual ~StatisticsReducer() = default;

  /// @brief Replaces `values` on every rank by their sum over the ranks (the same bits on every
  /// rank) and returns the sum over the ranks of `count`, the rows this rank's values summed.
  /// @throws what the communication throws; `mpx::error` when the sync that made this reducer is gone.
  virtual std::int64_t sum_over_ranks(Tensor<Acc, Device>& values, std::int64_t count) = 0;

 protected:
  /// @brief Throws `mpx::error` for a layer that trains after `sync`, which made this reducer, was
  /// destroyed.
  [[noreturn]] static void throw_without_sync(std::string_view sync) {
    throw error(mpx::detail::concat(sync,
                                    ": a BatchNorm2d whose statistics this gradient sync synchronised "
                                    "(SyncOptions::sync_batch_norm) trained after the sync was destroyed; "
                                    "build a new sync for the model, or set_statistics_reducer(nullptr)"));
  }
};

/// @brief Hands `reducer` to every `BatchNorm2d` of `model` (every layer with a `Reducer` type and
/// `set_statistics_reducer`), through `nn::for_each_layer`; null makes them normalise with their own
/// batch again. Returns how many layers took it. A layer whose statistics have another type or
/// device than `reducer`'s does not compile.
template <class Model, class Acc, class Device>
std::int64_t synchronise_batch_statistics(Model& model,
                                          const std::shared_ptr<StatisticsReducer<Acc, Device>>& reducer) {
  std::int64_t layers = 0;
  nn::for_each_layer(model, [&]<class L>(L& layer) {
    if constexpr (requires { typename L::Reducer; }) {
      static_assert(
          std::is_same_v<typename L::Reducer, StatisticsReducer<Acc, Device>>,
          "mpx::nn::synchronise_batch_statistics: a layer's statistics have another accumulate type "
          "or device than the reducer's");
      layer.set_statistics_reducer(reducer);
      ++layers;
    }
  });
  return layers;
}

}  // namespace mpx::nn
