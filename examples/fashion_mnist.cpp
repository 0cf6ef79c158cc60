// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Trains an MLP on Fashion-MNIST in fp32, tf32, fp16 and bf16 (one `using` line each) and compares
// them: test accuracy, time per epoch, activation memory, skipped steps, final loss scale. The same
// program trains on the CPU or the GPU: the device is a template parameter of `train_all`, chosen
// once in `with_device`. Where CMake finds the CUDA toolkit, this file is also compiled by nvcc for
// `train_all<mpx::Cuda>` alone (examples/CMakeLists.txt), so that the CPU code stays in a C++
// translation unit: Eigen turns its CPU SIMD off in anything nvcc compiles. Launched by `mpirun -np N`
// in a build with MPI, it trains data-parallel: each rank takes its share of every global batch of
// N x --batch samples, and rank 0 alone prints and writes (docs/distributed.md).
#include <cmath>
#include <cstdio>
#include <map>
#include <numbers>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <mpx/experiment/classification.hpp>
#include <mpx/experiment/data_parallel_job.hpp>
#include <mpx/experiment/fp8_records.hpp>
#include <mpx/experiment/progress.hpp>
#include <mpx/experiment/records.hpp>
#include <mpx/experiment/usage.hpp>
#include <mpx/mpx.hpp>
#if MPX_CUDA_COMPILER
#include <mpx/cuda.hpp>  // the CUDA backend, for train_all<mpx::Cuda>
#endif

