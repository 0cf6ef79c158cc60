// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Writing a layer: `Scale` multiplies each feature by a learned factor. It satisfies nn::Layer, so
// Sequential, the optimizers and the Trainer take it like a built-in layer. The program checks its
// backward against finite differences, then trains a bf16 model that uses it (exit 1 on failure).
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>

#include <mpx/mpx.hpp>

// LayerBase states the preamble: precision, device, input and output types (compute_t<P>), the label.
template <mpx::PrecisionPolicy P, class Device = mpx::Host>
class Scale : public mpx::nn::LayerBase<Scale<P, Device>, P, Device> {
  using T = mpx::compute_t<P>;  // activations and weights as the matmuls read them (bf16, ...)

 public:
  static constexpr std::string_view kind = "Scale";
  using mpx::nn::LayerBase<Scale, P, Device>::forward;  // forward(temporary): a compile error saying why

  explicit Scale(std::int64_t features) : factor_("weight", mpx::Shape{features}) {}

  const mpx::Tensor<T, Device>& forward(const mpx::Tensor<T, Device>& x) {
    mpx::nn::require_features(this->label(), x, factor_.shape()[0]);
    mpx::nn::ensure_shape(y_, x.shape());
    const auto& s = factor_.compute();
    const std::int64_t cols = x.shape()[1];
    for (std::int64_t i = 0; i < x.numel(); ++i) y_[i] = T(float(x[i]) * float(s[i % cols]));  // fp32 math
    x_ = &x;
    return y_;
  }

  const mpx::Tensor<T, Device>* backward(const mpx::Tensor<T, Device>& dy, bool input_grad = true) {
    this->check_backward(!x_.empty(), dy.shape(), y_.shape());  // else throws, naming the layer
    const auto& x = *x_;
    const auto& s = factor_.compute();
    const std::int64_t cols = x.shape()[1];
    auto [ds, overwrite] = factor_.grad_for_update();  // fp32; accumulates unless zero_grad is pending
    if (overwrite) ds.set_zero();
    for (std::int64_t i = 0; i < x.numel(); ++i) ds[i % cols] += float(dy[i]) * float(x[i]);
    if (!input_grad) return nullptr;
    mpx::nn::ensure_shape(dx_, x.shape());
    for (std::int64_t i = 0; i < x.numel(); ++i) dx_[i] = T(float(dy[i]) * float(s[i % cols]));
    return &dx_;
  }

  void initialize(std::uint64_t seed, std::uint64_t stream) {
    mpx::nn::initialize(factor_, mpx::nn::Init::Ones, 1, 1, seed, stream);
  }
  void forget_input() noexcept { x_ = nullptr; }  // optional: Sequential::forget_inputs() calls it
  template <class F>
  void for_each_parameter(F&& f) {
    f(std::string_view("weight"), factor_);
  }

 private:
  mpx::nn::Parameter<P, Device> factor_;
  mpx::nn::SavedPointer<mpx::Tensor<T, Device>> x_;
  mpx::Tensor<T, Device> y_, dx_;
};
static_assert(mpx::nn::Layer<Scale<mpx::bf16_mixed>>);

int main() {
  // 1. Backward against central differences of L = sum(y * w), in fp32.
  Scale<mpx::fp32> layer(3);
  layer.initialize(0, 0);
  mpx::nn::Parameter<mpx::fp32>* factor = nullptr;
  layer.for_each_parameter([&](std::string_view, auto& parameter) { factor = &parameter; });
  mpx::Tensor<float> x(mpx::Shape{2, 3}), w(mpx::Shape{2, 3});
  for (int i = 0; i < 6; ++i) {
    x[i] = 0.5f * float(i) - 1.0f;
    w[i] = 1.0f + 0.25f * float(i);
    if (i < 3) factor->master()[i] = 0.5f + float(i);
  }
  const auto loss = [&] {
    const auto& y = layer.forward(x);
    double sum = 0;
    for (int i = 0; i < 6; ++i) sum += double(y[i]) * double(w[i]);
    return sum;
  };
  const auto central_difference = [&](float& value) {
    const float saved = value;
    value = saved + 1e-2f;
    const double up = loss();
    value = saved - 1e-2f;
    const double down = loss();
    value = saved;
    return (up - down) / 2e-2;
  };
  factor->zero_grad();
  loss();
  const mpx::Tensor<float>& dx = *layer.backward(w);
  double worst = 0;
  for (int i = 0; i < 6; ++i) worst = std::fmax(worst, std::fabs(central_difference(x[i]) - dx[i]));
  for (int j = 0; j < 3; ++j) {
    worst = std::fmax(worst, std::fabs(central_difference(factor->master()[j]) - factor->grad()[j]));
  }
  std::printf("max |gradient - finite difference| = %.2e\n", worst);

  // 2. Training: a bf16 body with the custom layer between two Linears, an fp32 regression head.
  using P = mpx::bf16_mixed;
  using namespace mpx::nn;
  Sequential model{Linear<P, Activation::ReLU>(4, 32), Scale<P>(32), Linear<mpx::fp32>(32, 1)};
  model.initialize(/*seed=*/3);
  MSELoss<mpx::fp32> mse;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  mpx::Trainer trainer(model, mse, optimizer);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  mpx::Tensor<float> inputs(mpx::Shape{64, 4}), targets(mpx::Shape{64, 1});
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 4; ++j) inputs[i * 4 + j] = normal(rng);
    targets[i] = inputs[i * 4] * inputs[i * 4 + 1] + 0.5f * inputs[i * 4 + 2];
  }
  const double first = trainer.step(inputs, targets).loss;
  double last = first;
  for (int step = 2; step <= 100; ++step) last = trainer.step(inputs, targets).loss;
  std::printf("MSE %.4f -> %.4f after 100 steps\n", first, last);
  return worst < 1e-3 && last < first / 4 ? 0 : 1;
}
