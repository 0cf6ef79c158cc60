// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `dist::model_signature`: a fingerprint of a model's parameters (names, shapes, element
/// sizes), which data-parallel ranks compare before training so that a rank built with another
/// model fails at once with a clear message instead of reducing mismatched buffers.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "mpx/error.hpp"

namespace mpx::dist {

/// @brief What ranks compare: equal signatures mean the same parameters in the same order.
struct ModelSignature {
  std::uint64_t hash = 0;       ///< FNV-1a over every parameter's name, shape and element size
  std::int64_t parameters = 0;  ///< number of parameter tensors
  std::int64_t scalars = 0;     ///< number of trainable scalars

  /// @brief Equal in all three fields.
  friend bool operator==(const ModelSignature&, const ModelSignature&) = default;
};
// Ranks exchange signatures as plain bytes (MPI_BYTE, ncclUint8).
static_assert(std::is_trivially_copyable_v<ModelSignature> && sizeof(ModelSignature) == 24);

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

/// @brief Throws `mpx::invalid_argument` unless every rank's signature (`signatures[r]` from rank
/// r, gathered by the caller's collective) equals rank 0's; the message names each rank that
/// differs and what it holds. `where` names the caller. Every rank that calls it on the same
/// gathered list decides the same.
inline void require_same_model(std::span<const ModelSignature> signatures, std::string_view where) {
  if (signatures.empty()) return;
  const auto describe = [&](std::size_t r) {
    const ModelSignature& signature = signatures[r];
    return mpx::detail::concat("rank ", r, " has ", signature.parameters, " parameter tensors of ",
                               signature.scalars, " scalars (signature ", signature.hash, ")");
  };
  std::string differing;
  for (std::size_t r = 1; r < signatures.size(); ++r) {
    if (signatures[r] != signatures[0]) differing.append(mpx::detail::concat("; ", describe(r)));
  }
  if (!differing.empty()) {
    throw invalid_argument(
        mpx::detail::concat(where, ": the ranks hold different models: ", describe(0), differing,
                            ". Every rank must build the same model (same layers, sizes and "
                            "precisions)"));
  }
}

}  // namespace mpx::dist
