// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Training-step speed and memory on the CPU per precision (fp32, tf32, fp16, bf16), for the
// Fashion-MNIST MLP (784-512-256-10, batch 128) and a wide MLP (1024-4096-4096-10, batch 256):
// ms per step and samples/s (medians), the share of the step spent in its GEMMs (the same GEMMs
// timed alone), and the activation memory and peak of a step from the allocator. Before timing, each
// precision's first-step loss is checked against an fp64 run of the same model on the same batch.
// With `--torch PYTHON`, bench/peers/torch_mlp_cpu.py times the same MLPs (torch.nn, AdamW, eager
// fp32 and autocast) in the same invocation with the same threads; the wide MLP's peer runs fp32 and
// bf16 only (autocast's fp16 took 28 s a step on a 2-core Xeon without AVX512_FP16).
//
// The char-GPT workload (mpx/experiment/char_gpt.hpp: 4 blocks, width 128, 4 heads, context 64,
// batch 16) is timed in fp32, bf16_mixed and fp16_mixed against PyTorch eager fp32 and autocast of the
// same precision, run by bench/peers/torch_char_gpt.py in the same invocation with the same threads
// (`--torch PYTHON`; skipped, saying so, without it), and reports activation memory per token.
//
// The ResNet workload (mpx/experiment/resnet.hpp: ResNet-8 for 28 x 28 x 1 channels-last images,
// stem 16 channels, stages 32-64-128, batch 128, SGD with Nesterov momentum 0.9 and weight decay 5e-4, as
// examples/resnet.cpp trains it) is timed the same way in fp32, tf32, bf16_mixed and fp16_mixed against
// bench/peers/torch_resnet_step.py (channels_last torch.nn, eager fp32 and autocast; PyTorch has no
// tf32 on the CPU, so that row has no peer).
//
// The UNet workload (mpx/experiment/unet.hpp: the diffusion UNet of width 16, 119,041 parameters, batch
// 128 of noised 28 x 28 x 1 images with their timesteps; MSE loss, AdamW without weight decay, the
// gradient norm clipped to 1 and the EMA of the weights, as examples/diffusion.cpp trains it) is timed
// the same way in fp32, tf32, bf16_mixed and fp16_mixed against bench/peers/torch_unet_step.py
// (channels_last torch.nn with scaled_dot_product_attention, eager fp32 and autocast, the same
// clipping and EMA; it checks that its parameter count is mpx's).
//
// `--profile fp32|bf16_mixed|fp16_mixed` runs only the char-GPT step of that precision (with
// `--workload resnet` or `unet`, that step; with `--workload mlp`, the Fashion-MNIST MLP's), `--steps`
// times (200 by default; ResNet and UNet 30, MLP 500) after 3 warm-up steps, and prints its median (with
// `--workload mlp`, also `--profile fp8_hybrid_delayed` and `fp8_hybrid_delayed_fp32acc`): the process to
// sample with `perf record -e cpu-clock` (scripts/profile_char_gpt.sh turns both sides of the char-GPT into a
// table per operation).
//
// Usage: train_cpu [--json PATH] [--steps N] [--workload mlp|char_gpt|resnet|unet|all] [--torch PYTHON]
//                  [--profile PRECISION]
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include "mpx/experiment/char_gpt.hpp"
#include "mpx/experiment/ddpm.hpp"
#include "mpx/experiment/models.hpp"
#include "mpx/experiment/resnet.hpp"
#include "mpx/experiment/unet.hpp"
#include "mpx/mpx.hpp"
#include "report.hpp"

namespace {

struct Workload {
  std::string name;
  std::array<std::int64_t, 4> widths;  // inputs, hidden1, hidden2, classes
  std::int64_t batch;
  int timed_steps;
  std::string torch_precisions = "fp32,bf16_mixed,fp16_mixed";  // what the PyTorch peer runs
};

struct Result {
  std::string workload, precision;
  double step_ms = 0, samples_per_second = 0, gemm_ms = 0, gemm_share = 0, ratio_to_fp32 = 0;
  double torch_ms = 0, ratio_to_torch = 0;  // 0: no peer for this precision
  std::int64_t activation_bytes = 0, peak_bytes = 0;
  double first_loss = 0, reference_loss = 0;
};

// Random inputs (never zero) and labels from a fixed seed, so every precision sees the same batch.
struct Batch {
  mpx::Tensor<float> inputs;
  mpx::Tensor<std::int32_t> labels;
};

Batch make_batch(const Workload& w) {
  Batch batch{mpx::Tensor<float>(mpx::Shape{w.batch, w.widths[0]}),
              mpx::Tensor<std::int32_t>(mpx::Shape{w.batch})};
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (float& v : batch.inputs.values()) v = normal(rng);
  for (auto& label : batch.labels.values()) label = std::int32_t(rng() % std::uint32_t(w.widths[3]));
  return batch;
}

const Workload k_fashion_mlp{"fashion_mnist_mlp", {784, 512, 256, 10}, 128, 60};

// An MLP workload's model in precision P (mlp3, initialised from seed 5), its AdamW trainer and its
// batch (make_batch's, inputs rounded to the compute type): what `measure` times, the fp64 run
// checks, and `--profile P --workload mlp` samples (the Fashion-MNIST MLP's).
template <class P>
struct MlpRun {
  decltype(mpx::experiment::mlp3<P>(0, 0, 0, 0)) model;
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::AdamW<decltype(model)> optimizer{model, {}};
  mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)> trainer{model, loss, optimizer};
  Batch batch;
  mpx::Tensor<mpx::compute_t<P>> inputs = mpx::convert<typename P::compute_type>(batch.inputs);

