// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx::Trainer end to end on small synthetic tasks: overflowing steps are skipped without touching
// any weight or optimizer state, gradient accumulation equals the big batch, clipping is
// clip_grad_norm_, and loss scaling is what keeps fp16 gradients from underflowing.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using Catch::Matchers::Contains;

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float quiet_nan = std::numeric_limits<float>::quiet_NaN();

// ---- data ------------------------------------------------------------------------------------

constexpr std::int64_t features = 8;
constexpr std::int64_t classes = 4;

/// Gaussian blobs: class c around a fixed random centre; learnable to a low loss in ~100 steps.
struct Classification {
  std::vector<mpx::Tensor<float>> inputs;
  std::vector<mpx::Tensor<std::int32_t>> labels;
};

Classification make_classification(int batches, std::int64_t batch_size, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, classes - 1);
  std::vector<float> centres(static_cast<std::size_t>(classes * features));
  for (float& c : centres) c = 1.5f * normal(random);
  Classification data;
  for (int b = 0; b < batches; ++b) {
    mpx::Tensor<float> x(mpx::Shape{batch_size, features});
    mpx::Tensor<std::int32_t> y(mpx::Shape{batch_size});
    for (std::int64_t row = 0; row < batch_size; ++row) {
      y[row] = label(random);
      for (std::int64_t f = 0; f < features; ++f) {
        x[row * features + f] =
            centres[static_cast<std::size_t>(y[row] * features + f)] + 0.7f * normal(random);
      }
    }
    data.inputs.push_back(std::move(x));
    data.labels.push_back(std::move(y));
  }
  return data;
}

template <class P>
auto make_classifier(std::uint64_t seed) {
  mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(features, 16),
                            mpx::nn::Linear<P>(16, classes)};
  model.initialize(seed);
  return model;
}

// ---- fault injection -------------------------------------------------------------------------

/// SoftmaxCrossEntropy whose gradient gets `value` planted at chosen calls (1-based), as an overflow
/// in the backward pass would leave it. Uses only the Loss interface the Trainer needs.
template <class P>
class FaultInjectingLoss {
  using Inner = mpx::nn::SoftmaxCrossEntropy<P>;

 public:
  using precision = P;
  using device_type = mpx::Host;
  using input_type = typename Inner::input_type;
  using target_type = typename Inner::target_type;
  using value_type = typename Inner::value_type;

  std::map<std::int64_t, float> faults;  // call number -> value planted into the gradient

  // The training step's loss interface: the seed is read where the step's scalars live, the mean
  // loss is added to *loss_sum.
  void accumulate_forward_backward(const mpx::Tensor<input_type>& logits, target_type labels,
                                   const mpx::LossSeed& seed, double* loss_sum) {
    ++calls_;
    inner_.accumulate_forward_backward(logits, labels, seed, loss_sum);
    mpx::nn::ensure_shape(gradient_, logits.shape());
    const auto source = inner_.gradient().values();
    std::copy(source.begin(), source.end(), gradient_.values().begin());
    if (const auto fault = faults.find(calls_); fault != faults.end()) {
      gradient_[(calls_ * 7) % gradient_.numel()] = static_cast<input_type>(fault->second);
    }
  }

  [[nodiscard]] const mpx::Tensor<input_type>& gradient() const noexcept { return gradient_; }

 private:
  Inner inner_;
  mpx::Tensor<input_type> gradient_;
  std::int64_t calls_ = 0;
};

/// Every byte the optimizer may write: master weights, compute copies, optimizer state (and whether
/// each state slot exists).
template <class Model>
std::vector<std::vector<unsigned char>> snapshot(Model& model) {
  std::vector<std::vector<unsigned char>> out;
  const auto add = [&](const auto& tensor) {
    std::vector<unsigned char> bytes(tensor.size_bytes());
    if (!bytes.empty()) std::memcpy(bytes.data(), tensor.data(), bytes.size());
    out.push_back(std::move(bytes));
  };
  model.for_each_parameter([&](std::string_view, auto& p) {
    add(p.master());
    if (p.compute_copy() != nullptr) add(*p.compute_copy());
    for (int slot = 0; slot < 2; ++slot) {
      out.push_back({static_cast<unsigned char>(p.has_state(slot))});
      if (p.has_state(slot)) add(p.state(slot));
    }
  });
  return out;
}

