// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// optim::SGD and optim::AdamW, one and two steps, against PyTorch's update rules
// (torch.optim.SGD / torch.optim.AdamW, single-tensor implementations) written out below in double:
//   SGD:   d = g + wd * w;  buf = d (first step) | momentum * buf + (1 - dampening) * d;
//          d = nesterov ? d + momentum * buf : buf;  w -= lr * d
//   AdamW: w *= 1 - lr * wd;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//          w -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Each test also spells out one element's arithmetic by hand, as a check on the reference itself.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"

#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using Catch::Matchers::Contains;

// A Linear(3 -> 2) with bias: 6 weights then 2 biases, in for_each_parameter order.
template <class P>
auto make_model() {
  return mpx::nn::Sequential{mpx::nn::Linear<P>(3, 2)};
}

const std::vector<double> initial_weights = {0.5, -1.25, 2.0, 0.75, -0.5, 1.5, 0.25, -2.0};
const std::vector<double> gradient_1 = {0.25, -0.5, 1.0, -0.125, 2.0, 0.0, -1.5, 0.375};
const std::vector<double> gradient_2 = {-0.1, 0.3, 0.2, 0.05, -0.7, 0.4, 0.9, -0.2};

// Calls f(parameter, index in the parameter, flat index over the model).
template <class Model, class F>
void for_each_element(Model& model, F&& f) {
  std::size_t flat = 0;
  model.for_each_parameter([&](std::string_view, auto& p) {
    for (std::int64_t i = 0; i < p.master().numel(); ++i) f(p, i, flat++);
  });
}

template <class Model>
void set_weights(Model& model, const std::vector<double>& values) {
  for_each_element(model, [&](auto& p, std::int64_t i, std::size_t k) {
    p.master()[i] = static_cast<typename std::remove_reference_t<decltype(p)>::master_element>(values[k]);
  });
  model.for_each_parameter([](std::string_view, auto& p) { p.refresh_compute_copy(); });
}

template <class Model>
void set_gradients(Model& model, const std::vector<double>& values) {
  for_each_element(model, [&](auto& p, std::int64_t i, std::size_t k) {
    p.grad()[i] = static_cast<typename std::remove_reference_t<decltype(p)>::grad_element>(values[k]);
  });
}

template <class Model>
std::vector<double> weights(Model& model) {
  std::vector<double> out;
  for_each_element(model, [&](auto& p, std::int64_t i, std::size_t) {
    out.push_back(static_cast<double>(p.master()[i]));
  });
  return out;
}

template <class Model>
std::vector<double> state(Model& model, int slot) {
  std::vector<double> out;
  for_each_element(model, [&](auto& p, std::int64_t i, std::size_t) {
    out.push_back(static_cast<double>(p.state(slot)[i]));
  });
  return out;
}

/// PyTorch's SGD in double, on hyper-parameters given as the floats mpx receives.
struct ReferenceSgd {
  explicit ReferenceSgd(const mpx::SgdSettings& settings) : s(settings) {}
  mpx::SgdSettings s;
  std::vector<double> buffer;
  bool first = true;

  void step(std::vector<double>& w, const std::vector<double>& g) {
    const double lr = s.lr, momentum = s.momentum, dampening = s.dampening, wd = s.weight_decay;
    if (first) buffer.assign(w.size(), 0.0);
    for (std::size_t i = 0; i < w.size(); ++i) {
      double d = g[i] + wd * w[i];
      if (momentum != 0.0) {
        buffer[i] = first ? d : momentum * buffer[i] + (1.0 - dampening) * d;
        d = s.nesterov ? d + momentum * buffer[i] : buffer[i];
      }
      w[i] -= lr * d;
    }
    first = false;
  }
};

/// PyTorch's AdamW in double.
struct ReferenceAdamW {
  explicit ReferenceAdamW(const mpx::AdamWSettings& settings) : s(settings) {}
  mpx::AdamWSettings s;
  std::vector<double> m, v;
  int t = 0;

  void step(std::vector<double>& w, const std::vector<double>& g) {
    const double lr = s.lr, b1 = s.beta1, b2 = s.beta2, eps = s.epsilon, wd = s.weight_decay;
    if (t++ == 0) {
      m.assign(w.size(), 0.0);
      v.assign(w.size(), 0.0);
    }
    const double bias_correction1 = 1.0 - std::pow(b1, t);
    const double bias_correction2 = 1.0 - std::pow(b2, t);
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] *= 1.0 - lr * wd;
      m[i] = b1 * m[i] + (1.0 - b1) * g[i];
      v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
      w[i] -= lr / bias_correction1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bias_correction2) + eps);
    }
  }
};

