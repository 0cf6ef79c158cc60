// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Trains a denoising diffusion model (DDPM: a small UNet predicting the noise added to Fashion-MNIST
// images, mpx/experiment/unet.hpp and ddpm.hpp) in fp32, bf16 and fp16 (and FP8 with `--precision fp8`),
// keeping an exponential moving average of the weights, then draws samples from each average with the same
// seeds and writes them side by side as a PNG, with a table: the final training loss, a sample-quality score
// (the Fréchet distance to real test images in the feature space of mpx's own ResNet classifier, and that
// classifier's confident-class share; not FID: docs/diffusion.md), samples/s, activation memory, skipped
// steps and the final loss scale. The score needs the classifier's weights (`resnet --precision fp32 --save
// resnet`; scripts/diffusion.sh makes them); without them the table leaves the score out. As the other
// examples, the device is a template parameter of `train_all` and nvcc compiles this file a second time for
// the GPU, and under `mpirun -np N` it trains data-parallel.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numbers>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <mpx/experiment/data_parallel_job.hpp>
#include <mpx/experiment/ddpm.hpp>
#include <mpx/experiment/diffusion.hpp>
#include <mpx/experiment/progress.hpp>
#include <mpx/experiment/records.hpp>
#include <mpx/experiment/resnet.hpp>
#include <mpx/experiment/unet.hpp>
#include <mpx/experiment/usage.hpp>
#include <mpx/io/png.hpp>
#include <mpx/mpx.hpp>
#if MPX_CUDA_COMPILER
#include <mpx/backend/cuda/conv2d.cuh>  // convolutions on cuDNN (not part of <mpx/cuda.hpp>: slow to compile)
#include <mpx/cuda.hpp>                 // the CUDA backend, for train_all<mpx::Cuda>
#endif

// External linkage: the nvcc translation unit defines train_all<mpx::Cuda> for this one's main.
namespace diffusion_example {

using mpx::experiment::DataParallelJob;

struct Settings {
  std::string precision = "all";
  int epochs = 3;
  std::int64_t batch = 128;
  double lr = 1e-2;           // 2e-3 drew blurrier samples (docs/diffusion.md)
  std::int64_t warmup = 100;  // steps of linear learning-rate warm-up, then cosine decay
  double max_grad_norm = 1.0;
  double ema_decay = 0.999;  // the weight average samples are drawn from (with warm-up); 0: the weights
  std::uint64_t seed = 42;
  std::int64_t width = 16;  // the UNet's base channels
  std::int64_t timesteps = 1000;
  std::string schedule = "cosine";
  std::string sampler = "ddim";
  std::int64_t sample_steps = 50;  // DDIM
  double eta = 1.0;                // DDIM: 0 deterministic, 1 as noisy as DDPM (smoother samples here)
  std::int64_t samples = 500;      // scored; the PNG shows the first 16 of each precision
  std::int64_t train_samples = 0;  // 0: all 60000
  std::string classifier = "resnet.fp32.safetensors";  // its default is skipped when missing
  bool classifier_given = false;
  std::int64_t classifier_width = 16;
  std::string device = "auto";
  std::string csv = "diffusion_metrics.csv";
  std::string png = "diffusion_samples.png";
};

struct EpochRecord {
  BOOST_HANA_DEFINE_STRUCT(EpochRecord, (std::string, precision), (int, epoch), (double, train_loss),
                           (float, loss_scale), (std::int64_t, skipped_steps), (double, seconds),
                           (double, samples_per_second));
};

struct Summary {
  std::string precision;
  double final_loss = 0, samples_per_second = 0;
  std::optional<mpx::experiment::SampleQuality> quality;
  std::int64_t activation_bytes = 0, skipped_steps = 0;
  float final_loss_scale = 1;
  mpx::Tensor<float> shown;  // the first samples, for the picture
  bool finite_weights = true;
};

constexpr std::int64_t shown_per_precision = 16;

template <mpx::PrecisionPolicy P, class Device>
Summary train(const Settings& s, const DataParallelJob& job, const mpx::data::FashionMnist& data,
              const mpx::Tensor<float>& real_images, std::vector<EpochRecord>& records) {
  // [model]
  auto model = mpx::experiment::unet<P, Device>(s.width);
  // [model]
  model.initialize(s.seed);
  auto loss = mpx::nn::layers<P, Device>::mse_loss();
  mpx::optim::AdamW optimizer(model, {.lr = s.lr, .weight_decay = 0.0});
  const auto sync = mpx::experiment::make_gradient_sync<Device>(job, model);
  const typename mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)>::Options options{
      .max_grad_norm = s.max_grad_norm};
  mpx::Trainer trainer = sync ? mpx::Trainer(model, loss, optimizer, *sync, options)
                              : mpx::Trainer(model, loss, optimizer, options);
  // The exponential moving average of the weights, updated on the device after each step taken, with
  // diffusers' warm-up (decay min(d, (1 + s) / (10 + s)) at update s).
  if (s.ema_decay > 0) trainer.keep_weight_average({.decay = s.ema_decay, .warmup = true});
  const mpx::experiment::DdpmSchedule schedule({.timesteps = s.timesteps,
                                                .schedule = s.schedule == "cosine"
                                                                ? mpx::experiment::NoiseSchedule::Cosine
                                                                : mpx::experiment::NoiseSchedule::Linear});
  const mpx::data::Dataset train_set = data.train.subset(
      0, s.train_samples > 0 ? std::min(s.train_samples, data.train.size()) : data.train.size());
  // Rank r takes samples [r x batch, (r + 1) x batch) of each global batch of size x batch; its noise
  // and timesteps are those samples' draws of the global batch.
  mpx::data::Batcher batcher(train_set, {.batch_size = s.batch,
                                         .seed = s.seed,
                                         .last_batch = mpx::data::LastBatch::Drop,
                                         .shard = {job.rank, job.size}});
  const double total_steps = double(batcher.batches_per_epoch()) * s.epochs;
  constexpr std::int64_t image = 28 * 28;

