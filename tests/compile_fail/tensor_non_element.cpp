// expect: constraint.*Element|Element.*not satisfied|satisfy.*Element
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a tensor of int; tensors hold only the storage types of the precision tags.
#include <mpx/tensor/tensor.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Value = float;
#else
using Value = int;
#endif

// The constraint on Tensor's element type rejects int at the point the type is named.
[[maybe_unused]] const mpx::Tensor<Value>* tensor = nullptr;

int main() {
  return 0;
}