// fp32 arithmetic on O(1) values: a few roundings of ~6e-8 each.
constexpr double fp32_tolerance = 2e-6;

void check_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    CAPTURE(i, actual[i], expected[i]);
    CHECK(std::fabs(actual[i] - expected[i]) <= tolerance);
  }
}

/// Runs `steps` optimizer steps on the model with gradient_1 then gradient_2 and compares each with the
/// reference; returns the model's weights.
template <class P, template <class> class Optimizer, class Reference, class Settings>
std::vector<double> run_and_compare(const Settings& settings, int steps, double tolerance) {
  auto model = make_model<P>();
  set_weights(model, initial_weights);
  Optimizer<decltype(model)> optimizer(model, settings);
  Reference reference(settings);
  std::vector<double> expected = weights(model);
  for (int step = 0; step < steps; ++step) {
    CAPTURE(step);
    const auto& g = step == 0 ? gradient_1 : gradient_2;
    set_gradients(model, g);
    optimizer.step();
    reference.step(expected, g);
    check_close(weights(model), expected, tolerance);
    CHECK(optimizer.steps() == step + 1);
  }
  return weights(model);
}

using mpx::test::thrown_message;

}  // namespace

TEST_CASE("SgdSettings and AdamWSettings default to PyTorch's values", "[optim]") {
  const mpx::AdamWSettings adamw;
  CHECK(adamw.lr == 1e-3);
  CHECK(adamw.beta1 == 0.9);
  CHECK(adamw.beta2 == 0.999);
  CHECK(adamw.epsilon == 1e-8);
  CHECK(adamw.weight_decay == 1e-2);
  const mpx::SgdSettings sgd;
  CHECK(sgd.momentum == 0.0f);
  CHECK(sgd.dampening == 0.0f);
  CHECK(sgd.weight_decay == 0.0f);
  CHECK_FALSE(sgd.nesterov);
}

TEST_CASE("SGD without momentum: w -= lr * (g + weight_decay * w)", "[optim][sgd]") {
  SECTION("plain") {
    const auto w = run_and_compare<mpx::fp32, mpx::optim::SGD, ReferenceSgd>(mpx::SgdSettings{.lr = 0.1f}, 2,
                                                                             fp32_tolerance);
    // By hand, element 0: 0.5 - 0.1 * 0.25 = 0.475, then 0.475 - 0.1 * (-0.1) = 0.485.
    CHECK(w[0] == Approx(0.485).margin(1e-6));
    // Element 5 has a zero first gradient: 1.5, then 1.5 - 0.1 * 0.4 = 1.46.
    CHECK(w[5] == Approx(1.46).margin(1e-6));
  }
  SECTION("with weight decay") {
    const auto w = run_and_compare<mpx::fp32, mpx::optim::SGD, ReferenceSgd>(
        mpx::SgdSettings{.lr = 0.1f, .weight_decay = 0.1f}, 1, fp32_tolerance);
    // By hand, element 0: d = 0.25 + 0.1 * 0.5 = 0.3; 0.5 - 0.1 * 0.3 = 0.47.
    CHECK(w[0] == Approx(0.47).margin(1e-6));
    // Element 5: d = 0 + 0.1 * 1.5 = 0.15; 1.5 - 0.015 = 1.485.
    CHECK(w[5] == Approx(1.485).margin(1e-6));
  }
  auto model = make_model<mpx::fp32>();
  set_gradients(model, gradient_1);
  mpx::optim::SGD optimizer(model, {.lr = 0.1f});
  optimizer.step();
  // Plain SGD keeps no state.
  model.for_each_parameter([](std::string_view, auto& p) { CHECK_FALSE(p.has_state(0)); });
}

