// expect: constraint.*Element|Element.*not satisfied|satisfy.*Element
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a tensor of int64 (PyTorch's label type); tensors hold the storage types of the precision
// tags and int32 labels.
#include <cstdint>

#include <mpx/tensor/tensor.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Value = float;
#else
using Value = std::int64_t;
#endif

// The constraint on Tensor's element type rejects int64 at the point the type is named.
[[maybe_unused]] const mpx::Tensor<Value>* tensor = nullptr;

int main() {
  return 0;
}
