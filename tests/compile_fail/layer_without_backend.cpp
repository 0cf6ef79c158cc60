// expect: no backend for this device is included; include <mpx/mpx.hpp>
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a layer run on the CPU from its own header alone. Layers name the backend interface only;
// the CPU backend comes with <mpx/mpx.hpp> (or its own header), and the message says so.
#include <mpx/nn/linear.hpp>
#ifdef MPX_COMPILE_FAIL_CONTROL
#include <mpx/backend/cpu/backend.hpp>
#endif

int main() {
  mpx::nn::Linear<mpx::fp32> layer(4, 2);
  const mpx::Tensor<float> batch(mpx::Shape{8, 4});
  return layer.forward(batch).numel() == 16 ? 0 : 1;
}
