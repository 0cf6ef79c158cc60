// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Trains a character-level GPT (4 pre-LN decoder blocks) on the text of Debian's `fortunes` package
// in fp32, bf16_mixed, fp16_mixed (dynamic loss scaling) and bf16_pure (bf16 weights, stochastic
// rounding), then compares them: validation loss and bits per character, tokens/s, activation
// memory per token, skipped steps; and prints text each model writes. `--checkpoint` saves each run
// and `--resume` continues it. The device is a template parameter, as in fashion_mnist.cpp; where
// CMake finds CUDA this file is compiled a second time by nvcc for `train_all<mpx::Cuda>` alone.
// Launched by `mpirun -np N` in a build with MPI, it trains data-parallel: each rank takes its rows of
// every global batch of N x --batch windows, and rank 0 alone prints and writes (docs/distributed.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numbers>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <mpx/experiment/char_gpt.hpp>
#include <mpx/experiment/data_parallel_job.hpp>
#include <mpx/experiment/fp8_records.hpp>
#include <mpx/experiment/progress.hpp>
#include <mpx/experiment/usage.hpp>
#include <mpx/mpx.hpp>
#if MPX_CUDA_COMPILER
#include <mpx/cuda.hpp>  // the CUDA backend, for train_all<mpx::Cuda>
#endif