bool bitwise_equal(const std::vector<std::vector<unsigned char>>& a,
                   const std::vector<std::vector<unsigned char>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    if (!a[i].empty() && std::memcmp(a[i].data(), b[i].data(), a[i].size()) != 0) return false;
  }
  return true;
}

template <class Model>
bool all_finite(Model& model) {
  bool finite = true;
  model.for_each_parameter([&](std::string_view, auto& p) {
    for (std::int64_t i = 0; i < p.master().numel(); ++i)
      finite = finite && std::isfinite(static_cast<double>(p.master()[i]));
  });
  return finite;
}

template <class Model>
double gradient_norm(Model& model) {
  double sum = 0.0;
  model.for_each_parameter([&](std::string_view, auto& p) {
    for (std::int64_t i = 0; i < p.grad().numel(); ++i)
      sum += static_cast<double>(p.grad()[i]) * static_cast<double>(p.grad()[i]);
  });
  return std::sqrt(sum);
}

template <class Model>
std::vector<double> flat_weights(Model& model) {
  std::vector<double> out;
  model.for_each_parameter([&](std::string_view, auto& p) {
    for (std::int64_t i = 0; i < p.master().numel(); ++i) out.push_back(static_cast<double>(p.master()[i]));
  });
  return out;
}

template <class Model>
std::vector<double> flat_gradients(Model& model) {
  std::vector<double> out;
  model.for_each_parameter([&](std::string_view, auto& p) {
    for (std::int64_t i = 0; i < p.grad().numel(); ++i) out.push_back(static_cast<double>(p.grad()[i]));
  });
  return out;
}

double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = a.size() == b.size() ? 0.0 : inf;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::fmax(worst, std::fabs(a[i] - b[i]));
  return worst;
}

/// Trains 150 steps with faults planted at fixed steps and checks each step: a faulted step changes
/// nothing the optimizer owns and backs the scale off; a clean step updates. Returns the losses.
template <class P, class MakeOptimizer>
std::vector<double> train_with_faults(MakeOptimizer make_optimizer) {
  const Classification data = make_classification(6, 32, 11u);
  auto model = make_classifier<P>(3);
  using Model = decltype(model);
  FaultInjectingLoss<P> loss;
  // Steps 1 (before any optimizer state exists), a run of three, a lone one and one near the end.
  loss.faults = {{1, inf}, {20, quiet_nan}, {21, -inf}, {22, inf}, {57, quiet_nan}, {140, inf}};
  auto optimizer = make_optimizer(model);
  mpx::Trainer<Model, FaultInjectingLoss<P>, decltype(optimizer)> trainer(model, loss, optimizer);
  using Scaling = typename std::remove_cvref_t<decltype(trainer.scaler())>::policy;
  STATIC_REQUIRE(Scaling::is_dynamic == std::is_same_v<typename P::compute_type, mpx::Half>);

  std::vector<double> losses;
  int clean_steps_that_did_not_update = 0;
  const int steps = 150;
  for (int step = 1; step <= steps; ++step) {
    const auto before = snapshot(model);
    const std::int64_t optimizer_steps = optimizer.steps();
    const mpx::LossScalerState scaler_before = trainer.scaler().state();
    const std::size_t b = static_cast<std::size_t>(step) % data.inputs.size();
    const mpx::StepResult result = trainer.step(data.inputs[b], data.labels[b]);
    losses.push_back(result.loss);
    CHECK(result.step == step);
    CHECK(result.loss_scale == scaler_before.scale);
    const mpx::LossScalerState& scaler_after = trainer.scaler().state();
    if (loss.faults.count(step) != 0) {
      CAPTURE(step);
      CHECK_FALSE(result.stepped);
      CHECK(bitwise_equal(snapshot(model), before));
      CHECK(optimizer.steps() == optimizer_steps);
      CHECK(scaler_after.steps_skipped == scaler_before.steps_skipped + 1);
      CHECK(scaler_after.steps_taken == scaler_before.steps_taken);
      if constexpr (Scaling::is_dynamic) {
        CHECK(scaler_after.scale == scaler_before.scale * 0.5f);
        CHECK(scaler_after.backoffs == scaler_before.backoffs + 1);
      } else {
        CHECK(trainer.scaler().scale() == 1.0f);
      }
      CHECK_FALSE(std::isfinite(result.grad_norm));
    } else {
      const bool updated = result.stepped && !bitwise_equal(snapshot(model), before) &&
                           optimizer.steps() == optimizer_steps + 1 &&
                           scaler_after.steps_taken == scaler_before.steps_taken + 1;
      clean_steps_that_did_not_update += updated ? 0 : 1;
    }
  }
  CHECK(clean_steps_that_did_not_update == 0);
  const auto faults = static_cast<std::int64_t>(loss.faults.size());
  CHECK(trainer.scaler().state().steps_skipped == faults);
  CHECK(trainer.scaler().state().steps_taken == steps - faults);
  CHECK(trainer.scaler().state().backoffs == (Scaling::is_dynamic ? faults : 0));
  if constexpr (Scaling::is_dynamic)
    CHECK(trainer.scaler().scale() == std::ldexp(65536.0f, -static_cast<int>(faults)));
  CHECK(all_finite(model));
  return losses;
}

