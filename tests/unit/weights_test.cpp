// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Weights without a trainer, and checkpoints that describe their model: load_weights into a bare
// model of any precision (bit-exact masters, refreshed compute copies), every way a file can fail to
// fit (the model untouched), a checkpoint loaded by a trainer with another optimizer (weights, steps
// and scaler loaded, the optimizer's state not, with a warning), and the `model` metadata.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <unistd.h>

#include <mpx/experiment/char_gpt.hpp>
#include <mpx/experiment/models.hpp>
#include <mpx/io/checkpoint.hpp>
#include <mpx/io/json.hpp>
#include <mpx/io/model_json.hpp>
#include <mpx/mpx.hpp>

#include "../support/model_state.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using Catch::Matchers::Contains;
namespace nn = mpx::nn;
using nn::Activation;

constexpr std::int64_t features = 6;
constexpr std::int64_t classes = 3;
constexpr std::int64_t batch = 8;

std::filesystem::path scratch(const std::string& name) {
  const auto directory = std::filesystem::temp_directory_path() / "mpx_weights_test";
  std::filesystem::create_directories(directory);
  return directory / (name + "." + std::to_string(::getpid()) + ".safetensors");
}

template <class P>
auto make_model(std::uint64_t seed) {
  auto model = mpx::experiment::mlp3<P>(features, 12, 10, classes);
  model.initialize(seed);
  return model;
}

mpx::Tensor<float> inputs(int b) {
  mpx::Tensor<float> x(mpx::Shape{batch, features});
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x[i] = static_cast<float>((i * 37 + b * 11) % 19) / 9.0f - 1.0f;
  return x;
}
mpx::Tensor<std::int32_t> labels(int b) {
  mpx::Tensor<std::int32_t> y(mpx::Shape{batch});
  for (std::int64_t i = 0; i < batch; ++i) y[i] = static_cast<std::int32_t>((i + b) % classes);
  return y;
}

template <class Trainer>
void train(Trainer& trainer, int steps) {
  for (int b = 0; b < steps; ++b) (void)trainer.step(inputs(b), labels(b));
}

/// The master weights of `model` widened to fp32, in parameter order.
template <class Model>
std::vector<float> masters(Model& model) {
  std::vector<float> out;
  model.for_each_parameter([&](std::string_view, auto& p) {
    for (const auto value : p.master().values()) out.push_back(static_cast<float>(value));
  });
  return out;
}

using mpx::test::state_bytes;

/// The model's fp32 logits for `x` (rounded into the model's input type first).
template <class Model>
std::vector<float> logits(Model& model, const mpx::Tensor<float>& x) {
  using In = typename Model::input_type;
  mpx::Tensor<In> input(x.shape());
  for (std::int64_t i = 0; i < x.numel(); ++i) input[i] = static_cast<In>(x[i]);
  std::vector<float> out;
  for (const auto value : model.forward(input).values()) out.push_back(static_cast<float>(value));
  model.forget_inputs();
  return out;
}

/// Every compute copy equals its master rounded to nearest into the compute type.
template <class Model>
bool compute_copies_refreshed(Model& model) {
  bool ok = true;
  model.for_each_parameter([&](std::string_view, auto& p) {
    using Compute = typename std::remove_cvref_t<decltype(p)>::compute_element;
    for (std::int64_t i = 0; i < p.master().numel(); ++i) {
      const auto expected = static_cast<Compute>(static_cast<float>(p.master()[i]));
      ok = ok && std::memcmp(&p.compute()[i], &expected, sizeof(Compute)) == 0;
    }
  });
  return ok;
}

/// Captures mpx::log while alive.
struct CapturedLog {
  CapturedLog()
      : previous(mpx::set_log_sink([this](mpx::LogLevel level, std::string_view message) {
          messages.emplace_back(level, std::string(message));
        })) {}
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  ~CapturedLog() { mpx::set_log_sink(std::move(previous)); }
  std::vector<std::pair<mpx::LogLevel, std::string>> messages;
  mpx::LogSink previous;
};

/// A user's layer without `describe()`: y = x * s per feature.
template <mpx::PrecisionPolicy P>
class Scale {
  using T = mpx::compute_t<P>;

 public:
  using precision = P;
  using device_type = mpx::Host;
  using input_type = T;
  using output_type = T;
  static constexpr std::string_view kind = "Scale";
  explicit Scale(std::int64_t n) : factor_("weight", mpx::Shape{n}) {}
  const mpx::Tensor<T>& forward(const mpx::Tensor<T>& x) {
    y_ = mpx::Tensor<T>(x.shape());
    for (std::int64_t i = 0; i < x.numel(); ++i)
      y_[i] = T(float(x[i]) * float(factor_.compute()[i % factor_.shape()[0]]));
    return y_;
  }
  const mpx::Tensor<T>* backward(const mpx::Tensor<T>&, bool) { return nullptr; }
  void initialize(std::uint64_t seed, std::uint64_t stream) {
    nn::initialize(factor_, nn::Init::Ones, 1, 1, seed, stream);
  }
  void set_label(std::string) {}
  template <class F>
  void for_each_parameter(F&& f) {
    f(std::string_view("weight"), factor_);
  }

