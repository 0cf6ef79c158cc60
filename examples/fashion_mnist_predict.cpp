// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Classifies the Fashion-MNIST test images with the weights `fashion_mnist --save PATH` wrote. The
// file is all it needs from the training run: the weights, the model's description (load_weights
// checks it against the model built here) and the input normalisation the pixels must get.
//
// usage: fashion_mnist_predict <weights.safetensors>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <mpx/mpx.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fashion_mnist_predict <weights.safetensors>\n");
    return 2;
  }
  try {
    // The network fashion_mnist trains, in fp32 whatever precision trained it.
    using L = mpx::nn::layers<mpx::fp32>;
    mpx::nn::Sequential model{L::linear(784, 512, mpx::nn::relu), L::linear(512, 256, mpx::nn::relu),
                              L::linear(256, 10)};
    const mpx::io::Metadata metadata = mpx::io::load_weights(model, argv[1]);
    const std::optional<mpx::data::InputNormalization> normalization = mpx::io::input_normalization(metadata);
    if (!normalization) {
      throw mpx::io_error(std::string(argv[1]) +
                          " holds no input normalisation (metadata input.mean, input.std)");
    }

    // The raw test images, each pixel p normalised as in training: (p / 255 - mean) / std.
    const auto directory = mpx::data::default_fashion_mnist_dir();
    const mpx::data::IdxArray images = mpx::data::read_idx(directory / "t10k-images-idx3-ubyte.gz");
    const mpx::data::IdxArray labels = mpx::data::read_idx(directory / "t10k-labels-idx1-ubyte.gz");
    mpx::Tensor<float> x(mpx::Shape{images.dims[0], images.dims[1] * images.dims[2]});
    for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = (*normalization)(images.bytes[i] / 255.0);

    const mpx::nn::EvaluationMode evaluating(model);
    const mpx::Tensor<std::int32_t> classes = mpx::nn::predict(model.forward(x));
    std::int64_t correct = 0;
    for (std::int64_t i = 0; i < classes.numel(); ++i) correct += classes[i] == labels.bytes[i];
    std::printf("%s (trained in %s): %lld of %lld test images classified right (%.2f%%)\n", argv[1],
                metadata.at("precision").c_str(), static_cast<long long>(correct),
                static_cast<long long>(classes.numel()), 100.0 * double(correct) / double(classes.numel()));
  } catch (const mpx::error& e) {
    std::fprintf(stderr, "fashion_mnist_predict: %s\n", e.what());
    return 1;
  }
  return 0;
}