double mean(const std::vector<double>& values, std::size_t first, std::size_t count) {
  double sum = 0.0;
  for (std::size_t i = first; i < first + count; ++i) sum += values[i];
  return sum / static_cast<double>(count);
}

}  // namespace

TEMPLATE_TEST_CASE(
    "Trainer skips steps with inf or NaN gradients, changing no weight or optimizer state, "
    "and still converges",
    "[train][trainer]", mpx::fp16_mixed, mpx::bf16_mixed, mpx::fp32) {
  std::vector<double> losses;
  SECTION("AdamW") {
    losses = train_with_faults<TestType>([](auto& model) { return mpx::optim::AdamW(model, {.lr = 0.01f}); });
  }
  SECTION("SGD with momentum") {
    losses = train_with_faults<TestType>([](auto& model) {
      return mpx::optim::SGD(model, {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f});
    });
  }
  // Convergence despite the faults: the last steps' loss is well below the first steps' (a 4-class
  // problem starts near ln 4 = 1.39).
  const double first = mean(losses, 0, 10);
  const double last = mean(losses, losses.size() - 10, 10);
  CAPTURE(first, last);
  CHECK(first > 0.5);
  CHECK(last < 0.3 * first);
}

TEMPLATE_TEST_CASE("Trainer skips a step whose input batch holds a NaN, and trains on afterwards",
                   "[train][trainer]", mpx::fp16_mixed, mpx::bf16_mixed, mpx::fp32) {
  const Classification data = make_classification(2, 32, 5u);
  auto model = make_classifier<TestType>(9);
  mpx::nn::SoftmaxCrossEntropy<TestType> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 0.01f});
  mpx::Trainer trainer(model, loss, optimizer);
  for (int i = 0; i < 3; ++i) REQUIRE(trainer.step(data.inputs[0], data.labels[0]).stepped);

  mpx::Tensor<float> poisoned = data.inputs[1].clone();
  poisoned[5 * features + 3] = quiet_nan;
  const auto before = snapshot(model);
  const float scale = trainer.scaler().scale();
  const mpx::StepResult result = trainer.step(poisoned, data.labels[1]);
  CHECK_FALSE(result.stepped);
  CHECK(bitwise_equal(snapshot(model), before));
  CHECK(optimizer.steps() == 3);
  CHECK(trainer.scaler().state().steps_skipped == 1);
  CHECK(trainer.scaler().scale() ==
        (std::is_same_v<typename TestType::compute_type, mpx::Half> ? scale * 0.5f : 1.0f));

  const mpx::StepResult next = trainer.step(data.inputs[1], data.labels[1]);
  CHECK(next.stepped);
  CHECK(std::isfinite(next.loss));
  CHECK(all_finite(model));
  CHECK(optimizer.steps() == 4);
}