  mpx::Tensor<float> images, x_t, noise;
  mpx::Tensor<std::int32_t> labels;
  mpx::Tensor<float, Device> device_x, device_noise;
  mpx::experiment::NoisedBatch noised;
  Summary summary;
  summary.precision = std::string(P::name);
  std::uint64_t step = 0;
  for (int epoch = 0; epoch < s.epochs; ++epoch) {
    char label[64];
    std::snprintf(label, sizeof label, "%-10s epoch %2d/%d", P::name.data(), epoch + 1, s.epochs);
    std::optional<mpx::experiment::ProgressBar> bar;
    if (job.leader()) bar.emplace(label);
    batcher.start_epoch(epoch);
    double loss_sum = 0;
    std::int64_t steps = 0, skipped = 0;
    const auto start = std::chrono::steady_clock::now();
    while (batcher.next(images, labels)) {
      // x_t and the noise to predict, from this rank's clean images (already in [-1, 1]).
      const std::int64_t rows = images.shape()[0];
      schedule.noised_batch(std::span<const float>(images.data(), std::size_t(images.numel())), image, s.seed,
                            step, job.rank * s.batch, noised);
      mpx::nn::ensure_shape(x_t, mpx::Shape{rows, 28, 28, 1});
      mpx::nn::ensure_shape(noise, mpx::Shape{rows, 28, 28, 1});
      std::copy(noised.noisy.begin(), noised.noisy.end(), x_t.data());
      std::copy(noised.noise.begin(), noised.noise.end(), noise.data());
      const double progress = double(step + 1) / total_steps;
      const double warm = std::min(1.0, double(step + 1) / double(std::max<std::int64_t>(s.warmup, 1)));
      optimizer.set_lr(s.lr * warm * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)) + 1e-7);
      model.set_timesteps(noised.timestep_values);
      const mpx::StepResult r =
          trainer.step(mpx::to<Device>(x_t, device_x), mpx::to<Device>(noise, device_noise));
      loss_sum += r.loss;
      ++steps;
      skipped += r.stepped ? 0 : 1;
      ++step;
      char status[96];
      std::snprintf(status, sizeof status, "loss %.4f  scale %g", r.loss, double(r.loss_scale));
      if (bar) bar->update(steps, batcher.batches_per_epoch(), status);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EpochRecord record{
        summary.precision, epoch + 1, job.sum(loss_sum / double(steps)) / job.size, trainer.scaler().scale(),
        skipped,           seconds,   job.sum(double(steps * s.batch) / seconds)};
    char status[128];
    std::snprintf(status, sizeof status, "loss %.4f  scale %g  %.0f samples/s", record.train_loss,
                  double(record.loss_scale), record.samples_per_second);
    if (bar) bar->finish(steps, status);
    records.push_back(record);
    if (job.leader()) mpx::experiment::write_csv(s.csv, std::span<const EpochRecord>(records));
    summary.final_loss = record.train_loss;
    summary.samples_per_second += record.samples_per_second / s.epochs;
    summary.skipped_steps += skipped;
  }
  summary.activation_bytes = trainer.first_step_memory().activations;
  summary.final_loss_scale = trainer.scaler().scale();
  // Every rank must end with the same weights and the same average: a hash (FNV-1a) of every master
  // weight's bits, then the average's, compared in two 32-bit halves (each exact in a double).
  std::uint64_t hash = 14695981039346656037ull;
  const auto add_to_hash = [&](const auto& tensor) {
    const auto& host = mpx::to<mpx::Host>(tensor);
    for (const float w : host.values()) {
      summary.finite_weights &= std::isfinite(w);
      hash = (hash ^ std::bit_cast<std::uint32_t>(w)) * 1099511628211ull;
    }
  };
  model.for_each_parameter([&](std::string_view, auto& p) { add_to_hash(p.master()); });
  if (const auto* average = trainer.weight_average()) {
    average->for_each([&](std::string_view, const auto& tensor) { add_to_hash(tensor); });
  }
  job.require_same("the hash of the weights and their average (high half)", double(hash >> 32));
  job.require_same("the hash of the weights and their average (low half)", double(hash & 0xffffffffu));
  // Samples come from the average when there is one (a model of the same type holding it).
  auto averaged = mpx::experiment::unet<P, Device>(s.width);
  if (const auto* average = trainer.weight_average()) average->copy_into(averaged);
  auto& sampler_model = trainer.weight_average() != nullptr ? averaged : model;

  // Samples, the same seeds for every precision; every rank draws them (the weights are the same).
  const mpx::Tensor<float> samples = mpx::experiment::draw_samples(
      sampler_model, schedule,
      {.sampler = s.sampler == "ddpm" ? mpx::experiment::Sampler::Ddpm : mpx::experiment::Sampler::Ddim,
       .steps = s.sample_steps,
       .eta = s.eta,
       .seed = s.seed + 1},
      s.samples, mpx::Shape{28, 28, 1});
  summary.shown = mpx::Tensor<float>(mpx::Shape{shown_per_precision, 28, 28, 1});
  std::copy(samples.data(), samples.data() + summary.shown.numel(), summary.shown.data());

  if (s.classifier != "none" && std::filesystem::exists(s.classifier)) {
    auto classifier = mpx::experiment::resnet<mpx::fp32, mpx::Host>(s.classifier_width, 10);
    const auto normalization = mpx::io::input_normalization(mpx::io::load_weights(classifier, s.classifier));
    if (!normalization) {
      throw mpx::io_error(s.classifier +
                          ": no input normalisation in its metadata; save it with examples/resnet --save");
    }
    summary.quality = mpx::experiment::score_samples(classifier, *normalization, samples, real_images);
  }
  job.require_same("the final training loss", summary.final_loss);
  return summary;
}

