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
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <mpx/experiment/classification.hpp>
#include <mpx/experiment/progress.hpp>
#include <mpx/experiment/records.hpp>
#include <mpx/mpx.hpp>
#if MPX_CUDA_COMPILER
#include <mpx/cuda.hpp>  // the CUDA backend, for train_all<mpx::Cuda>
#elif MPX_HAS_CUDA
#include <mpx/backend/cuda/context.hpp>  // mpx::cuda_device_count, for --device
#endif
#if MPX_HAS_MPI
#include <mpx/dist/mpi_gradient_sync.hpp>
#include <mpx/dist/run.hpp>
#if MPX_CUDA_COMPILER && MPX_HAS_NCCL
#include <mpx/dist/nccl_gradient_sync.cuh>
#endif
#endif  // MPX_HAS_MPI

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
  std::int64_t train_samples = 0;  // 0: all 60000
};

// [job]
// The data-parallel job this process belongs to: rank 0 of 1, alone, unless mpirun launched it in a
// build with MPI. Rank 0 prints and writes files; every rank computes the same results.
struct Job {
  int rank = 0;
  int size = 1;
#if MPX_HAS_MPI
  const mpx::dist::Communicator* comm = nullptr;  // null: alone
#endif
  [[nodiscard]] bool leader() const {
    return rank == 0;
  }

  // The sum of every rank's `value`, added in rank order on every rank: the same bits everywhere.
  [[nodiscard]] double sum(double value) const {
#if MPX_HAS_MPI
    if (comm != nullptr) {
      double total = 0;
      for (const std::uint64_t bits : comm->all_gather(std::bit_cast<std::uint64_t>(value)))
        total += std::bit_cast<double>(bits);
      return total;
    }
#endif
    return value;
  }

  // Throws unless every rank computed the same `value` (the ranks hold the same weights, bit for bit).
  void require_same(const char* what, double value) const {
#if MPX_HAS_MPI
    if (comm == nullptr) return;
    const std::vector<std::uint64_t> all = comm->all_gather(std::bit_cast<std::uint64_t>(value));
    for (int r = 1; r < size; ++r) {
      if (all[std::size_t(r)] != all[0]) {
        throw mpx::error(mpx::detail::concat("fashion_mnist: ", what, " differs between ranks: rank 0 has ",
                                             std::bit_cast<double>(all[0]), ", rank ", r, " has ",
                                             std::bit_cast<double>(all[std::size_t(r)])));
      }
    }
#else
    static_cast<void>(what);
    static_cast<void>(value);
#endif
  }
};

// The gradient averaging of a data-parallel job on Device: MPI on the CPU, NCCL on GPUs; none alone.
template <class Device, class Model>
auto make_gradient_sync([[maybe_unused]] const Job& job, [[maybe_unused]] Model& model) {
  using Grad = mpx::accumulate_t<typename Model::precision>;
  std::unique_ptr<mpx::GradientSync<Device, Grad>> sync;
#if MPX_HAS_MPI
  if (job.comm != nullptr) {
    if constexpr (std::is_same_v<Device, mpx::Host>) {
      sync = std::make_unique<mpx::dist::MpiGradientSync<Grad>>(*job.comm, model);
    } else {
#if MPX_CUDA_COMPILER && MPX_HAS_NCCL
      sync = std::make_unique<mpx::dist::NcclGradientSync<Grad>>(*job.comm, model);
#else
      throw mpx::error(
          "fashion_mnist: data parallel on GPUs needs NCCL, which CMake did not find; use --device cpu");
#endif
    }
  }
#endif  // MPX_HAS_MPI
  return sync;
}
// [job]

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

template <class P, class Device>
Summary train(const Settings& s, const Job& job, const mpx::data::FashionMnist& data,
              std::vector<EpochRecord>& records) {
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
  const auto sync = make_gradient_sync<Device>(job, model);  // null when alone
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
  const double total_steps = double(batcher.batches_per_epoch()) * s.epochs;

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
    summary.test_accuracy = test.accuracy;
    summary.seconds_per_epoch += epoch_result.seconds / s.epochs;
    summary.skipped_steps += epoch_result.skipped_steps;
  }
  summary.activation_bytes = trainer.first_step_memory().activations;
  summary.final_loss_scale = trainer.scaler().scale();
  job.require_same("the test accuracy", summary.test_accuracy);
  job.require_same("the last epoch's training loss", records.back().train_loss);
  return summary;
}

template <class Device>
void train_all(const Settings& settings, const Job& job, const mpx::data::FashionMnist& data) {
  std::vector<EpochRecord> records;
  std::vector<Summary> summaries;
  const std::map<std::string, std::string> short_names{
      {"fp32", "fp32"}, {"tf32", "tf32"}, {"fp16_mixed", "fp16"}, {"bf16_mixed", "bf16"}};
  boost::hana::for_each(
      boost::hana::tuple_t<mpx::fp32, mpx::tf32, mpx::fp16_mixed, mpx::bf16_mixed>, [&](auto type) {
        using P = typename decltype(type)::type;
        if (settings.precision == "all" || settings.precision == short_names.at(std::string(P::name))) {
          summaries.push_back(train<P, Device>(settings, job, data, records));
        }
      });
  if (!job.leader()) return;
  std::printf("\n%-11s %9s %9s %10s %13s %8s %11s\n", "precision", "test acc", "vs fp32", "s/epoch",
              "activations", "skipped", "loss scale");
  for (const Summary& s : summaries) {
    const double delta = 100 * (s.test_accuracy - summaries.front().test_accuracy);
    std::printf("%-11s %8.2f%% %+8.2f %10.2f %10.2f MiB %8lld %11g\n", s.precision.c_str(),
                100 * s.test_accuracy, delta, s.seconds_per_epoch, double(s.activation_bytes) / (1 << 20),
                static_cast<long long>(s.skipped_steps), double(s.final_loss_scale));
  }
  std::printf("per-epoch metrics: %s\n", settings.csv.c_str());
  if (job.size > 1) {
    std::printf("data parallel: %d ranks agree on every result; global batch %lld (%lld per rank)\n",
                job.size, static_cast<long long>(job.size * settings.batch),
                static_cast<long long>(settings.batch));
  }
}

}  // namespace fashion_mnist