  explicit MlpRun(const Workload& w = k_fashion_mlp)
      : model(mpx::experiment::mlp3<P>(w.widths[0], w.widths[1], w.widths[2], w.widths[3])),
        batch(make_batch(w)) {
    model.initialize(5);
  }
  mpx::StepResult step() { return trainer.step(inputs, batch.labels); }
};

// gemm_ms's FP8 GEMMs: forward X W^T (E4M3 codes, bf16 out, bias and ReLU fused), dW = dZ^T X (E5M2 and
// E4M3 codes, fp32 out, accumulating) and dX = dZ W; the bias gradient is not a GEMM here.
template <class P>
double fp8_gemm_ms(const Workload& w, int repetitions) {
  using Forward = mpx::Encoded<typename P::forward_format>;
  using Backward = mpx::Encoded<typename P::backward_format>;
  using T = mpx::compute_t<P>;
  const float one = 1.0f;
  std::vector<double> samples;
  for (int r = 0; r < repetitions; ++r) {
    double total = 0;
    for (int layer = 0; layer < 3; ++layer) {
      const std::int64_t in = w.widths[std::size_t(layer)], out = w.widths[std::size_t(layer) + 1];
      mpx::Tensor<Forward> x(mpx::Shape{w.batch, in}), weight(mpx::Shape{out, in});
      mpx::Tensor<Backward> dz(mpx::Shape{w.batch, out});
      x.fill(Forward(0.5f));
      weight.fill(Forward(0.01f));
      dz.fill(Backward(0.001f));
      mpx::Tensor<T> bias(mpx::Shape{out}), y(mpx::Shape{w.batch, out}), dx(mpx::Shape{w.batch, in});
      mpx::Tensor<float> dweight(mpx::Shape{out, in});
      const auto forward = layer < 2 ? mpx::Epilogue::ReluBias : mpx::Epilogue::Bias;
      auto start = mpx::bench::Clock::now();
      mpx::cpu::gemm_scaled<typename P::forward_format, typename P::forward_format,
                            typename P::accumulation::fprop>(
          x, weight, y, {.transpose_b = mpx::Transpose::Yes, .epilogue = forward}, {.bias = &bias}, &one,
          &one);
      mpx::cpu::gemm_scaled<typename P::backward_format, typename P::forward_format,
                            typename P::accumulation::wgrad>(
          dz, x, dweight, {.transpose_a = mpx::Transpose::Yes, .beta = 1.0f}, {}, &one, &one);
      if (layer > 0) {
        mpx::cpu::gemm_scaled<typename P::backward_format, typename P::forward_format,
                              typename P::accumulation::dgrad>(dz, weight, dx, {}, {}, &one, &one);
      }
      total += mpx::bench::elapsed_ms(start);
    }
    samples.push_back(total);
  }
  return mpx::bench::median(samples);
}

// A block-scaled precision's GEMMs of one step, timed alone: per layer the forward (x and W quantized
// along K), the weight gradient (dZ^T and x^T) and, past the first layer, dX (dZ and W^T), each of
// block-quantized random operands (cpu::gemm_block_scaled); the quantizations left out.
template <class P>
double block_gemm_ms(const Workload& w, int repetitions) {
  using Forward = typename P::forward_recipe;
  using Backward = typename P::backward_recipe;
  using T = mpx::compute_t<P>;
  const mpx::BlockShape activations{1, Forward::block_size},
      weights{Forward::weight_block_rows, Forward::block_size};
  std::vector<double> samples;
  for (int r = 0; r < repetitions; ++r) {
    double total = 0;
    for (int layer = 0; layer < 3; ++layer) {
      const std::int64_t in = w.widths[std::size_t(layer)], out = w.widths[std::size_t(layer) + 1];
      const auto x = make_batch({w.name, {in, 1, 1, 2}, w.batch, 0}).inputs.clone();
      const auto weight = make_batch({w.name, {in, 1, 1, 2}, out, 1}).inputs.clone();
      const auto dz = make_batch({w.name, {out, 1, 1, 2}, w.batch, 2}).inputs.clone();
      mpx::BlockQuantized<Forward> xq, xtq, wq, wtq;
      mpx::BlockQuantized<Backward> dzq, dztq;
      mpx::cpu::quantize_blocks(x, activations, xq);
      mpx::cpu::quantize_blocks(x, activations, xtq, {.transpose = true});
      mpx::cpu::quantize_blocks(weight, weights, wq);
      mpx::cpu::quantize_blocks(weight, weights, wtq, {.transpose = true});
      mpx::cpu::quantize_blocks(dz, activations, dzq);
      mpx::cpu::quantize_blocks(dz, activations, dztq, {.transpose = true});
      mpx::Tensor<T> bias(mpx::Shape{out}), y(mpx::Shape{w.batch, out}), dx(mpx::Shape{w.batch, in});
      mpx::Tensor<float> dweight(mpx::Shape{out, in});
      const auto forward = layer < 2 ? mpx::Epilogue::ReluBias : mpx::Epilogue::Bias;
      auto start = mpx::bench::Clock::now();
      mpx::cpu::gemm_block_scaled<typename P::accumulation::fprop>(xq, wq, y, {.epilogue = forward},
                                                                   {.bias = &bias});
      mpx::cpu::gemm_block_scaled<typename P::accumulation::wgrad>(dztq, xtq, dweight, {.beta = 1.0f});
      if (layer > 0) mpx::cpu::gemm_block_scaled<typename P::accumulation::dgrad>(dzq, wtq, dx, {});
      total += mpx::bench::elapsed_ms(start);
    }
    samples.push_back(total);
  }
  return mpx::bench::median(samples);
}