TEST_CASE("SGD with momentum: the first step's buffer is the gradient itself", "[optim][sgd]") {
  SECTION("momentum 0.9") {
    const auto w = run_and_compare<mpx::fp32, mpx::optim::SGD, ReferenceSgd>(
        mpx::SgdSettings{.lr = 0.1f, .momentum = 0.9f}, 2, fp32_tolerance);
    // By hand, element 0: buf = 0.25, w = 0.475; buf = 0.9 * 0.25 + (-0.1) = 0.125, w = 0.475 - 0.0125.
    CHECK(w[0] == Approx(0.4625).margin(1e-6));
  }
  SECTION("momentum with weight decay: decay enters the buffer") {
    const auto w = run_and_compare<mpx::fp32, mpx::optim::SGD, ReferenceSgd>(
        mpx::SgdSettings{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.1f}, 2, fp32_tolerance);
    // Element 0: d = 0.3, buf = 0.3, w = 0.47; d = -0.1 + 0.1 * 0.47 = -0.053,
    // buf = 0.27 - 0.053 = 0.217, w = 0.47 - 0.0217 = 0.4483.
    CHECK(w[0] == Approx(0.4483).margin(1e-6));
  }
  SECTION("dampening: not applied to the first step's buffer") {
    const auto w = run_and_compare<mpx::fp32, mpx::optim::SGD, ReferenceSgd>(
        mpx::SgdSettings{.lr = 0.1f, .momentum = 0.9f, .dampening = 0.5f}, 2, fp32_tolerance);
    // Element 0: buf = 0.25 (not 0.125), w = 0.475; buf = 0.225 + 0.5 * (-0.1) = 0.175, w = 0.4575.
    CHECK(w[0] == Approx(0.4575).margin(1e-6));
  }
  SECTION("Nesterov: step along g + momentum * buf") {
    const auto w = run_and_compare<mpx::fp32, mpx::optim::SGD, ReferenceSgd>(
        mpx::SgdSettings{.lr = 0.1f, .momentum = 0.9f, .nesterov = true}, 2, fp32_tolerance);
    // Element 0: buf = 0.25, d = 0.25 + 0.225 = 0.475, w = 0.4525;
    // buf = 0.125, d = -0.1 + 0.1125 = 0.0125, w = 0.4525 - 0.00125 = 0.45125.
    CHECK(w[0] == Approx(0.45125).margin(1e-6));
  }
  SECTION("the momentum buffer is optimizer state slot 0") {
    auto model = make_model<mpx::fp32>();
    set_weights(model, initial_weights);
    mpx::optim::SGD optimizer(model, {.lr = 0.1f, .momentum = 0.9f});
    set_gradients(model, gradient_1);
    optimizer.step();
    check_close(state(model, 0), gradient_1, 0.0);  // exactly the gradient
    set_gradients(model, gradient_2);
    optimizer.step();
    std::vector<double> expected(gradient_1.size());
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = 0.9 * gradient_1[i] + gradient_2[i];
    check_close(state(model, 0), expected, 1e-7);
  }
}

TEST_CASE("SGD under fp64 follows the same rule in double", "[optim][sgd]") {
  run_and_compare<mpx::fp64, mpx::optim::SGD, ReferenceSgd>(
      mpx::SgdSettings{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true}, 2, 1e-14);
}

