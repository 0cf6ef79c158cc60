// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// What the parity tools (tests/tools/*_parity_tool.cpp) write for their PyTorch side to read: fp32
// tensors by name in a safetensors file, and a model's gradients beside its output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <mpx/io/safetensors.hpp>
#include <mpx/tensor/tensor.hpp>

namespace mpx::test {

/// The extents of `shape`, as safetensors lists them.
inline std::vector<std::int64_t> extents(const mpx::Shape& shape) {
  std::vector<std::int64_t> out;
  for (int d = 0; d < shape.rank(); ++d) out.push_back(shape[d]);
  return out;
}

/// `tensor` as an F32 entry named `name` of a file to write (its elements must outlive the write).
inline mpx::io::TensorToWrite f32_entry(std::string name, const mpx::Tensor<float>& tensor) {
  return {std::move(name), mpx::io::Dtype::F32, extents(tensor.shape()),
          std::as_bytes(std::span(tensor.data(), static_cast<std::size_t>(tensor.numel())))};
}

/// Writes every parameter's gradient, under the parameter's name, and the model's `output`, as
/// "output", to `path`.
template <class Model>
void save_gradients(const std::filesystem::path& path, Model& model, const mpx::Tensor<float>& output) {
  std::vector<mpx::io::TensorToWrite> tensors;
  model.for_each_parameter([&](std::string_view name, auto& parameter) {
    tensors.push_back(f32_entry(std::string(name), parameter.grad()));
  });
  tensors.push_back(f32_entry("output", output));
  mpx::io::save_safetensors(path, tensors);
}

}  // namespace mpx::test
