// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `dist::model_signature`: a fingerprint of a model's parameters (names, shapes, element
/// sizes), which data-parallel ranks compare before training so that a rank built with another
/// model fails at once with a clear message instead of reducing mismatched buffers.

#include <cstdint>
#include <string_view>

namespace mpx::dist {

/// @brief What ranks compare: equal signatures mean the same parameters in the same order.
struct ModelSignature {
  std::uint64_t hash = 0;       ///< FNV-1a over every parameter's name, shape and element size
  std::int64_t parameters = 0;  ///< number of parameter tensors
  std::int64_t scalars = 0;     ///< number of trainable scalars

  /// @brief Equal in all three fields.
  friend bool operator==(const ModelSignature&, const ModelSignature&) = default;
};

namespace detail {
// FNV-1a, 64-bit: a fixed, portable hash (std::hash may differ between builds).
inline void fnv1a(std::uint64_t& hash, const void* bytes, std::size_t size) noexcept {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
}
}  // namespace detail

/// @brief The signature of `model`'s parameters in `for_each_parameter` order.
template <class Model>
[[nodiscard]] ModelSignature model_signature(Model& model) {
  ModelSignature signature;
  signature.hash = 0xcbf29ce484222325ull;
  model.for_each_parameter([&](std::string_view name, auto& parameter) {
    detail::fnv1a(signature.hash, name.data(), name.size());
    const char separator = '\0';
    detail::fnv1a(signature.hash, &separator, 1);
    const auto& shape = parameter.shape();
    const auto rank = static_cast<std::int64_t>(shape.rank());
    detail::fnv1a(signature.hash, &rank, sizeof rank);
    for (int d = 0; d < shape.rank(); ++d) {
      const std::int64_t extent = shape[d];
      detail::fnv1a(signature.hash, &extent, sizeof extent);
    }
    const auto element_size = static_cast<std::int64_t>(sizeof(*parameter.master().data()));
    detail::fnv1a(signature.hash, &element_size, sizeof element_size);
    ++signature.parameters;
    signature.scalars += shape.numel();
  });
  return signature;
}

}  // namespace mpx::dist
