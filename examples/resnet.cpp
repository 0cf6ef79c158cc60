// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Trains a small ResNet on Fashion-MNIST in fp32, tf32, fp16 and bf16 and compares them as
// examples/fashion_mnist.cpp compares its MLP: test accuracy, time per epoch, activation memory,
// skipped steps, final loss scale. The images are 28 x 28 x 1, channels-last, mirrored at random in
// training (`--crop-padding N` adds random crops: in a run this short they cost accuracy, docs/cnn.md).
// The same program trains on the CPU (oneDNN convolutions) or the GPU (cuDNN): as in
// fashion_mnist.cpp, the device is a template parameter of `train_all`, and where CMake finds the CUDA
// toolkit nvcc compiles this file a second time for `train_all<mpx::Cuda>` alone. Launched by
// `mpirun -np N` in a build with MPI, it trains data-parallel: each rank normalises its own share of
// each global batch with that share's statistics and ends every step with rank 0's running
// statistics, as PyTorch DDP does, or with `--sync-batch-norm` every rank normalises with the whole
// global batch's statistics, as PyTorch's SyncBatchNorm (docs/distributed.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <numbers>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <mpx/experiment/classification.hpp>
#include <mpx/experiment/data_parallel_job.hpp>
#include <mpx/experiment/progress.hpp>
#include <mpx/experiment/records.hpp>
#include <mpx/experiment/resnet.hpp>
#include <mpx/experiment/usage.hpp>
#include <mpx/mpx.hpp>
// [cuda-includes]
#if MPX_CUDA_COMPILER
#include <mpx/backend/cuda/conv2d.cuh>  // convolutions on cuDNN (not part of <mpx/cuda.hpp>: slow to compile)
#include <mpx/cuda.hpp>                 // the CUDA backend, for train_all<mpx::Cuda>
#endif
// [cuda-includes]

