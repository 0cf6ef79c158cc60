// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// What does each precision do to one model? Trains the same Fashion-MNIST MLP (with LayerNorm) once
// per configuration of a compile-time sweep and writes, per run: test accuracy, time per epoch,
// memory by role, skipped steps and the loss-scale trajectory (scripts/plot_sweep.py draws them).
#include <boost/hana/tuple.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numbers>
#include <string>
#include <vector>

#include <mpx/experiment/classification.hpp>
#include <mpx/experiment/models.hpp>
#include <mpx/experiment/records.hpp>
#include <mpx/experiment/sweep.hpp>
#include <mpx/experiment/usage.hpp>
#include <mpx/mpx.hpp>

namespace {

namespace ex = mpx::experiment;

// [configurations]
// The configurations, one type each: a precision alone means every layer in it with its default
// loss scaling; LayerPrecisions overrides the classifier and the LayerNorms; Config picks the scaling.
using Fp16Unscaled =
    ex::Config<ex::LayerPrecisions<mpx::fp16_mixed>, mpx::AllowFp16Underflow<mpx::NoLossScaling>>;
using Bf16Fp32HeadNorm = ex::LayerPrecisions<mpx::bf16_mixed, mpx::fp32, mpx::fp32>;
// FP8 Linear layers (Transformer Engine's default recipe), their GEMMs summed as Hopper's Tensor Cores
// sum them, and the same with fp32 sums: what the accumulator does to training.
using Fp8Hopper = mpx::fp8_hybrid<mpx::DelayedScaling<>>;
using Fp8Fp32Sums = mpx::fp8_hybrid<mpx::DelayedScaling<>, mpx::Fp32GemmAccumulation>;
constexpr auto configurations =
    boost::hana::tuple_t<mpx::fp32, mpx::tf32, mpx::fp16_mixed, Fp16Unscaled, mpx::bf16_mixed,
                         Bf16Fp32HeadNorm, mpx::bf16_pure_nearest, mpx::bf16_pure, Fp8Hopper, Fp8Fp32Sums>;
// [configurations]

struct Settings {
  int epochs = 8;
  std::int64_t train_samples = 60000;
  std::int64_t batch = 128;
  double lr = 1e-3;
  std::uint64_t seed = 42;
  std::filesystem::path out = "precision_sweep";
};

// One line per run: the table in docs/experiments.md.
struct Run {
  BOOST_HANA_DEFINE_STRUCT(Run, (std::string, config), (double, test_accuracy), (double, test_loss),
                           (double, seconds_per_epoch), (double, weights_mib), (double, gradients_mib),
                           (double, optimizer_mib), (double, activations_mib), (double, bytes_per_parameter),
                           (std::int64_t, skipped_steps), (float, final_loss_scale), (bool, diverged),
                           (std::int64_t, diverged_at_step));
};

// The training curve, one point per `curve_every` steps: mean loss over them, scale after them.
struct CurvePoint {
  BOOST_HANA_DEFINE_STRUCT(CurvePoint, (std::string, config), (std::int64_t, step), (double, loss),
                           (float, loss_scale), (std::int64_t, skipped));
};
constexpr std::int64_t curve_every = 10;

double mib(std::int64_t bytes) {
  return double(bytes) / (1 << 20);
}

template <class Config>
Run train(const Settings& s, const mpx::data::Dataset& train_set, const mpx::data::Dataset& test_set,
          std::vector<CurvePoint>& curve) {
  using Layers = typename Config::layers;
  auto model = ex::mlp3_layer_norm<Layers>(784, 512, 256, 10);
  model.initialize(s.seed);
  mpx::nn::SoftmaxCrossEntropy<typename Layers::head> loss;
  mpx::optim::AdamW optimizer(model, {.lr = s.lr, .weight_decay = 1e-4, .rounding_seed = s.seed});
  mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer), typename Config::scaling> trainer(
      model, loss, optimizer);
  mpx::data::Batcher batcher(train_set, {.batch_size = s.batch, .seed = s.seed});