TEMPLATE_TEST_CASE("Trainer: a step over two micro-batches equals a step over the concatenated batch",
                   "[train][trainer]", mpx::fp64, mpx::fp32) {
  // Equal-sized micro-batches: the mean of their mean losses is the mean loss of the whole batch (as
  // PyTorch's loss / accumulation_steps). fp64 agrees to rounding; fp32 to its summation-order error.
  const double tolerance = std::is_same_v<TestType, mpx::fp64> ? 1e-13 : 2e-6;
  const Classification data = make_classification(3, 32, 21u);
  auto whole = make_classifier<TestType>(4);
  auto split = make_classifier<TestType>(4);
  mpx::nn::SoftmaxCrossEntropy<TestType> whole_loss;
  mpx::nn::SoftmaxCrossEntropy<TestType> split_loss;
  mpx::optim::SGD whole_optimizer(whole, {.lr = 0.1f, .momentum = 0.9f});
  mpx::optim::SGD split_optimizer(split, {.lr = 0.1f, .momentum = 0.9f});
  mpx::Trainer whole_trainer(whole, whole_loss, whole_optimizer);
  mpx::Trainer split_trainer(split, split_loss, split_optimizer);
  using Batch = typename decltype(split_trainer)::Batch;

  for (std::size_t step = 0; step < data.inputs.size(); ++step) {
    CAPTURE(step);
    const mpx::Tensor<float>& x = data.inputs[step];
    const mpx::Tensor<std::int32_t>& y = data.labels[step];
    // Micro-batches are given in the model's input type (fp32 values are exact in it).
    using Input = typename decltype(split)::input_type;
    mpx::Tensor<Input> x1(mpx::Shape{16, features});
    mpx::Tensor<Input> x2(mpx::Shape{16, features});
    mpx::Tensor<std::int32_t> y1(mpx::Shape{16});
    mpx::Tensor<std::int32_t> y2(mpx::Shape{16});
    for (std::int64_t i = 0; i < x1.numel(); ++i) {
      x1[i] = static_cast<Input>(x[i]);
      x2[i] = static_cast<Input>(x[16 * features + i]);
    }
    for (std::int64_t i = 0; i < 16; ++i) {
      y1[i] = y[i];
      y2[i] = y[16 + i];
    }
    const Batch micro[] = {{x1, y1}, {x2, y2}};

    const mpx::StepResult a = whole_trainer.step(x, y);
    const mpx::StepResult b = split_trainer.step(std::span<const Batch>(micro));
    REQUIRE(a.stepped);
    REQUIRE(b.stepped);
    CHECK(std::fabs(a.loss - b.loss) <= tolerance);
    CHECK(std::fabs(a.grad_norm - b.grad_norm) <= tolerance);
    CHECK(max_difference(flat_gradients(whole), flat_gradients(split)) <= tolerance);
    CHECK(max_difference(flat_weights(whole), flat_weights(split)) <= tolerance);
  }
  // A micro-batch list must not be empty.
  CHECK_THROWS_AS(split_trainer.step(std::span<const Batch>()), mpx::invalid_argument);
}

