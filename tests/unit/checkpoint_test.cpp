// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Checkpoints: resuming is bit-exact for every precision (in this process and in a fresh one), a
// checkpoint loads into another precision, and a file that does not fit is rejected whole, listing
// every problem, without touching the trainer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <sys/wait.h>
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

using bf16_pure = mpx::Precision<mpx::BFloat16, mpx::BFloat16>;
using fp64 = mpx::fp64;

constexpr std::int64_t features = 6;
constexpr std::int64_t classes = 3;
constexpr std::int64_t batch = 16;

std::filesystem::path scratch(const std::string& name) {
  const auto directory = std::filesystem::temp_directory_path() / "mpx_checkpoint_test";
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
auto make_model(std::uint64_t seed) {
  mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(features, 12),
                            mpx::nn::Linear<P>(12, classes)};
  model.initialize(seed);
  return model;
}

using mpx::test::state_bytes;

/// Batches whose index is in `poisoned` get an inf planted in their input: the step is skipped and
/// a dynamic scaler backs off.
template <class Trainer>
void train(Trainer& trainer, int first, int count, const std::vector<int>& poisoned = {}) {
  for (int b = first; b < first + count; ++b) {
    Data d = batch_at(b);
    if (std::find(poisoned.begin(), poisoned.end(), b) != poisoned.end()) {
      d.inputs[3] = std::numeric_limits<float>::infinity();
    }
    (void)trainer.step(d.inputs, d.labels);
  }
}

template <class P, class MakeOptimizer>
void check_resume_is_exact(MakeOptimizer make_optimizer, const std::vector<int>& poisoned, bool in_child) {
  constexpr int n = 7, m = 6;
  const auto path = scratch("resume");

  auto straight_model = make_model<P>(21);
  mpx::nn::SoftmaxCrossEntropy<P> straight_loss;
  constexpr std::uint64_t seed =
      77;  // of stochastic updates (bf16_pure); the resumed run starts with another
  auto straight_optimizer = make_optimizer(straight_model, seed);
  mpx::Trainer straight(straight_model, straight_loss, straight_optimizer);
  train(straight, 0, n + m, poisoned);

  {
    auto model = make_model<P>(21);
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    auto optimizer = make_optimizer(model, seed);
    mpx::Trainer trainer(model, loss, optimizer);
    train(trainer, 0, n, poisoned);
    mpx::io::save_checkpoint(path, trainer, {{"note", "n steps"}});
  }

  // Fresh objects (other initial weights, fresh optimizer and scaler) — optionally in a fresh process
  // that reports the bytes it reached through a file.
  const auto resume = [&] {
    auto model = make_model<P>(99);
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    auto optimizer = make_optimizer(model, seed + 1);
    mpx::Trainer trainer(model, loss, optimizer);
    const mpx::io::LoadedCheckpoint loaded = mpx::io::load_checkpoint(path, trainer);
    const mpx::io::Metadata& metadata = loaded.metadata;
    CHECK(loaded.optimizer_restored);
    CHECK(loaded.scaler_restored);
    CHECK(optimizer.options().rounding_seed == seed);
    CHECK(metadata.at("note") == "n steps");
    CHECK(metadata.at("precision") == P::name);
    CHECK(trainer.steps() == n);
    train(trainer, n, m, poisoned);
    CHECK(trainer.steps() == straight.steps());
    CHECK(optimizer.steps() == straight_optimizer.steps());
    CHECK(trainer.scaler().state() == straight.scaler().state());
    return state_bytes(model);
  };
  const std::vector<unsigned char> expected = state_bytes(straight_model);
  std::vector<unsigned char> resumed;
  if (in_child) {
    const auto result_path = scratch("resume_child_result");
    std::filesystem::remove(result_path);
    const ::pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      int code = 1;
      try {
        const std::vector<unsigned char> bytes = resume();
        mpx::io::write_file_atomically(result_path, std::string(bytes.begin(), bytes.end()));
        code = 0;
      } catch (...) {
      }
      ::_exit(code);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    std::ifstream in(result_path, std::ios::binary);
    resumed.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::filesystem::remove(result_path);
  } else {
    resumed = resume();
  }
  REQUIRE(resumed.size() == expected.size());
  CHECK(std::memcmp(resumed.data(), expected.data(), expected.size()) == 0);
  std::filesystem::remove(path);
}