// The GEMMs of one step, timed alone: per layer the forward (bias and ReLU fused), the weight
// gradient (fp32 output, accumulating, bias gradient fused) and, past the first layer, dX. Under an
// FP8 precision, the GEMMs of FP8 codes (cpu::gemm_scaled) that its Linear layers run, the casts
// left out.
template <class P>
double gemm_ms(const Workload& w, int repetitions) {
  using C = typename P::compute_type;
  using T = mpx::compute_t<P>;
  if constexpr (mpx::Fp8PrecisionPolicy<P>) return fp8_gemm_ms<P>(w, repetitions);
  if constexpr (mpx::BlockScaledPrecisionPolicy<P>) return block_gemm_ms<P>(w, repetitions);
  std::vector<double> samples;
  for (int r = 0; r < repetitions; ++r) {
    double total = 0;
    for (int layer = 0; layer < 3; ++layer) {
      const std::int64_t in = w.widths[std::size_t(layer)], out = w.widths[std::size_t(layer) + 1];
      auto x = mpx::convert<C>(make_batch({w.name, {in, 1, 1, 2}, w.batch, 0}).inputs);
      mpx::Tensor<T> weight(mpx::Shape{out, in}), bias(mpx::Shape{out}), y(mpx::Shape{w.batch, out}),
          dz(mpx::Shape{w.batch, out}), dx(mpx::Shape{w.batch, in});
      weight.fill(T(0.01f));
      dz.fill(T(0.001f));
      mpx::Tensor<float> dweight(mpx::Shape{out, in}), dbias(mpx::Shape{out});
      const auto forward = layer < 2 ? mpx::Epilogue::ReluBias : mpx::Epilogue::Bias;
      auto start = mpx::bench::Clock::now();
      mpx::cpu::gemm<C>(x, weight, y, {.transpose_b = mpx::Transpose::Yes, .epilogue = forward},
                        {.bias = &bias});
      mpx::cpu::gemm<C>(dz, x, dweight,
                        {.transpose_a = mpx::Transpose::Yes, .beta = 1.0f, .epilogue = mpx::Epilogue::BGradA},
                        {.bias_grad = &dbias});
      if (layer > 0) mpx::cpu::gemm<C>(dz, weight, dx, {});
      total += mpx::bench::elapsed_ms(start);
    }
    samples.push_back(total);
  }
  return mpx::bench::median(samples);
}

template <class P>
Result measure(const Workload& w, double reference_loss) {
  Result result{w.name, std::string(P::name)};
  result.reference_loss = reference_loss;
  MlpRun<P> run(w);
  result.first_loss = run.step().loss;  // first step: allocates, and measures memory
  // bf16 rounds activations to 8 significant bits: the mean loss of a fresh model moves by well
  // under 5% of its ~ln(classes) value; anything more is a wrong result, not rounding.
  if (!(std::abs(result.first_loss - reference_loss) <= 0.05 * reference_loss)) {
    std::fprintf(stderr, "train_cpu: %s %s first-step loss %.6f differs from the fp64 reference %.6f\n",
                 w.name.c_str(), result.precision.c_str(), result.first_loss, reference_loss);
    std::exit(EXIT_FAILURE);
  }
  run.step();  // warm caches
  std::vector<double> samples;
  for (int s = 0; s < w.timed_steps; ++s) {
    const auto start = mpx::bench::Clock::now();
    run.step();
    samples.push_back(mpx::bench::elapsed_ms(start));
  }
  result.step_ms = mpx::bench::median(samples);
  result.samples_per_second = double(w.batch) / (result.step_ms * 1e-3);
  result.gemm_ms = gemm_ms<P>(w, std::max(3, w.timed_steps / 2));
  result.gemm_share = result.gemm_ms / result.step_ms;
  result.activation_bytes = run.trainer.first_step_memory().activations;
  result.peak_bytes = run.trainer.first_step_memory().peak;
  return result;
}

// ---- Workloads against a PyTorch peer: char-GPT, ResNet and UNet ----------------------------------

// A workload timed against its PyTorch peer in the same run, with the same threads. A step processes
// `items` of `unit` (tokens, samples): what throughput and activation memory count.
struct PeerWorkload {
  std::string name, title, unit, optimizer;
  std::int64_t items;
  std::string peer;  // the peer's script in bench/peers and its arguments (the model's shape)
  int timed_steps;
};

