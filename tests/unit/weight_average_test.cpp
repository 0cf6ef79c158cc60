// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The weight average (EMA) a trainer keeps: each taken step updates it as a scalar loop of
// diffusers' EMAModel.step does, bit for bit, with and without warmup; a skipped step (an inf
// gradient under fp16 dynamic loss scaling) leaves it unchanged; it survives a checkpoint bit for bit
// and a resumed run continues it exactly; a file that does not fit is rejected naming the tensor; and
// it can be read by name, copied into a model for evaluation, or loaded from a checkpoint into one.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <unistd.h>

#include <mpx/io/checkpoint.hpp>
#include <mpx/mpx.hpp>

#include "../support/model_state.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using Catch::Matchers::Contains;

constexpr std::int64_t features = 6;
constexpr std::int64_t classes = 3;
constexpr std::int64_t batch = 16;
constexpr float inf = std::numeric_limits<float>::infinity();

std::filesystem::path scratch(const std::string& name) {
  const auto directory = std::filesystem::temp_directory_path() / "mpx_weight_average_test";
  std::filesystem::create_directories(directory);
  return directory / (name + "." + std::to_string(::getpid()) + ".safetensors");
}

/// Batch b of a fixed synthetic stream (a cheap hash, so the data needs no state to resume).
struct Data {
  mpx::Tensor<float> inputs{mpx::Shape{batch, features}};
  mpx::Tensor<std::int32_t> labels{mpx::Shape{batch}};
};
Data batch_at(int b) {
  Data d;
  for (std::int64_t i = 0; i < batch; ++i) {
    const auto label = static_cast<std::int32_t>((i * 7 + b * 3) % classes);
    d.labels[i] = label;
    for (std::int64_t f = 0; f < features; ++f) {
      const std::uint32_t h = static_cast<std::uint32_t>(b * 2654435761u + i * 40503u + f * 9973u) >> 8;
      d.inputs[i * features + f] = static_cast<float>(h % 1000) / 500.0f - 1.0f + (f == label ? 1.5f : 0.0f);
    }
  }
  return d;
}

template <class P>
auto make_model(std::uint64_t seed, std::int64_t hidden = 12) {
  mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(features, hidden),
                            mpx::nn::Linear<P>(hidden, classes)};
  model.initialize(seed);
  return model;
}

/// SoftmaxCrossEntropy whose gradient gets an inf planted at chosen calls (1-based), as an overflow in
/// the backward pass would leave it (as tests/unit/trainer_test.cpp's).
template <class P>
class FaultInjectingLoss {
  using Inner = mpx::nn::SoftmaxCrossEntropy<P>;

 public:
  using precision = P;
  using device_type = mpx::Host;
  using input_type = typename Inner::input_type;
  using target_type = typename Inner::target_type;
  using value_type = typename Inner::value_type;

  std::vector<std::int64_t> faults;  // calls whose gradient gets an inf

  void accumulate_forward_backward(const mpx::Tensor<input_type>& logits, target_type labels,
                                   const mpx::LossSeed& seed, double* loss_sum) {
    ++calls_;
    inner_.accumulate_forward_backward(logits, labels, seed, loss_sum);
    mpx::nn::ensure_shape(gradient_, logits.shape());
    const auto source = inner_.gradient().values();
    std::copy(source.begin(), source.end(), gradient_.values().begin());
    if (std::find(faults.begin(), faults.end(), calls_) != faults.end())
      gradient_[(calls_ * 7) % gradient_.numel()] = static_cast<input_type>(inf);
  }

  [[nodiscard]] const mpx::Tensor<input_type>& gradient() const noexcept { return gradient_; }

 private:
  Inner inner_;
  mpx::Tensor<input_type> gradient_;
  std::int64_t calls_ = 0;
};

/// The bytes of every tensor of a weight average, in its order.
template <class Average>
std::vector<unsigned char> average_bytes(const Average& average) {
  std::vector<unsigned char> out;
  average.for_each([&](std::string_view, const auto& tensor) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(tensor.data());
    out.insert(out.end(), bytes, bytes + tensor.size_bytes());
  });
  return out;
}