auto sgd = [](auto& model, std::uint64_t seed) {
  return mpx::optim::SGD(model, {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-4, .rounding_seed = seed});
};
auto adamw = [](auto& model, std::uint64_t seed) {
  return mpx::optim::AdamW(model, {.lr = 0.01, .rounding_seed = seed});
};

}  // namespace

TEMPLATE_TEST_CASE("Resuming from a checkpoint is bit-identical to training straight through",
                   "[io][checkpoint]", mpx::fp32, mpx::tf32, mpx::fp16_mixed, mpx::bf16_mixed, bf16_pure,
                   fp64) {
  SECTION("AdamW") {
    check_resume_is_exact<TestType>(adamw, {}, false);
  }
  SECTION("SGD with momentum") {
    check_resume_is_exact<TestType>(sgd, {}, false);
  }
  SECTION("AdamW, with skipped steps (and scaler back-offs) before and after the checkpoint") {
    check_resume_is_exact<TestType>(adamw, {2, 5, 6, 9}, false);
  }
  SECTION("SGD, resumed in a fresh process") {
    check_resume_is_exact<TestType>(sgd, {3, 8}, true);
  }
}

TEST_CASE("A checkpoint saved under one precision loads into another and keeps its fp32 master weights",
          "[io][checkpoint]") {
  const auto path = scratch("cross_precision");
  auto bf16_model = make_model<mpx::bf16_mixed>(4);
  mpx::nn::SoftmaxCrossEntropy<mpx::bf16_mixed> bf16_loss;
  mpx::optim::AdamW bf16_optimizer(bf16_model, {.lr = 0.01});
  mpx::Trainer bf16_trainer(bf16_model, bf16_loss, bf16_optimizer);
  train(bf16_trainer, 0, 5);
  mpx::io::save_checkpoint(path, bf16_trainer);

  auto fp16_model = make_model<mpx::fp16_mixed>(5);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp16_mixed> fp16_loss;
  mpx::optim::AdamW fp16_optimizer(fp16_model, {.lr = 0.02});
  mpx::Trainer fp16_trainer(fp16_model, fp16_loss, fp16_optimizer);
  const mpx::io::LoadedCheckpoint loaded = mpx::io::load_checkpoint(path, fp16_trainer);
  const mpx::io::Metadata& metadata = loaded.metadata;
  CHECK(loaded.optimizer_restored);
  CHECK_FALSE(loaded.scaler_restored);
  CHECK(metadata.at("precision") == "bf16_mixed");
  CHECK(metadata.at("scaler.policy") == "none");
  // Master weights and optimizer state are the same fp32 bits; the compute copy is fp16 now.
  std::vector<unsigned char> bf16_masters, fp16_masters;
  bf16_model.for_each_parameter([&](std::string_view, auto& p) {
    const auto* b = reinterpret_cast<const unsigned char*>(p.master().data());
    bf16_masters.insert(bf16_masters.end(), b, b + p.master().size_bytes());
  });
  fp16_model.for_each_parameter([&](std::string_view, auto& p) {
    const auto* b = reinterpret_cast<const unsigned char*>(p.master().data());
    fp16_masters.insert(fp16_masters.end(), b, b + p.master().size_bytes());
    for (std::int64_t i = 0; i < p.master().numel(); ++i) {
      REQUIRE(static_cast<float>(p.compute()[i]) ==
              static_cast<float>(static_cast<Eigen::half>(p.master()[i])));
    }
  });
  CHECK(bf16_masters == fp16_masters);
  CHECK(fp16_optimizer.options().lr == 0.01);
  CHECK(fp16_optimizer.steps() == 5);
  // bf16 had no loss scaling: the fp16 trainer keeps its own fresh dynamic scaler.
  CHECK(fp16_trainer.scaler().scale() == 65536.0f);
  train(fp16_trainer, 5, 3);
  CHECK(fp16_optimizer.steps() == 8);
  std::filesystem::remove(path);
}

