// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Fashion-MNIST on the GPU: the same model, loss, optimizer and Trainer types as on the CPU with
// `mpx::Cuda` as the device. Steps are queued without waiting for the GPU; the loss is read back
// (the only sync) every 100 steps. Without a CUDA device it says so and trains on the CPU instead.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <mpx/cuda.hpp>
#include <mpx/experiment/classification.hpp>
#include <mpx/experiment/models.hpp>

using P = mpx::bf16_mixed;  // or mpx::fp32, mpx::tf32, mpx::fp16_mixed

template <class Device>
void train(const mpx::data::FashionMnist& data, int epochs) {
  auto model = mpx::experiment::mlp3<P, P, Device>(784, 512, 256, 10);
  model.initialize(/*seed=*/42);
  mpx::nn::SoftmaxCrossEntropy<P, Device> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-3, .weight_decay = 1e-4});
  mpx::Trainer trainer(model, loss, optimizer);
  mpx::data::Batcher batcher(data.train,
                             {.batch_size = 128, .seed = 42, .last_batch = mpx::data::LastBatch::Drop});
  mpx::Tensor<mpx::compute_t<P>> images;  // one host batch, already in the model's input type
  mpx::Tensor<std::int32_t> labels;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    batcher.start_epoch(epoch);
    for (std::int64_t step = 1; batcher.next(images, labels); ++step) {
      if constexpr (std::is_same_v<Device, mpx::Cuda>) {
        const auto device_images = mpx::to<mpx::Cuda>(images);  // queued copies: no wait
        const auto device_labels = mpx::to<mpx::Cuda>(labels);
        trainer.enqueue_step(device_images, device_labels);
      } else {
        trainer.enqueue_step(images, labels);
      }
      if (step % 100 == 0) {
        const mpx::StepResult r = trainer.last_result();  // waits for the GPU
        std::printf("epoch %d step %4lld  loss %.4f  scale %g\n", epoch + 1, static_cast<long long>(step),
                    r.loss, double(r.loss_scale));
      }
    }
  }
  // Accuracy on the test set, computed where the model lives.
  std::int64_t correct = 0;
  mpx::data::Batcher test(data.test, {.batch_size = 1000, .shuffle = false});
  while (test.next(images, labels)) {
    if constexpr (std::is_same_v<Device, mpx::Cuda>) {
      const auto device_images = mpx::to<mpx::Cuda>(images);
      correct += mpx::nn::count_correct(model.forward(device_images), mpx::to<mpx::Cuda>(labels));
    } else {
      correct += mpx::nn::count_correct(model.forward(images), labels);
    }
  }
  std::printf("%s on %s: test accuracy %.2f%%\n", P::name.data(), Device::name.data(),
              100.0 * double(correct) / double(data.test.size()));
}

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 3;
  try {
    const auto data = mpx::data::load_fashion_mnist();
    if (mpx::cuda_device_count() > 0) {
      train<mpx::Cuda>(data, epochs);
    } else {
      std::printf("no CUDA device found: training on the CPU instead\n");
      train<mpx::Host>(data, epochs);
    }
  } catch (const mpx::error& e) {
    std::fprintf(stderr, "fashion_mnist_cuda: %s\n", e.what());
    return 1;
  }
  return 0;
}
