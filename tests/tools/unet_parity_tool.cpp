// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx's side of tests/interop/unet_parity.py: the diffusion UNet of mpx/experiment/unet.hpp in fp32
// (base width 16, as the example's), trained as examples/diffusion.cpp trains it (noise-prediction
// MSE, AdamW, the global gradient norm clipped to 1, the weights' EMA with diffusers' warm-up) for
// `steps` steps on synthetic images noised by the linear DDPM schedule. It writes what PyTorch needs
// to replay it:
//   <dir>/step_<k>.safetensors  the training state after k steps, k = 0 .. steps (io::save_checkpoint:
//                               weights, AdamW's moments, the EMA, the model's description)
//   <dir>/gradients.safetensors every parameter's gradient of the first batch's loss at the initial
//                               weights, under the parameter's name, and "output": the prediction
//   <dir>/batches.safetensors   "noisy" and "noise" [steps, N, 28, 28, 1] (F32), "timesteps" [steps, N]
//                               (F32, whole numbers)
//   <dir>/run.json              the optimizer's, clipping's and EMA's settings and every step's loss
//
// usage: unet_parity_tool <dir> [steps]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <mpx/experiment/ddpm.hpp>
#include <mpx/experiment/unet.hpp>
#include <mpx/mpx.hpp>

#include "../support/parity_files.hpp"

namespace {

constexpr std::int64_t k_batch = 8, k_side = 28, k_width = 16, k_pixels = k_side * k_side;
constexpr std::uint64_t k_seed = 7;

// Clean image `sample` of the run, in [-1, 1]: a bright disc whose centre and radius depend on the
// sample, on a dark background, so that the network has structure to learn and its gradients stay
// far from zero.
void clean_image(std::int64_t sample, float* image) {
  const double cx = 8.0 + static_cast<double>((sample * 5) % 13);
  const double cy = 8.0 + static_cast<double>((sample * 3) % 11);
  const double radius = 4.0 + static_cast<double>(sample % 5);
  for (std::int64_t r = 0; r < k_side; ++r) {
    for (std::int64_t c = 0; c < k_side; ++c) {
      const double d = std::hypot(static_cast<double>(r) - cy, static_cast<double>(c) - cx);
      image[r * k_side + c] = static_cast<float>(std::tanh(radius - d) * 0.9);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: unet_parity_tool <dir> [steps]\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20;
  if (steps < 1) {
    std::fprintf(stderr, "unet_parity_tool: steps = %s, expected a whole number >= 1\n", argv[2]);
    return 2;
  }
  std::filesystem::create_directories(dir);
  try {
    auto model = mpx::experiment::unet<mpx::fp32>(k_width);
    model.initialize(k_seed);
    auto loss = mpx::nn::layers<mpx::fp32>::mse_loss();
    const mpx::experiment::DdpmSchedule schedule({.timesteps = 1000});

    // The batches: clean images noised at random timesteps, as the example draws them.
    std::vector<float> clean(static_cast<std::size_t>(k_batch * k_pixels));
    std::vector<float> noisy, noise, timesteps;
    mpx::experiment::NoisedBatch noised;
    for (std::int64_t step = 0; step < steps; ++step) {
      for (std::int64_t b = 0; b < k_batch; ++b) {
        clean_image(step * k_batch + b, clean.data() + b * k_pixels);
      }
      schedule.noised_batch(clean, k_pixels, k_seed, static_cast<std::uint64_t>(step), 0, noised);
      noisy.insert(noisy.end(), noised.noisy.begin(), noised.noisy.end());
      noise.insert(noise.end(), noised.noise.begin(), noised.noise.end());
      timesteps.insert(timesteps.end(), noised.timestep_values.begin(), noised.timestep_values.end());
    }
    const mpx::Shape image_shape{k_batch, k_side, k_side, 1};
    mpx::Tensor<float> x(image_shape), target(image_shape);
    const auto load_batch = [&](std::int64_t step) {
      std::copy_n(noisy.data() + step * k_batch * k_pixels, k_batch * k_pixels, x.data());
      std::copy_n(noise.data() + step * k_batch * k_pixels, k_batch * k_pixels, target.data());
      model.set_timesteps(std::span<const float>(timesteps.data() + step * k_batch, k_batch));
    };

    // The forward and backward at the initial weights: the prediction from the model, the gradients
    // from a step of plain SGD on an identical copy (lr 1e-30 barely moves its weights; the gradients
    // stay in its parameters).
    {
      load_batch(0);
      const mpx::Tensor<float> output = model.forward(x).clone();
      model.forget_inputs();
      auto copy = mpx::experiment::unet<mpx::fp32>(k_width);
      copy.initialize(k_seed);
      mpx::optim::SGD copy_optimizer(copy, {.lr = 1e-30});
      mpx::Trainer probe(copy, loss, copy_optimizer);
      copy.set_timesteps(std::span<const float>(timesteps.data(), k_batch));
      if (!probe.step(x, target).stepped) throw mpx::error("the gradient probe's step was skipped");
      mpx::test::save_gradients(dir / "gradients.safetensors", copy, output);
    }

    const mpx::optim::AdamW<decltype(model)>::Options adamw{.lr = 2e-3, .weight_decay = 1e-2};
    mpx::optim::AdamW optimizer(model, adamw);
    const double max_grad_norm = 1.0;
    mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = max_grad_norm});
    const mpx::WeightAverageOptions ema{.decay = 0.99, .warmup = true};
    trainer.keep_weight_average(ema);
    const auto save_state = [&](std::int64_t step) {
      mpx::io::save_checkpoint(dir / ("step_" + std::to_string(step) + ".safetensors"), trainer);
    };
    save_state(0);

    std::ofstream out(dir / "run.json");
    out.precision(17);
    out << "{\"batch\": " << k_batch << ", \"lr\": " << adamw.lr << ", \"beta1\": " << adamw.beta1
        << ", \"beta2\": " << adamw.beta2 << ", \"eps\": " << adamw.epsilon
        << ", \"weight_decay\": " << adamw.weight_decay << ", \"max_grad_norm\": " << max_grad_norm
        << ", \"ema_decay\": " << ema.decay << ", \"ema_warmup\": " << (ema.warmup ? "true" : "false")
        << ", \"losses\": [";
    for (std::int64_t step = 0; step < steps; ++step) {
      load_batch(step);
      const mpx::StepResult result = trainer.step(x, target);
      if (!result.stepped) {
        std::fprintf(stderr, "unet_parity_tool: step %lld was skipped (loss %g)\n",
                     static_cast<long long>(step + 1), result.loss);
        return 1;
      }
      out << (step ? ", " : "") << result.loss;
      save_state(step + 1);
    }
    out << "]}\n";
    out.close();
    const std::vector<mpx::io::TensorToWrite> batches{
        {"noisy", mpx::io::Dtype::F32, {steps, k_batch, k_side, k_side, 1}, std::as_bytes(std::span(noisy))},
        {"noise", mpx::io::Dtype::F32, {steps, k_batch, k_side, k_side, 1}, std::as_bytes(std::span(noise))},
        {"timesteps", mpx::io::Dtype::F32, {steps, k_batch}, std::as_bytes(std::span(timesteps))}};
    mpx::io::save_safetensors(dir / "batches.safetensors", batches);
  } catch (const mpx::error& e) {
    std::fprintf(stderr, "unet_parity_tool: %s\n", e.what());
    return 1;
  }
  return 0;
}
