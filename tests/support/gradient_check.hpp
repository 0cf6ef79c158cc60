// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Gradient checks against central finite differences in fp64, for every layer's test.
///
/// A layer's objective is L = sum_i w_i y_i with fixed random w (so dL/dy = w and backward(w) must
/// return dL/dx). With step h = 1e-6 max(1, |v|) the central difference errs by h^2 |L'''| / 6
/// (~1e-12 here) plus round-off eps |L|_terms / h (~2e-10 per unit of the objective's terms), so
/// each derivative must agree to
///   |fd - analytic| <= 1e-6 |analytic| + 1e-8 (1 + sum_i |w_i y_i|).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "mpx/tensor/tensor.hpp"

namespace mpx::test {

constexpr double k_relative = 1e-6;
constexpr double k_absolute = 1e-8;

/// Uniform on [low, high), rounded into T.
template <class T = double>
mpx::Tensor<T> uniform_tensor(const mpx::Shape& shape, std::mt19937_64& rng, double low, double high) {
  std::uniform_real_distribution<double> distribution(low, high);
  mpx::Tensor<T> tensor(shape);
  for (std::int64_t i = 0; i < tensor.numel(); ++i) {
    if constexpr (std::is_same_v<T, double>) {
      tensor[i] = distribution(rng);
    } else {
      tensor[i] = static_cast<T>(static_cast<float>(distribution(rng)));
    }
  }
  return tensor;
}

/// |value| uniform on [low, high), sign random: keeps values away from 0 (ReLU's kink).
inline mpx::Tensor<double> away_from_zero(const mpx::Shape& shape, std::mt19937_64& rng, double low,
                                          double high) {
  std::uniform_real_distribution<double> magnitude(low, high);
  std::bernoulli_distribution negative(0.5);
  mpx::Tensor<double> tensor(shape);
  for (std::int64_t i = 0; i < tensor.numel(); ++i)
    tensor[i] = negative(rng) ? -magnitude(rng) : magnitude(rng);
  return tensor;
}

template <class T>
double widen(T value) {
  return static_cast<double>(
      static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(value));
}

inline double dot(const mpx::Tensor<double>& a, const mpx::Tensor<double>& b) {
  double sum = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) sum += a[i] * b[i];
  return sum;
}

/// sum |a_i b_i|: the size of the objective's terms, which sets its round-off.
inline double abs_dot(const mpx::Tensor<double>& a, const mpx::Tensor<double>& b) {
  double sum = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) sum += std::abs(a[i] * b[i]);
  return sum;
}

/// Central difference of `objective` in `value`, which it reads; `value` is restored.
template <class V, class Objective>
double central_difference(V& value, double step, Objective&& objective) {
  const V saved = value;
  value = static_cast<V>(widen(saved) + step);
  const double up_at = widen(value);
  const double up = objective();
  value = static_cast<V>(widen(saved) - step);
  const double down_at = widen(value);
  const double down = objective();
  value = saved;
  return (up - down) / (up_at - down_at);  // the steps actually taken, after rounding into V
}

/// Checks analytic[i] against the central difference of `objective` in values[i], for every i.
template <class V, class Objective>
void check_against_differences(const std::string& what, mpx::Tensor<V>& values,
                               const mpx::Tensor<double>& analytic, double objective_terms,
                               Objective&& objective) {
  REQUIRE(analytic.shape() == values.shape());
  for (std::int64_t i = 0; i < values.numel(); ++i) {
    const double step = 1e-6 * std::max(1.0, std::abs(widen(values[i])));
    const double difference = central_difference(values[i], step, objective);
    INFO(what << "[" << i << "]");
    CHECK(analytic[i] == Approx(difference).epsilon(k_relative).margin(k_absolute * (1 + objective_terms)));
  }
}

/// Snapshot of every parameter gradient of a layer or model, in for_each_parameter order.
template <class L>
std::vector<mpx::Tensor<double>> gradients_of(L& layer) {
  std::vector<mpx::Tensor<double>> grads;
  layer.for_each_parameter([&](const auto&, auto& parameter) { grads.push_back(parameter.grad().clone()); });
  return grads;
}