struct PeerResult {
  std::string workload, unit, optimizer, precision;
  double step_ms = 0, items_per_second = 0, ratio_to_fp32 = 0, torch_ms = 0, ratio_to_torch = 0;
  double activation_bytes_per_item = 0, first_loss = 0;
};

constexpr mpx::experiment::GptShape k_gpt{.vocabulary = 96, .context = 64, .width = 128, .heads = 4};
constexpr std::int64_t k_gpt_batch = 16;

PeerWorkload char_gpt_workload(int timed_steps) {
  return {"char_gpt",
          "char-GPT (4 blocks, width " + std::to_string(k_gpt.width) + ", " + std::to_string(k_gpt.heads) +
              " heads, context " + std::to_string(k_gpt.context) + ", batch " + std::to_string(k_gpt_batch) +
              ", vocabulary " + std::to_string(k_gpt.vocabulary) + ")",
          "token",
          "AdamW",
          k_gpt_batch * k_gpt.context,
          "torch_char_gpt.py bench --batch " + std::to_string(k_gpt_batch) + " --context " +
              std::to_string(k_gpt.context) + " --width " + std::to_string(k_gpt.width) + " --heads " +
              std::to_string(k_gpt.heads) + " --vocabulary " + std::to_string(k_gpt.vocabulary),
          timed_steps};
}

// An MLP workload's PyTorch peer (bench/peers/torch_mlp_cpu.py), for torch_step_ms.
PeerWorkload mlp_peer(const Workload& w) {
  std::string widths;
  for (const std::int64_t width : w.widths) widths += (widths.empty() ? "" : ",") + std::to_string(width);
  return {w.name,
          w.name,
          "sample",
          "AdamW",
          w.batch,
          "torch_mlp_cpu.py --widths " + widths + " --batch " + std::to_string(w.batch) + " --precisions " +
              w.torch_precisions,
          w.timed_steps};
}

// A char-GPT in precision P with its trainer, initialised from seed 5, and its batch: random ids and
// targets from seed 11, the same for every precision.
template <class P>
struct GptRun {
  decltype(mpx::experiment::char_gpt<P>(k_gpt)) model = mpx::experiment::char_gpt<P>(k_gpt);
  decltype(mpx::nn::layers<P>::softmax_cross_entropy()) loss;
  mpx::optim::AdamW<decltype(model)> optimizer{model, {.lr = 1e-3}};
  mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)> trainer{model, loss, optimizer};
  mpx::Tensor<std::int32_t> ids{mpx::Shape{k_gpt_batch, k_gpt.context}};
  mpx::Tensor<std::int32_t> targets{mpx::Shape{k_gpt_batch, k_gpt.context}};
  GptRun() {
    model.initialize(5);
    std::mt19937 rng(11);
    for (auto& id : ids.values()) id = std::int32_t(rng() % std::uint32_t(k_gpt.vocabulary));
    for (auto& id : targets.values()) id = std::int32_t(rng() % std::uint32_t(k_gpt.vocabulary));
  }
  mpx::StepResult step() { return trainer.step(ids, targets); }
};

constexpr std::int64_t k_resnet_batch = 128, k_resnet_width = 16, k_resnet_classes = 10;

PeerWorkload resnet_workload(int timed_steps) {
  return {"resnet",
          "ResNet-8 (28 x 28 x 1 channels-last images, stem " + std::to_string(k_resnet_width) + ", stages " +
              std::to_string(2 * k_resnet_width) + "-" + std::to_string(4 * k_resnet_width) + "-" +
              std::to_string(8 * k_resnet_width) + ", batch " + std::to_string(k_resnet_batch) +
              "; SGD, Nesterov momentum 0.9, weight decay 5e-4)",
          "sample",
          "SGD (lr 0.1, momentum 0.9, Nesterov, weight decay 5e-4)",
          k_resnet_batch,
          "torch_resnet_step.py --batch " + std::to_string(k_resnet_batch) + " --width " +
              std::to_string(k_resnet_width) + " --classes " + std::to_string(k_resnet_classes),
          timed_steps};
}

// ResNet-8 (mpx/experiment/resnet.hpp) in precision P, initialised from seed 5, trained as
// examples/resnet.cpp trains it, on the MLPs' random batch (seed 11) as [N, 28, 28, 1] images. The
// images stay fp32, as the peer's: the trainer rounds them to the compute type in the step, as
// autocast does in the peer's first convolution.
template <class P>
struct ResnetRun {
  decltype(mpx::experiment::resnet<P>(0, 0)) model =
      mpx::experiment::resnet<P>(k_resnet_width, k_resnet_classes);
  decltype(mpx::nn::layers<P>::softmax_cross_entropy()) loss;
  mpx::optim::SGD<decltype(model)> optimizer{
      model, {.lr = 0.1, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true}};
  mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)> trainer{model, loss, optimizer};
  Batch batch = make_batch({"resnet", {28 * 28, 0, 0, k_resnet_classes}, k_resnet_batch, 0});
  ResnetRun() {
    model.initialize(5);
    batch.inputs.reshape(mpx::Shape{k_resnet_batch, 28, 28, 1});
  }
  mpx::StepResult step() { return trainer.step(batch.inputs, batch.labels); }
};

constexpr std::int64_t k_unet_batch = 128, k_unet_width = 16;