TEST_CASE("Trainer clips the global gradient norm as clip_grad_norm_ and reports the unclipped norm",
          "[train][trainer]") {
  using P = mpx::fp32;
  const Classification data = make_classification(1, 32, 33u);
  const mpx::Tensor<float>& x = data.inputs[0];
  const mpx::Tensor<std::int32_t>& y = data.labels[0];

  // The gradient computed independently: forward, loss gradient with seed 1, backward.
  auto reference = make_classifier<P>(8);
  mpx::nn::SoftmaxCrossEntropy<P> reference_loss;
  reference.zero_grad();
  const auto& logits = reference.forward(x);
  reference_loss.forward_backward(logits, y, 1.0f);
  reference.backward(reference_loss.gradient());
  const std::vector<double> g = flat_gradients(reference);
  const double norm = gradient_norm(reference);
  REQUIRE(norm > 0.1);

  const float lr = 0.1f;
  SECTION("clipped") {
    const double max_norm = norm / 4.0;
    auto model = make_classifier<P>(8);
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    mpx::optim::SGD optimizer(model, {.lr = lr});
    mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = max_norm});
    const std::vector<double> w0 = flat_weights(model);
    const mpx::StepResult result = trainer.step(x, y);
    CHECK(result.stepped);
    CHECK(result.clipped);
    CHECK(result.grad_norm == Approx(norm).epsilon(1e-6));  // the norm before clipping
    // The gradients stay as computed; the optimizer multiplies each by the clipping coefficient
    // max_norm / (norm + 1e-6) as it reads it (on every device), so the step is along the clipped one.
    CHECK(gradient_norm(model) == Approx(norm).epsilon(1e-6));
    const double coefficient = max_norm / (norm + 1e-6);
    const std::vector<double> unclipped = flat_gradients(model);
    const std::vector<double> w1 = flat_weights(model);
    double worst_gradient = 0.0, worst_weight = 0.0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      worst_gradient = std::fmax(worst_gradient, std::fabs(unclipped[i] - g[i]));
      worst_weight = std::fmax(
          worst_weight, std::fabs(w1[i] - (w0[i] - static_cast<double>(lr) * unclipped[i] * coefficient)));
    }
    CHECK(worst_gradient <= 1e-6);
    CHECK(worst_weight <= 1e-6);
  }
  SECTION("a large max_grad_norm leaves the gradient alone") {
    auto model = make_classifier<P>(8);
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    mpx::optim::SGD optimizer(model, {.lr = lr});
    mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = 10.0 * norm});
    const mpx::StepResult result = trainer.step(x, y);
    CHECK(result.stepped);
    CHECK_FALSE(result.clipped);
    CHECK(result.grad_norm == Approx(norm).epsilon(1e-6));
    CHECK(max_difference(flat_gradients(model), g) <= 1e-7);
  }
  SECTION("under fp16 with loss scaling, the norm and the clipping see unscaled gradients") {
    auto model = make_classifier<mpx::fp16_mixed>(8);
    mpx::nn::SoftmaxCrossEntropy<mpx::fp16_mixed> loss;
    mpx::optim::SGD optimizer(model, {.lr = lr});
    mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = norm / 4.0});
    const mpx::StepResult result = trainer.step(x, y);
    REQUIRE(result.stepped);
    CHECK(result.loss_scale == 65536.0f);
    // fp16 rounding of weights, activations and gradients moves the norm by well under 1%; a
    // missing unscale would be off by 2^16.
    CHECK(result.grad_norm == Approx(norm).epsilon(1e-2));
    CHECK(result.clipped);
    // The gradients the optimizer read are unscaled (and left unclipped, see above).
    CHECK(gradient_norm(model) == Approx(result.grad_norm).epsilon(1e-5));
  }
  SECTION("max_grad_norm must be finite and positive") {
    auto model = make_classifier<P>(8);
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    mpx::optim::SGD optimizer(model, {.lr = lr});
    using Trainer = mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)>;
    for (const double bad : {0.0, -1.0, static_cast<double>(inf), static_cast<double>(quiet_nan)}) {
      CAPTURE(bad);
      CHECK_THROWS_WITH(Trainer(model, loss, optimizer, {.max_grad_norm = bad}), Contains("max_grad_norm"));
      CHECK_THROWS_AS(Trainer(model, loss, optimizer, {.max_grad_norm = bad}), mpx::invalid_argument);
    }
  }
}

namespace {

/// A linear regression whose targets are ~1e-5: y = x W*^T with x in [-1, 1]^8 and |W*| <= 1.25e-6,
/// 256 rows and 4 outputs, so the mean over 1024 elements makes dL/dy = 2 (y - t) / 1024 ~ 1e-8.
struct TinyRegression {
  mpx::Tensor<float> x{mpx::Shape{256, features}};
  mpx::Tensor<float> t{mpx::Shape{256, 4}};
};

TinyRegression make_tiny_regression() {
  std::mt19937 random(77u);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  TinyRegression data;
  std::vector<double> w(4 * features);
  for (double& v : w) v = 1.25e-6 * unit(random);
  for (std::int64_t i = 0; i < data.x.numel(); ++i) data.x[i] = unit(random);
  for (std::int64_t r = 0; r < 256; ++r) {
    for (std::int64_t o = 0; o < 4; ++o) {
      double sum = 0.0;
      for (std::int64_t k = 0; k < features; ++k)
        sum += w[static_cast<std::size_t>(o * features + k)] * data.x[r * features + k];
      data.t[r * 4 + o] = static_cast<float>(sum);
    }
  }
  return data;
}

struct RegressionRun {
  std::vector<double> losses;
  bool weights_changed = false;
  bool gradients_all_zero = true;  // on every step
};

/// SGD on the tiny regression, from zero weights, under precision P and scaler S.
template <class P, class S>
RegressionRun train_tiny_regression(const TinyRegression& data, int steps) {
  mpx::nn::Sequential model{mpx::nn::Linear<P>(features, 4)};
  model.for_each_parameter([](std::string_view, auto& p) {
    p.master().set_zero();
    p.refresh_compute_copy();
  });
  mpx::nn::MSELoss<P> loss;
  mpx::optim::SGD optimizer(model, {.lr = 3.0f});
  mpx::Trainer<decltype(model), mpx::nn::MSELoss<P>, decltype(optimizer), S> trainer(model, loss, optimizer);
  const auto initial = snapshot(model);
  RegressionRun run;
  for (int step = 0; step < steps; ++step) {
    const mpx::StepResult result = trainer.step(data.x, data.t);
    REQUIRE(result.stepped);
    run.losses.push_back(result.loss);
    model.for_each_parameter([&](std::string_view, auto& p) {
      for (const float g : p.grad().values()) run.gradients_all_zero = run.gradients_all_zero && g == 0.0f;
    });
  }
  run.weights_changed = !bitwise_equal(snapshot(model), initial);
  return run;
}

}  // namespace