/// The reference: diffusers' EMAModel.step as a scalar loop over the master weights read in `Acc`,
/// written from its Python (get_decay, then `s -= one_minus_decay * (s - p)` in the tensor's type).
template <class Acc>
struct ReferenceAverage {
  mpx::WeightAverageOptions options;
  std::vector<std::vector<Acc>> values;
  std::int64_t updates = 0;
  double last_decay = 0.0;

  template <class Model>
  ReferenceAverage(Model& model, const mpx::WeightAverageOptions& o) : options(o) {
    model.for_each_parameter([&](std::string_view, auto& p) { values.push_back(weights(p)); });
  }

  template <class Parameter>
  static std::vector<Acc> weights(Parameter& p) {
    std::vector<Acc> w;
    for (const auto& x : p.master().values()) w.push_back(static_cast<Acc>(x));
    return w;
  }

  double decay() const {
    if (!options.warmup) return options.decay;
    const std::int64_t step = updates;  // optimization_step - update_after_step - 1, after the increment
    if (step <= 0) return 0.0;
    return std::min((1.0 + static_cast<double>(step)) / (10.0 + static_cast<double>(step)), options.decay);
  }

  template <class Model>
  void step(Model& model) {
    last_decay = decay();
    const Acc one_minus_decay = static_cast<Acc>(1.0 - last_decay);
    std::size_t index = 0;
    model.for_each_parameter([&](std::string_view, auto& p) {
      std::vector<Acc>& s = values[index++];
      const std::vector<Acc> w = weights(p);
      for (std::size_t i = 0; i < s.size(); ++i) {
        const Acc difference = s[i] - w[i];
        const Acc product = one_minus_decay * difference;
        s[i] = s[i] - product;
      }
    });
    ++updates;
  }

  template <class Average>
  bool equals(const Average& average) const {
    std::size_t index = 0;
    bool same = true;
    average.for_each([&](std::string_view, const auto& tensor) {
      const std::vector<Acc>& s = values[index++];
      same = same && s.size() == static_cast<std::size_t>(tensor.numel()) &&
             std::memcmp(s.data(), tensor.data(), tensor.size_bytes()) == 0;
    });
    return same && index == values.size();
  }
};

/// Trains `steps` steps with an average of `options`, planting an inf in the gradient at the calls
/// in `faults`, and checks the average against the reference after every step.
template <class P>
void check_against_reference(const mpx::WeightAverageOptions& options,
                             const std::vector<std::int64_t>& faults, int steps) {
  auto model = make_model<P>(5);
  FaultInjectingLoss<P> loss;
  loss.faults = faults;
  mpx::optim::AdamW optimizer(model, {.lr = 0.05});
  mpx::Trainer trainer(model, loss, optimizer);
  auto& average = trainer.keep_weight_average(options);
  using Acc = typename std::remove_cvref_t<decltype(average)>::value_type;
  ReferenceAverage<Acc> reference(model, options);
  REQUIRE(reference.equals(average));  // starts as the weights
  REQUIRE(average.updates() == 0);
  int skipped = 0;
  for (int s = 1; s <= steps; ++s) {
    CAPTURE(s);
    const auto before = average_bytes(average);
    const Data d = batch_at(s);
    const mpx::StepResult result = trainer.step(d.inputs, d.labels);
    const bool fault = std::find(faults.begin(), faults.end(), s) != faults.end();
    REQUIRE(result.stepped == !fault);
    if (result.stepped) {
      reference.step(model);
      CHECK(average_bytes(average) != before);
    } else {
      ++skipped;
      CHECK(average_bytes(average) == before);  // bit for bit
    }
    CHECK(reference.equals(average));
    CHECK(average.updates() == reference.updates);
    CHECK(average.last_decay() == reference.last_decay);
  }
  CHECK(average.updates() == steps - skipped);
  CHECK(trainer.scaler().state().steps_skipped == skipped);
}

