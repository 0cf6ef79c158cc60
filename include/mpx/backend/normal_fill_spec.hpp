// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The values `fill_normal` writes on every device: element i of a tensor filled under (seed,
/// stream) is `round_to(normal_at(mean, stddev, seed, stream, i))`, computed on the host (the
/// Box-Muller transform's log and cos are glibc's, which a GPU's are not to the last bit), so a
/// model initialised on either device starts identical.

#include <cstdint>

#include "mpx/numeric/random.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

/// @brief out[i] = round_to<T's format>(normal_at(mean, stddev, seed, stream, i)) for i in [begin,
/// end): one chunk of a host buffer, so a backend may fill chunks on several threads.
template <FloatingElement T>
void normal_values_into(T* out, std::int64_t begin, std::int64_t end, double mean, double stddev,
                        std::uint64_t seed, std::uint64_t stream) {
  for (std::int64_t i = begin; i < end; ++i)
    out[i] = round_to<tag_of_t<T>>(normal_at(mean, stddev, seed, stream, static_cast<std::uint64_t>(i)));
}

}  // namespace mpx
