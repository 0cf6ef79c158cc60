// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `dist::model_buffers`: where a model's buffers (state saved with the weights but not
/// trained: BatchNorm's running statistics) lie, as raw bytes, for the gradient syncs to broadcast
/// rank 0's (`SyncOptions::broadcast_buffers`). It knows no MPI, NCCL or device.

#include <cstddef>
#include <string_view>
#include <vector>

#include "mpx/nn/layer.hpp"

namespace mpx::dist {

/// @brief One buffer's storage: its first byte and its size, in the model's device memory.
struct BufferBytes {
  void* data = nullptr;   ///< host or device pointer, as the model's device
  std::size_t bytes = 0;  ///< numel x element size
};

/// @brief Every buffer of `model`, in `nn::for_each_buffer` order (the same on every rank that
/// holds the same model). Asked anew at each use: loading a checkpoint may replace a buffer's
/// storage.
template <class Model>
[[nodiscard]] std::vector<BufferBytes> model_buffers(Model& model) {
  std::vector<BufferBytes> buffers;
  nn::for_each_buffer(model, [&](std::string_view, auto& tensor) {
    buffers.push_back({static_cast<void*>(tensor.data()),
                       static_cast<std::size_t>(tensor.numel()) * sizeof(*tensor.data())});
  });
  return buffers;
}

/// @brief The total size of `buffers` in bytes.
[[nodiscard]] inline std::size_t total_bytes(const std::vector<BufferBytes>& buffers) noexcept {
  std::size_t total = 0;
  for (const BufferBytes& buffer : buffers) total += buffer.bytes;
  return total;
}

}  // namespace mpx::dist