template <class Device>
void train_all(const Settings& settings, const DataParallelJob& job, const mpx::data::FashionMnist& data) {
  std::vector<EpochRecord> records;
  std::vector<Summary> summaries;
  // The real images the samples are scored against: as many test images as samples.
  const std::int64_t real_count = std::min(settings.samples, data.test.size());
  mpx::Tensor<float> real_images(mpx::Shape{real_count, 28, 28, 1});
  std::copy(data.test.images().data(), data.test.images().data() + real_images.numel(), real_images.data());
  // FP8 (Transformer Engine's hybrid formats and delayed scaling on the Linear layers: the time network,
  // the blocks' time projections and the attention's; convolutions in bf16) runs when asked for by name:
  // "all" keeps the default run within its 15 minutes on 2 cores.
  const std::map<std::string, std::string> short_names{
      {"fp32", "fp32"}, {"fp16_mixed", "fp16"}, {"bf16_mixed", "bf16"}, {"fp8_hybrid_delayed", "fp8"}};
  const auto precisions = boost::hana::tuple_t<mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed,
                                               mpx::fp8_hybrid<mpx::DelayedScaling<>>>;
  boost::hana::for_each(precisions, [&](auto type) {
    using P = typename decltype(type)::type;
    const std::string name = short_names.at(std::string(P::name));
    if ((settings.precision == "all" && name != "fp8") || settings.precision == name) {
      summaries.push_back(train<P, Device>(settings, job, data, real_images, records));
    }
  });
  if (!job.leader()) return;

  // The picture: a row of samples per precision, the same seeds in each column.
  mpx::Tensor<float> shown(mpx::Shape{std::int64_t(summaries.size()) * shown_per_precision, 28, 28, 1});
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    std::copy(summaries[i].shown.data(), summaries[i].shown.data() + summaries[i].shown.numel(),
              shown.data() + std::int64_t(i) * summaries[i].shown.numel());
  }
  mpx::io::write_png(settings.png, mpx::io::image_grid(shown, {.columns = shown_per_precision}));

  const Summary* fp32 = summaries.front().precision == "fp32" ? &summaries.front() : nullptr;
  std::printf("\n%-18s %10s %10s %9s %9s %10s %13s %8s %11s\n", "precision", "final loss", "Frechet",
              "vs fp32", "confident", "samples/s", "activations", "skipped", "loss scale");
  for (const Summary& s : summaries) {
    char distance[16] = "-", ratio[16] = "-", confident[16] = "-";
    if (s.quality) {
      std::snprintf(distance, sizeof distance, "%.2f", s.quality->frechet_distance);
      std::snprintf(confident, sizeof confident, "%.1f%%", 100 * s.quality->confident_share);
      if (fp32 != nullptr && fp32->quality) {
        std::snprintf(ratio, sizeof ratio, "%.2fx",
                      s.quality->frechet_distance / fp32->quality->frechet_distance);
      }
    }
    std::printf("%-18s %10.4f %10s %9s %9s %10.0f %10.2f MiB %8lld %11g%s\n", s.precision.c_str(),
                s.final_loss, distance, ratio, confident, s.samples_per_second,
                double(s.activation_bytes) / (1 << 20), static_cast<long long>(s.skipped_steps),
                double(s.final_loss_scale), s.finite_weights ? "" : "  NON-FINITE WEIGHTS");
  }
  if (!summaries.front().quality) {
    if (settings.classifier == "none") {
      std::printf("(no sample score: --classifier none)\n");
    } else {
      std::printf("(no sample score: %s not found; scripts/diffusion.sh trains the classifier)\n",
                  settings.classifier.c_str());
    }
  }
  std::printf("samples (%lld per precision, %s sampler, seed %llu): %s\nper-epoch metrics: %s\n",
              static_cast<long long>(shown_per_precision), settings.sampler.c_str(),
              static_cast<unsigned long long>(settings.seed + 1), settings.png.c_str(), settings.csv.c_str());
  if (job.size > 1) {
    std::printf("data parallel: %d ranks agree on every result; global batch %lld (%lld per rank)\n",
                job.size, static_cast<long long>(job.size * settings.batch),
                static_cast<long long>(settings.batch));
  }
}

}  // namespace diffusion_example