// External linkage: the nvcc translation unit defines train_all<mpx::Cuda> for this one's main.
namespace fashion_mnist {

struct Settings {
  std::string precision = "all";
  int epochs = 10;
  std::int64_t batch = 128;
  double lr = 1e-3;
  std::uint64_t seed = 42;
  std::string device = "auto";
  std::string csv = "fashion_mnist_metrics.csv";
  std::string fp8_csv = "fashion_mnist_fp8.csv";  // FP8 runs' amaxes, scales, saturated/flushed shares
  std::int64_t train_samples = 0;                 // 0: all 60000
  std::string save;                               // weights for inference: <save>.<precision>.safetensors
};

// The data-parallel job this process belongs to (mpx/experiment/data_parallel_job.hpp): rank 0 of
// 1, alone, unless mpirun launched it in a build with MPI. Rank 0 prints and writes files; every rank
// computes the same results.
using mpx::experiment::DataParallelJob;

struct EpochRecord {
  BOOST_HANA_DEFINE_STRUCT(EpochRecord, (std::string, precision), (int, epoch), (double, train_loss),
                           (double, train_accuracy), (double, test_loss), (double, test_accuracy),
                           (float, loss_scale), (std::int64_t, skipped_steps), (double, seconds),
                           (double, samples_per_second));
};

struct Summary {
  std::string precision;
  double test_accuracy, seconds_per_epoch;
  std::int64_t activation_bytes, skipped_steps;
  float final_loss_scale;
};

// FP8 runs record their diagnostics every this many steps (nn/fp8_statistics.hpp).
constexpr std::int64_t fp8_record_interval = 50;

template <class P, class Device>
Summary train(const Settings& s, const DataParallelJob& job, const mpx::data::FashionMnist& data,
              std::vector<EpochRecord>& records, std::vector<mpx::experiment::Fp8Record>& fp8_records) {
  // [model]
  // 784-512-256-10, ReLU fused into the first two matmuls, everything in precision P on Device.
  using L = mpx::nn::layers<P, Device>;
  mpx::nn::Sequential model{L::linear(784, 512, mpx::nn::relu), L::linear(512, 256, mpx::nn::relu),
                            L::linear(256, 10)};
  model.initialize(s.seed);
  auto loss = L::softmax_cross_entropy();
  // [model]
  mpx::optim::AdamW optimizer(model, {.lr = s.lr, .weight_decay = 1e-4});
  // [data-parallel]
  const auto sync = mpx::experiment::make_gradient_sync<Device>(job, model);  // null when alone
  mpx::Trainer trainer =
      sync ? mpx::Trainer(model, loss, optimizer, *sync) : mpx::Trainer(model, loss, optimizer);
  const mpx::data::Dataset train_set = data.train.subset(
      0, s.train_samples > 0 ? std::min(s.train_samples, data.train.size()) : data.train.size());
  // Rank r takes samples [r x batch, (r + 1) x batch) of each global batch of size x batch; ranks
  // drop an epoch's last partial global batch so that they all take the same steps.
  mpx::data::Batcher batcher(
      train_set, {.batch_size = s.batch,
                  .seed = s.seed,
                  .last_batch = job.size > 1 ? mpx::data::LastBatch::Drop : mpx::data::LastBatch::Keep,
                  .shard = {job.rank, job.size}});
  // [data-parallel]
  if constexpr (!std::is_same_v<Device, mpx::Host>) {
    if (!s.save.empty())
      throw mpx::invalid_argument("--save: mpx saves weights of CPU models only so far; use --device cpu");
  }
  const double total_steps = double(batcher.batches_per_epoch()) * s.epochs;
  // [fp8-statistics]
  // FP8 diagnostics: per layer and tensor, the amax, the scale and the shares of values the casts
  // saturate or flush to zero, every fp8_record_interval steps.
  if constexpr (mpx::Fp8PrecisionPolicy<P>) mpx::nn::collect_fp8_statistics(model);
  // [fp8-statistics]

  Summary summary{std::string(P::name), 0, 0, 0, 0, 0};
  for (int epoch = 0; epoch < s.epochs; ++epoch) {
    char label[64];
    std::snprintf(label, sizeof label, "%-10s epoch %2d/%d", P::name.data(), epoch + 1, s.epochs);
    std::optional<mpx::experiment::ProgressBar> bar;
    if (job.leader()) bar.emplace(label);
    auto epoch_result = mpx::experiment::train_epoch(
        trainer, batcher, epoch, [&](std::int64_t step, std::int64_t steps, const mpx::StepResult& r) {
          // Cosine decay of the learning rate over the whole run.
          const double progress = (double(epoch) * double(steps) + double(step + 1)) / total_steps;
          if constexpr (mpx::Fp8PrecisionPolicy<P>) {
            const std::int64_t global_step = std::int64_t(epoch) * steps + step + 1;
            if (global_step % fp8_record_interval == 0)
              mpx::experiment::append_fp8_records(model, P::name, global_step, fp8_records);
          }
          optimizer.set_lr(s.lr * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)) + 1e-7);
          char status[96];
          std::snprintf(status, sizeof status, "loss %.4f  scale %g", r.loss, double(r.loss_scale));
          if (bar) bar->update(step + 1, steps, status);
        });
    // The loss is already the mean over ranks (the sync averages it); accuracy and throughput are
    // each rank's own, over equal shares.
    epoch_result.accuracy = job.sum(epoch_result.accuracy) / job.size;
    epoch_result.samples_per_second = job.sum(epoch_result.samples_per_second);
    epoch_result.seconds = job.sum(epoch_result.seconds) / job.size;
    // Every rank evaluates the whole test set: the same weights give the same result everywhere.
    const auto test = mpx::experiment::evaluate(model, loss, data.test);
    char status[160];
    std::snprintf(status, sizeof status, "loss %.4f  train %.2f%%  test %.2f%%  scale %g  %.0f samples/s",
                  epoch_result.loss, 100 * epoch_result.accuracy, 100 * test.accuracy,
                  double(epoch_result.loss_scale), epoch_result.samples_per_second);
    if (bar) bar->finish(epoch_result.steps, status);
    records.push_back({summary.precision, epoch + 1, epoch_result.loss, epoch_result.accuracy, test.loss,
                       test.accuracy, epoch_result.loss_scale, epoch_result.skipped_steps,
                       epoch_result.seconds, epoch_result.samples_per_second});
    if (job.leader()) mpx::experiment::write_csv(s.csv, std::span<const EpochRecord>(records));
    if (job.leader() && !fp8_records.empty())
      mpx::experiment::write_csv(s.fp8_csv, std::span<const mpx::experiment::Fp8Record>(fp8_records));
    summary.test_accuracy = test.accuracy;
    summary.seconds_per_epoch += epoch_result.seconds / s.epochs;
    summary.skipped_steps += epoch_result.skipped_steps;
  }
  if constexpr (std::is_same_v<Device, mpx::Host>) {
    // [save]
    // The weights, the model's description and the input normalisation: all that inference needs
    // (examples/fashion_mnist_predict.cpp).
    if (!s.save.empty() && job.leader()) {
      const std::string path = s.save + "." + std::string(P::name) + ".safetensors";
      mpx::io::save_weights(model, path, mpx::io::input_normalization_metadata(data.input_normalization()));
    }
    // [save]
  }
  summary.activation_bytes = trainer.first_step_memory().activations;
  summary.final_loss_scale = trainer.scaler().scale();
  job.require_same("the test accuracy", summary.test_accuracy);
  job.require_same("the last epoch's training loss", records.back().train_loss);
  return summary;
}