TEST_CASE(
    "Without loss scaling fp16 gradients underflow to zero and nothing trains, with scaling or bf16 it "
    "trains",
    "[train][trainer][underflow]") {
  const TinyRegression data = make_tiny_regression();
  // Why fp16 loses everything here: from zero weights, y = 0 and dL/dy = 2 (0 - t) / 1024. The loss
  // gradient is rounded into the output's type (fp16) before backward, and every |dL/dy| is below
  // 2^-25, half of fp16's smallest subnormal 2^-24 ~ 6e-8, so round-to-nearest makes each one 0:
  // dW = dL/dy^T x and db = sum dL/dy are exactly 0 and the weights never move. Scaled by 2^16 the
  // same values are ~1e-3, normal fp16 numbers; bf16 has fp32's exponent range and needs no scaling.
  double largest = 0.0;
  double smallest_nonzero = inf;
  for (const float t : data.t.values()) {
    const double g = 2.0 * std::fabs(static_cast<double>(t)) / 1024.0;
    largest = std::fmax(largest, g);
    if (g > 0.0) smallest_nonzero = std::fmin(smallest_nonzero, g);
  }
  REQUIRE(largest < std::ldexp(1.0, -25));
  REQUIRE(largest * 65536.0 > std::ldexp(1.0, -14));  // scaled, the largest is a normal fp16 number
  REQUIRE(smallest_nonzero > 0.0);

  constexpr int steps = 40;
  const RegressionRun unscaled =
      train_tiny_regression<mpx::fp16_mixed, mpx::AllowFp16Underflow<mpx::NoLossScaling>>(data, steps);
  const RegressionRun scaled = train_tiny_regression<mpx::fp16_mixed, mpx::DynamicLossScaling>(data, steps);
  const RegressionRun bf16 = train_tiny_regression<mpx::bf16_mixed, mpx::NoLossScaling>(data, steps);
  const RegressionRun fp32 = train_tiny_regression<mpx::fp32, mpx::NoLossScaling>(data, steps);

  const auto ratio = [](const RegressionRun& run) { return run.losses.back() / run.losses.front(); };
  const auto scientific = [](double value) {
    std::ostringstream out;
    out << std::scientific << value;
    return out.str();
  };
  CAPTURE(scientific(unscaled.losses.front()), scientific(unscaled.losses.back()), scientific(ratio(scaled)),
          scientific(ratio(bf16)), scientific(ratio(fp32)));
  REQUIRE(unscaled.losses.front() > 1e-13);  // the task is not trivially solved at the start

  // fp16, no scaling: every weight gradient is exactly zero on every step; the weights and the loss
  // do not move at all.
  CHECK(unscaled.gradients_all_zero);
  CHECK_FALSE(unscaled.weights_changed);
  CHECK(unscaled.losses.back() == unscaled.losses.front());

  // The same task trains with loss scaling (fp16) or without it in bf16 and fp32: the loss falls by
  // more than 100x (fp16's floor comes from its subnormal weights and outputs, ~2^-24 apart).
  CHECK_FALSE(scaled.gradients_all_zero);
  CHECK(scaled.weights_changed);
  CHECK(ratio(scaled) < 1e-2);
  CHECK(ratio(bf16) < 1e-2);
  CHECK(ratio(fp32) < 1e-4);
}