// External linkage: the nvcc translation unit defines train_all<mpx::Cuda> for this one's main.
namespace resnet_example {

using mpx::experiment::DataParallelJob;

struct Settings {
  std::string precision = "all";
  int epochs = 6;
  std::int64_t batch = 128;
  double lr = 0.1;
  std::uint64_t seed = 42;
  std::int64_t width = 16;         // the stem's channels; the three stages have 2x, 4x and 8x
  std::int64_t crop_padding = 0;   // random crop of the image padded by this many pixels; 0: none
  bool flip = true;                // random horizontal flip
  bool sync_batch_norm = false;    // data parallel: BatchNorm over every rank's batch (SyncBatchNorm)
  std::int64_t train_samples = 0;  // 0: all 60000
  std::int64_t test_samples = 0;   // 0: all 10000 (fewer for smoke runs, where evaluation dominates)
  std::string device = "auto";
  std::string csv = "resnet_metrics.csv";
  std::string save;       // weights for inference: <save>.<precision>.safetensors
  std::string confusion;  // test-set confusion matrices: <confusion>.<precision>.csv
};

struct EpochRecord {
  BOOST_HANA_DEFINE_STRUCT(EpochRecord, (std::string, precision), (int, epoch), (double, train_loss),
                           (double, train_accuracy), (double, test_loss), (double, test_accuracy),
                           (float, loss_scale), (std::int64_t, skipped_steps), (double, seconds),
                           (double, samples_per_second));
};

struct Summary {
  std::string precision;
  double test_accuracy, seconds_per_epoch, samples_per_second;
  std::int64_t activation_bytes, skipped_steps;
  float final_loss_scale;
};

constexpr const char* class_names[mpx::data::fashion_mnist_classes] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

// The model's confusion matrix on `dataset` as CSV: a row per true class, a column per predicted
// class, counts of test images; the predictions are `nn::predict`'s (the argmax of the logits) in
// evaluation mode (BatchNorm with its running statistics), as `experiment::evaluate` makes them.
template <class Model>
std::string confusion_csv(Model& model, const mpx::data::Dataset& dataset) {
  using Device = typename Model::device_type;
  const std::int64_t classes = dataset.classes();
  std::vector<std::int64_t> counts(std::size_t(classes * classes), 0);
  mpx::data::Batcher batcher(dataset, {.batch_size = 1000, .shuffle = false});
  mpx::Tensor<typename Model::input_type> images;
  mpx::Tensor<typename Model::input_type, Device> device_images;  // unused on the host
  mpx::Tensor<std::int32_t> labels;
  {
    const mpx::nn::EvaluationMode evaluating(model);
    while (batcher.next(images, labels)) {
      const auto& x = mpx::to<Device>(images, device_images);
      const mpx::Tensor<std::int32_t> predicted = mpx::to<mpx::Host>(mpx::nn::predict(model.forward(x)));
      for (std::int64_t i = 0; i < labels.numel(); ++i)
        ++counts[std::size_t(labels[i] * classes + predicted[i])];
    }
  }
  model.forget_inputs();  // the layers kept pointers into this function's last batch
  std::ostringstream csv;
  csv << "true class";
  for (const char* name : class_names) csv << ',' << name;
  for (std::int64_t t = 0; t < classes; ++t) {
    csv << '\n' << class_names[t];
    for (std::int64_t p = 0; p < classes; ++p) csv << ',' << counts[std::size_t(t * classes + p)];
  }
  csv << '\n';
  return csv.str();
}

template <mpx::PrecisionPolicy P, class Device>
Summary train(const Settings& s, const DataParallelJob& job, const mpx::data::FashionMnist& data,
              const mpx::data::Dataset& test_set, std::vector<EpochRecord>& records) {
  // [model]
  // ResNet-8 (mpx/experiment/resnet.hpp): a 16-channel stem at 28 x 28, then stages of 32, 64 and 128
  // channels at 14, 7 and 4 pixels by default.
  auto model = mpx::experiment::resnet<P, Device>(s.width, data.train.classes());
  // [model]
  model.initialize(s.seed);
  auto loss = mpx::nn::layers<P, Device>::softmax_cross_entropy();
  // L2 weight decay on every parameter, BatchNorm's gamma and beta and the biases included, as
  // torch.optim.SGD(model.parameters(), weight_decay=5e-4) applies it.
  mpx::optim::SGD optimizer(model, {.lr = s.lr, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true});
  // Null when alone; across ranks, BatchNorm normalises each rank's share with its own statistics
  // (DDP's default) unless --sync-batch-norm.
  const auto sync =
      mpx::experiment::make_gradient_sync<Device>(job, model, {.sync_batch_norm = s.sync_batch_norm});
  mpx::Trainer trainer =
      sync ? mpx::Trainer(model, loss, optimizer, *sync) : mpx::Trainer(model, loss, optimizer);
  const mpx::data::Dataset train_set = data.train.subset(
      0, s.train_samples > 0 ? std::min(s.train_samples, data.train.size()) : data.train.size());
  // Every step sees a full batch (BatchNorm's statistics); the next epoch's shuffle covers the rest.
  // Rank r takes samples [r x batch, (r + 1) x batch) of each global batch of size x batch.
  mpx::data::Batcher batcher(train_set, {.batch_size = s.batch,
                                         .seed = s.seed,
                                         .last_batch = mpx::data::LastBatch::Drop,
                                         .shard = {job.rank, job.size},
                                         .augmentation = {.crop_padding = s.crop_padding,
                                                          .padding_value = data.input_normalization()(0.0),
                                                          .horizontal_flip = s.flip}});
  if constexpr (!std::is_same_v<Device, mpx::Host>) {
    if (!s.save.empty())
      throw mpx::invalid_argument("--save: mpx saves weights of CPU models only so far; use --device cpu");
  }
  const double total_steps = double(batcher.batches_per_epoch()) * s.epochs;

  Summary summary{std::string(P::name), 0, 0, 0, 0, 0, 0};
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
    // Every rank evaluates the whole test set with the same weights and running statistics.
    const auto test = mpx::experiment::evaluate(model, loss, test_set);
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
    summary.samples_per_second += epoch_result.samples_per_second / s.epochs;
    summary.skipped_steps += epoch_result.skipped_steps;
  }
  if (!s.confusion.empty() && job.leader()) {
    mpx::io::write_file_atomically(s.confusion + "." + summary.precision + ".csv",
                                   confusion_csv(model, test_set));
  }
  if constexpr (std::is_same_v<Device, mpx::Host>) {
    // The weights, the model's description (examples/rebuild_in_torch.py rebuilds the network from
    // it) and the input normalisation.
    if (!s.save.empty() && job.leader()) {
      mpx::io::save_weights(model, s.save + "." + summary.precision + ".safetensors",
                            mpx::io::input_normalization_metadata(data.input_normalization()));
    }
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
  std::vector<Summary> summaries;
  const mpx::data::Dataset test_set = data.test.subset(
      0, settings.test_samples > 0 ? std::min(settings.test_samples, data.test.size()) : data.test.size());
  const std::map<std::string, std::string> short_names{
      {"fp32", "fp32"}, {"tf32", "tf32"}, {"fp16_mixed", "fp16"}, {"bf16_mixed", "bf16"}};
  boost::hana::for_each(
      boost::hana::tuple_t<mpx::fp32, mpx::tf32, mpx::fp16_mixed, mpx::bf16_mixed>, [&](auto type) {
        using P = typename decltype(type)::type;
        if (settings.precision == "all" || settings.precision == short_names.at(std::string(P::name))) {
          summaries.push_back(train<P, Device>(settings, job, data, test_set, records));
        }
      });
  if (!job.leader()) return;
  const Summary* fp32 = summaries.front().precision == "fp32" ? &summaries.front() : nullptr;
  std::printf("\n%-11s %9s %9s %10s %10s %13s %8s %11s\n", "precision", "test acc", "vs fp32", "s/epoch",
              "samples/s", "activations", "skipped", "loss scale");
  for (const Summary& s : summaries) {
    char delta[16] = "-";
    if (fp32 != nullptr)
      std::snprintf(delta, sizeof delta, "%+.2f", 100 * (s.test_accuracy - fp32->test_accuracy));
    std::printf("%-11s %8.2f%% %9s %10.2f %10.0f %10.2f MiB %8lld %11g\n", s.precision.c_str(),
                100 * s.test_accuracy, delta, s.seconds_per_epoch, s.samples_per_second,
                double(s.activation_bytes) / (1 << 20), static_cast<long long>(s.skipped_steps),
                double(s.final_loss_scale));
  }
  if (fp32 != nullptr) {
    for (const Summary& s : summaries) {
      if (s.precision != "fp16_mixed" && s.precision != "bf16_mixed") continue;
      std::printf("%s against fp32: activation memory %.1f%% lower, test accuracy %+.2f points\n",
                  s.precision.c_str(),
                  100.0 * (1.0 - double(s.activation_bytes) / double(fp32->activation_bytes)),
                  100 * (s.test_accuracy - fp32->test_accuracy));
    }
  }
  std::printf("per-epoch metrics: %s\n", settings.csv.c_str());
  if (!settings.confusion.empty())
    std::printf("confusion matrices: %s.<precision>.csv\n", settings.confusion.c_str());
  if (job.size > 1) {
    std::printf("data parallel: %d ranks agree on every result; global batch %lld (%lld per rank)\n",
                job.size, static_cast<long long>(job.size * settings.batch),
                static_cast<long long>(settings.batch));
  }
}

}  // namespace resnet_example