 private:
  nn::Parameter<P> factor_;
  mpx::Tensor<T> y_;
};

}  // namespace

TEST_CASE("load_weights moves a checkpoint's master weights between precisions, bit for bit",
          "[io][weights]") {
  const auto path = scratch("across_precisions");
  SECTION("bf16-trained checkpoint into fp32, fp16 and bf16 models") {
    auto trained = make_model<mpx::bf16_mixed>(1);
    mpx::nn::SoftmaxCrossEntropy<mpx::bf16_mixed> loss;
    mpx::optim::AdamW optimizer(trained, {.lr = 0.01});
    mpx::Trainer trainer(trained, loss, optimizer);
    train(trainer, 4);
    mpx::io::save_checkpoint(path, trainer);

    auto fp32 = make_model<mpx::fp32>(2);
    const mpx::io::Metadata metadata = mpx::io::load_weights(fp32, path);
    CHECK(metadata.at("precision") == "bf16_mixed");
    CHECK(masters(fp32) == masters(trained));
    // fp32 forward of the same weights: each logit within bf16's rounding of the bf16 model's.
    const std::vector<float> wide = logits(fp32, inputs(9));
    const std::vector<float> narrow = logits(trained, inputs(9));
    REQUIRE(wide.size() == narrow.size());
    for (std::size_t i = 0; i < wide.size(); ++i) CHECK(wide[i] == Approx(narrow[i]).margin(0.05));

    auto fp16 = make_model<mpx::fp16_mixed>(3);
    mpx::io::load_weights(fp16, path);
    CHECK(masters(fp16) == masters(trained));
    CHECK(compute_copies_refreshed(fp16));

    // Back into a fresh bf16 model: the same compute copies, hence bit-identical logits.
    auto bf16 = make_model<mpx::bf16_mixed>(4);
    mpx::io::load_weights(bf16, path);
    CHECK(state_bytes(bf16) == [&] {
      auto reference = make_model<mpx::bf16_mixed>(1);
      mpx::io::load_weights(reference, path);
      return state_bytes(reference);
    }());
    CHECK(compute_copies_refreshed(bf16));
    CHECK(logits(bf16, inputs(9)) == narrow);
  }
  SECTION("fp32-trained weights into bf16 models, mixed and pure") {
    auto trained = make_model<mpx::fp32>(5);
    mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
    mpx::optim::SGD optimizer(trained, {.lr = 0.1, .momentum = 0.9});
    mpx::Trainer trainer(trained, loss, optimizer);
    train(trainer, 3);
    mpx::io::save_weights(trained, path);

    auto bf16 = make_model<mpx::bf16_mixed>(6);
    mpx::io::load_weights(bf16, path);
    CHECK(masters(bf16) == masters(trained));
    CHECK(compute_copies_refreshed(bf16));
    // Its forward is exactly that of the trained weights rounded into bf16.
    auto by_hand = make_model<mpx::bf16_mixed>(7);
    std::vector<float> values = masters(trained);
    std::size_t next = 0;
    by_hand.for_each_parameter([&](std::string_view, auto& p) {
      for (auto& value : p.master().values()) value = values[next++];
      p.refresh_compute_copy();
    });
    CHECK(logits(bf16, inputs(2)) == logits(by_hand, inputs(2)));

    // Pure bf16 keeps bf16 masters: each is the fp32 weight rounded to nearest.
    using bf16_pure = mpx::Precision<mpx::BFloat16, mpx::BFloat16>;
    auto pure = make_model<bf16_pure>(8);
    mpx::io::load_weights(pure, path);
    std::vector<float> rounded = masters(trained);
    for (float& value : rounded) value = static_cast<float>(static_cast<Eigen::bfloat16>(value));
    CHECK(masters(pure) == rounded);
  }
  std::filesystem::remove(path);
}

TEST_CASE("save_weights writes the master weights and the model's description, and nothing else",
          "[io][weights]") {
  const auto path = scratch("save_weights");
  auto model = make_model<mpx::bf16_mixed>(3);
  mpx::io::save_weights(model, path, {{"note", "hello"}});
  const mpx::io::SafetensorsFile file = mpx::io::load_safetensors(path);
  CHECK(file.tensors().size() == 6);
  for (const auto& [name, entry] : file.tensors()) {
    CAPTURE(name);
    CHECK(entry.dtype == mpx::io::Dtype::F32);
    CHECK(name.starts_with("layers."));
  }
  CHECK(file.find("layers.0.weight")->shape == std::vector<std::int64_t>{12, features});
  CHECK(file.metadata().at("mpx.format") == "mpx.weights");
  CHECK(file.metadata().at("mpx.format_version") == "1");
  CHECK(file.metadata().at("precision") == "bf16_mixed");
  CHECK(file.metadata().at("note") == "hello");
  CHECK(file.metadata().at("model") == mpx::io::model_json(model));
  CHECK(file.metadata().count("step") == 0);
  CHECK_THROWS_AS(mpx::io::save_weights(model, path, {{"model", "mine"}}), mpx::invalid_argument);
  CHECK_THROWS_AS(mpx::io::save_weights(model, path, {{"precision", "fp8"}}), mpx::invalid_argument);
  // A weights file is not a checkpoint: it holds no optimizer, steps or scaler.
  mpx::nn::SoftmaxCrossEntropy<mpx::bf16_mixed> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::Trainer trainer(model, loss, optimizer);
  CHECK_THROWS_WITH(mpx::io::load_checkpoint(path, trainer), Contains("not an mpx checkpoint"));
  std::filesystem::remove(path);
}