/// Trains a fresh trainer of precision P with an average for `first` .. `first + count - 1`, batches
/// in `poisoned` holding an inf input (the step is skipped).
template <class Trainer>
void train(Trainer& trainer, int first, int count, const std::vector<int>& poisoned = {}) {
  for (int b = first; b < first + count; ++b) {
    Data d = batch_at(b);
    if (std::find(poisoned.begin(), poisoned.end(), b) != poisoned.end()) d.inputs[3] = inf;
    (void)trainer.step(d.inputs, d.labels);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("Each taken step updates the weight average as diffusers' EMAModel.step, bit for bit",
                   "[train][weight_average]", mpx::fp32, mpx::bf16_mixed, mpx::fp64,
                   (mpx::Precision<mpx::BFloat16, mpx::BFloat16>)) {
  SECTION("fixed decay") {
    check_against_reference<TestType>({.decay = 0.9}, {}, 8);
  }
  SECTION("diffusers' warmup, capped by the decay") {
    check_against_reference<TestType>({.decay = 0.25, .warmup = true}, {}, 8);
  }
  SECTION("the defaults: decay 0.9999, no warmup") {
    check_against_reference<TestType>({}, {}, 4);
  }
}

TEST_CASE("A step skipped for an inf gradient under fp16 loss scaling leaves the weight average unchanged",
          "[train][weight_average]") {
  // Skips at the first step, in a run of two, and alone; the warmup counts taken steps only, so the
  // updates after a skip use the decay of the next update, not of the step number.
  SECTION("fixed decay") {
    check_against_reference<mpx::fp16_mixed>({.decay = 0.8}, {1, 4, 5, 9}, 12);
  }
  SECTION("warmup") {
    check_against_reference<mpx::fp16_mixed>({.decay = 0.9, .warmup = true}, {1, 4, 5, 9}, 12);
  }
}

TEST_CASE("WeightAverage::update() outside a trainer, and its options are checked",
          "[train][weight_average]") {
  auto model = make_model<mpx::fp32>(3);
  mpx::WeightAverage average(model, {.decay = 0.5});
  ReferenceAverage<float> reference(model, {.decay = 0.5});
  for (int u = 0; u < 3; ++u) {
    model.for_each_parameter([&](std::string_view, auto& p) {
      for (float& w : p.master().values()) w = w * 0.75f + 0.125f;
    });
    average.update();
    reference.step(model);
    CHECK(reference.equals(average));
  }
  CHECK(average.updates() == 3);
  CHECK(average.last_decay() == 0.5);

  for (const double bad : {1.5, -0.1, std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(mpx::WeightAverage(model, {.decay = bad}), mpx::invalid_argument);
  }
  CHECK_THROWS_WITH(mpx::WeightAverage(model, {.decay = 1.5}), Contains("decay = 1.5 is invalid"));
  CHECK_THROWS_WITH(average.set_updates(-1), Contains("negative"));

  // A bad decay is refused; a trainer keeps one average, and a second is refused too.
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::Trainer trainer(model, loss, optimizer);
  CHECK(trainer.weight_average() == nullptr);
  CHECK_THROWS_WITH(trainer.keep_weight_average({.decay = 2.0}), Contains("decay = 2 is invalid"));
  CHECK(trainer.weight_average() == nullptr);
  auto& kept = trainer.keep_weight_average({.decay = 0.99});
  CHECK_THROWS_WITH(trainer.keep_weight_average({.decay = 0.5}), Contains("already keeps a weight average"));
  CHECK(trainer.weight_average() == &kept);
  CHECK(kept.options().decay == 0.99);
}

TEST_CASE("The weight average is read by parameter name and copied into a model for evaluation",
          "[train][weight_average]") {
  using P = mpx::bf16_mixed;
  auto model = make_model<P>(8);
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 0.05});
  mpx::Trainer trainer(model, loss, optimizer);
  // [weight-average]
  // Keep an EMA of the fp32 master weights, updated on the device inside every step the optimizer
  // takes (diffusers' EMAModel: decay 0.9999 by default; here a short one, with its warmup).
  auto& average = trainer.keep_weight_average({.decay = 0.99, .warmup = true});
  for (int b = 0; b < 20; ++b) {
    const Data d = batch_at(b);
    (void)trainer.step(d.inputs, d.labels);
  }
  // Evaluate or sample with the averaged weights: a second model of the same layers, any precision.
  auto averaged = make_model<mpx::fp32>(0);
  average.copy_into(averaged);
  const mpx::Tensor<float>& first_weight = average.at("layers.0.weight");
  // [weight-average]
  CHECK(average.updates() == 20);
  CHECK(first_weight.shape() == mpx::Shape{12, features});
  CHECK(std::memcmp(first_weight.data(), averaged.layer<0>().weight().master().data(),
                    first_weight.size_bytes()) == 0);
  // Every parameter: masters equal the average (fp32 into fp32), and a bf16_mixed target's compute
  // copy is refreshed from them.
  auto mixed = make_model<P>(1);
  average.copy_into(mixed);
  std::size_t index = 0;
  std::vector<const mpx::Tensor<float>*> tensors;
  average.for_each([&](std::string_view, const mpx::Tensor<float>& t) { tensors.push_back(&t); });
  mixed.for_each_parameter([&](std::string_view name, auto& p) {
    CAPTURE(name);
    const mpx::Tensor<float>& t = *tensors[index++];
    CHECK(&average.at(name) == &t);
    CHECK(std::memcmp(t.data(), p.master().data(), t.size_bytes()) == 0);
    bool refreshed = true;
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      refreshed = refreshed && p.compute()[i] == mpx::round_to<mpx::BFloat16>(t[i]);
    }
    CHECK(refreshed);
  });
  CHECK(index == tensors.size());
  // The average differs from the weights it follows.
  CHECK(std::memcmp(first_weight.data(), model.layer<0>().weight().master().data(),
                    first_weight.size_bytes()) != 0);

  CHECK_THROWS_WITH(average.at("layers.7.weight"), Contains("no parameter \"layers.7.weight\"") &&
                                                       Contains("layers.0.weight, layers.0.bias"));
  auto wider = make_model<mpx::fp32>(0, 13);
  const auto untouched = mpx::test::state_bytes(wider);
  CHECK_THROWS_WITH(average.copy_into(wider),
                    Contains("parameter \"layers.0.weight\" has shape [13, 6] in the target, [12, 6] in the "
                             "average") &&
                        Contains("nothing was copied"));
  CHECK(mpx::test::state_bytes(wider) == untouched);
}