template <class Device>
void train_all(const Settings& settings, const DataParallelJob& job, const mpx::data::FashionMnist& data) {
  std::vector<EpochRecord> records;
  std::vector<mpx::experiment::Fp8Record> fp8_records;
  std::vector<Summary> summaries;
  const std::map<std::string, std::string> short_names{{"fp32", "fp32"},
                                                       {"tf32", "tf32"},
                                                       {"fp16_mixed", "fp16"},
                                                       {"bf16_mixed", "bf16"},
                                                       {"fp8_hybrid_delayed", "fp8"},
                                                       {"fp8_hybrid_current", "fp8_current"}};
  // FP8: Transformer Engine's default recipe and its current-scaling one, with Hopper's accumulation
  // (emulated on the CPU, cuBLASLt's on a GPU of compute capability 8.9 or newer: docs/fp8.md).
  using Fp8Delayed = mpx::fp8_hybrid<mpx::DelayedScaling<>>;
  using Fp8Current = mpx::fp8_hybrid<mpx::CurrentScaling<>>;
  mpx::experiment::require_precision_on_device<Device>(settings.precision);
  boost::hana::for_each(
      boost::hana::tuple_t<mpx::fp32, mpx::tf32, mpx::fp16_mixed, mpx::bf16_mixed, Fp8Delayed, Fp8Current>,
      [&](auto type) {
        using P = typename decltype(type)::type;
        if (mpx::experiment::trains_on<P, Device>()) {
          if (settings.precision == "all" || settings.precision == short_names.at(std::string(P::name))) {
            summaries.push_back(train<P, Device>(settings, job, data, records, fp8_records));
          }
        }
      });
  if (!job.leader()) return;
  if (const std::string why = mpx::experiment::fp8_unavailable_reason<Device>();
      !why.empty() && settings.precision == "all")
    std::printf("(no FP8 rows: %s; see docs/fp8.md)\n", why.c_str());
  std::printf("\n%-18s %9s %9s %10s %13s %8s %11s\n", "precision", "test acc", "vs fp32", "s/epoch",
              "activations", "skipped", "loss scale");
  for (const Summary& s : summaries) {
    const double delta = 100 * (s.test_accuracy - summaries.front().test_accuracy);
    std::printf("%-18s %8.2f%% %+8.2f %10.2f %10.2f MiB %8lld %11g\n", s.precision.c_str(),
                100 * s.test_accuracy, delta, s.seconds_per_epoch, double(s.activation_bytes) / (1 << 20),
                static_cast<long long>(s.skipped_steps), double(s.final_loss_scale));
  }
  std::printf("per-epoch metrics: %s\n", settings.csv.c_str());
  if (!fp8_records.empty()) {
    std::printf("FP8 diagnostics every %lld steps: %s (scripts/plot_fp8.gp draws them)\n",
                static_cast<long long>(fp8_record_interval), settings.fp8_csv.c_str());
  }
  if (job.size > 1) {
    std::printf("data parallel: %d ranks agree on every result; global batch %lld (%lld per rank)\n",
                job.size, static_cast<long long>(job.size * settings.batch),
                static_cast<long long>(settings.batch));
  }
}

}  // namespace fashion_mnist

#if MPX_CUDA_COMPILER
// The GPU half of the program: the one instantiation the C++ translation unit leaves to nvcc.
template void fashion_mnist::train_all<mpx::Cuda>(const fashion_mnist::Settings&,
                                                  const mpx::experiment::DataParallelJob&,
                                                  const mpx::data::FashionMnist&);
#else
#if MPX_HAS_CUDA
extern template void fashion_mnist::train_all<mpx::Cuda>(const fashion_mnist::Settings&,
                                                         const mpx::experiment::DataParallelJob&,
                                                         const mpx::data::FashionMnist&);
#endif  // MPX_HAS_CUDA

namespace {

using fashion_mnist::DataParallelJob;
using fashion_mnist::Settings;

// Errors in the arguments print the message and this usage line, and exit with code 2.
const mpx::experiment::Usage usage(
    "fashion_mnist",
    "[--precision fp32|tf32|fp16|bf16|fp8|fp8_current|all] [--epochs N] [--batch N] [--lr X] [--seed N] "
    "[--device cpu|cuda|auto] [--csv PATH] [--fp8-csv PATH] [--train-samples N] [--save PATH]");

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    const std::string value = usage.value_after(argc, argv, i);
    const auto number = [&](double low, double high) { return usage.number(option, value, low, high); };
    if (option == "--precision")
      s.precision = value;
    else if (option == "--epochs")
      s.epochs = int(number(1, 1000));
    else if (option == "--batch")
      s.batch = std::int64_t(number(1, 60000));
    else if (option == "--lr")
      s.lr = number(1e-12, 10);
    else if (option == "--seed")
      s.seed = std::uint64_t(number(0, 9007199254740992.0));
    else if (option == "--device")
      s.device = value;
    else if (option == "--csv")
      s.csv = value;
    else if (option == "--fp8-csv")
      s.fp8_csv = value;
    else if (option == "--train-samples")
      s.train_samples = std::int64_t(number(1, 60000));
    else if (option == "--save")
      s.save = value;
    else
      usage.fail("unknown option " + option);
  }
  usage.require_one_of("--precision", s.precision,
                       {"fp32", "tf32", "fp16", "bf16", "fp8", "fp8_current", "all"});
  usage.require_one_of("--device", s.device, {"cpu", "cuda", "auto"});
  return s;
}

}  // namespace

// [main]
int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  // Launched by mpirun (as torchrun launches a DDP script): one rank of a data-parallel job, and an
  // error on any rank ends the job with a message naming the rank. Started by hand: a job of one.
  return mpx::experiment::run_job(argc, argv, usage.program(), [&](const DataParallelJob& job) {
    const auto data = mpx::data::load_fashion_mnist();
    // The one place the program names a device: the GPU of this rank, or the CPU.
    mpx::experiment::with_device(settings.device, job, [&](auto device) {
      fashion_mnist::train_all<decltype(device)>(settings, job, data);
    });
  });
}
// [main]
#endif  // MPX_CUDA_COMPILER