#if MPX_CUDA_COMPILER
// The GPU half of the program: the one instantiation the C++ translation unit leaves to nvcc.
template void resnet_example::train_all<mpx::Cuda>(const resnet_example::Settings&,
                                                   const mpx::experiment::DataParallelJob&,
                                                   const mpx::data::FashionMnist&);
#else
#if MPX_HAS_CUDA
extern template void resnet_example::train_all<mpx::Cuda>(const resnet_example::Settings&,
                                                          const mpx::experiment::DataParallelJob&,
                                                          const mpx::data::FashionMnist&);
#endif  // MPX_HAS_CUDA

namespace {

using resnet_example::DataParallelJob;
using resnet_example::Settings;

// Errors in the arguments print the message and this usage line, and exit with code 2.
const mpx::experiment::Usage usage(
    "resnet",
    "[--precision fp32|tf32|fp16|bf16|all] [--epochs N] [--batch N] [--lr X] [--seed N] [--width N] "
    "[--crop-padding N] [--no-flip] [--sync-batch-norm] [--train-samples N] [--test-samples N] [--device "
    "cpu|cuda|auto] "
    "[--csv PATH] [--save PATH] [--confusion PATH]");

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (option == "--no-flip") {  // the options without a value
      s.flip = false;
      continue;
    }
    if (option == "--sync-batch-norm") {
      s.sync_batch_norm = true;
      continue;
    }
    const std::string value = usage.value_after(argc, argv, i);
    const auto number = [&](double low, double high) { return usage.number(option, value, low, high); };
    const auto whole_number = [&](double low, double high) {
      const double v = number(low, high);
      if (v != std::floor(v)) usage.fail(option + " " + value + ": expected a whole number");
      return v;
    };
    if (option == "--precision")
      s.precision = value;
    else if (option == "--epochs")
      s.epochs = int(whole_number(1, 1000));
    else if (option == "--batch")
      s.batch = std::int64_t(whole_number(2, 60000));  // BatchNorm needs two samples
    else if (option == "--lr")
      s.lr = number(1e-12, 10);
    else if (option == "--seed")
      s.seed = std::uint64_t(whole_number(0, 9007199254740992.0));
    else if (option == "--width")
      s.width = std::int64_t(whole_number(1, 1024));
    else if (option == "--crop-padding")
      s.crop_padding = std::int64_t(whole_number(0, 28));
    else if (option == "--train-samples")
      s.train_samples = std::int64_t(whole_number(1, 60000));
    else if (option == "--test-samples")
      s.test_samples = std::int64_t(whole_number(1, 10000));
    else if (option == "--device")
      s.device = value;
    else if (option == "--csv")
      s.csv = value;
    else if (option == "--save")
      s.save = value;
    else if (option == "--confusion")
      s.confusion = value;
    else
      usage.fail("unknown option " + option);
  }
  usage.require_one_of("--precision", s.precision, {"fp32", "tf32", "fp16", "bf16", "all"});
  usage.require_one_of("--device", s.device, {"cpu", "cuda", "auto"});
  if (s.train_samples > 0 && s.train_samples < s.batch) {
    usage.fail("--train-samples " + std::to_string(s.train_samples) + ": fewer than one batch of " +
               std::to_string(s.batch) + " (the last partial batch is dropped)");
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  // Launched by mpirun: one rank of a data-parallel job, and an error on any rank ends the job with a
  // message naming the rank. Started by hand: a job of one.
  return mpx::experiment::run_job(argc, argv, usage.program(), [&](const DataParallelJob& job) {
    auto data = mpx::data::load_fashion_mnist();
    // Channels-last images for the convolutions: batches come as [N, 28, 28, 1].
    data.train.set_sample_shape(mpx::Shape{28, 28, 1});
    data.test.set_sample_shape(mpx::Shape{28, 28, 1});
    mpx::experiment::with_device(settings.device, job, [&](auto device) {
      resnet_example::train_all<decltype(device)>(settings, job, data);
    });
  });
}
#endif  // MPX_CUDA_COMPILER