TEST_CASE("A CPU-recorded step (capture_step / replay_step) updates the weight average as eager steps do",
          "[train][weight_average]") {
  using P = mpx::fp32;
  auto eager_model = make_model<P>(4);
  auto replayed_model = make_model<P>(4);
  mpx::nn::SoftmaxCrossEntropy<P> eager_loss, replayed_loss;
  mpx::optim::SGD eager_optimizer(eager_model, {.lr = 0.1, .momentum = 0.9});
  mpx::optim::SGD replayed_optimizer(replayed_model, {.lr = 0.1, .momentum = 0.9});
  mpx::Trainer eager(eager_model, eager_loss, eager_optimizer);
  mpx::Trainer replayed(replayed_model, replayed_loss, replayed_optimizer);
  Data d = batch_at(0);
  replayed.capture_step(d.inputs, d.labels);  // step 1 runs eagerly, then the recording
  (void)eager.step(d.inputs, d.labels);
  auto& eager_average = eager.keep_weight_average({.decay = 0.7});
  auto& replayed_average = replayed.keep_weight_average({.decay = 0.7});
  // The recording was made without the average: starting one drops it.
  CHECK_THROWS_WITH(replayed.replay_step(), Contains("keep_weight_average"));
  replayed.capture_step(d.inputs, d.labels);  // the same shape: records only
  for (int b = 1; b < 6; ++b) {
    const Data next = batch_at(b);
    std::memcpy(d.inputs.data(), next.inputs.data(), next.inputs.size_bytes());
    std::memcpy(d.labels.data(), next.labels.data(), next.labels.size_bytes());
    (void)eager.step(d.inputs, d.labels);
    replayed.replay_step();
  }
  CHECK(replayed_average.updates() == 5);
  CHECK(average_bytes(replayed_average) == average_bytes(eager_average));
  CHECK(mpx::test::state_bytes(replayed_model) == mpx::test::state_bytes(eager_model));
}