TEST_CASE("A checkpoint keeps the scaler's double factors exactly (a 0.3 backoff stays 0.3, not 0.3f)",
          "[io][checkpoint]") {
  const auto path = scratch("scaler_factors");
  using P = mpx::fp16_mixed;
  mpx::DynamicLossScaling::Options scaling;
  scaling.init_scale = 3.0f;  // 3 * 0.3 rounds differently from 3 * 0.3f: a float factor would show
  scaling.growth_factor = 1.1;
  scaling.backoff_factor = 0.3;
  scaling.growth_interval = 2;
  const std::vector<int> poisoned = {1, 4, 5, 9};

  auto model = make_model<P>(3);
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  auto optimizer = sgd(model, 5);
  mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = {}, .scaler = scaling});
  train(trainer, 0, 7, poisoned);
  REQUIRE(trainer.scaler().state().backoffs > 0);
  mpx::io::save_checkpoint(path, trainer);
  CHECK(mpx::io::load_safetensors(path).metadata().at("scaler.backoff_factor") == "0.3");
  CHECK(mpx::io::load_safetensors(path).metadata().at("scaler.growth_factor") == "1.1");

  // A fresh trainer with other factors takes the saved ones, bit for bit, and continues identically.
  auto resumed_model = make_model<P>(4);
  mpx::nn::SoftmaxCrossEntropy<P> resumed_loss;
  auto resumed_optimizer = sgd(resumed_model, 5);
  mpx::Trainer resumed(resumed_model, resumed_loss, resumed_optimizer);
  (void)mpx::io::load_checkpoint(path, resumed);
  CHECK(resumed.scaler().state().backoff_factor == 0.3);
  CHECK(resumed.scaler().state().growth_factor == 1.1);
  CHECK(resumed.scaler().state() == trainer.scaler().state());
  train(trainer, 7, 6, poisoned);
  train(resumed, 7, 6, poisoned);
  CHECK(resumed.scaler().state() == trainer.scaler().state());
  CHECK(state_bytes(resumed_model) == state_bytes(model));

  // A checkpoint written while the factors were floats holds the float's shortest decimal ("0.3" for
  // 0.3f, "1.1" for 1.1f: the factor the user wrote); it still loads, and the decimal is read as a
  // double. A float written with all its digits reads back as exactly that float.
  const mpx::io::SafetensorsFile file = mpx::io::load_safetensors(path);
  mpx::io::Metadata metadata = file.metadata();
  metadata["scaler.backoff_factor"] = "0.30000001192092896";  // double(0.3f), printed exactly
  std::vector<mpx::io::TensorToWrite> tensors;
  for (const auto& [name, entry] : file.tensors())
    tensors.push_back({name, entry.dtype, entry.shape, file.data(entry)});
  mpx::io::save_safetensors(path, tensors, metadata);
  (void)mpx::io::load_checkpoint(path, resumed);
  CHECK(resumed.scaler().state().backoff_factor == static_cast<double>(0.3f));
  std::filesystem::remove(path);
}