TEST_CASE("Trainer::first_step_memory splits weights, gradients, optimizer state and activations exactly",
          "[train][trainer][memory]") {
  // 8 -> 16 (ReLU) -> 4, batch 32, bf16 mixed with AdamW: every figure can be counted by hand.
  using P = mpx::bf16_mixed;
  mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(8, 16), mpx::nn::Linear<P>(16, 4)};
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::AdamW optimizer(model, {});
  mpx::Trainer trainer(model, loss, optimizer);
  mpx::Tensor<Eigen::bfloat16> inputs(mpx::Shape{32, 8});
  for (std::int64_t i = 0; i < inputs.numel(); ++i) inputs[i] = Eigen::bfloat16(float(i % 7) - 3.0f);
  mpx::Tensor<std::int32_t> labels(mpx::Shape{32});
  for (std::int64_t i = 0; i < labels.numel(); ++i) labels[i] = std::int32_t(i % 4);
  CHECK(trainer.first_step_memory().activations == 0);  // nothing measured before the first step
  trainer.step(inputs, labels);

  const std::int64_t weights = 16 * 8 + 16 + 4 * 16 + 4;
  const auto& memory = trainer.first_step_memory();
  CHECK(memory.parameter_count == weights);
  CHECK(memory.weights == weights * (4 + 2));        // fp32 master, bf16 copy
  CHECK(memory.gradients == weights * 4);            // fp32 gradient
  CHECK(memory.optimizer_state == weights * 2 * 4);  // AdamW's two fp32 moments
  CHECK(memory.bytes_per_parameter() == 18.0);
  // Layer 0: its output (bf16) and ReLU's bit mask (relu_mask_words(16) = 4 int32 words a row:
  // cuBLASLt's masks come in 128-bit rows); layer 1: its output and dx, which is layer 0's dZ
  // (layer 1's dx GEMM applies the ReLU gradient); the loss gradient. Layer 0 computes no dx, and
  // the first step writes bias gradients in place.
  CHECK(memory.activations == 2 * (32 * 16 + 32 * 4 + 32 * 16 + 32 * 4) + 32 * 4 * 4);
  CHECK(memory.peak >= mpx::memory_stats<mpx::Host>().live_bytes());
}

TEST_CASE("Trainer: queue_step then read_result is step, and a captured step replays as eager steps",
          "[train][trainer][capture]") {
  // The CPU's recording of a step is the step itself: 30 replays, with a learning-rate change in the
  // middle, must leave the model bit-identical to 30 eager steps on the same batch.
  using P = mpx::bf16_mixed;
  const Classification data = make_classification(1, 32, 7);
  auto eager_model = make_classifier<P>(3);
  auto replay_model = make_classifier<P>(3);
  mpx::nn::SoftmaxCrossEntropy<P> eager_loss, replay_loss;
  mpx::optim::AdamW eager_optimizer(eager_model, {.lr = 0.01});
  mpx::optim::AdamW replay_optimizer(replay_model, {.lr = 0.01});
  mpx::Trainer eager(eager_model, eager_loss, eager_optimizer, {.max_grad_norm = 0.5});
  mpx::Trainer replayed(replay_model, replay_loss, replay_optimizer, {.max_grad_norm = 0.5});

  eager.queue_step(data.inputs[0], data.labels[0]);  // the capture's own eager step
  const mpx::StepResult first = eager.read_result();
  CHECK(first.step == 1);
  replayed.capture_step(data.inputs[0], data.labels[0]);
  CHECK(replayed.steps() == 1);  // the capture ran one eager step first, and recorded without running
  CHECK(replayed.read_result().loss == first.loss);
  for (int s = 0; s < 30; ++s) {
    if (s == 15) {
      eager_optimizer.set_lr(0.002);
      replay_optimizer.set_lr(0.002);
    }
    eager.queue_step(data.inputs[0], data.labels[0]);
    replayed.replay_step();
  }
  const mpx::StepResult e = eager.read_result();
  const mpx::StepResult r = replayed.read_result();
  CHECK(r.step == 31);
  CHECK(r.loss == e.loss);
  CHECK(r.grad_norm == e.grad_norm);
  CHECK(r.clipped == e.clipped);
  CHECK(replay_optimizer.steps() == eager_optimizer.steps());
  CHECK(snapshot(replay_model) == snapshot(eager_model));

  // Settings frozen into the recording may not change under it; a new shape drops it.
  replay_optimizer.set_rounding_seed(99);
  CHECK_THROWS_WITH(replayed.replay_step(), Contains("changed since capture_step"));
  replay_optimizer.set_rounding_seed(eager_optimizer.options().rounding_seed);
  replayed.replay_step();
  const Classification other = make_classification(1, 8, 7);
  replayed.step(other.inputs[0], other.labels[0]);
  CHECK_THROWS_WITH(replayed.replay_step(), Contains("call capture_step first"));
}

