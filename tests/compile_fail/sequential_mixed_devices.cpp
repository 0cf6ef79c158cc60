// expect: static assertion failed: mpx::nn::Sequential: neighbouring layers run on different devices
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a model whose layers run on different devices (a host Linear feeding a CUDA layer).
#include <cstdint>
#include <string>
#include <string_view>

#include <mpx/nn/linear.hpp>
#include <mpx/nn/sequential.hpp>

// A minimal layer on `Device`, declared only: the device check needs its types, not its code.
template <class Device>
struct Identity {
  using input_type = float;
  using output_type = float;
  using device_type = Device;
  static constexpr std::string_view kind = "Identity";
  const mpx::Tensor<float, Device>& forward(const mpx::Tensor<float, Device>& x);
  const mpx::Tensor<float, Device>* backward(const mpx::Tensor<float, Device>& dy, bool input_grad = true);
  void initialize(std::uint64_t seed, std::uint64_t stream);
  void set_label(std::string label);
  template <class F>
  void for_each_parameter(F&&) {}
};

#ifdef MPX_COMPILE_FAIL_CONTROL
using Second = Identity<mpx::Host>;
#else
using Second = Identity<mpx::Cuda>;
#endif
static_assert(mpx::nn::Layer<Second>);  // a layer in itself: only the pairing is wrong

using Model = mpx::nn::Sequential<mpx::nn::Linear<mpx::fp32>, Second>;
static_assert(sizeof(Model) > 0);  // instantiates the model, and with it its checks

int main() {
  return 0;
}