TEST_CASE(
    "load_checkpoint rejects a checkpoint that does not fit, listing every problem, and changes nothing",
    "[io][checkpoint]") {
  const auto path = scratch("mismatch");
  // Saved: 6 -> 12 (no bias) -> 3 -> 3 with SGD momentum.
  mpx::nn::Sequential saved_model{
      mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::ReLU>(features, 12, {.bias = false}),
      mpx::nn::Linear<mpx::fp32>(12, classes), mpx::nn::Linear<mpx::fp32>(classes, classes)};
  saved_model.initialize(1);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::SGD saved_optimizer(saved_model, {.lr = 0.1, .momentum = 0.9});
  mpx::Trainer saved_trainer(saved_model, loss, saved_optimizer);
  train(saved_trainer, 0, 2);
  mpx::io::save_checkpoint(path, saved_trainer);

  // Loading into: 6 -> 10 -> 3, also with SGD momentum (so that its state is checked too).
  const auto narrower_model = [] {
    return mpx::nn::Sequential{mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::ReLU>(features, 10),
                               mpx::nn::Linear<mpx::fp32>(10, classes)};
  };
  auto model = narrower_model();
  mpx::optim::SGD optimizer(model, {.lr = 0.01, .momentum = 0.5});
  mpx::Trainer trainer(model, loss, optimizer);
  train(trainer, 0, 1);
  const auto before = state_bytes(model);
  try {
    (void)mpx::io::load_checkpoint(path, trainer);
    FAIL("load_checkpoint accepted a checkpoint of another architecture");
  } catch (const mpx::io_error& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK_THAT(message, Contains(path.string()));
    CHECK_THAT(message, Contains("(14 problems); nothing was loaded"));
    // The model description says how the models differ (io/description_differences.hpp).
    CHECK_THAT(message, Contains("layers.0 (Linear): out_features 12 in the file, 10 in the model"));
    CHECK_THAT(message, Contains("layers.0 (Linear): bias false in the file, true in the model"));
    CHECK_THAT(message, Contains("layers.1 (Linear): in_features 12 in the file, 10 in the model"));
    CHECK_THAT(message, Contains("layers.2 (Linear) is in the file, not in the model"));
    CHECK_THAT(message,
               Contains("tensor \"layers.0.weight\" has shape [12, 6] in the file, [10, 6] in the model"));
    CHECK_THAT(message, Contains("missing tensor \"layers.0.bias\" of shape [10]"));
    CHECK_THAT(message,
               Contains("tensor \"layers.1.weight\" has shape [3, 12] in the file, [3, 10] in the model"));
    CHECK_THAT(message,
               Contains("tensor \"optimizer.layers.0.weight.momentum_buffer\" has shape [12, 6] in the "
                        "file, [10, 6] in the model"));
    CHECK_THAT(message, Contains("missing tensor \"optimizer.layers.0.bias.momentum_buffer\" of shape [10]"));
    CHECK_THAT(message, Contains("unexpected tensor \"layers.2.weight\" of shape [3, 3] (not in the model)"));
    CHECK_THAT(message, Contains("unexpected tensor \"layers.2.bias\""));
    CHECK_THAT(message,
               Contains("unexpected tensor \"optimizer.layers.2.weight.momentum_buffer\" of shape [3, 3] "
                        "(not in the model or its optimizer's state)"));
  }
  CHECK(state_bytes(model) == before);
  CHECK(trainer.steps() == 1);
  CHECK(optimizer.steps() == 1);
  CHECK(optimizer.options().lr == 0.01);

  // Another optimizer's state is not read, so not checked: only the weights' problems are listed.
  auto adamw_model = narrower_model();
  mpx::optim::AdamW adamw_optimizer(adamw_model, {.lr = 0.01});
  mpx::Trainer adamw_trainer(adamw_model, loss, adamw_optimizer);
  const auto adamw_before = state_bytes(adamw_model);
  try {
    (void)mpx::io::load_checkpoint(path, adamw_trainer);
    FAIL("load_checkpoint accepted a checkpoint of another architecture");
  } catch (const mpx::io_error& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK_THAT(message, Contains("(9 problems)"));
    CHECK_THAT(message, !Contains("optimizer."));
  }
  CHECK(state_bytes(adamw_model) == adamw_before);
  std::filesystem::remove(path);
}

TEST_CASE("load_checkpoint rejects bad metadata and non-floating tensors without changing the trainer",
          "[io][checkpoint]") {
  const auto path = scratch("bad_metadata");
  auto model = make_model<mpx::fp16_mixed>(1);
  mpx::nn::SoftmaxCrossEntropy<mpx::fp16_mixed> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::Trainer trainer(model, loss, optimizer);
  train(trainer, 0, 2);
  mpx::io::save_checkpoint(path, trainer);
  const mpx::io::SafetensorsFile good = mpx::io::load_safetensors(path);

  // Rewrite the file with chosen metadata edits and the first weight stored as I32.
  const auto rewrite = [&](const mpx::io::Metadata& changes, bool integer_weights) {
    mpx::io::Metadata metadata = good.metadata();
    for (const auto& [key, value] : changes) {
      if (value.empty()) {
        metadata.erase(key);
      } else {
        metadata[key] = value;
      }
    }
    std::vector<mpx::io::TensorToWrite> tensors;
    for (const auto& [name, entry] : good.tensors()) {
      const bool as_int = integer_weights && name == "layers.0.weight";
      tensors.push_back({name, as_int ? mpx::io::Dtype::I32 : entry.dtype, entry.shape, good.data(entry)});
    }
    mpx::io::save_safetensors(path, tensors, metadata);
  };
  const auto before = state_bytes(model);
  const mpx::LossScalerState scaler_before = trainer.scaler().state();

  rewrite(
      {{"optimizer.lr", "-1"}, {"step", "many"}, {"scaler.growth_tracker", "99999"}, {"optimizer.steps", ""}},
      true);
  try {
    (void)mpx::io::load_checkpoint(path, trainer);
    FAIL("accepted bad metadata");
  } catch (const mpx::io_error& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK_THAT(message, Contains("(5 problems)"));
    CHECK_THAT(message, Contains("metadata \"step\" = \"many\" is not a valid integer"));
    CHECK_THAT(message, Contains("metadata \"optimizer.steps\" is missing"));
    CHECK_THAT(message, Contains("lr = -1 is invalid"));
    CHECK_THAT(message, Contains("growth_tracker = 99999"));
    CHECK_THAT(message, Contains("tensor \"layers.0.weight\" has dtype I32"));
  }
  rewrite({{"mpx.format", "something.else"}}, false);
  CHECK_THROWS_WITH(mpx::io::load_checkpoint(path, trainer), Contains("not an mpx checkpoint"));
  CHECK(state_bytes(model) == before);
  CHECK(trainer.scaler().state() == scaler_before);
  CHECK(trainer.steps() == 2);

  // Reserved keys cannot be overwritten by a caller's metadata.
  CHECK_THROWS_AS(mpx::io::save_checkpoint(path, trainer, {{"step", "0"}}), mpx::invalid_argument);
  CHECK_THROWS_AS(mpx::io::save_checkpoint(path, trainer, {{"scaler.scale", "1"}}), mpx::invalid_argument);
  std::filesystem::remove(path);
}

