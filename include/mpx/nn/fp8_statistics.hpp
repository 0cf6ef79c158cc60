// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief A model's FP8 diagnostics: per FP8 layer and tensor (input, weight, output gradient), the
/// amax, the scale, and the shares of values that saturate or flush to zero in the casts since they
/// were last taken. Off by default (each counted cast reads its tensor a second time).
/// @code
/// mpx::nn::collect_fp8_statistics(model);                 // before training
/// ...                                                     // training steps
/// for (const auto& s : mpx::nn::take_fp8_statistics(model))  // every N steps: read and restart
///   std::printf("%s %s amax %g saturated %.2e\n", s.layer.c_str(), s.tensor.c_str(), s.amax,
///   s.saturated_share);
/// @endcode

#include <array>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mpx/backend/fp8_statistics_spec.hpp"
#include "mpx/nn/fp8_scales.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/tensor/device.hpp"
#include "mpx/tensor/host_memory.hpp"

namespace mpx::nn {

/// @brief "input", "weight" or "output_gradient": a tensor's name in records.
[[nodiscard]] constexpr std::string_view fp8_tensor_name(Fp8Tensor tensor) noexcept {
  switch (tensor) {
    case Fp8Tensor::Weight: return "weight";
    case Fp8Tensor::OutputGradient: return "output_gradient";
    case Fp8Tensor::Input: break;
  }
  return "input";
}

/// @brief What the casts of one FP8 tensor of one layer did since the statistics were last taken.
struct Fp8TensorStatistics {
  std::string layer;           ///< the layer's path in the model: its label up to " (", e.g. "layers.0"
  std::string tensor;          ///< `fp8_tensor_name`: "input", "weight" or "output_gradient"
  std::string format;          ///< the format it is cast into: "e4m3" or "e5m2"
  double values = 0;           ///< elements cast (every micro-batch's, every step's)
  double saturated_share = 0;  ///< share of them whose |x * scale| exceeded the format's largest value
  double flushed_share = 0;    ///< share of them that were nonzero and became zero
  double amax = 0;             ///< the largest |x| cast
  float scale = 0;             ///< the tensor's scale now: what the next cast multiplies by
};

/// @brief Turns the counting of FP8 statistics on (or off) in every FP8 layer of `model`
/// (`Fp8Scales::collect_statistics`); other layers are left alone.
template <class Model>
void collect_fp8_statistics(Model& model, bool on = true) {
  nn::for_each_layer(model, [&](auto& layer) {
    if constexpr (requires { layer.fp8_scales(); }) layer.fp8_scales().collect_statistics(on);
  });
}

/// @brief Each collecting FP8 layer's statistics (three entries per layer, in forward order), read
/// from the device (a synchronisation on a GPU), then cleared so that the next call covers the
/// steps after this one. Empty for a model without FP8 layers or that does not collect.
template <class Model>
[[nodiscard]] std::vector<Fp8TensorStatistics> take_fp8_statistics(Model& model) {
  std::vector<Fp8TensorStatistics> taken;
  nn::for_each_layer(model, [&](auto& layer) {
    if constexpr (requires { layer.fp8_scales(); }) {
      auto& scales = layer.fp8_scales();
      if (!scales.collects_statistics()) return;
      using Scales = std::remove_reference_t<decltype(scales)>;
      using Device = typename std::remove_reference_t<decltype(layer)>::device_type;
      using P = typename std::remove_reference_t<decltype(layer)>::precision;
      constexpr int tensors = Scales::tensors;
      std::array<double, tensors * fp8_statistics_fields> counts{};
      std::array<float, tensors> scale{};
      DeviceMemory<Device>::copy_to_host(counts.data(), scales.statistics().data(), sizeof counts);
      DeviceMemory<Device>::copy_to_host(scale.data(), scales.scales().data(), sizeof scale);
      scales.clear_statistics();
      for (int i = 0; i < tensors; ++i) {
        const auto tensor = static_cast<Fp8Tensor>(i);
        const double* field = counts.data() + i * fp8_statistics_fields;
        const double values = field[static_cast<int>(Fp8StatisticsField::Values)];
        const double per_value = values > 0 ? 1.0 / values : 0.0;
        taken.push_back({
            .layer = layer.label().substr(0, layer.label().find(" (")),
            .tensor = std::string(fp8_tensor_name(tensor)),
            .format = std::string(tensor == Fp8Tensor::OutputGradient
                                      ? numeric_traits<typename P::backward_format>::name
                                      : numeric_traits<typename P::forward_format>::name),
            .values = values,
            .saturated_share = field[static_cast<int>(Fp8StatisticsField::Saturated)] * per_value,
            .flushed_share = field[static_cast<int>(Fp8StatisticsField::Flushed)] * per_value,
            .amax = field[static_cast<int>(Fp8StatisticsField::Amax)],
            .scale = scale[static_cast<std::size_t>(i)],
        });
      }
    }
  });
  return taken;
}

}  // namespace mpx::nn
