// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx's side of tests/interop/resnet_parity.py: builds the ResNet-8 of mpx/experiment/resnet.hpp in fp32
// (width 8, 10 classes), trains it `steps` steps with Nesterov SGD and weight decay, BatchNorm in
// training mode, on synthetic batches, and writes what PyTorch needs to replay the run and each step:
//   <dir>/step_<k>.safetensors  the training state after k steps, k = 0 .. steps (io::save_checkpoint:
//                               weights, running statistics, momentum buffers, the model's description)
//   <dir>/batches.safetensors   "images" [steps, N, 28, 28, 1] (F32) and "labels" [steps, N] (I32)
//   <dir>/run.json              the optimizer's settings and every step's loss
//
// usage: resnet_parity_tool <dir> [steps]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include <mpx/experiment/resnet.hpp>
#include <mpx/mpx.hpp>

namespace {

constexpr std::int64_t k_batch = 32, k_side = 28, k_classes = 10, k_width = 8;

// SplitMix64's finaliser: a well-mixed 64-bit hash of `x`.
std::uint64_t hash(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A value in [-1, 1) from the hash of `key`.
float noise(std::uint64_t key) {
  return static_cast<float>(hash(key) >> 40) * 0x1p-23f - 1.0f;
}

// Image `sample` of step `step`: noise of amplitude 0.5 plus a bright horizontal band whose rows say the
// label, so that the loss falls over the run and the gradients stay far from zero.
void make_sample(std::int64_t step, std::int64_t sample, float* image, std::int32_t& label) {
  const auto key = static_cast<std::uint64_t>((step * k_batch + sample) * (k_side * k_side + 1));
  label = static_cast<std::int32_t>(hash(key) % k_classes);
  const std::int64_t band = 1 + 2 * static_cast<std::int64_t>(label);
  for (std::int64_t r = 0; r < k_side; ++r) {
    for (std::int64_t c = 0; c < k_side; ++c) {
      const float signal = (r == band || r == band + 1 || r == band + 2) ? 1.0f : 0.0f;
      image[r * k_side + c] = signal + 0.5f * noise(key + 1 + static_cast<std::uint64_t>(r * k_side + c));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: resnet_parity_tool <dir> [steps]\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int steps = argc > 2 ? std::atoi(argv[2]) : 50;
  if (steps < 1) {
    std::fprintf(stderr, "resnet_parity_tool: steps = %s, expected a whole number >= 1\n", argv[2]);
    return 2;
  }
  std::filesystem::create_directories(dir);
  try {
    auto model = mpx::experiment::resnet<mpx::fp32>(k_width, k_classes);
    model.initialize(11);
    auto loss = mpx::nn::layers<mpx::fp32>::softmax_cross_entropy();
    const mpx::optim::SGD<decltype(model)>::Options sgd{
        .lr = 0.05, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true};
    mpx::optim::SGD optimizer(model, sgd);
    mpx::Trainer trainer(model, loss, optimizer);
    const auto save_state = [&](std::int64_t step) {
      mpx::io::save_checkpoint(dir / ("step_" + std::to_string(step) + ".safetensors"), trainer);
    };
    save_state(0);

    const std::int64_t pixels = k_side * k_side;
    std::vector<float> images(static_cast<std::size_t>(steps * k_batch * pixels));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(steps * k_batch));
    std::ofstream out(dir / "run.json");
    out.precision(17);
    out << "{\"batch\": " << k_batch << ", \"width\": " << k_width << ", \"classes\": " << k_classes
        << ", \"lr\": " << sgd.lr << ", \"momentum\": " << sgd.momentum
        << ", \"dampening\": " << sgd.dampening << ", \"weight_decay\": " << sgd.weight_decay
        << ", \"nesterov\": " << (sgd.nesterov ? "true" : "false") << ", \"losses\": [";
    mpx::Tensor<float> x(mpx::Shape{k_batch, k_side, k_side, 1});
    mpx::Tensor<std::int32_t> y(mpx::Shape{k_batch});
    for (std::int64_t step = 0; step < steps; ++step) {
      const std::int64_t first = step * k_batch;
      for (std::int64_t b = 0; b < k_batch; ++b) {
        const auto at = static_cast<std::size_t>(first + b);
        make_sample(step, b, images.data() + at * static_cast<std::size_t>(pixels), labels[at]);
      }
      std::copy_n(images.data() + first * pixels, k_batch * pixels, x.data());
      std::copy_n(labels.data() + first, k_batch, y.data());
      const mpx::StepResult result = trainer.step(x, y);
      if (!result.stepped) {
        std::fprintf(stderr, "resnet_parity_tool: step %lld was skipped (loss %g)\n",
                     static_cast<long long>(step + 1), result.loss);
        return 1;
      }
      out << (step ? ", " : "") << result.loss;
      save_state(step + 1);
    }
    out << "]}\n";
    out.close();
    const std::vector<mpx::io::TensorToWrite> batches{
        {"images",
         mpx::io::Dtype::F32,
         {steps, k_batch, k_side, k_side, 1},
         std::as_bytes(std::span(images))},
        {"labels", mpx::io::Dtype::I32, {steps, k_batch}, std::as_bytes(std::span(labels))}};
    mpx::io::save_safetensors(dir / "batches.safetensors", batches);
  } catch (const mpx::error& e) {
    std::fprintf(stderr, "resnet_parity_tool: %s\n", e.what());
    return 1;
  }
  return 0;
}