TEST_CASE("batcher_state and restore_batcher resume the data order mid-epoch", "[io][checkpoint][data]") {
  std::vector<float> pixels(40 * 2);
  std::vector<std::int32_t> labels(40);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    pixels[2 * i] = static_cast<float>(i);
    labels[i] = static_cast<std::int32_t>(i % 10);
  }
  mpx::Tensor<float> images(mpx::Shape{40, 2});
  std::copy(pixels.begin(), pixels.end(), images.data());
  const mpx::data::Dataset dataset(std::move(images), labels, 10);
  mpx::data::Batcher original(dataset, {.batch_size = 6, .seed = 17});
  original.start_epoch(3);
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  REQUIRE(original.next(x, y));
  REQUIRE(original.next(x, y));
  const mpx::io::Metadata state = mpx::io::batcher_state(original);
  CHECK(state.at("data.position") == "12");
  CHECK(state.at("data.epoch") == "3");

  mpx::data::Batcher resumed(dataset, {.batch_size = 6, .seed = 17});
  mpx::io::restore_batcher(resumed, state);
  mpx::Tensor<float> x2;
  mpx::Tensor<std::int32_t> y2;
  while (original.next(x, y)) {
    REQUIRE(resumed.next(x2, y2));
    CHECK(std::equal(y.values().begin(), y.values().end(), y2.values().begin(), y2.values().end()));
    CHECK(std::equal(x.values().begin(), x.values().end(), x2.values().begin()));
  }
  CHECK_FALSE(resumed.next(x2, y2));

  mpx::data::Batcher other_seed(dataset, {.batch_size = 6, .seed = 18});
  CHECK_THROWS_WITH(mpx::io::restore_batcher(other_seed, state), Contains("data.seed"));
  mpx::io::Metadata beyond = state;
  beyond["data.position"] = "41";
  CHECK_THROWS_AS(mpx::io::restore_batcher(resumed, beyond), mpx::invalid_argument);
}

TEST_CASE("Text windows resume from checkpoint metadata at the same batch; another seed is refused",
          "[io][checkpoint][text]") {
  std::vector<std::int32_t> tokens(500);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>(i % 37);
  mpx::data::TextWindows windows(tokens, {.batch_size = 3, .context = 8, .seed = 21});
  mpx::Tensor<std::int32_t> x, y, x_resumed, y_resumed;
  for (int i = 0; i < 4; ++i) windows.next(x, y);
  const mpx::io::Metadata state = mpx::io::text_windows_state(windows);
  windows.next(x, y);  // batch 4, the next one after the state was taken

  mpx::data::TextWindows resumed(tokens, {.batch_size = 3, .context = 8, .seed = 21});
  mpx::io::restore_text_windows(resumed, state);
  CHECK(resumed.position() == 4);
  resumed.next(x_resumed, y_resumed);
  CHECK(std::equal(x.values().begin(), x.values().end(), x_resumed.values().begin()));

  mpx::data::TextWindows other_seed(tokens, {.batch_size = 3, .context = 8, .seed = 22});
  CHECK_THROWS_WITH(mpx::io::restore_text_windows(other_seed, state),
                    Catch::Contains("mpx::io::restore_text_windows") &&
                        Catch::Contains("\"data.seed\" = 21") && Catch::Contains("22"));
  mpx::io::Metadata missing = state;
  missing.erase("data.position");
  CHECK_THROWS_WITH(mpx::io::restore_text_windows(resumed, missing), Catch::Contains("data.position"));
}

}  // namespace MPX_UNITY_ID
}  // namespace
