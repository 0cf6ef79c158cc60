// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Save a training run to a safetensors checkpoint, load it into fresh objects, and continue exactly
// where it stopped: same weights, optimizer state, loss scale, step count and next batch.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <mpx/mpx.hpp>

using P = mpx::fp16_mixed;  // a checkpoint also loads under another precision (master weights are fp32)

// The training state: built the same way by the first run and by the resumed one.
struct Run {
  mpx::nn::Sequential<mpx::nn::Linear<P, mpx::nn::Activation::ReLU>, mpx::nn::Linear<P>> model{
      mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(8, 32), mpx::nn::Linear<P>(32, 4)};
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::AdamW<decltype(model)> optimizer{model, {.lr = 1e-2}};
  mpx::Trainer<decltype(model), decltype(loss), decltype(optimizer)> trainer{model, loss, optimizer};
  mpx::data::Batcher batcher;

  explicit Run(const mpx::data::Dataset& data) : batcher(data, {.batch_size = 32, .seed = 7}) {
    model.initialize(1);
  }

  void train(int steps) {
    mpx::Tensor<float> x;
    mpx::Tensor<std::int32_t> y;
    for (int i = 0; i < steps; ++i) {
      if (!batcher.next(x, y)) {  // next epoch
        batcher.start_epoch(batcher.epoch() + 1);
        batcher.next(x, y);
      }
      (void)trainer.step(x, y);
    }
  }
};

int main() {
  // 1000 samples of 8 features, 4 classes (the class shifts one feature).
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  mpx::Tensor<float> images(mpx::Shape{1000, 8});
  std::vector<std::int32_t> labels(1000);
  for (int i = 0; i < 1000; ++i) {
    labels[i] = i % 4;
    for (int j = 0; j < 8; ++j) images[i * 8 + j] = normal(rng) + (j == labels[i] ? 2.0f : 0.0f);
  }
  const mpx::data::Dataset data(std::move(images), labels, 4);

  Run first(data);
  first.train(50);
  mpx::io::save_checkpoint("run.safetensors", first.trainer, mpx::io::batcher_state(first.batcher));

  Run resumed(data);  // fresh model, optimizer, scaler and batcher
  const mpx::io::LoadedCheckpoint loaded = mpx::io::load_checkpoint("run.safetensors", resumed.trainer);
  mpx::io::restore_batcher(resumed.batcher, loaded.metadata);

  first.train(30);  // both continue for 30 steps: the same batches, the same bits
  resumed.train(30);
  std::vector<float> a, b;
  first.model.for_each_parameter(
      [&](auto, auto& p) { a.insert(a.end(), p.master().data(), p.master().data() + p.master().numel()); });
  resumed.model.for_each_parameter(
      [&](auto, auto& p) { b.insert(b.end(), p.master().data(), p.master().data() + p.master().numel()); });
  const bool identical =
      a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  std::printf("resumed at step %s (%s, loss scale %s): weights after 30 more steps %s\n",
              loaded.metadata.at("step").c_str(), loaded.metadata.at("precision").c_str(),
              loaded.metadata.at("scaler.scale").c_str(), identical ? "identical" : "DIFFER");
  return identical ? 0 : 1;
}