TEST_CASE("Trainer: a replay after an evaluation at another batch size is refused, at the same size allowed",
          "[train][trainer][capture]") {
  // On a GPU the recording writes into the layers' buffers, which an evaluation at another batch size
  // frees; the CPU refuses the same replay, so that a loop that would corrupt GPU memory fails here.
  using P = mpx::bf16_mixed;
  const Classification data = make_classification(1, 32, 7);
  const Classification small = make_classification(1, 8, 8);
  auto model = make_classifier<P>(3);
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.05});
  mpx::Trainer trainer(model, loss, optimizer);
  trainer.capture_step(data.inputs[0], data.labels[0]);
  trainer.replay_step();
  (void)model.forward(data.inputs[0]);  // the training batch size: the buffers stay
  trainer.replay_step();
  (void)model.forward(small.inputs[0]);  // another: the buffers are replaced
  CHECK_THROWS_WITH(trainer.replay_step(), Contains("reallocated since capture_step"));
  trainer.capture_step(data.inputs[0], data.labels[0]);
  trainer.replay_step();
  CHECK(trainer.read_result().step == 5);
}

TEST_CASE(
    "Trainer: capture_step on fp32 input after a step on input in the model's type runs its warm-up step",
    "[train][trainer][capture]") {
  // The last step took bf16 input of the same shape, so the layers' buffers exist, but the buffer the
  // recording rounds fp32 input into does not: capture_step must run an eager step first.
  using P = mpx::bf16_mixed;
  const Classification data = make_classification(1, 32, 7);
  auto model = make_classifier<P>(3);
  auto reference = make_classifier<P>(3);
  mpx::nn::SoftmaxCrossEntropy<P> loss, reference_loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.05});
  mpx::optim::SGD reference_optimizer(reference, {.lr = 0.05});
  mpx::Trainer trainer(model, loss, optimizer);
  mpx::Trainer eager(reference, reference_loss, reference_optimizer);
  const auto rounded = mpx::convert<mpx::BFloat16>(data.inputs[0]);
  trainer.step(rounded, data.labels[0]);
  eager.step(rounded, data.labels[0]);
  trainer.capture_step(data.inputs[0], data.labels[0]);
  CHECK(trainer.steps() == 2);  // the warm-up step ran
  eager.step(data.inputs[0], data.labels[0]);
  for (int s = 0; s < 3; ++s) {
    trainer.replay_step();
    eager.step(data.inputs[0], data.labels[0]);
  }
  CHECK(trainer.read_result().loss == eager.read_result().loss);
  CHECK(snapshot(model) == snapshot(reference));
}

TEST_CASE("An optimizer over a ParameterList updates those parameters only", "[train][optimizer]") {
  using P = mpx::fp32;
  auto model = make_classifier<P>(5);
  auto reference = make_classifier<P>(5);
  const Classification data = make_classification(1, 16, 11);
  // Train the classifier's weight and bias only; the first layer stays as initialised.
  auto& head = model.layer<1>();
  mpx::optim::SGD optimizer(mpx::nn::ParameterList{head.weight(), *head.bias()},
                            {.lr = 0.1, .momentum = 0.9});
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::Trainer trainer(model, loss, optimizer);
  for (int s = 0; s < 3; ++s) CHECK(trainer.step(data.inputs[0], data.labels[0]).stepped);
  CHECK(optimizer.steps() == 3);
  const auto masters = [](auto& m) {
    std::vector<std::vector<float>> out;
    m.for_each_parameter([&](std::string_view, auto& p) {
      const auto values = p.master().values();
      out.emplace_back(values.begin(), values.end());
    });
    return out;
  };
  const auto trained = masters(model);
  const auto initial = masters(reference);
  REQUIRE(trained.size() == 4);  // layers.0.weight, layers.0.bias, layers.1.weight, layers.1.bias
  CHECK(trained[0] == initial[0]);
  CHECK(trained[1] == initial[1]);
  CHECK(trained[2] != initial[2]);
  CHECK(trained[3] != initial[3]);
  CHECK_FALSE(model.layer<0>().weight().has_state(0));  // no momentum buffer outside the list
  CHECK(head.weight().has_state(0));
}

}  // namespace MPX_UNITY_ID
}  // namespace