#if MPX_CUDA_COMPILER
// The GPU half of the program: the one instantiation the C++ translation unit leaves to nvcc.
template void diffusion_example::train_all<mpx::Cuda>(const diffusion_example::Settings&,
                                                      const mpx::experiment::DataParallelJob&,
                                                      const mpx::data::FashionMnist&);
#else
#if MPX_HAS_CUDA
extern template void diffusion_example::train_all<mpx::Cuda>(const diffusion_example::Settings&,
                                                             const mpx::experiment::DataParallelJob&,
                                                             const mpx::data::FashionMnist&);
#endif  // MPX_HAS_CUDA

namespace {

using diffusion_example::DataParallelJob;
using diffusion_example::Settings;

const mpx::experiment::Usage usage(
    "diffusion",
    "[--precision fp32|bf16|fp16|fp8|all] [--epochs N] [--batch N] [--lr X] [--warmup N] [--max-grad-norm X] "
    "[--ema-decay X] "
    "[--seed N] [--width N] [--timesteps N] [--schedule linear|cosine] [--sampler ddim|ddpm] "
    "[--sample-steps N] [--eta X] [--samples N] [--train-samples N] [--classifier PATH|none] "
    "[--classifier-width N] "
    "[--device cpu|cuda|auto] [--csv PATH] [--png PATH]");

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
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
      s.batch = std::int64_t(whole_number(1, 60000));
    else if (option == "--lr")
      s.lr = number(1e-12, 10);
    else if (option == "--warmup")
      s.warmup = std::int64_t(whole_number(0, 1e9));
    else if (option == "--max-grad-norm")
      s.max_grad_norm = number(1e-12, 1e12);
    else if (option == "--ema-decay")
      s.ema_decay = number(0, 1);
    else if (option == "--seed")
      s.seed = std::uint64_t(whole_number(0, 9007199254740992.0));
    else if (option == "--width")
      s.width = std::int64_t(whole_number(mpx::experiment::unet_groups, 1024));
    else if (option == "--timesteps")
      s.timesteps = std::int64_t(whole_number(2, 100000));
    else if (option == "--schedule")
      s.schedule = value;
    else if (option == "--sampler")
      s.sampler = value;
    else if (option == "--sample-steps")
      s.sample_steps = std::int64_t(whole_number(1, 100000));
    else if (option == "--eta")
      s.eta = number(0, 1);
    else if (option == "--samples")
      s.samples = std::int64_t(whole_number(double(diffusion_example::shown_per_precision), 100000));
    else if (option == "--train-samples")
      s.train_samples = std::int64_t(whole_number(1, 60000));
    else if (option == "--classifier") {
      s.classifier = value;
      s.classifier_given = value != "none";
    } else if (option == "--classifier-width")
      s.classifier_width = std::int64_t(whole_number(1, 1024));
    else if (option == "--device")
      s.device = value;
    else if (option == "--csv")
      s.csv = value;
    else if (option == "--png")
      s.png = value;
    else
      usage.fail("unknown option " + option);
  }
  usage.require_one_of("--precision", s.precision, {"fp32", "bf16", "fp16", "fp8", "all"});
  usage.require_one_of("--schedule", s.schedule, {"linear", "cosine"});
  usage.require_one_of("--sampler", s.sampler, {"ddim", "ddpm"});
  usage.require_one_of("--device", s.device, {"cpu", "cuda", "auto"});
  if (s.width % mpx::experiment::unet_groups != 0) {
    usage.fail("--width " + std::to_string(s.width) + ": expected a multiple of " +
               std::to_string(mpx::experiment::unet_groups) + " (the GroupNorm groups)");
  }
  if (s.sampler == "ddim" && s.sample_steps > s.timesteps) {
    usage.fail("--sample-steps " + std::to_string(s.sample_steps) + ": more than --timesteps " +
               std::to_string(s.timesteps));
  }
  if (s.train_samples > 0 && s.train_samples < s.batch) {
    usage.fail("--train-samples " + std::to_string(s.train_samples) + ": fewer than one batch of " +
               std::to_string(s.batch) + " (the last partial batch is dropped)");
  }
  if (s.classifier_given && !std::filesystem::exists(s.classifier)) {
    usage.fail("--classifier " + s.classifier +
               ": no such file (examples/resnet --precision fp32 --save PREFIX "
               "writes PREFIX.fp32.safetensors; --classifier none skips the score)");
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  return mpx::experiment::run_job(argc, argv, usage.program(), [&](const DataParallelJob& job) {
    // Pixels p in [0, 255] as 2 p / 255 - 1, channels-last [N, 28, 28, 1].
    auto data = mpx::data::load_fashion_mnist(mpx::data::default_fashion_mnist_dir(),
                                              mpx::data::InputNormalization{.mean = 0.5, .std_dev = 0.5});
    data.train.set_sample_shape(mpx::Shape{28, 28, 1});
    data.test.set_sample_shape(mpx::Shape{28, 28, 1});
    mpx::experiment::with_device(settings.device, job, [&](auto device) {
      diffusion_example::train_all<decltype(device)>(settings, job, data);
    });
  });
}
#endif  // MPX_CUDA_COMPILER