TEST_CASE("Checkpoints keep the weight average: resume continues it bit for bit, skipped steps included",
          "[train][weight_average][checkpoint]") {
  using P = mpx::fp16_mixed;
  constexpr int n = 7, m = 6;
  const std::vector<int> poisoned = {2, 9};  // skipped steps before and after the checkpoint
  const mpx::WeightAverageOptions options{.decay = 0.9, .warmup = true};
  const auto path = scratch("resume");

  auto straight_model = make_model<P>(21);
  mpx::nn::SoftmaxCrossEntropy<P> straight_loss;
  mpx::optim::AdamW straight_optimizer(straight_model, {.lr = 0.02});
  mpx::Trainer straight(straight_model, straight_loss, straight_optimizer);
  straight.keep_weight_average(options);
  train(straight, 0, n + m, poisoned);

  std::vector<unsigned char> saved_average, saved_weights;
  {
    auto model = make_model<P>(21);
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    mpx::optim::AdamW optimizer(model, {.lr = 0.02});
    mpx::Trainer trainer(model, loss, optimizer);
    trainer.keep_weight_average(options);
    train(trainer, 0, n, poisoned);
    mpx::io::save_checkpoint(path, trainer);
    saved_average = average_bytes(*trainer.weight_average());
    saved_weights = mpx::test::weight_and_buffer_bytes(model);
    CHECK(trainer.weight_average()->updates() == n - 1);
  }

  auto model = make_model<P>(99);  // other initial weights: everything must come from the file
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 0.02});
  mpx::Trainer trainer(model, loss, optimizer);
  auto& average = trainer.keep_weight_average(options);
  const mpx::io::LoadedCheckpoint loaded = mpx::io::load_checkpoint(path, trainer);
  CHECK(loaded.weight_average_restored);
  CHECK(loaded.metadata.at("ema.decay") == "0.9");
  CHECK(loaded.metadata.at("ema.warmup") == "true");
  CHECK(loaded.metadata.at("ema.updates") == "6");
  CHECK(average_bytes(average) == saved_average);  // the round trip, bit for bit
  CHECK(average.updates() == n - 1);
  CHECK(loaded.weight_average_warning.empty());
  CHECK(average.last_decay() == mpx::weight_average_decay(0.9, true, n - 2));
  {
    // Another decay goes on from the file's average, and says so.
    auto other_model = make_model<P>(99);
    mpx::nn::SoftmaxCrossEntropy<P> other_loss;
    mpx::optim::AdamW other_optimizer(other_model, {.lr = 0.02});
    mpx::Trainer other(other_model, other_loss, other_optimizer);
    other.keep_weight_average({.decay = 0.5, .warmup = true});
    const mpx::io::LoadedCheckpoint other_loaded = mpx::io::load_checkpoint(path, other);
    CHECK(other_loaded.weight_average_restored);
    CHECK_THAT(other_loaded.weight_average_warning,
               Contains("saved with decay 0.9") && Contains("decay 0.5"));
  }
  train(trainer, n, m, poisoned);
  CHECK(average.updates() == straight.weight_average()->updates());
  CHECK(average.last_decay() == straight.weight_average()->last_decay());
  CHECK(average_bytes(average) == average_bytes(*straight.weight_average()));
  CHECK(mpx::test::state_bytes(model) == mpx::test::state_bytes(straight_model));

  // The file's weights (its average ignored), or its average, into a bare model.
  auto plain = make_model<mpx::fp32>(0);
  mpx::io::load_weights(plain, path);
  CHECK(mpx::test::weight_and_buffer_bytes(plain) == saved_weights);
  auto averaged = make_model<mpx::fp32>(0);
  mpx::io::load_weights(averaged, path, {.weight_average = true});
  CHECK(mpx::test::weight_and_buffer_bytes(averaged) == saved_average);
  CHECK(saved_average != saved_weights);
  // load_checkpoint refuses load_weights' option rather than ignore it.
  CHECK_THROWS_WITH(mpx::io::load_checkpoint(path, trainer, {.weight_average = true}),
                    Contains("load_weights' option"));
  std::filesystem::remove(path);
}