TEST_CASE("AdamW first and second step: bias corrections, decoupled weight decay, eps", "[optim][adamw]") {
  const mpx::AdamWSettings settings{
      .lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.999f, .epsilon = 1e-3f, .weight_decay = 0.1f};
  SECTION("one step") {
    const auto w = run_and_compare<mpx::fp32, mpx::optim::AdamW, ReferenceAdamW>(settings, 1, fp32_tolerance);
    // By hand, element 0 (w 0.5, g 0.25): w = 0.5 * (1 - 0.1 * 0.1) = 0.495; m = 0.1 * 0.25 = 0.025;
    // v = 0.001 * 0.0625; bias corrections 0.1 and 0.001, so m_hat = 0.25 and sqrt(v_hat) = 0.25;
    // w = 0.495 - 0.1 * 0.25 / (0.25 + 0.001) = 0.495 - 0.0996015936 = 0.3953984064.
    CHECK(w[0] == Approx(0.3953984064).margin(1e-6));
    // Element 5 (g = 0): only the decay acts: 1.5 * 0.99.
    CHECK(w[5] == Approx(1.485).margin(1e-6));
  }
  SECTION("two steps") {
    const auto w = run_and_compare<mpx::fp32, mpx::optim::AdamW, ReferenceAdamW>(settings, 2, fp32_tolerance);
    // Element 0, g = -0.1: w = 0.3953984064 * 0.99 = 0.3914444223; m = 0.0225 - 0.01 = 0.0125;
    // v = 0.999 * 6.25e-5 + 0.001 * 0.01 = 7.24375e-5; bias corrections 0.19 and 0.001999;
    // denominator = sqrt(7.24375e-5 / 0.001999) + 0.001 = 0.1913598393;
    // w = 0.3914444223 - (0.1 / 0.19) * 0.0125 / 0.1913598393 = 0.3570644427.
    CHECK(w[0] == Approx(0.3570644427).margin(1e-6));
  }
  SECTION("the moments are state slots 0 and 1") {
    auto model = make_model<mpx::fp32>();
    set_weights(model, initial_weights);
    mpx::optim::AdamW optimizer(model, settings);
    set_gradients(model, gradient_1);
    optimizer.step();
    set_gradients(model, gradient_2);
    optimizer.step();
    // The betas as the optimizer holds them: 0.999f is 0.99900001287..., so 1 - beta2 is 1.3e-5
    // relative away from 0.001.
    const double b1 = 0.9f, b2 = 0.999f;
    std::vector<double> m(gradient_1.size()), v(gradient_1.size());
    for (std::size_t i = 0; i < m.size(); ++i) {
      m[i] = b1 * ((1 - b1) * gradient_1[i]) + (1 - b1) * gradient_2[i];
      v[i] = b2 * ((1 - b2) * gradient_1[i] * gradient_1[i]) + (1 - b2) * gradient_2[i] * gradient_2[i];
    }
    check_close(state(model, 0), m, 1e-7);
    check_close(state(model, 1), v, 1e-9);
  }
  SECTION("eps matters where sqrt(v_hat) is small") {
    // With eps = 1 the first step of element 0 is 0.1 * 0.25 / 1.25 = 0.02 instead of ~0.1.
    mpx::AdamWSettings big_eps = settings;
    big_eps.epsilon = 1.0f;
    big_eps.weight_decay = 0.0f;
    const auto w = run_and_compare<mpx::fp32, mpx::optim::AdamW, ReferenceAdamW>(big_eps, 1, fp32_tolerance);
    CHECK(w[0] == Approx(0.48).margin(1e-6));
  }
  SECTION("fp64") {
    run_and_compare<mpx::fp64, mpx::optim::AdamW, ReferenceAdamW>(settings, 2, 1e-14);
  }
}

TEST_CASE("Optimizers refresh the bf16 compute copy from the master weights, fp32 and tf32 have none",
          "[optim]") {
  const auto check_copy = [](auto& model) {
    model.for_each_parameter([](std::string_view, auto& p) {
      REQUIRE(p.compute_copy() != nullptr);
      for (std::int64_t i = 0; i < p.master().numel(); ++i) {
        CAPTURE(i);
        CHECK(mpx::bits_of(p.compute()[i]) == mpx::bits_of(mpx::round_to<mpx::BFloat16>(p.master()[i])));
      }
    });
  };
  const auto run = [&](auto make_optimizer) {
    auto mixed = make_model<mpx::bf16_mixed>();
    auto plain = make_model<mpx::fp32>();
    set_weights(mixed, initial_weights);
    set_weights(plain, initial_weights);
    auto mixed_optimizer = make_optimizer(mixed);
    auto plain_optimizer = make_optimizer(plain);
    for (int step = 0; step < 3; ++step) {
      const auto& g = step == 0 ? gradient_1 : gradient_2;
      set_gradients(mixed, g);
      set_gradients(plain, g);
      mixed_optimizer.step();
      plain_optimizer.step();
      check_copy(mixed);
      // The master weights are fp32 in both, updated from the same fp32 gradients: the compute copy
      // must not feed back into them.
      // (A rounded copy feeding back would show as an error of ~2^-9 relative.)
      check_close(weights(mixed), weights(plain), 1e-7);
    }
    // The copy really is a rounding: some master values are not representable in bf16.
    bool some_differ = false;
    mixed.for_each_parameter([&](std::string_view, auto& p) {
      for (std::int64_t i = 0; i < p.master().numel(); ++i) {
        some_differ = some_differ || static_cast<float>(p.compute()[i]) != p.master()[i];
      }
    });
    CHECK(some_differ);
  };
  SECTION("SGD") {
    run([](auto& model) { return mpx::optim::SGD(model, {.lr = 0.1f, .momentum = 0.9f}); });
  }
  SECTION("AdamW") {
    run([](auto& model) { return mpx::optim::AdamW(model, {.lr = 0.01f}); });
  }
  SECTION("fp32 and tf32 parameters are their own compute weights") {
    auto fp32 = make_model<mpx::fp32>();
    auto tf32 = make_model<mpx::tf32>();
    const auto same_tensor = [](std::string_view, auto& p) {
      CHECK(p.compute_copy() == nullptr);
      CHECK(static_cast<const void*>(&p.compute()) == static_cast<const void*>(&p.master()));
    };
    fp32.for_each_parameter(same_tensor);
    tf32.for_each_parameter(same_tensor);
    STATIC_REQUIRE_FALSE(mpx::nn::Parameter<mpx::fp32>::has_compute_copy);
    STATIC_REQUIRE_FALSE(mpx::nn::Parameter<mpx::tf32>::has_compute_copy);
    STATIC_REQUIRE(mpx::nn::Parameter<mpx::bf16_mixed>::has_compute_copy);
    STATIC_REQUIRE(mpx::nn::Parameter<mpx::fp16_mixed>::has_compute_copy);
    // TF32 keeps full fp32 master weights (its rounding happens inside the matmul).
    set_weights(tf32, initial_weights);
    set_gradients(tf32, gradient_1);
    mpx::optim::SGD optimizer(tf32, {.lr = 0.1f});
    optimizer.step();
    // 0.475 is 2^-11 relative away from the nearest tf32 value, far beyond fp32's rounding.
    CHECK(weights(tf32)[0] == Approx(0.475).margin(1e-7));
  }
}