  Run run{Config::name(), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, 0};
  const double total_steps = double(batcher.batches_per_epoch()) * s.epochs;
  double window_loss = 0;
  std::int64_t window_steps = 0, window_skipped = 0;
  int epochs_run = 0;
  for (int epoch = 0; epoch < s.epochs && !run.diverged; ++epoch, ++epochs_run) {
    const auto summary = ex::train_epoch(
        trainer, batcher, epoch, [&](std::int64_t step, std::int64_t steps, const mpx::StepResult& r) {
          // Cosine decay of the learning rate over the whole run.
          const double progress = (double(epoch) * double(steps) + double(step + 1)) / total_steps;
          optimizer.set_lr(s.lr * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)) + 1e-7);
          window_loss += r.loss;
          ++window_steps;
          window_skipped += r.stepped ? 0 : 1;
          if (r.step % curve_every == 0 || !std::isfinite(r.loss)) {
            curve.push_back({run.config, r.step, window_loss / double(window_steps), trainer.scaler().scale(),
                             window_skipped});
            window_loss = 0;
            window_steps = window_skipped = 0;
          }
        });
    run.seconds_per_epoch += summary.seconds;
    run.skipped_steps += summary.skipped_steps;
    run.diverged = summary.diverged_at_step != 0;
    run.diverged_at_step = summary.diverged_at_step;
  }
  run.seconds_per_epoch /= epochs_run;
  const auto test = ex::evaluate(model, loss, test_set);
  const auto& memory = trainer.first_step_memory();
  run.test_accuracy = test.accuracy;
  run.test_loss = test.loss;
  run.weights_mib = mib(memory.weights);
  run.gradients_mib = mib(memory.gradients);
  run.optimizer_mib = mib(memory.optimizer_state);
  run.activations_mib = mib(memory.activations);
  run.bytes_per_parameter = memory.bytes_per_parameter();
  run.final_loss_scale = trainer.scaler().scale();
  std::printf("%-34s test %.2f%%  %.2f s/epoch  %lld skipped%s\n", run.config.c_str(),
              100 * run.test_accuracy, run.seconds_per_epoch, static_cast<long long>(run.skipped_steps),
              run.diverged ? "  DIVERGED" : "");
  return run;
}

// Errors in the arguments print the message and this usage line, and exit with code 2.
const ex::Usage usage("precision_sweep", "[--epochs N] [--train-samples N] [--lr X] [--seed N] [--out DIR]");

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    const std::string value = usage.value_after(argc, argv, i);
    const auto number = [&](double low, double high) { return usage.number(option, value, low, high); };
    if (option == "--epochs") {
      s.epochs = int(number(1, 1000));
    } else if (option == "--train-samples") {
      s.train_samples = std::int64_t(number(1, 60000));
    } else if (option == "--lr") {
      s.lr = number(1e-12, 10);
    } else if (option == "--seed") {
      const double seed = number(0, 9007199254740992.0);
      if (seed != std::floor(seed)) usage.fail(option + " " + value + ": expected a whole number");
      s.seed = std::uint64_t(seed);
    } else if (option == "--out") {
      s.out = value;
    } else {
      usage.fail("unknown option " + option);
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  try {
    const auto data = mpx::data::load_fashion_mnist();
    const auto train_set = data.train.subset(0, settings.train_samples);
    std::filesystem::create_directories(settings.out);
    std::vector<CurvePoint> curve;
    // [sweep]
    const std::vector<Run> runs = ex::sweep(configurations, [&](auto config) {
      return train<decltype(config)>(settings, train_set, data.test, curve);
    });
    // [sweep]

    ex::write_csv(settings.out / "runs.csv", std::span<const Run>(runs));
    ex::write_json(settings.out / "runs.json", std::span<const Run>(runs));
    ex::write_csv(settings.out / "curves.csv", std::span<const CurvePoint>(curve));
    const std::string table = ex::to_table(std::span<const Run>(runs));
    mpx::io::write_file_atomically(settings.out / "runs.md", table);
    std::printf("\n%s\nwritten: %s/{runs.csv,runs.json,runs.md,curves.csv}\n", table.c_str(),
                settings.out.c_str());
  } catch (const std::exception& e) {  // mpx::error, and std::filesystem errors for --out
    std::fprintf(stderr, "%s: %s\n", usage.program().c_str(), e.what());
    return 1;
  }
  return 0;
}