#if MPX_CUDA_COMPILER
// The GPU half of the program: the one instantiation the C++ translation unit leaves to nvcc.
template void fashion_mnist::train_all<mpx::Cuda>(const fashion_mnist::Settings&, const fashion_mnist::Job&,
                                                  const mpx::data::FashionMnist&);
#else
#if MPX_HAS_CUDA
extern template void fashion_mnist::train_all<mpx::Cuda>(const fashion_mnist::Settings&,
                                                         const fashion_mnist::Job&,
                                                         const mpx::data::FashionMnist&);
#endif  // MPX_HAS_CUDA

namespace {

using fashion_mnist::Job;
using fashion_mnist::Settings;

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr,
               "fashion_mnist: %s\nusage: fashion_mnist [--precision fp32|tf32|fp16|bf16|all] [--epochs N] "
               "[--batch N] [--lr X] [--seed N] [--device cpu|cuda|auto] [--csv PATH] [--train-samples N]\n",
               message.c_str());
  std::exit(2);
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (i + 1 >= argc) usage_error("option " + option + " needs a value");
    const std::string value = argv[++i];
    char* end = nullptr;
    const auto number = [&](double low, double high) {
      const double v = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end != '\0' || !(v >= low && v <= high)) {
        usage_error(option + " " + value + ": expected a number in [" + std::to_string(low) + ", " +
                    std::to_string(high) + "]");
      }
      return v;
    };
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
    else if (option == "--train-samples")
      s.train_samples = std::int64_t(number(1, 60000));
    else
      usage_error("unknown option " + option);
  }
  if (s.precision != "all" && s.precision != "fp32" && s.precision != "tf32" && s.precision != "fp16" &&
      s.precision != "bf16") {
    usage_error("--precision " + s.precision + ": expected fp32, tf32, fp16, bf16 or all");
  }
  if (s.device != "cpu" && s.device != "cuda" && s.device != "auto")
    usage_error("--device " + s.device + ": expected cpu, cuda or auto");
  return s;
}

// [device]
// Resolves --device once and calls train_on(mpx::Cuda{}) or train_on(mpx::Host{}): the one place the
// program names a device. The ranks of a job on GPUs take one each (rank r: GPU r mod the count).
template <class F>
void with_device(const std::string& device, const Job& job, F&& train_on) {
#if MPX_HAS_CUDA
  if (device == "cuda") mpx::require_cuda_device("fashion_mnist --device cuda");
  if (device == "cuda" || (device == "auto" && mpx::cuda_device_count() > 0)) {
    MPX_CUDA_CHECK(cudaSetDevice(job.rank % mpx::cuda_device_count()));  // before mpx's first CUDA call
    if (job.leader()) std::printf("device: cuda (%s)\n", mpx::cuda_context().properties().name);
    return train_on(mpx::Cuda{});
  }
  const char* why_not_cuda = " (no CUDA device found)";
#else
  if (device == "cuda") {
    throw mpx::error(
        "--device cuda: this build has no CUDA (CMake found no CUDA toolkit when it was configured); "
        "configure again with nvcc on PATH, or use --device cpu or auto");
  }
  const char* why_not_cuda = " (this build has no CUDA)";
#endif  // MPX_HAS_CUDA
  if (job.leader()) std::printf("device: cpu%s\n", device == "auto" ? why_not_cuda : "");
  train_on(mpx::Host{});
}
// [device]

// Loads the data and trains as `job`'s rank.
void run_job(const Settings& settings, const Job& job) {
  const auto data = mpx::data::load_fashion_mnist();
  with_device(settings.device, job,
              [&](auto device) { fashion_mnist::train_all<decltype(device)>(settings, job, data); });
}

}  // namespace

// [main]
int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
#if MPX_HAS_MPI
  // Launched by mpirun (as torchrun launches a DDP script): one rank of a data-parallel job. An error
  // on any rank ends the job with a message naming the rank.
  if (mpx::dist::launched_by_mpirun()) {
    return mpx::dist::run(argc, argv, [&](mpx::dist::Communicator& comm) {
      if (comm.rank() == 0) std::printf("data parallel: %d ranks (mpirun)\n", comm.size());
      run_job(settings, Job{.rank = comm.rank(), .size = comm.size(), .comm = &comm});
    });
  }
#endif  // MPX_HAS_MPI
  try {
    run_job(settings, Job{});
  } catch (const mpx::error& e) {
    std::fprintf(stderr, "fashion_mnist: %s\n", e.what());
    return 1;
  }
  return 0;
}
// [main]
#endif  // MPX_CUDA_COMPILER