PeerWorkload unet_workload(int timed_steps) {
  // The peer refuses to run a network whose parameter count differs from this one's.
  const std::int64_t parameters = mpx::experiment::unet<mpx::fp32>(k_unet_width).parameter_count();
  return {"unet",
          "diffusion UNet (width " + std::to_string(k_unet_width) + ", " + std::to_string(parameters) +
              " parameters; batch " + std::to_string(k_unet_batch) +
              " of noised 28 x 28 x 1 channels-last images; MSE, AdamW, gradient norm clipped to 1, EMA)",
          "sample",
          "AdamW (lr 2e-3, weight decay 0), clip 1.0, EMA 0.999",
          k_unet_batch,
          "torch_unet_step.py --batch " + std::to_string(k_unet_batch) + " --width " +
              std::to_string(k_unet_width) + " --parameters " + std::to_string(parameters),
          timed_steps};
}

// The diffusion UNet (mpx/experiment/unet.hpp) in precision P, initialised from seed 5, trained as
// examples/diffusion.cpp trains it (MSE, AdamW without weight decay, clipping, the weight average
// updated in the step; a constant lr of 2e-3, as the peer's: the rate does not change a step's cost)
// on one fixed noised batch: the MLPs' random batch (seed 11) scaled into [-1, 1] as the clean
// images, noised by the linear schedule (DdpmSchedule::noised_batch, seed 42, step 0). Every precision gets
// the same batch and weights, so the fp64 model's first loss is the reference. x_t and the noise stay fp32
// (fp64 for the fp64 model, whose loss takes fp64 targets), as the peer's.
template <class P>
struct UnetRun {
  decltype(mpx::experiment::unet<P>(0)) model = mpx::experiment::unet<P>(k_unet_width);
  decltype(mpx::nn::layers<P>::mse_loss()) loss;
  mpx::optim::AdamW<decltype(model)> optimizer{model, {.lr = 2e-3, .weight_decay = 0.0}};
  mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)> trainer{
      model, loss, optimizer, {.max_grad_norm = 1.0}};
  mpx::Tensor<float> x_t{mpx::Shape{k_unet_batch, 28, 28, 1}};
  mpx::Tensor<mpx::accumulate_t<P>> noise{mpx::Shape{k_unet_batch, 28, 28, 1}};  // MSELoss's target type
  std::vector<float> timesteps;
  UnetRun() {
    model.initialize(5);
    trainer.keep_weight_average({.decay = 0.999, .warmup = true});
    Batch clean = make_batch({"unet", {28 * 28, 0, 0, 1}, k_unet_batch, 0});
    float largest = 0;
    for (const float v : clean.inputs.values()) largest = std::max(largest, std::abs(v));
    for (float& v : clean.inputs.values()) v /= largest;
    mpx::experiment::NoisedBatch noised;
    mpx::experiment::DdpmSchedule().noised_batch(
        std::span<const float>(clean.inputs.data(), std::size_t(clean.inputs.numel())), 28 * 28, 42, 0, 0,
        noised);
    std::copy(noised.noisy.begin(), noised.noisy.end(), x_t.data());
    std::copy(noised.noise.begin(), noised.noise.end(), noise.data());
    timesteps = noised.timestep_values;
  }
  // The timesteps are set every step, as in the example (their features are computed anew, as the
  // peer's are).
  mpx::StepResult step() {
    model.set_timesteps(timesteps);
    return trainer.step(x_t, noise);
  }
};

template <template <class> class Run, class P>
PeerResult measure_against_peer(const PeerWorkload& w, double reference_loss) {
  PeerResult result{w.name, w.unit, w.optimizer, std::string(P::name)};
  Run<P> run;
  result.first_loss = run.step().loss;  // allocates, and measures memory
  // The same check as the MLPs': a fresh model's first loss within 5% of the fp64 model's.
  if (!(std::abs(result.first_loss - reference_loss) <= 0.05 * reference_loss)) {
    std::fprintf(stderr, "train_cpu: %s %s first-step loss %.6f differs from the fp64 reference %.6f\n",
                 w.name.c_str(), result.precision.c_str(), result.first_loss, reference_loss);
    std::exit(EXIT_FAILURE);
  }
  run.step();  // warm caches
  std::vector<double> samples;
  for (int s = 0; s < w.timed_steps; ++s) {
    const auto start = mpx::bench::Clock::now();
    run.step();
    samples.push_back(mpx::bench::elapsed_ms(start));
  }
  result.step_ms = mpx::bench::median(samples);
  result.items_per_second = double(w.items) / (result.step_ms * 1e-3);
  result.activation_bytes_per_item = double(run.trainer.first_step_memory().activations) / double(w.items);
  return result;
}

