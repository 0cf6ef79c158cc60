// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Trains the Fashion-MNIST MLP and the character-level GPT under each block-scaling recipe (MXFP8 with
// its three scale roundings, FP8 128-blocks, NVFP4 with and without each of its tricks), against bf16
// and per-tensor FP8 in the same run, and prints the table of docs/block_scaling.md: test accuracy and
// loss (MLP), validation loss (GPT), each loss relative to bf16's, and seconds per run. Every row is
// one type: a block-scaled precision for the hidden layers and a precision for the last layer (the
// NVFP4 recipe keeps it in bf16). The block-scaled GEMMs are emulated on the CPU, bit for bit as the
// recipes quantize (docs/block_scaling.md).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <numbers>
#include <string>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <mpx/experiment/char_gpt.hpp>
#include <mpx/experiment/classification.hpp>
#include <mpx/experiment/models.hpp>
#include <mpx/experiment/records.hpp>
#include <mpx/experiment/usage.hpp>
#include <mpx/mpx.hpp>

namespace {

struct Settings {
  std::string workload = "all";  // mlp, gpt or all
  int epochs = 5;                // MLP
  std::int64_t train_samples = 0;
  std::int64_t steps = 300;  // GPT, at examples/char_gpt.cpp's default sizes
  std::int64_t context = 64;
  std::int64_t width = 128;
  std::uint64_t seed = 1;
  std::string csv = "block_scaling.csv";
};

// One row of the table: hidden layers in `Body`, the last layer in `Head`.
template <class Body, class Head = Body>
struct Row {
  using body = Body;
  using head = Head;
  static std::string name() {
    std::string text(Body::name);
    if constexpr (!std::is_same_v<Body, Head>) text.append("/head:").append(Head::name);
    return text;
  }
};

// [rows]
using Bf16 = mpx::bf16_mixed;
// Per-tensor FP8 (current scaling, fp32 sums like the block-scaled rows): what blocks improve on.
using Fp8PerTensor = mpx::fp8_hybrid<mpx::CurrentScaling<>, mpx::Fp32GemmAccumulation>;
using Rows = decltype(boost::hana::tuple_t<
                      Row<Bf16>, Row<Fp8PerTensor>, Row<mpx::mxfp8<>>,
                      Row<mpx::mxfp8<mpx::E8M0Rounding::RoundUp>>, Row<mpx::mxfp8<mpx::E8M0Rounding::RCeil>>,
                      Row<mpx::fp8_block<>>, Row<mpx::nvfp4<>, Bf16>,  // NVFP4's published recipe
                      Row<mpx::nvfp4<>>,                               // ... with the head in NVFP4 too
                      Row<mpx::nvfp4<false, true, true>, Bf16>,        // ... without 16x16 weight blocks
                      Row<mpx::nvfp4<true, false, true>, Bf16>,        // ... without stochastic rounding
                      Row<mpx::nvfp4<true, true, false>, Bf16>,        // ... without the Hadamard transform
                      Row<mpx::nvfp4<false, false, false>, Bf16>>);    // ... without any of them
// [rows]

struct Result {
  BOOST_HANA_DEFINE_STRUCT(Result, (std::string, workload), (std::string, precision), (double, loss),
                           (double, loss_vs_bf16_percent), (double, accuracy), (double, seconds));
};

template <class R>
Result train_mlp(const Settings& s, const mpx::data::FashionMnist& data) {
  using P = typename R::body;
  auto model = mpx::experiment::mlp3<P, typename R::head>(784, 512, 256, 10);
  model.initialize(s.seed);
  auto loss = mpx::nn::layers<P>::softmax_cross_entropy();
  const double lr = 1e-3;
  mpx::optim::AdamW optimizer(model, {.lr = lr, .weight_decay = 1e-4});
  mpx::Trainer trainer(model, loss, optimizer);
  const mpx::data::Dataset train_set = data.train.subset(
      0, s.train_samples > 0 ? std::min(s.train_samples, data.train.size()) : data.train.size());
  mpx::data::Batcher batcher(train_set, {.batch_size = 128, .seed = s.seed});
  const double total = double(batcher.batches_per_epoch()) * s.epochs;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < s.epochs; ++epoch) {
    mpx::experiment::train_epoch(
        trainer, batcher, epoch, [&](std::int64_t step, std::int64_t steps, const auto&) {
          const double progress = (double(epoch) * double(steps) + double(step + 1)) / total;
          optimizer.set_lr(lr * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)) + 1e-7);
        });
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto test = mpx::experiment::evaluate(model, loss, data.test);
  return {"mlp", R::name(), test.loss, 0.0, test.accuracy, seconds};
}