TEST_CASE("A checkpoint that does not fit the trainer's weight average is refused, naming the tensor",
          "[train][weight_average][checkpoint]") {
  using P = mpx::fp32;
  const auto with_average = scratch("with_average");
  const auto without_average = scratch("without_average");
  {
    auto model = make_model<P>(2);
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    mpx::optim::SGD optimizer(model, {.lr = 0.1});
    mpx::Trainer trainer(model, loss, optimizer);
    train(trainer, 0, 2);
    mpx::io::save_checkpoint(without_average, trainer);
    trainer.keep_weight_average({.decay = 0.5});
    train(trainer, 2, 2);
    mpx::io::save_checkpoint(with_average, trainer);
    CHECK_THROWS_WITH(mpx::io::save_checkpoint(with_average, trainer, {{"ema.note", "x"}}),
                      Contains("\"ema.note\" is reserved"));
  }
  auto model = make_model<P>(3);
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::Trainer trainer(model, loss, optimizer);

  SECTION("a checkpoint without an average loads into a trainer without one, as before") {
    const mpx::io::LoadedCheckpoint loaded = mpx::io::load_checkpoint(without_average, trainer);
    CHECK_FALSE(loaded.weight_average_restored);
    CHECK(trainer.steps() == 2);
  }
  SECTION("an average expected but absent") {
    auto& average = trainer.keep_weight_average();
    const auto before = average_bytes(average);
    const auto weights_before = mpx::test::state_bytes(model);
    CHECK_THROWS_WITH(mpx::io::load_checkpoint(without_average, trainer),
                      Contains("keeps a weight average") && Contains("\"ema.layers.0.weight\"") &&
                          Contains("nothing was loaded"));
    CHECK(average_bytes(average) == before);
    CHECK(mpx::test::state_bytes(model) == weights_before);
  }
  SECTION("an average in the file, none in the trainer") {
    CHECK_THROWS_WITH(mpx::io::load_checkpoint(with_average, trainer),
                      Contains("holds a weight average (4 \"ema.*\" tensors)") &&
                          Contains("keep_weight_average(...) before loading"));
    // The weights alone load, with or without the average.
    CHECK_NOTHROW(mpx::io::load_weights(model, with_average));
  }
  SECTION("an average of other shapes") {
    auto wide = make_model<P>(3, 13);
    mpx::nn::SoftmaxCrossEntropy<P> wide_loss;
    mpx::optim::SGD wide_optimizer(wide, {.lr = 0.1});
    mpx::Trainer wide_trainer(wide, wide_loss, wide_optimizer);
    auto& average = wide_trainer.keep_weight_average({.decay = 0.5});
    const auto before = average_bytes(average);
    CHECK_THROWS_WITH(
        mpx::io::load_checkpoint(with_average, wide_trainer, {.allow_description_mismatch = true}),
        Contains("tensor \"ema.layers.0.weight\" has shape [12, 6] in the file, [13, 6] in the model"));
    CHECK(average_bytes(average) == before);
  }
  SECTION("a weight file has no average to load") {
    const auto weights = scratch("weights");
    mpx::io::save_weights(model, weights);
    CHECK_THROWS_WITH(mpx::io::load_weights(model, weights, {.weight_average = true}),
                      Contains("missing tensor \"ema.layers.1.bias\""));
    std::filesystem::remove(weights);
  }
  std::filesystem::remove(with_average);
  std::filesystem::remove(without_average);
}

}  // namespace MPX_UNITY_ID
}  // namespace