// PyTorch's medians for the same workload, from the peer in a child process (its JSON line's
// "step_ms" object): {precision: ms} for the precisions it runs; none, after saying so, when it fails.
std::vector<std::pair<std::string, double>> torch_step_ms(const std::string& python, const PeerWorkload& w) {
  const std::string command = python + " " + MPX_BENCH_PEERS_DIR + "/" + w.peer + " --steps " +
                              std::to_string(w.timed_steps) + " --threads " +
                              std::to_string(mpx::bench::openmp_threads());
  std::FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  if (pipe != nullptr) {
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    if (pclose(pipe) != 0) output.clear();
  }
  const auto begin = output.find("\"step_ms\": {");
  const std::string step_ms =
      begin == std::string::npos ? "" : output.substr(begin, output.find('}', begin) - begin);
  std::vector<std::pair<std::string, double>> ms;
  for (const char* precision : {"fp32", "tf32", "bf16_mixed", "fp16_mixed"}) {
    const std::string key = std::string("\"") + precision + "\": ";
    const auto at = step_ms.find(key);
    if (at != std::string::npos) ms.emplace_back(precision, std::atof(step_ms.c_str() + at + key.size()));
  }
  if (ms.empty()) std::fprintf(stderr, "train_cpu: the PyTorch peer (%s) gave no result\n", command.c_str());
  return ms;
}

// A result's PyTorch columns as printed: "-" where the peer has no such precision (PyTorch has no
// tf32 on the CPU) or did not run.
struct PeerColumns {
  char ms[32] = "-", ratio[32] = "-";
};

// Sets r.torch_ms and r.ratio_to_torch from the peer's medians {precision: ms} and returns the
// printed columns.
template <class R>
PeerColumns attach_peer(R& r, const std::vector<std::pair<std::string, double>>& torch_ms) {
  PeerColumns columns;
  for (const auto& [precision, ms] : torch_ms) {
    if (precision != r.precision) continue;
    r.torch_ms = ms;
    r.ratio_to_torch = ms / r.step_ms;
    std::snprintf(columns.ms, sizeof columns.ms, "%.2f", r.torch_ms);
    std::snprintf(columns.ratio, sizeof columns.ratio, "%.2fx", r.ratio_to_torch);
  }
  return columns;
}

// Times workload `w` (Run<P> for each P of `precisions`, after the fp64 model's first loss as the
// reference) and its PyTorch peer, prints a row per precision and appends them to `results`.
template <template <class> class Run, class Precisions>
void run_against_peer(const PeerWorkload& w, Precisions precisions, const std::string& torch_python,
                      std::vector<PeerResult>& results) {
  std::printf("\n%s\n", w.title.c_str());
  const auto torch_ms =
      torch_python.empty() ? std::vector<std::pair<std::string, double>>{} : torch_step_ms(torch_python, w);
  if (torch_python.empty()) std::printf("(no --torch PYTHON: PyTorch peer not run)\n");
  std::printf("%-11s %9s %10s %8s %13s %9s %16s\n", "precision", "ms/step", (w.unit + "s/s").c_str(),
              "vs fp32", "torch ms/step", "vs torch", ("act bytes/" + w.unit).c_str());
  const double reference_loss = Run<mpx::fp64>().step().loss;
  const std::size_t first = results.size();
  boost::hana::for_each(precisions, [&](auto type) {
    using P = typename decltype(type)::type;
    PeerResult r = measure_against_peer<Run, P>(w, reference_loss);
    r.ratio_to_fp32 = results.size() > first ? results[first].step_ms / r.step_ms : 1.0;
    const PeerColumns peer = attach_peer(r, torch_ms);
    std::printf("%-11s %9.2f %10.0f %7.2fx %13s %9s %16.0f\n", r.precision.c_str(), r.step_ms,
                r.items_per_second, r.ratio_to_fp32, peer.ms, peer.ratio, r.activation_bytes_per_item);
    std::fflush(stdout);
    results.push_back(r);
  });
  for (std::size_t i = first + 1; i < results.size(); ++i) {
    if (!results[i].precision.ends_with("_mixed")) continue;
    std::printf(
        "  %s %s activations per %s: %.1f%% below fp32 (bar: >= 45%%)\n", w.name.c_str(),
        results[i].precision.c_str(), w.unit.c_str(),
        100.0 * (1.0 - results[i].activation_bytes_per_item / results[first].activation_bytes_per_item));
  }
}

std::string peer_json(const std::vector<PeerResult>& results) {
  std::string out;
  char line[768];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const PeerResult& r = results[i];
    char torch_ms[32] = "null", ratio[32] = "null";  // no peer, or none for this precision
    if (r.torch_ms > 0) {
      std::snprintf(torch_ms, sizeof torch_ms, "%.4f", r.torch_ms);
      std::snprintf(ratio, sizeof ratio, "%.4f", r.ratio_to_torch);
    }
    std::snprintf(
        line, sizeof line,
        "    {\"workload\": \"%s\", \"precision\": \"%s\", \"optimizer\": \"%s\", \"step_ms\": %.4f, "
        "\"%ss_per_second\": %.1f, \"ratio_to_fp32\": %.4f, \"torch_step_ms\": %s, "
        "\"ratio_to_torch\": %s, \"activation_bytes_per_%s\": %.1f, \"first_loss\": %.6f}%s\n",
        r.workload.c_str(), r.precision.c_str(), r.optimizer.c_str(), r.step_ms, r.unit.c_str(),
        r.items_per_second, r.ratio_to_fp32, torch_ms, ratio, r.unit.c_str(), r.activation_bytes_per_item,
        r.first_loss, i + 1 < results.size() ? "," : "");
    out += line;
  }
  return out;
}