template <class R>
Result train_gpt(const Settings& s, const mpx::data::TextCorpus& corpus) {
  using P = typename R::body;
  const mpx::experiment::GptShape shape{
      .vocabulary = corpus.vocabulary_size(), .context = s.context, .width = s.width, .heads = 4};
  auto model = mpx::experiment::char_gpt<P, mpx::Host, 4, typename R::head>(shape);
  model.initialize(s.seed);
  auto loss = mpx::nn::layers<P>::softmax_cross_entropy();
  const double lr = 2e-3;
  mpx::optim::AdamW optimizer(model, {.lr = lr, .beta2 = 0.99, .weight_decay = 0.1});
  mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = 1.0});
  const std::int64_t batch = 16;
  mpx::data::TextWindows windows(corpus.train_tokens(),
                                 {.batch_size = batch, .context = s.context, .seed = s.seed + 1});
  mpx::Tensor<std::int32_t, mpx::Host> x, y;
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t step = 0; step < s.steps; ++step) {  // examples/char_gpt.cpp's schedule
    const double warm = std::min(1.0, double(step + 1) / std::max(1.0, 0.05 * double(s.steps)));
    optimizer.set_lr(lr * warm * (0.55 + 0.45 * std::cos(std::numbers::pi * double(step) / double(s.steps))));
    windows.next(x, y);
    trainer.step(x, y);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The mean loss over the first 64 validation windows, as examples/char_gpt.cpp reports it.
  const mpx::nn::EvaluationMode evaluating(model);
  mpx::data::SequentialTextWindows validation(corpus.validation_tokens(),
                                              {.batch_size = batch, .context = s.context});
  double sum = 0;
  std::int64_t rows = 0;
  while (rows < 64 && validation.next(x, y)) {
    sum += double(loss.forward(model.forward(x), y)) * double(x.shape()[0]);
    rows += x.shape()[0];
  }
  return {"gpt", R::name(), sum / double(rows), 0.0, std::nan(""), seconds};
}

const mpx::experiment::Usage usage("block_scaling",
                                   "[--workload mlp|gpt|all] [--epochs N] [--train-samples N] [--steps N] "
                                   "[--context N] [--width N] [--seed N] [--csv PATH]");

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    const std::string value = usage.value_after(argc, argv, i);
    const auto number = [&](double low, double high) { return usage.number(option, value, low, high); };
    if (option == "--workload")
      s.workload = value;
    else if (option == "--epochs")
      s.epochs = int(number(1, 1000));
    else if (option == "--train-samples")
      s.train_samples = std::int64_t(number(1, 60000));
    else if (option == "--steps")
      s.steps = std::int64_t(number(1, 1e7));
    else if (option == "--context")
      s.context = std::int64_t(number(2, 4096));
    else if (option == "--width")
      s.width = std::int64_t(number(4, 8192));
    else if (option == "--seed")
      s.seed = std::uint64_t(number(0, 9007199254740992.0));
    else if (option == "--csv")
      s.csv = value;
    else
      usage.fail("unknown option " + option);
  }
  usage.require_one_of("--workload", s.workload, {"mlp", "gpt", "all"});
  if (s.width % 4 != 0)
    usage.fail("--width " + std::to_string(s.width) + ": must be a multiple of the 4 heads");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings s = parse(argc, argv);
  try {
    std::vector<Result> results;
    const auto run = [&](const char* workload, auto train_row) {
      const std::size_t first = results.size();
      boost::hana::for_each(Rows{}, [&](auto row) {
        results.push_back(train_row(row));
        std::printf("%-4s %-34s loss %.4f  %.1f s\n", workload, results.back().precision.c_str(),
                    results.back().loss, results.back().seconds);
        std::fflush(stdout);
      });
      for (std::size_t i = first; i < results.size(); ++i)  // the first row is bf16's
        results[i].loss_vs_bf16_percent = 100.0 * (results[i].loss / results[first].loss - 1.0);
    };
    if (s.workload != "gpt") {
      const auto data = mpx::data::load_fashion_mnist();
      run("mlp", [&](auto row) { return train_mlp<typename decltype(row)::type>(s, data); });
    }
    if (s.workload != "mlp") {
      const mpx::data::TextCorpus corpus;
      run("gpt", [&](auto row) { return train_gpt<typename decltype(row)::type>(s, corpus); });
    }
    std::printf("\n%-4s %-34s %9s %9s %9s %9s\n", "", "precision", "loss", "vs bf16", "accuracy", "seconds");
    for (const Result& r : results) {
      std::printf("%-4s %-34s %9.4f %+8.2f%% %9s %9.1f\n", r.workload.c_str(), r.precision.c_str(), r.loss,
                  r.loss_vs_bf16_percent,
                  std::isnan(r.accuracy) ? "" : (std::to_string(100 * r.accuracy).substr(0, 5) + "%").c_str(),
                  r.seconds);
    }
    mpx::experiment::write_csv(s.csv, std::span<const Result>(results));
    std::printf("results: %s\n", s.csv.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", usage.program().c_str(), e.what());
    return 1;
  }
  return 0;
}