/// The model's own zero_grad where it has one (Sequential), else each parameter's.
template <class L>
void zero_gradients(L& layer) {
  if constexpr (requires { layer.zero_grad(); }) {
    layer.zero_grad();
  } else {
    layer.for_each_parameter([](const auto&, auto& parameter) { parameter.zero_grad(); });
  }
}

/// Fills a parameter's master weights with values uniform on [-0.8, 0.8) and refreshes its compute copy.
template <class Param>
void randomize(Param& parameter, std::mt19937_64& rng) {
  using Master = typename Param::master_element;
  std::uniform_real_distribution<double> distribution(-0.8, 0.8);
  auto& master = parameter.master();
  for (std::int64_t i = 0; i < master.numel(); ++i) master[i] = static_cast<Master>(distribution(rng));
  parameter.refresh_compute_copy();
}

/// Randomizes every parameter of a layer: biases and LayerNorm's gamma and beta start at 0 or 1,
/// which would leave their paths through the forward untested.
template <class L>
void randomize_parameters(L& layer, std::mt19937_64& rng) {
  layer.for_each_parameter([&](const auto&, auto& parameter) { randomize(parameter, rng); });
}

/// The full check of an fp64 layer (or model) at input x with objective sum(w * y):
/// dx and every parameter gradient against finite differences; then a second backward doubles the
/// parameter gradients (they accumulate) but not dx (it is overwritten); zero_grad resets them; and
/// backward(dy, false) returns no dx but still accumulates the parameter gradients.
template <class L>
void check_layer_gradients(L& layer, mpx::Tensor<double>& x, const mpx::Tensor<double>& w) {
  auto objective = [&] { return dot(w, layer.forward(x)); };
  const double terms = abs_dot(w, layer.forward(x));

  zero_gradients(layer);
  layer.forward(x);
  const mpx::Tensor<double>* dx = layer.backward(w, true);
  REQUIRE(dx != nullptr);
  const mpx::Tensor<double> input_grad = dx->clone();
  const std::vector<mpx::Tensor<double>> grads = gradients_of(layer);

  check_against_differences("dx", x, input_grad, terms, objective);
  std::size_t index = 0;
  layer.for_each_parameter([&](const auto& name, auto& parameter) {
    // The forward reads the compute copy, so each perturbation of the master must be rounded into it.
    auto perturbed = [&] {
      parameter.refresh_compute_copy();
      return objective();
    };
    check_against_differences(std::string(name), parameter.master(), grads[index++], terms, perturbed);
    parameter.refresh_compute_copy();
  });
  REQUIRE(index == grads.size());

  // Accumulation: the finite differences ran forwards only, so the gradients are still those of one
  // backward; a second one on the same forward must double them.
  layer.forward(x);
  const mpx::Tensor<double>* dx_again = layer.backward(w, true);
  REQUIRE(dx_again != nullptr);
  for (std::int64_t i = 0; i < input_grad.numel(); ++i)
    CHECK((*dx_again)[i] == Approx(input_grad[i]).epsilon(1e-12));
  const std::vector<mpx::Tensor<double>> doubled = gradients_of(layer);
  for (std::size_t p = 0; p < grads.size(); ++p) {
    for (std::int64_t i = 0; i < grads[p].numel(); ++i) {
      INFO("parameter " << p << " element " << i);
      CHECK(doubled[p][i] == Approx(2 * grads[p][i]).epsilon(1e-12));
    }
  }

  zero_gradients(layer);
  for (const auto& zeroed : gradients_of(layer)) {
    for (std::int64_t i = 0; i < zeroed.numel(); ++i) CHECK(zeroed[i] == 0.0);
  }

  layer.forward(x);
  CHECK(layer.backward(w, false) == nullptr);
  const std::vector<mpx::Tensor<double>> once = gradients_of(layer);
  for (std::size_t p = 0; p < grads.size(); ++p) {
    for (std::int64_t i = 0; i < grads[p].numel(); ++i) {
      CHECK(once[p][i] == Approx(grads[p][i]).epsilon(1e-12));
    }
  }
}

}  // namespace mpx::test