std::string to_json(const std::vector<Result>& results, const std::vector<PeerResult>& peer_results) {
  std::string out = "{\n  \"benchmark\": \"train_cpu\",\n  \"machine\": " + mpx::bench::machine_json() +
                    ",\n  \"statistic\": \"median\",\n  \"optimizer\": \"AdamW\",\n  \"results\": [\n";
  char line[768];
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    char torch_ms[32] = "null", ratio[32] = "null";  // no peer, or none for this precision
    if (r.torch_ms > 0) {
      std::snprintf(torch_ms, sizeof torch_ms, "%.4f", r.torch_ms);
      std::snprintf(ratio, sizeof ratio, "%.4f", r.ratio_to_torch);
    }
    std::snprintf(
        line, sizeof line,
        "    {\"workload\": \"%s\", \"precision\": \"%s\", \"step_ms\": %.4f, \"samples_per_second\": %.1f, "
        "\"ratio_to_fp32\": %.4f, \"gemm_ms\": %.4f, \"gemm_share\": %.4f, \"activation_bytes\": %lld, "
        "\"peak_bytes\": %lld, \"first_loss\": %.6f, \"fp64_first_loss\": %.6f, \"torch_step_ms\": %s, "
        "\"ratio_to_torch\": %s}%s\n",
        r.workload.c_str(), r.precision.c_str(), r.step_ms, r.samples_per_second, r.ratio_to_fp32, r.gemm_ms,
        r.gemm_share, static_cast<long long>(r.activation_bytes), static_cast<long long>(r.peak_bytes),
        r.first_loss, r.reference_loss, torch_ms, ratio,
        i + 1 < results.size() || !peer_results.empty() ? "," : "");
    out += line;
  }
  return out + peer_json(peer_results) + "  ]\n}\n";
}