TEST_CASE("Invalid optimizer hyper-parameters throw mpx::invalid_argument naming the field", "[optim]") {
  auto model = make_model<mpx::fp32>();
  using Model = decltype(model);
  const auto sgd = [&](mpx::SgdSettings s) {
    return thrown_message([&] { mpx::optim::SGD<Model> o(model, s); });
  };
  CHECK_THAT(sgd({.lr = 0.0f}), Contains("mpx::optim::SGD: lr = 0"));
  CHECK_THAT(sgd({.lr = -0.1f}), Contains("lr = -0.1"));
  CHECK_THAT(sgd({.lr = std::nanf("")}), Contains("lr = nan"));
  CHECK_THAT(sgd({.lr = INFINITY}), Contains("lr = inf"));
  CHECK_THAT(sgd({.momentum = 1.0f}), Contains("momentum = 1"));
  CHECK_THAT(sgd({.momentum = -0.5f}), Contains("momentum = -0.5"));
  CHECK_THAT(sgd({.momentum = 0.5f, .dampening = 1.5f}), Contains("dampening = 1.5"));
  CHECK_THAT(sgd({.weight_decay = -1.0f}), Contains("weight_decay = -1"));
  CHECK_THAT(sgd({.weight_decay = INFINITY}), Contains("weight_decay = inf"));
  CHECK_THAT(sgd({.nesterov = true}), Contains("nesterov"));  // needs momentum
  CHECK_THAT(sgd({.momentum = 0.9f, .dampening = 0.1f, .nesterov = true}), Contains("nesterov"));
  CHECK_NOTHROW(mpx::optim::SGD<Model>(model, {.lr = 0.1f, .momentum = 0.9f, .dampening = 1.0f}));

  const auto adamw = [&](mpx::AdamWSettings s) {
    return thrown_message([&] { mpx::optim::AdamW<Model> o(model, s); });
  };
  CHECK_THAT(adamw({.lr = 0.0f}), Contains("mpx::optim::AdamW: lr = 0"));
  CHECK_THAT(adamw({.beta1 = 1.0f}), Contains("beta1 = 1"));
  CHECK_THAT(adamw({.beta1 = -0.1f}), Contains("beta1 = -0.1"));
  CHECK_THAT(adamw({.beta2 = 1.0f}), Contains("beta2 = 1"));
  CHECK_THAT(adamw({.epsilon = 0.0f}), Contains("epsilon = 0"));
  CHECK_THAT(adamw({.epsilon = std::nanf("")}), Contains("epsilon = nan"));
  CHECK_THAT(adamw({.weight_decay = -0.1f}), Contains("weight_decay = -0.1"));

  // set_lr validates too, and a rejected value leaves the old one in place.
  mpx::optim::SGD<Model> optimizer(model, {.lr = 0.1f});
  CHECK_THAT(thrown_message([&] { optimizer.set_lr(-1.0f); }), Contains("lr = -1"));
  CHECK(optimizer.options().lr == 0.1f);
  optimizer.set_lr(0.05f);
  CHECK(optimizer.options().lr == 0.05f);
  mpx::optim::AdamW<Model> adam(model, {});
  CHECK_THAT(thrown_message([&] { adam.set_lr(0.0f); }), Contains("lr = 0"));
  CHECK(adam.options().lr == 1e-3);
}

}  // namespace MPX_UNITY_ID
}  // namespace