TEST_CASE(
    "load_weights rejects a file that does not fit, naming the path, the tensor and the values, "
    "and leaves the model unchanged",
    "[io][weights]") {
  const auto path = scratch("rejects");
  auto saved = make_model<mpx::fp32>(1);
  mpx::io::save_weights(saved, path);
  const mpx::io::SafetensorsFile good = mpx::io::load_safetensors(path);

  auto model = make_model<mpx::bf16_mixed>(2);
  const std::vector<unsigned char> before = state_bytes(model);
  const auto rejected = [&](const std::vector<std::string>& fragments) {
    try {
      (void)mpx::io::load_weights(model, path);
      FAIL("load_weights accepted the file");
    } catch (const mpx::io_error& e) {
      const std::string message = e.what();
      CAPTURE(message);
      CHECK_THAT(message, Contains(path.string()));
      for (const std::string& fragment : fragments) CHECK_THAT(message, Contains(fragment));
    }
    CHECK(state_bytes(model) == before);
  };
  // The good file with its tensors edited: `drop` removed, `as_int` stored as I32, `extra` added.
  const auto rewrite = [&](const std::string& drop, const std::string& as_int, bool extra,
                           const mpx::io::Metadata& metadata_changes = {}) {
    std::vector<mpx::io::TensorToWrite> tensors;
    for (const auto& [name, entry] : good.tensors()) {
      if (name == drop) continue;
      tensors.push_back(
          {name, name == as_int ? mpx::io::Dtype::I32 : entry.dtype, entry.shape, good.data(entry)});
    }
    static const std::vector<float> nine(9, 1.0f);
    if (extra)
      tensors.push_back({"layers.3.weight", mpx::io::Dtype::F32, {3, 3}, std::as_bytes(std::span(nine))});
    mpx::io::Metadata metadata = good.metadata();
    for (const auto& [key, value] : metadata_changes) metadata[key] = value;
    mpx::io::save_safetensors(path, tensors, metadata);
  };

  SECTION("missing, unexpected and non-floating tensors, all in one message") {
    rewrite("layers.1.bias", "layers.2.weight", true);
    rejected({"does not fit this model (3 problems); nothing was loaded",
              "missing tensor \"layers.1.bias\" of shape [10]",
              "unexpected tensor \"layers.3.weight\" of shape [3, 3] (not in the model)",
              "tensor \"layers.2.weight\" has dtype I32, expected a floating-point dtype"});
  }
  SECTION("shapes that differ from the model's name the tensor, the file's and the model's shape") {
    auto wider = mpx::experiment::mlp3<mpx::fp32>(features, 14, 10, classes);
    mpx::io::save_weights(wider, path);
    rejected({"(5 problems)",
              "tensor \"layers.0.weight\" has shape [14, 6] in the file, [12, 6] in the model",
              "tensor \"layers.0.bias\" has shape [14] in the file, [12] in the model",
              "tensor \"layers.1.weight\" has shape [10, 14] in the file, [10, 12] in the model",
              // and the model description says why (`rejected` loads into a bf16 model: precision
              // differs too, and is not a problem)
              "layers.0 (Linear): out_features 14 in the file, 12 in the model",
              "layers.1 (Linear): in_features 14 in the file, 12 in the model"});
  }
  SECTION("another mpx format or version") {
    rewrite("", "", false, {{"mpx.format", "mpx.other"}});
    rejected({"metadata \"mpx.format\" is \"mpx.other\", expected \"mpx.checkpoint\" or \"mpx.weights\""});
    rewrite("", "", false, {{"mpx.format_version", "2"}});
    rejected({"metadata \"mpx.format_version\" is \"2\"; this mpx reads version 1"});
  }
  SECTION("a truncated file, a corrupt header, no file") {
    std::string bytes;
    {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    mpx::io::write_file_atomically(path, bytes.substr(0, bytes.size() - 5));
    rejected({"outside the data buffer"});
    std::string corrupt = bytes;
    corrupt[12] = '\x01';  // a control character inside the JSON header
    mpx::io::write_file_atomically(path, corrupt);
    rejected({"byte"});
    std::filesystem::remove(path);
    rejected({});
  }
  std::filesystem::remove(path);
}

TEST_CASE(
    "load_weights reads a safetensors file from another tool and ignores a checkpoint's optimizer "
    "state",
    "[io][weights]") {
  const auto path = scratch("foreign");
  auto saved = make_model<mpx::fp32>(4);
  std::vector<mpx::io::TensorToWrite> tensors;
  std::vector<std::vector<float>> values;
  values.reserve(16);
  saved.for_each_parameter([&](std::string_view name, auto& p) {
    std::vector<std::int64_t> shape;
    for (int d = 0; d < p.shape().rank(); ++d) shape.push_back(p.shape()[d]);
    // As Python's safetensors writes a torch state_dict: F32, no __metadata__ ...
    auto& v = values.emplace_back(p.master().values().begin(), p.master().values().end());
    tensors.push_back({std::string(name), mpx::io::Dtype::F32, shape, std::as_bytes(std::span(v))});
    // ... here with an optimizer's state beside it, which load_weights skips.
    tensors.push_back({"optimizer." + std::string(name) + ".exp_avg", mpx::io::Dtype::F32, shape,
                       std::as_bytes(std::span(v))});
  });
  mpx::io::save_safetensors(path, tensors);
  auto model = make_model<mpx::fp16_mixed>(5);
  CHECK(mpx::io::load_weights(model, path).empty());
  CHECK(masters(model) == masters(saved));
  CHECK(compute_copies_refreshed(model));
  std::filesystem::remove(path);
}

TEST_CASE(
    "load_checkpoint into a trainer with another optimizer loads the weights, the steps and the "
    "scaler, and says that the optimizer state was not restored",
    "[io][checkpoint][weights]") {
  const auto path = scratch("other_optimizer");
  // fp16 with dynamic loss scaling, so that the scaler has state worth restoring.
  using P = mpx::fp16_mixed;
  auto saved_model = make_model<P>(1);
  mpx::nn::SoftmaxCrossEntropy<P> loss;

  const auto load_into = [&](auto make_optimizer) {
    auto model = make_model<P>(2);
    auto optimizer = make_optimizer(model);
    mpx::Trainer trainer(model, loss, optimizer);
    train(trainer, 1);  // state of its own, which the load resets
    CapturedLog log;
    const mpx::io::LoadedCheckpoint loaded = mpx::io::load_checkpoint(path, trainer);
    CHECK(masters(model) == masters(saved_model));
    CHECK(compute_copies_refreshed(model));
    CHECK(trainer.steps() == 5);
    CHECK(loaded.metadata.at("step") == "5");
    CHECK(loaded.scaler_restored);
    bool zero_state = true;
    model.for_each_parameter([&](std::string_view, auto& p) {
      for (int slot = 0; slot < p.state_slots; ++slot) {
        if (!p.has_state(slot)) continue;
        for (const float v : p.state(slot).values()) zero_state = zero_state && v == 0.0f;
      }
    });
    const bool warned = log.messages.size() == 1 && log.messages[0].first == mpx::LogLevel::Warning &&
                        log.messages[0].second == loaded.optimizer_warning;
    train(trainer, 2);  // and it trains on
    return std::tuple{loaded, trainer.scaler().state(), optimizer.steps(), zero_state, warned};
  };

  SECTION("saved with AdamW") {
    mpx::optim::AdamW saved_optimizer(saved_model, {.lr = 0.01});
    mpx::Trainer saved_trainer(saved_model, loss, saved_optimizer);
    train(saved_trainer, 5);
    mpx::io::save_checkpoint(path, saved_trainer);
    const mpx::LossScalerState scaler = saved_trainer.scaler().state();

    SECTION("loaded with SGD and momentum") {
      const auto [loaded, scaler_after, steps_after, zero_state, warned] =
          load_into([](auto& m) { return mpx::optim::SGD(m, {.lr = 0.05, .momentum = 0.9}); });
      CAPTURE(loaded.optimizer_warning);
      CHECK_FALSE(loaded.optimizer_restored);
      CHECK(zero_state);
      CHECK(warned);
      CHECK_THAT(loaded.optimizer_warning, Contains(path.string()));
      CHECK_THAT(loaded.optimizer_warning, Contains("the optimizer state was not restored"));
      CHECK_THAT(loaded.optimizer_warning,
                 Contains("saved with optimizer AdamW (state exp_avg, exp_avg_sq), this trainer's optimizer "
                          "is SGD (state momentum_buffer)"));
      CHECK_THAT(loaded.optimizer_warning, Contains("loaded the weights, the step count (5) and the scaler"));
      CHECK(scaler_after.steps_taken + scaler_after.steps_skipped ==
            scaler.steps_taken + scaler.steps_skipped + 2);
      CHECK(steps_after <= 2);  // SGD counted only the two steps after the load
    }
    SECTION("loaded with AdamW: everything restored, no warning") {
      const auto [loaded, scaler_after, steps_after, zero_state, warned] =
          load_into([](auto& m) { return mpx::optim::AdamW(m, {.lr = 0.02}); });
      CHECK(loaded.optimizer_restored);
      CHECK(loaded.optimizer_warning.empty());
      CHECK_FALSE(zero_state);
      CHECK_FALSE(warned);
      CHECK(steps_after == saved_optimizer.steps() + 2);
    }
  }
  SECTION("saved with SGD and momentum, loaded with SGD without: a setting that changes the state") {
    mpx::optim::SGD saved_optimizer(saved_model, {.lr = 0.1, .momentum = 0.9});
    mpx::Trainer saved_trainer(saved_model, loss, saved_optimizer);
    train(saved_trainer, 5);
    mpx::io::save_checkpoint(path, saved_trainer);
    const auto [loaded, scaler_after, steps_after, zero_state, warned] =
        load_into([](auto& m) { return mpx::optim::SGD(m, {.lr = 0.05}); });
    CAPTURE(loaded.optimizer_warning);
    CHECK_FALSE(loaded.optimizer_restored);
    CHECK(warned);
    CHECK_THAT(
        loaded.optimizer_warning,
        Contains("the checkpoint's SGD keeps state momentum_buffer, this trainer's SGD keeps no state"));
  }
  SECTION("saved with SGD without momentum, loaded with SGD with momentum") {
    mpx::optim::SGD saved_optimizer(saved_model, {.lr = 0.1});
    mpx::Trainer saved_trainer(saved_model, loss, saved_optimizer);
    train(saved_trainer, 5);
    mpx::io::save_checkpoint(path, saved_trainer);
    const auto [loaded, scaler_after, steps_after, zero_state, warned] =
        load_into([](auto& m) { return mpx::optim::SGD(m, {.lr = 0.05, .momentum = 0.5}); });
    CAPTURE(loaded.optimizer_warning);
    CHECK_FALSE(loaded.optimizer_restored);
    CHECK(zero_state);
    CHECK(warned);
    CHECK_THAT(
        loaded.optimizer_warning,
        Contains("the checkpoint's SGD keeps no state, this trainer's SGD keeps state momentum_buffer"));
  }
  std::filesystem::remove(path);
}

TEST_CASE(
    "load_checkpoint with another optimizer still rejects a file that does not fit, and changes "
    "nothing",
    "[io][checkpoint][weights]") {
  const auto path = scratch("other_optimizer_bad");
  auto saved_model = make_model<mpx::fp32>(1);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::AdamW saved_optimizer(saved_model, {.lr = 0.01});
  mpx::Trainer saved_trainer(saved_model, loss, saved_optimizer);
  train(saved_trainer, 2);
  mpx::io::save_checkpoint(path, saved_trainer);

  auto model = mpx::experiment::mlp3<mpx::fp32>(features, 12, 9, classes);
  mpx::optim::SGD optimizer(model, {.lr = 0.1, .momentum = 0.9});
  mpx::Trainer trainer(model, loss, optimizer);
  train(trainer, 1);
  const auto before = state_bytes(model);
  CapturedLog log;
  try {
    (void)mpx::io::load_checkpoint(path, trainer);
    FAIL("load_checkpoint accepted weights of another shape");
  } catch (const mpx::io_error& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK_THAT(message, Contains("(5 problems)"));
    CHECK_THAT(message,
               Contains("tensor \"layers.1.weight\" has shape [10, 12] in the file, [9, 12] in the model"));
  }
  CHECK(log.messages.empty());  // nothing loaded, nothing to warn about
  CHECK(state_bytes(model) == before);
  CHECK(trainer.steps() == 1);
  CHECK(optimizer.steps() == 1);
  std::filesystem::remove(path);
}

TEST_CASE("A checkpoint's model metadata describes each layer: kind, sizes, activation, bias, precision",
          "[io][weights][describe]") {
  SECTION("the Fashion-MNIST MLP") {
    auto model = mpx::experiment::mlp3<mpx::bf16_mixed, mpx::fp32>(784, 512, 256, 10);
    CHECK(
        mpx::io::model_json(model) ==
        R"({"kind":"Sequential","layers":[)"
        R"({"kind":"Linear","precision":"bf16_mixed","in_features":784,"out_features":512,"bias":true,"activation":"ReLU"},)"
        R"({"kind":"Linear","precision":"bf16_mixed","in_features":512,"out_features":256,"bias":true,"activation":"ReLU"},)"
        R"({"kind":"Linear","precision":"fp32","in_features":256,"out_features":10,"bias":true,"activation":"None"}]})");
    // What save_checkpoint writes.
    const auto path = scratch("describe");
    mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
    mpx::optim::SGD optimizer(model, {.lr = 0.1});
    mpx::Trainer trainer(model, loss, optimizer);
    mpx::io::save_checkpoint(path, trainer);
    CHECK(mpx::io::load_safetensors(path).metadata().at("model") == mpx::io::model_json(model));
    CHECK_THROWS_AS(mpx::io::save_checkpoint(path, trainer, {{"model", "x"}}), mpx::invalid_argument);
    std::filesystem::remove(path);
  }
  SECTION("LayerNorm, GELU, a bias-free Linear, an explicit Cast, a standalone ReLU") {
    using P = mpx::bf16_mixed;
    nn::Sequential model{nn::Linear<P, Activation::GELU>(8, 16, {.bias = false}),
                         nn::LayerNorm<mpx::fp32>(16, 1e-6f), nn::Cast<float, Eigen::bfloat16>(),
                         nn::ReLU<P>(), nn::Linear<P>(16, 4)};
    const mpx::io::json::Value json = mpx::io::json::parse(mpx::io::model_json(model));
    CHECK(json.find("kind")->text == "Sequential");
    const auto& layers = json.find("layers")->items;
    REQUIRE(layers.size() == 5);
    CHECK(layers[0].find("kind")->text == "Linear");
    CHECK(layers[0].find("activation")->text == "GELU");
    CHECK_FALSE(layers[0].find("bias")->boolean);
    CHECK(layers[1].keys == std::vector<std::string>{"kind", "precision", "normalized_shape", "eps", "bias"});
    CHECK(layers[1].find("kind")->text == "LayerNorm");
    CHECK(layers[1].find("precision")->text == "fp32");
    CHECK(layers[1].find("normalized_shape")->text == "16");
    CHECK(layers[1].find("eps")->text == "1e-06");
    CHECK(layers[1].find("bias")->boolean);
    CHECK(layers[2].keys == std::vector<std::string>{"kind", "from", "to"});
    CHECK(layers[2].find("from")->text == "fp32");
    CHECK(layers[2].find("to")->text == "bf16");
    CHECK(layers[3].keys == std::vector<std::string>{"kind", "precision"});
    CHECK(layers[3].find("kind")->text == "ReLU");
    CHECK(layers[4].find("out_features")->text == "4");
  }
  SECTION("mlp3_layer_norm, with the layers' own precisions") {
    using Plan = mpx::experiment::LayerPrecisions<mpx::bf16_mixed, mpx::fp32, mpx::fp32>;
    auto model = mpx::experiment::mlp3_layer_norm<Plan>(784, 512, 256, 10);
    const std::vector<nn::LayerDescription> layers = model.describe();
    REQUIRE(layers.size() == 5);
    CHECK(std::get<std::string>(layers[1][0].value) == "LayerNorm");
    CHECK(std::get<std::string>(layers[1][1].value) == "fp32");
    CHECK(layers[1][2].key == "normalized_shape");
    CHECK(std::get<std::int64_t>(layers[1][2].value) == 512);
    CHECK(std::get<float>(layers[1][3].value) == 1e-5f);
    CHECK(std::get<std::string>(layers[2][1].value) == "bf16_mixed");
    CHECK(std::get<std::int64_t>(layers[2][2].value) == 512);
  }
  SECTION("a layer that cannot describe itself is \"unknown\", and the model still saves and loads") {
    using P = mpx::bf16_mixed;
    nn::Sequential model{nn::Linear<P, Activation::ReLU>(4, 8), Scale<P>(8), nn::Linear<P>(8, 2)};
    static_assert(!nn::DescribableLayer<Scale<P>>);
    static_assert(nn::DescribableLayer<nn::Linear<P>>);
    CHECK(mpx::io::model_json(model).find(
              R"({"kind":"Scale","precision":"bf16_mixed","description":"unknown"})") != std::string::npos);
    const auto path = scratch("unknown_layer");
    mpx::io::save_weights(model, path);
    nn::Sequential copy{nn::Linear<P, Activation::ReLU>(4, 8), Scale<P>(8), nn::Linear<P>(8, 2)};
    copy.initialize(9);
    mpx::io::load_weights(copy, path);
    CHECK(masters(copy) == masters(model));
    std::filesystem::remove(path);
  }
}

namespace {

/// Loads `path` into `model` expecting an `io_error` holding every fragment; the model unchanged.
template <class Model>
void check_refused(Model& model, const std::filesystem::path& path,
                   const std::vector<std::string>& fragments) {
  const std::vector<unsigned char> before = state_bytes(model);
  try {
    (void)mpx::io::load_weights(model, path);
    FAIL("load_weights accepted the file");
  } catch (const mpx::io_error& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK_THAT(message, Contains(path.string()));
    for (const std::string& fragment : fragments) CHECK_THAT(message, Contains(fragment));
    CHECK_THAT(message, Contains("LoadOptions{.allow_description_mismatch = true}"));
    CHECK_THAT(message, !Contains("precision"));  // loading across precisions is no mismatch
  }
  CHECK(state_bytes(model) == before);
}

template <class P, Activation Hidden>
auto two_hidden_layers(std::uint64_t seed) {
  nn::Sequential model{nn::Linear<P, Activation::ReLU>(features, 12), nn::Linear<P, Hidden>(12, 10),
                       nn::Linear<P>(10, classes)};
  model.initialize(seed);
  return model;
}

}  // namespace

TEST_CASE(
    "load_weights and load_checkpoint refuse a file that describes another model, naming the layer, "
    "the setting and both values, and change nothing",
    "[io][weights][describe]") {
  const auto path = scratch("description");
  auto relu = two_hidden_layers<mpx::fp32, Activation::ReLU>(1);
  mpx::io::save_weights(relu, path);

  SECTION("ReLU-trained weights into a GELU model of the same shapes (and another precision)") {
    auto gelu = two_hidden_layers<mpx::bf16_mixed, Activation::GELU>(2);
    check_refused(gelu, path,
                  {"does not fit this model (1 problem)",
                   "layers.1 (Linear): activation \"ReLU\" in the file, \"GELU\" in the model"});

    // Allowed explicitly, the tensors load as they fit.
    CHECK_NOTHROW(mpx::io::load_weights(gelu, path, {.allow_description_mismatch = true}));
    CHECK(masters(gelu) == masters(relu));
  }
  SECTION("the same description in another precision loads") {
    auto bf16 = two_hidden_layers<mpx::bf16_mixed, Activation::ReLU>(3);
    CHECK(mpx::io::load_weights(bf16, path).at("model") == mpx::io::model_json(relu));
    CHECK(masters(bf16) == masters(relu));
  }
  SECTION("a layer of another kind, and settings nested in blocks, each named by its path") {
    nn::Sequential standalone{nn::Linear<mpx::fp32>(features, 12), nn::ReLU<mpx::fp32>(),
                              nn::LayerNorm<mpx::fp32>(12), nn::Linear<mpx::fp32>(12, classes)};
    mpx::io::save_weights(standalone, path);
    nn::Sequential other{nn::Linear<mpx::fp32>(features, 12), nn::GELU<mpx::fp32>(),
                         nn::LayerNorm<mpx::fp32>(12, 1e-6f), nn::Linear<mpx::fp32>(12, classes)};
    check_refused(other, path,
                  {"(2 problems)", "layers.1 is a ReLU in the file, a GELU in the model",
                   "layers.2 (LayerNorm): eps 1e-05 in the file, 1e-06 in the model"});

    // Head count and dropout change no shape: only the description tells them apart.
    const mpx::experiment::GptShape shape{.vocabulary = 11, .context = 8, .width = 16, .heads = 4};
    auto gpt = mpx::experiment::char_gpt<mpx::fp32, mpx::Host, 1>(shape);
    mpx::io::save_weights(gpt, path);
    auto two_heads = mpx::experiment::char_gpt<mpx::bf16_mixed, mpx::Host, 1>(
        {.vocabulary = 11, .context = 8, .width = 16, .heads = 2, .dropout = 0.25});
    check_refused(
        two_heads, path,
        {"(4 problems)", "layers.2 (Dropout): p 0 in the file, 0.25 in the model",
         "layers.3.layers.0.block.layers.1 (CausalSelfAttention): num_heads 4 in the file, 2 in the "
         "model",
         "layers.3.layers.0.block.layers.2 (Dropout): p 0 in the file, 0.25 in the model",
         "layers.3.layers.1.block.layers.3 (Dropout): p 0 in the file, 0.25 in the model"});
    auto same = mpx::experiment::char_gpt<mpx::bf16_mixed, mpx::Host, 1>(shape);
    CHECK_NOTHROW(mpx::io::load_weights(same, path));
    CHECK(masters(same) == masters(gpt));
  }
  SECTION("a file without a description (another tool's, or mpx's before it had one) loads unchecked") {
    const mpx::io::SafetensorsFile file = mpx::io::load_safetensors(path);
    std::vector<mpx::io::TensorToWrite> tensors;
    for (const auto& [name, entry] : file.tensors())
      tensors.push_back({name, entry.dtype, entry.shape, file.data(entry)});
    mpx::io::Metadata metadata = file.metadata();
    metadata.erase("model");
    mpx::io::save_safetensors(path, tensors, metadata);
    auto gelu = two_hidden_layers<mpx::fp32, Activation::GELU>(4);
    CHECK_NOTHROW(mpx::io::load_weights(gelu, path));
    CHECK(masters(gelu) == masters(relu));

    metadata["model"] = "{\"kind\":";  // but a description that is not one is refused
    mpx::io::save_safetensors(path, tensors, metadata);
    check_refused(gelu, path, {"metadata \"model\": invalid JSON at byte"});
  }
  SECTION("load_checkpoint: the same rule and the same option") {
    auto trained = two_hidden_layers<mpx::fp32, Activation::ReLU>(5);
    mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
    mpx::optim::AdamW saved_optimizer(trained, {.lr = 0.01});
    mpx::Trainer saved_trainer(trained, loss, saved_optimizer);
    train(saved_trainer, 3);
    mpx::io::save_checkpoint(path, saved_trainer);

    auto gelu = two_hidden_layers<mpx::fp32, Activation::GELU>(6);
    mpx::optim::AdamW optimizer(gelu, {.lr = 0.02});
    mpx::Trainer trainer(gelu, loss, optimizer);
    train(trainer, 1);
    const std::vector<unsigned char> before = state_bytes(gelu);
    try {
      (void)mpx::io::load_checkpoint(path, trainer);
      FAIL("load_checkpoint accepted a checkpoint of another model");
    } catch (const mpx::io_error& e) {
      const std::string message = e.what();
      CAPTURE(message);
      CHECK_THAT(message, Contains("does not fit this trainer (1 problem)"));
      CHECK_THAT(message,
                 Contains("layers.1 (Linear): activation \"ReLU\" in the file, \"GELU\" in the model"));
    }
    CHECK(state_bytes(gelu) == before);
    CHECK(trainer.steps() == 1);
    CHECK(optimizer.steps() == 1);
    CHECK(optimizer.options().lr == 0.02);

    const mpx::io::LoadedCheckpoint loaded =
        mpx::io::load_checkpoint(path, trainer, {.allow_description_mismatch = true});
    CHECK(loaded.optimizer_restored);
    CHECK(masters(gelu) == masters(trained));
    CHECK(trainer.steps() == 3);
  }
  std::filesystem::remove(path);
}

TEST_CASE("A weights file or checkpoint carries the input normalisation it is given, and none otherwise",
          "[io][weights][normalization]") {
  const auto path = scratch("normalization");
  auto model = make_model<mpx::fp32>(1);
  // Doubles that need all 17 digits come back bit for bit.
  const mpx::data::InputNormalization normalization{0.28604059698879553, 0.35302424451492237};

  mpx::io::save_weights(model, path, mpx::io::input_normalization_metadata(normalization));
  CHECK(mpx::io::load_safetensors(path).metadata().at("input.std") == "0.35302424451492237");
  auto loaded_model = make_model<mpx::bf16_mixed>(2);
  const std::optional<mpx::data::InputNormalization> loaded =
      mpx::io::input_normalization(mpx::io::load_weights(loaded_model, path));
  REQUIRE(loaded.has_value());
  CHECK(loaded->mean == normalization.mean);
  CHECK(loaded->std_dev == normalization.std_dev);
  mpx::Tensor<float> x(mpx::Shape{1, 3});
  x[0] = 0.0f;
  x[1] = 1.0f;
  x[2] = 0.5f;
  loaded->apply(x);
  CHECK(x[1] == static_cast<float>((1.0 - normalization.mean) / normalization.std_dev));
  CHECK(x[2] == normalization(0.5));

  SECTION("absent stays absent") {
    mpx::io::save_weights(model, path);
    CHECK_FALSE(mpx::io::input_normalization(mpx::io::load_weights(loaded_model, path)).has_value());
  }
  SECTION("in a checkpoint, beside the batcher's position") {
    mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
    mpx::optim::SGD optimizer(model, {.lr = 0.1});
    mpx::Trainer trainer(model, loss, optimizer);
    mpx::data::Dataset data(mpx::Tensor<float>(mpx::Shape{4, features}), {0, 1, 2, 0}, classes);
    mpx::data::Batcher batcher(data, {.batch_size = 2, .seed = 3});
    mpx::io::Metadata extra = mpx::io::batcher_state(batcher);
    extra.merge(mpx::io::input_normalization_metadata(normalization));
    mpx::io::save_checkpoint(path, trainer, extra);
    const mpx::io::LoadedCheckpoint checkpoint = mpx::io::load_checkpoint(path, trainer);
    CHECK(mpx::io::input_normalization(checkpoint.metadata)->mean == normalization.mean);
    CHECK_FALSE(mpx::io::input_normalization(mpx::io::batcher_state(batcher)).has_value());
  }
  SECTION("invalid values are refused on both sides, naming them") {
    CHECK_THROWS_MATCHES(
        mpx::io::input_normalization_metadata({0.5, 0.0}), mpx::invalid_argument,
        Catch::Matchers::Message("mpx::io::input_normalization_metadata: input normalisation mean = 0.5, "
                                 "std_dev = 0 is invalid; expected a finite mean and a finite std_dev > 0"));
    CHECK_THROWS_WITH(mpx::io::input_normalization({{"input.mean", "0.5"}}),
                      Contains("metadata \"input.std\" is missing"));
    CHECK_THROWS_WITH(mpx::io::input_normalization({{"input.mean", "0.5"}, {"input.std", "-1"}}),
                      Contains("std_dev = -1 is invalid"));
    CHECK_THROWS_AS(mpx::io::input_normalization({{"input.mean", "x"}, {"input.std", "1"}}), mpx::io_error);
  }
  std::filesystem::remove(path);
}

}  // namespace MPX_UNITY_ID
}  // namespace