// One workload's step (Run<P>: GptRun, ResnetRun or UnetRun) alone, `steps` times after 3 warm-up steps:
// the profiled process.
template <template <class> class Run, class P>
int profile_step(const char* name, int steps) {
  Run<P> run;
  for (int s = 0; s < 3; ++s) run.step();
  std::vector<double> samples;
  for (int s = 0; s < steps; ++s) {
    const auto start = mpx::bench::Clock::now();
    run.step();
    samples.push_back(mpx::bench::elapsed_ms(start));
  }
  std::printf("%s %s: %d steps, median %.3f ms/step (%d threads)\n", name, P::name.data(), steps,
              mpx::bench::median(samples), mpx::bench::openmp_threads());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path = "train_cpu.json";
  std::string workload = "all";
  std::string torch_python;
  std::string profile;
  int steps = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (arg == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (arg == "--workload" && i + 1 < argc) {
      workload = argv[++i];
    } else if (arg == "--torch" && i + 1 < argc) {
      torch_python = argv[++i];
    } else if (arg == "--profile" && i + 1 < argc) {
      profile = argv[++i];
    } else {
      std::fprintf(stderr,
                   "train_cpu: unknown argument '%s'; usage: train_cpu [--json PATH] [--steps N] "
                   "[--workload mlp|char_gpt|resnet|unet|all] [--torch PYTHON] [--profile PRECISION]\n",
                   argv[i]);
      return EXIT_FAILURE;
    }
  }
  if (!profile.empty() && workload == "mlp") {
    const int n = steps > 0 ? steps : 500;
    if (profile == "fp32") return profile_step<MlpRun, mpx::fp32>("fashion_mnist_mlp", n);
    if (profile == "bf16_mixed") return profile_step<MlpRun, mpx::bf16_mixed>("fashion_mnist_mlp", n);
    if (profile == "fp16_mixed") return profile_step<MlpRun, mpx::fp16_mixed>("fashion_mnist_mlp", n);
    if (profile == "fp8_hybrid_delayed") {
      return profile_step<MlpRun, mpx::fp8_hybrid<mpx::DelayedScaling<>>>("fashion_mnist_mlp", n);
    }
    if (profile == "fp8_hybrid_delayed_fp32acc") {
      return profile_step<MlpRun, mpx::fp8_hybrid<mpx::DelayedScaling<>, mpx::Fp32GemmAccumulation>>(
          "fashion_mnist_mlp", n);
    }
  } else if (!profile.empty() && workload == "resnet") {
    const int n = steps > 0 ? steps : 30;
    if (profile == "fp32") return profile_step<ResnetRun, mpx::fp32>("resnet", n);
    if (profile == "bf16_mixed") return profile_step<ResnetRun, mpx::bf16_mixed>("resnet", n);
    if (profile == "fp16_mixed") return profile_step<ResnetRun, mpx::fp16_mixed>("resnet", n);
  } else if (!profile.empty() && workload == "unet") {
    const int n = steps > 0 ? steps : 30;
    if (profile == "fp32") return profile_step<UnetRun, mpx::fp32>("unet", n);
    if (profile == "bf16_mixed") return profile_step<UnetRun, mpx::bf16_mixed>("unet", n);
    if (profile == "fp16_mixed") return profile_step<UnetRun, mpx::fp16_mixed>("unet", n);
  } else if (!profile.empty()) {
    const int n = steps > 0 ? steps : 200;
    if (profile == "fp32") return profile_step<GptRun, mpx::fp32>("char_gpt", n);
    if (profile == "bf16_mixed") return profile_step<GptRun, mpx::bf16_mixed>("char_gpt", n);
    if (profile == "fp16_mixed") return profile_step<GptRun, mpx::fp16_mixed>("char_gpt", n);
  }
  if (!profile.empty()) {
    std::fprintf(
        stderr,
        "train_cpu: --profile %s: expected fp32, bf16_mixed or fp16_mixed (with --workload mlp, also "
        "fp8_hybrid_delayed or fp8_hybrid_delayed_fp32acc)\n",
        profile.c_str());
    return EXIT_FAILURE;
  }
  const bool run_mlp = workload == "all" || workload == "mlp";
  const bool run_gpt = workload == "all" || workload == "char_gpt";
  const bool run_resnet = workload == "all" || workload == "resnet";
  const bool run_unet = workload == "all" || workload == "unet";
  if (!run_mlp && !run_gpt && !run_resnet && !run_unet) {
    std::fprintf(stderr, "train_cpu: --workload %s: expected mlp, char_gpt, resnet, unet or all\n",
                 workload.c_str());
    return EXIT_FAILURE;
  }
  Workload fashion_mlp = k_fashion_mlp;
  if (steps > 0) fashion_mlp.timed_steps = steps;
  const std::vector<Workload> workloads{
      fashion_mlp, {"wide_mlp", {1024, 4096, 4096, 10}, 256, steps > 0 ? steps : 8, "fp32,bf16_mixed"}};
  std::printf("training step on the CPU: %s\n", mpx::bench::machine_line().c_str());
  if (run_mlp && torch_python.empty()) std::printf("(no --torch PYTHON: PyTorch peer not run)\n");
  if (run_mlp)
    std::printf("\n%-18s %-26s %9s %10s %8s %8s %11s %10s %9s %9s %9s\n", "workload", "precision", "ms/step",
                "samples/s", "vs fp32", "GEMM %", "activations", "peak", "loss", "torch ms", "vs torch");
  std::vector<Result> results;
  for (const Workload& w : run_mlp ? workloads : std::vector<Workload>{}) {
    const auto torch_ms = torch_python.empty() ? std::vector<std::pair<std::string, double>>{}
                                               : torch_step_ms(torch_python, mlp_peer(w));
    const double reference = MlpRun<mpx::fp64>(w).step().loss;
    const std::size_t first = results.size();
    boost::hana::for_each(
        boost::hana::tuple_t<mpx::fp32, mpx::tf32, mpx::fp16_mixed, mpx::bf16_mixed,
                             mpx::fp8_hybrid<mpx::DelayedScaling<>>,
                             mpx::fp8_hybrid<mpx::DelayedScaling<>, mpx::Fp32GemmAccumulation>, mpx::mxfp8<>,
                             mpx::nvfp4<>, mpx::fp8_block<>>,
        [&](auto type) {
          using P = typename decltype(type)::type;
          Result r = measure<P>(w, reference);
          r.ratio_to_fp32 = results.size() > first ? results[first].step_ms / r.step_ms : 1.0;
          const PeerColumns peer = attach_peer(r, torch_ms);
          std::printf("%-18s %-26s %9.2f %10.0f %7.2fx %7.1f%% %8.2f MiB %6.2f MiB %9.5f %9s %9s\n",
                      r.workload.c_str(), r.precision.c_str(), r.step_ms, r.samples_per_second,
                      r.ratio_to_fp32, 100 * r.gemm_share, double(r.activation_bytes) / (1 << 20),
                      double(r.peak_bytes) / (1 << 20), r.first_loss, peer.ms, peer.ratio);
          std::fflush(stdout);
          results.push_back(r);
        });
    for (std::size_t i = first + 2; i < first + 4; ++i) {
      std::printf(
          "  %s %s activations: %.1f%% below fp32 (bar: >= 45%%)\n", w.name.c_str(),
          results[i].precision.c_str(),
          100.0 * (1.0 - double(results[i].activation_bytes) / double(results[first].activation_bytes)));
    }
    for (std::size_t i = first + 4; i < results.size(); ++i) {  // FP8 (bar 0.8x), block-scaled (0.5x)
      std::printf("  %s %s step: %.2fx the bf16_mixed step (bar: >= %sx)\n", w.name.c_str(),
                  results[i].precision.c_str(), results[first + 3].step_ms / results[i].step_ms,
                  i < first + 6 ? "0.8" : "0.5");
    }
  }
  std::vector<PeerResult> peer_results;
  const int peer_steps = steps > 0 ? steps : 10;
  if (run_gpt) {
    run_against_peer<GptRun>(char_gpt_workload(peer_steps),
                             boost::hana::tuple_t<mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed>, torch_python,
                             peer_results);
  }
  if (run_resnet) {
    run_against_peer<ResnetRun>(resnet_workload(peer_steps),
                                boost::hana::tuple_t<mpx::fp32, mpx::tf32, mpx::bf16_mixed, mpx::fp16_mixed>,
                                torch_python, peer_results);
  }
  if (run_unet) {
    run_against_peer<UnetRun>(unet_workload(peer_steps),
                              boost::hana::tuple_t<mpx::fp32, mpx::tf32, mpx::bf16_mixed, mpx::fp16_mixed>,
                              torch_python, peer_results);
  }
  mpx::bench::write_json(json_path, to_json(results, peer_results));
  return EXIT_SUCCESS;
}