// External linkage: the nvcc translation unit defines train_all<mpx::Cuda> for this one's main.
namespace char_gpt {

struct Settings {
  std::string precision = "all";
  std::int64_t steps = 300;
  std::int64_t batch = 16;
  std::int64_t context = 64;
  std::int64_t width = 128;
  std::int64_t heads = 4;
  double lr = 2e-3;
  double dropout = 0.0;
  std::uint64_t seed = 1;
  std::int64_t eval_windows = 64;  // validation windows of `context` characters
  std::int64_t sample = 240;       // characters to generate after training
  double temperature = 0.8;
  std::string device = "auto";
  std::string corpus;      // empty: the fortunes package
  std::string checkpoint;  // empty: none; otherwise a prefix, one file per precision
  bool resume = false;
  std::string fp8_csv = "char_gpt_fp8.csv";  // FP8 runs' amaxes, scales, saturated/flushed shares
};

// FP8 runs record their diagnostics every this many steps (nn/fp8_statistics.hpp).
constexpr std::int64_t fp8_record_interval = 10;

// The data-parallel job this process belongs to (mpx/experiment/data_parallel_job.hpp), as in
// fashion_mnist.cpp: rank 0 of 1, alone, unless mpirun launched it in a build with MPI. Rank 0 prints
// and writes; every rank computes the same.
using mpx::experiment::DataParallelJob;

struct Summary {
  std::string precision;
  double validation_loss = 0, tokens_per_second = 0, activation_bytes_per_token = 0;
  std::int64_t skipped = 0;
  float loss_scale = 1;
  std::string sample;
};

// Mean loss per scored character over the first `eval_windows` validation windows (the same windows
// in every run), in evaluation mode.
template <class Model, class Loss>
double validation_loss(Model& model, Loss& loss, const mpx::data::TextCorpus& corpus, const Settings& s) {
  using Device = typename Model::device_type;
  const mpx::nn::EvaluationMode evaluating(model);
  mpx::data::SequentialTextWindows windows(corpus.validation_tokens(),
                                           {.batch_size = s.batch, .context = s.context});
  mpx::Tensor<std::int32_t, mpx::Host> x, y;
  mpx::Tensor<std::int32_t, Device> x_device, y_device;
  double sum = 0;
  std::int64_t rows = 0;
  while (rows < s.eval_windows && windows.next(x, y)) {
    const auto& logits = model.forward(mpx::to<Device>(x, x_device));
    sum += static_cast<double>(loss.forward(logits, mpx::to<Device>(y, y_device))) * double(x.shape()[0]);
    rows += x.shape()[0];
  }
  model.forget_inputs();
  return sum / static_cast<double>(rows);
}

template <class P, class Device>
Summary train(const Settings& s, const DataParallelJob& job, const mpx::data::TextCorpus& corpus,
              std::vector<mpx::experiment::Fp8Record>& fp8_records) {
  // [model]
  using L = mpx::nn::layers<P, Device>;
  const mpx::experiment::GptShape shape{.vocabulary = corpus.vocabulary_size(),
                                        .context = s.context,
                                        .width = s.width,
                                        .heads = s.heads,
                                        .dropout = s.dropout};
  auto model = mpx::experiment::char_gpt<P, Device>(shape);
  model.initialize(s.seed);
  auto loss = L::softmax_cross_entropy();
  mpx::optim::AdamW optimizer(model, {.lr = s.lr, .beta2 = 0.99, .weight_decay = 0.1});
  const auto sync = mpx::experiment::make_gradient_sync<Device>(job, model);  // null when alone
  mpx::Trainer trainer = sync ? mpx::Trainer(model, loss, optimizer, *sync, {.max_grad_norm = 1.0})
                              : mpx::Trainer(model, loss, optimizer, {.max_grad_norm = 1.0});
  // [model]
  // [windows]
  // Batch k is a global batch of size x batch windows drawn from (seed, k), the same on every rank;
  // rank r trains on its rows [r x batch, (r + 1) x batch): different windows on every rank.
  mpx::data::TextWindows windows(corpus.train_tokens(), {.batch_size = s.batch,
                                                         .context = s.context,
                                                         .seed = s.seed + 1,  // data's own seed
                                                         .shard = {job.rank, job.size}});
  // [windows]

  const std::string checkpoint =
      s.checkpoint.empty() ? "" : s.checkpoint + "." + std::string(P::name) + ".safetensors";
  if constexpr (!std::is_same_v<Device, mpx::Host>) {
    if (!checkpoint.empty()) {
      throw mpx::invalid_argument(
          "--checkpoint: mpx saves checkpoints of CPU trainers only so far; use --device cpu");
    }
  } else if (s.resume && !checkpoint.empty() && std::filesystem::exists(checkpoint)) {
    const auto loaded = mpx::io::load_checkpoint(checkpoint, trainer);
    mpx::io::restore_text_windows(windows, loaded.metadata);
    if (job.leader())
      std::printf("%s: resumed from %s at step %lld\n", P::name.data(), checkpoint.c_str(),
                  static_cast<long long>(trainer.steps()));
  }

  Summary summary;
  summary.precision = P::name;
  mpx::Tensor<std::int32_t, mpx::Host> x, y;
  mpx::Tensor<std::int32_t, Device> x_device, y_device;
  std::optional<mpx::experiment::ProgressBar> bar;
  if (job.leader()) bar.emplace(std::string(P::name));
  // FP8 diagnostics: per layer and tensor, amax, scale and the shares the casts saturate or flush.
  if constexpr (mpx::Fp8PrecisionPolicy<P>) mpx::nn::collect_fp8_statistics(model);
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t first_step = trainer.steps();
  for (std::int64_t step = first_step; step < s.steps; ++step) {
    // Linear warm-up over 5% of the steps, then cosine decay to a tenth.
    const double warm = std::min(1.0, double(step + 1) / std::max(1.0, 0.05 * double(s.steps)));
    const double cosine = 0.55 + 0.45 * std::cos(std::numbers::pi * double(step) / double(s.steps));
    optimizer.set_lr(s.lr * warm * cosine);
    windows.next(x, y);
    const mpx::StepResult r = trainer.step(mpx::to<Device>(x, x_device), mpx::to<Device>(y, y_device));
    if (!r.stepped) ++summary.skipped;
    if constexpr (mpx::Fp8PrecisionPolicy<P>) {
      if ((step + 1) % fp8_record_interval == 0)
        mpx::experiment::append_fp8_records(model, P::name, step + 1, fp8_records);
    }
    char status[96];
    std::snprintf(status, sizeof status, "loss %.3f  scale %g", r.loss, double(r.loss_scale));
    if (bar) bar->update(step + 1, s.steps, status);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::int64_t steps_run = s.steps - first_step;
  summary.tokens_per_second =
      job.sum(steps_run > 0 ? double(steps_run * s.batch * s.context) / seconds : 0.0);  // all ranks'
  // Every rank evaluates the same windows: the same weights give the same loss everywhere.
  summary.validation_loss = validation_loss(model, loss, corpus, s);
  job.require_same("the validation loss", summary.validation_loss);
  summary.activation_bytes_per_token =
      double(trainer.first_step_memory().activations) / double(s.batch * s.context);
  summary.loss_scale = trainer.scaler().scale();
  char status[160];
  std::snprintf(status, sizeof status, "validation loss %.3f (%.3f bits/char)  %.0f tokens/s",
                summary.validation_loss, summary.validation_loss / std::numbers::ln2,
                summary.tokens_per_second);
  if (bar) bar->finish(s.steps, status);

  if constexpr (std::is_same_v<Device, mpx::Host>) {
    // Rank 0 writes (atomically); the others wait until the file is in place. The windows' position
    // counts global batches, so any number of ranks resumes it.
    if (!checkpoint.empty() && job.leader())
      mpx::io::save_checkpoint(checkpoint, trainer, mpx::io::text_windows_state(windows));
    job.barrier();
  }
  if (!job.leader()) return summary;  // only rank 0 prints a sample
  // [sample]
  const std::vector<std::int32_t> text =
      mpx::experiment::sample(model, corpus.encode("The "), s.sample, s.context, s.temperature, s.seed);
  summary.sample = corpus.decode(text);
  // [sample]
  return summary;
}

template <class Device>
void train_all(const Settings& settings, const DataParallelJob& job, const mpx::data::TextCorpus& corpus) {
  std::vector<Summary> summaries;
  std::vector<mpx::experiment::Fp8Record> fp8_records;
  const std::map<std::string, std::string> short_names{
      {"fp32", "fp32"},           {"bf16_mixed", "bf16"},        {"fp16_mixed", "fp16"},
      {"bf16_pure", "bf16_pure"}, {"fp8_hybrid_delayed", "fp8"}, {"fp8_hybrid_current", "fp8_current"}};
  // FP8: Transformer Engine's default recipe and its current-scaling one, every Linear layer's GEMMs
  // (attention's projections, the MLPs, the head) on FP8 codes with Hopper's accumulation emulated;
  // attention's own products stay bf16, as under TE (docs/fp8.md). On a GPU, where it runs FP8 GEMMs
  // (compute capability 8.9 or newer).
  using Fp8Delayed = mpx::fp8_hybrid<mpx::DelayedScaling<>>;
  using Fp8Current = mpx::fp8_hybrid<mpx::CurrentScaling<>>;
  mpx::experiment::require_precision_on_device<Device>(settings.precision);
  boost::hana::for_each(
      boost::hana::tuple_t<mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed, mpx::bf16_pure, Fp8Delayed,
                           Fp8Current>,
      [&](auto type) {
        using P = typename decltype(type)::type;
        if (mpx::experiment::trains_on<P, Device>()) {
          if (settings.precision == "all" || settings.precision == short_names.at(std::string(P::name))) {
            summaries.push_back(train<P, Device>(settings, job, corpus, fp8_records));
          }
        }
      });
  if (!job.leader()) return;
  if (const std::string why = mpx::experiment::fp8_unavailable_reason<Device>();
      !why.empty() && settings.precision == "all")
    std::printf("(no FP8 rows: %s; see docs/fp8.md)\n", why.c_str());
  std::printf("\n%-18s %10s %9s %10s %11s %13s %8s %11s\n", "precision", "val loss", "bits/chr", "vs fp32",
              "tokens/s", "act/token", "skipped", "loss scale");
  for (const Summary& s : summaries) {
    const double relative = 100 * (s.validation_loss / summaries.front().validation_loss - 1);
    std::printf("%-18s %10.4f %9.4f %+9.2f%% %11.0f %11.0f B %8lld %11g\n", s.precision.c_str(),
                s.validation_loss, s.validation_loss / std::numbers::ln2, relative, s.tokens_per_second,
                s.activation_bytes_per_token, static_cast<long long>(s.skipped), double(s.loss_scale));
  }
  for (const Summary& s : summaries)
    std::printf("\n--- %s writes:\n%s\n", s.precision.c_str(), s.sample.c_str());
  if (!fp8_records.empty()) {
    mpx::experiment::write_csv(settings.fp8_csv, std::span<const mpx::experiment::Fp8Record>(fp8_records));
    std::printf("\nFP8 diagnostics every %lld steps: %s (scripts/plot_fp8.gp draws them)\n",
                static_cast<long long>(fp8_record_interval), settings.fp8_csv.c_str());
  }
  if (job.size > 1) {
    std::printf("\ndata parallel: %d ranks agree on every result; global batch %lld (%lld per rank)\n",
                job.size, static_cast<long long>(job.size * settings.batch),
                static_cast<long long>(settings.batch));
  }
}

}  // namespace char_gpt

#if MPX_CUDA_COMPILER
// The GPU half of the program: the one instantiation the C++ translation unit leaves to nvcc.
template void char_gpt::train_all<mpx::Cuda>(const char_gpt::Settings&,
                                             const mpx::experiment::DataParallelJob&,
                                             const mpx::data::TextCorpus&);
#else
#if MPX_HAS_CUDA
extern template void char_gpt::train_all<mpx::Cuda>(const char_gpt::Settings&,
                                                    const mpx::experiment::DataParallelJob&,
                                                    const mpx::data::TextCorpus&);
#endif  // MPX_HAS_CUDA

namespace {

using char_gpt::DataParallelJob;
using char_gpt::Settings;

// Errors in the arguments print the message and this usage line, and exit with code 2.
const mpx::experiment::Usage usage(
    "char_gpt",
    "[--precision fp32|bf16|fp16|bf16_pure|fp8|fp8_current|all] [--steps N] [--batch N] [--context N] "
    "[--width N] "
    "[--heads N] [--lr X] [--dropout X] [--seed N] [--eval-windows N] [--sample N] [--temperature X] "
    "[--device cpu|cuda|auto] [--corpus PATH] [--checkpoint PREFIX] [--resume] [--fp8-csv PATH]");

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (option == "--resume") {
      s.resume = true;
      continue;
    }
    const std::string value = usage.value_after(argc, argv, i);
    const auto number = [&](double low, double high) { return usage.number(option, value, low, high); };
    if (option == "--precision")
      s.precision = value;
    else if (option == "--steps")
      s.steps = std::int64_t(number(1, 1e7));
    else if (option == "--batch")
      s.batch = std::int64_t(number(1, 4096));
    else if (option == "--context")
      s.context = std::int64_t(number(1, 4096));
    else if (option == "--width")
      s.width = std::int64_t(number(1, 8192));
    else if (option == "--heads")
      s.heads = std::int64_t(number(1, 256));
    else if (option == "--lr")
      s.lr = number(1e-12, 10);
    else if (option == "--dropout")
      s.dropout = number(0, 0.99);
    else if (option == "--seed")
      s.seed = std::uint64_t(number(0, 9007199254740992.0));
    else if (option == "--eval-windows")
      s.eval_windows = std::int64_t(number(1, 1e6));
    else if (option == "--sample")
      s.sample = std::int64_t(number(0, 1e6));
    else if (option == "--temperature")
      s.temperature = number(1e-3, 100);
    else if (option == "--device")
      s.device = value;
    else if (option == "--corpus")
      s.corpus = value;
    else if (option == "--checkpoint")
      s.checkpoint = value;
    else if (option == "--fp8-csv")
      s.fp8_csv = value;
    else
      usage.fail("unknown option " + option);
  }
  usage.require_one_of("--precision", s.precision,
                       {"fp32", "bf16", "fp16", "bf16_pure", "fp8", "fp8_current", "all"});
  if (s.width % s.heads != 0) usage.fail("--width must be a multiple of --heads");
  usage.require_one_of("--device", s.device, {"cpu", "cuda", "auto"});
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  // Launched by mpirun: one rank of a data-parallel job; started by hand: a job of one (as in
  // fashion_mnist.cpp).
  return mpx::experiment::run_job(argc, argv, usage.program(), [&](const DataParallelJob& job) {
    const auto corpus =
        settings.corpus.empty() ? mpx::data::TextCorpus() : mpx::data::TextCorpus(settings.corpus);
    if (job.leader()) {
      std::printf("corpus: %s, %lld characters (%lld training, %lld validation), %d distinct\n",
                  corpus.path().c_str(), static_cast<long long>(corpus.size()),
                  static_cast<long long>(corpus.train_tokens().size()),
                  static_cast<long long>(corpus.validation_tokens().size()), corpus.vocabulary_size());
    }
    mpx::experiment::with_device(settings.device, job, [&](auto device) {
      char_gpt::train_all<decltype(device)>(settings, job, corpus);
    });
  });
}
#endif  // MPX_CUDA_COMPILER
