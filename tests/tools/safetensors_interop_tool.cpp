// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx's side of the Python interop test (tests/interop/safetensors_interop.py):
//   safetensors_interop_tool write <file>       writes the reference tensors (values below)
//   safetensors_interop_tool check <file>       checks a file Python wrote holds them, bit for bit
//   safetensors_interop_tool checkpoint <file>  trains a small model 3 steps and saves a checkpoint
//   safetensors_interop_tool torch <directory>  for tests/interop/torch_rebuild.py: trains the
//       Fashion-MNIST MLP (784-512-256-10) and the same with LayerNorms a few steps in bf16, saves
//       checkpoints <name>.safetensors, loads their weights into fp32 models and writes a few inputs
//       with those models' logits to <name>_probe.safetensors (name: mlp3, mlp3_layer_norm); and the
//       same for a small char-GPT (name: char_gpt; inputs are int32 token ids, logits [3, 16, 23]),
//       a small ResNet (name: resnet) and a two-level UNet (name: unet; its "logits" are images)
// The reference values are the same formulas in both languages; every one is exact in its dtype.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <mpx/experiment/char_gpt.hpp>
#include <mpx/experiment/models.hpp>
#include <mpx/io/checkpoint.hpp>
#include <mpx/io/safetensors.hpp>
#include <mpx/mpx.hpp>

namespace {

using mpx::io::Dtype;

struct Reference {
  std::vector<float> f32;
  std::vector<double> f64;
  std::vector<Eigen::half> f16;
  std::vector<Eigen::bfloat16> bf16;
  std::vector<std::int32_t> i32{std::numeric_limits<std::int32_t>::min(), -1, 0, 7,
                                std::numeric_limits<std::int32_t>::max()};
  std::vector<std::int64_t> i64{std::numeric_limits<std::int64_t>::min(), (std::int64_t{1} << 62) + 1};
  std::vector<std::uint8_t> u8{0, 1, 128, 255};

  Reference() {
    for (int i = 0; i < 15; ++i) f32.push_back(static_cast<float>(i - 7) * 0.375f);
    f32[0] = -0.0f;
    f32[14] = std::numeric_limits<float>::infinity();
    f64 = {1.0 / 3.0, -1e300, 5e-324};
    for (int i = 0; i < 6; ++i) f16.push_back(static_cast<Eigen::half>(static_cast<float>(i - 3) * 0.5f));
    for (int i = 0; i < 4; ++i)
      bf16.push_back(static_cast<Eigen::bfloat16>(static_cast<float>(i - 2) * 1.5f));
  }

  [[nodiscard]] std::vector<mpx::io::TensorToWrite> tensors() const {
    return {{"f32", Dtype::F32, {3, 5}, std::as_bytes(std::span(f32))},
            {"f64", Dtype::F64, {3}, std::as_bytes(std::span(f64))},
            {"f16", Dtype::F16, {2, 3}, std::as_bytes(std::span(f16))},
            {"bf16", Dtype::BF16, {4}, std::as_bytes(std::span(bf16))},
            {"i32", Dtype::I32, {5}, std::as_bytes(std::span(i32))},
            {"i64", Dtype::I64, {2}, std::as_bytes(std::span(i64))},
            {"u8", Dtype::U8, {2, 2}, std::as_bytes(std::span(u8))}};
  }
};

int check(const char* path) {
  const mpx::io::SafetensorsFile file = mpx::io::load_safetensors(path);
  int failures = 0;
  const Reference reference;  // owns the bytes the spans of tensors() view
  for (const mpx::io::TensorToWrite& expected : reference.tensors()) {
    const mpx::io::TensorEntry* entry = file.find(expected.name);
    if (entry == nullptr) {
      std::fprintf(stderr, "missing tensor %s\n", expected.name.c_str());
      ++failures;
      continue;
    }
    const auto bytes = file.data(*entry);
    if (entry->dtype != expected.dtype || entry->shape != expected.shape ||
        bytes.size() != expected.bytes.size() ||
        std::memcmp(bytes.data(), expected.bytes.data(), bytes.size()) != 0) {
      std::fprintf(stderr, "tensor %s differs (dtype %s, %zu bytes)\n", expected.name.c_str(),
                   std::string(mpx::io::dtype_name(entry->dtype)).c_str(), bytes.size());
      ++failures;
    }
  }
  const auto source = file.metadata().find("source");
  if (source == file.metadata().end() || source->second != "python \xc3\xa9") {
    std::fprintf(stderr, "metadata \"source\" is missing or wrong\n");
    ++failures;
  }
  std::printf("checked %zu tensors: %d failures\n", file.tensors().size(), failures);
  return failures == 0 ? 0 : 1;
}

void write_checkpoint(const char* path) {
  mpx::nn::Sequential model{mpx::nn::Linear<mpx::bf16_mixed, mpx::nn::Activation::ReLU>(4, 8),
                            mpx::nn::Linear<mpx::bf16_mixed>(8, 3)};
  model.initialize(7);
  mpx::nn::SoftmaxCrossEntropy<mpx::bf16_mixed> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 0.01});
  mpx::Trainer trainer(model, loss, optimizer);
  mpx::Tensor<float> x(mpx::Shape{5, 4});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
  mpx::Tensor<std::int32_t> y(mpx::Shape{5});
  const std::int32_t labels[] = {0, 1, 2, 1, 0};
  std::copy(std::begin(labels), std::end(labels), y.values().begin());
  for (int step = 0; step < 3; ++step) (void)trainer.step(x, y);
  mpx::io::save_checkpoint(path, trainer, {{"data.epoch", "0"}});
  // Python compares the first weight with what mpx holds: print it exactly.
  model.for_each_parameter([](std::string_view name, auto& p) {
    if (name != "layers.0.weight") return;
    for (const float v : p.master().values()) std::printf("%a\n", static_cast<double>(v));
  });
}

/// Pixel-like values in [0, 1) from a cheap hash: no state, the same on every machine.
mpx::Tensor<float> pixels(std::int64_t rows, std::uint32_t seed) {
  mpx::Tensor<float> x(mpx::Shape{rows, 784});
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const std::uint32_t h = (static_cast<std::uint32_t>(i) * 2654435761u) ^ (seed * 40503u);
    x[i] = static_cast<float>((h >> 8) % 256) / 256.0f;
  }
  return x;
}

/// Trains `model` (bf16) a few steps, saves `<directory>/<name>.safetensors`, loads its weights into
/// `fp32_model` and saves four inputs with their fp32 logits to `<directory>/<name>_probe.safetensors`.
template <class Model, class Fp32Model>
void write_torch_case(const std::filesystem::path& directory, const std::string& name, Model& model,
                      Fp32Model& fp32_model) {
  model.initialize(11);
  mpx::nn::SoftmaxCrossEntropy<mpx::bf16_mixed> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 1e-3});
  mpx::Trainer trainer(model, loss, optimizer);
  mpx::Tensor<std::int32_t> labels(mpx::Shape{32});
  for (std::int64_t i = 0; i < labels.numel(); ++i) labels[i] = static_cast<std::int32_t>(i % 10);
  for (std::uint32_t step = 0; step < 3; ++step) (void)trainer.step(pixels(32, step), labels);
  const std::filesystem::path checkpoint = directory / (name + ".safetensors");
  mpx::io::save_checkpoint(checkpoint, trainer);

  mpx::io::load_weights(fp32_model, checkpoint);
  const mpx::Tensor<float> inputs = pixels(4, 99);
  const mpx::Tensor<float>& logits = fp32_model.forward(inputs);
  const std::vector<mpx::io::TensorToWrite> tensors{
      {"inputs", Dtype::F32, {4, 784}, std::as_bytes(inputs.values())},
      {"logits", Dtype::F32, {4, 10}, std::as_bytes(logits.values())}};
  mpx::io::save_safetensors(directory / (name + "_probe.safetensors"), tensors);
  std::printf("%s: checkpoint and probe written\n", name.c_str());
}

/// The char-GPT case of `torch` mode: 2 blocks of 4 heads over 23 tokens, with dropout (so that the
/// description holds a p), trained 3 steps in bf16 on token ids from a hash; the probe's logits come
/// from the fp32 model loaded with `load_weights`, in evaluation mode (dropout off), as torch's eval().
void write_char_gpt_case(const std::filesystem::path& directory) {
  const mpx::experiment::GptShape shape{
      .vocabulary = 23, .context = 16, .width = 32, .heads = 4, .dropout = 0.1};
  const auto ids = [&](std::int64_t rows, std::uint32_t seed) {
    mpx::Tensor<std::int32_t> x(mpx::Shape{rows, shape.context});
    for (std::int64_t i = 0; i < x.numel(); ++i)
      x[i] =
          static_cast<std::int32_t>(((static_cast<std::uint32_t>(i) * 2654435761u) ^ (seed * 40503u)) >> 7) %
          static_cast<std::int32_t>(shape.vocabulary);
    return x;
  };
  auto model = mpx::experiment::char_gpt<mpx::bf16_mixed, mpx::Host, 2>(shape);
  model.initialize(5);
  auto loss = mpx::nn::layers<mpx::bf16_mixed>::softmax_cross_entropy();
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  mpx::Trainer trainer(model, loss, optimizer);
  for (std::uint32_t step = 0; step < 3; ++step) {
    const mpx::Tensor<std::int32_t> x = ids(4, step);
    const mpx::Tensor<std::int32_t> y = ids(4, step + 100);
    (void)trainer.step(x, y);
  }
  const std::filesystem::path checkpoint = directory / "char_gpt.safetensors";
  mpx::io::save_checkpoint(checkpoint, trainer);

  auto fp32_model = mpx::experiment::char_gpt<mpx::fp32, mpx::Host, 2>(shape);
  mpx::io::load_weights(fp32_model, checkpoint);
  const mpx::nn::EvaluationMode evaluating(fp32_model);
  const mpx::Tensor<std::int32_t> inputs = ids(3, 99);
  const mpx::Tensor<float>& logits = fp32_model.forward(inputs);
  const std::vector<mpx::io::TensorToWrite> tensors{
      {"inputs", Dtype::I32, {3, shape.context}, std::as_bytes(inputs.values())},
      {"logits", Dtype::F32, {3, shape.context, shape.vocabulary}, std::as_bytes(logits.values())}};
  mpx::io::save_safetensors(directory / "char_gpt_probe.safetensors", tensors);
  std::printf("char_gpt: checkpoint and probe written\n");
}

/// A small ResNet over 28 x 28 images: a convolution, BatchNorm and ReLU stem, one downsampling block
/// with a projection shortcut, global pooling and a linear head; trained 3 steps in bf16 (so that
/// BatchNorm's running statistics move), the probe's logits from the fp32 model loaded with
/// `load_weights`, in evaluation mode (the running statistics normalise), as torch's eval().
template <class P>
auto small_resnet() {
  using L = mpx::nn::layers<P>;
  return mpx::nn::Sequential{
      L::conv2d(1, 8, 3, {.padding = 1, .bias = false}),
      L::batch_norm2d(8),
      L::relu(),
      mpx::nn::Residual{
          mpx::nn::Sequential{L::conv2d(8, 16, 3, {.stride = 2, .padding = 1, .bias = false}),
                              L::batch_norm2d(16), L::relu(),
                              L::conv2d(16, 16, 3, {.padding = 1, .bias = false}), L::batch_norm2d(16)},
          mpx::nn::Sequential{L::conv2d(8, 16, 1, {.stride = 2, .bias = false}), L::batch_norm2d(16)}},
      L::relu(),
      L::max_pool2d(2),
      L::global_avg_pool2d(),
      L::linear(16, 10)};
}

void write_resnet_case(const std::filesystem::path& directory) {
  auto model = small_resnet<mpx::bf16_mixed>();
  model.initialize(13);
  auto loss = mpx::nn::layers<mpx::bf16_mixed>::softmax_cross_entropy();
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  mpx::Trainer trainer(model, loss, optimizer);
  mpx::Tensor<std::int32_t> labels(mpx::Shape{16});
  for (std::int64_t i = 0; i < labels.numel(); ++i) labels[i] = static_cast<std::int32_t>(i % 10);
  for (std::uint32_t step = 0; step < 3; ++step) {
    mpx::Tensor<float> images = pixels(16, step);
    images.reshape(mpx::Shape{16, 28, 28, 1});
    (void)trainer.step(images, labels);
  }
  const std::filesystem::path checkpoint = directory / "resnet.safetensors";
  mpx::io::save_checkpoint(checkpoint, trainer);

  auto fp32_model = small_resnet<mpx::fp32>();
  mpx::io::load_weights(fp32_model, checkpoint);
  const mpx::nn::EvaluationMode evaluating(fp32_model);
  mpx::Tensor<float> inputs = pixels(4, 99);
  inputs.reshape(mpx::Shape{4, 28, 28, 1});
  const mpx::Tensor<float>& logits = fp32_model.forward(inputs);
  const std::vector<mpx::io::TensorToWrite> tensors{
      {"inputs", Dtype::F32, {4, 28, 28, 1}, std::as_bytes(inputs.values())},
      {"logits", Dtype::F32, {4, 10}, std::as_bytes(logits.values())}};
  mpx::io::save_safetensors(directory / "resnet_probe.safetensors", tensors);
  std::printf("resnet: checkpoint and probe written\n");
}

/// A two-level UNet over 16 x 16 images: each level's activation concatenated (`Concat`) with the
/// upsampled output of the level below; max and average pooling, BatchNorm, GroupNorm, ReLU and SiLU.
template <class P>
auto small_unet() {
  using L = mpx::nn::layers<P>;
  return mpx::nn::Sequential{
      L::conv2d(1, 8, 3, {.padding = 1}), L::relu(),
      mpx::nn::Concat{mpx::nn::Sequential{
          L::max_pool2d(2), L::conv2d(8, 16, 3, {.padding = 1, .bias = false}), L::batch_norm2d(16),
          L::relu(),
          mpx::nn::Concat{mpx::nn::Sequential{L::avg_pool2d(2), L::conv2d(16, 16, 3, {.padding = 1}),
                                              L::silu(), L::upsample(2)}},
          L::conv2d(32, 16, 3, {.padding = 1}), L::group_norm(4, 16), L::silu(), L::upsample(2)}},
      L::conv2d(24, 1, 3, {.padding = 1})};
}

/// The UNet trained 3 steps in bf16 to mirror its images (MSE), so that BatchNorm's running
/// statistics move; the probe holds the fp32 model's output images in evaluation mode as "logits".
void write_unet_case(const std::filesystem::path& directory) {
  const auto images = [](std::int64_t count, std::uint32_t seed) {
    const mpx::Tensor<float> x = pixels(count, seed);
    mpx::Tensor<float> out(mpx::Shape{count, 16, 16, 1});  // each image: the first 256 of a row's 784 values
    for (std::int64_t i = 0; i < out.numel(); ++i) out[i] = x[(i / 256) * 784 + i % 256];
    return out;
  };
  auto model = small_unet<mpx::bf16_mixed>();
  model.initialize(17);
  auto loss = mpx::nn::layers<mpx::bf16_mixed>::mse_loss();
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  mpx::Trainer trainer(model, loss, optimizer);
  for (std::uint32_t step = 0; step < 3; ++step) {
    const mpx::Tensor<float> x = images(8, step);
    mpx::Tensor<float> mirrored(x.shape());
    for (std::int64_t i = 0; i < x.numel(); ++i) mirrored[i] = x[(i / 16) * 16 + 15 - i % 16];
    (void)trainer.step(x, mirrored);
  }
  const std::filesystem::path checkpoint = directory / "unet.safetensors";
  mpx::io::save_checkpoint(checkpoint, trainer);

  auto fp32_model = small_unet<mpx::fp32>();
  mpx::io::load_weights(fp32_model, checkpoint);
  const mpx::nn::EvaluationMode evaluating(fp32_model);
  const mpx::Tensor<float> inputs = images(4, 99);
  const mpx::Tensor<float>& outputs = fp32_model.forward(inputs);
  const std::vector<mpx::io::TensorToWrite> tensors{
      {"inputs", Dtype::F32, {4, 16, 16, 1}, std::as_bytes(inputs.values())},
      {"logits", Dtype::F32, {4, 16, 16, 1}, std::as_bytes(outputs.values())}};
  mpx::io::save_safetensors(directory / "unet_probe.safetensors", tensors);
  std::printf("unet: checkpoint and probe written\n");
}

void write_torch_cases(const std::filesystem::path& directory) {
  std::filesystem::create_directories(directory);
  auto mlp = mpx::experiment::mlp3<mpx::bf16_mixed>(784, 512, 256, 10);
  auto mlp_fp32 = mpx::experiment::mlp3<mpx::fp32>(784, 512, 256, 10);
  write_torch_case(directory, "mlp3", mlp, mlp_fp32);
  using Bf16 = mpx::experiment::LayerPrecisions<mpx::bf16_mixed>;
  using Fp32 = mpx::experiment::LayerPrecisions<mpx::fp32>;
  auto normed = mpx::experiment::mlp3_layer_norm<Bf16>(784, 512, 256, 10);
  auto normed_fp32 = mpx::experiment::mlp3_layer_norm<Fp32>(784, 512, 256, 10);
  write_torch_case(directory, "mlp3_layer_norm", normed, normed_fp32);
  write_char_gpt_case(directory);
  write_resnet_case(directory);
  write_unet_case(directory);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s write|check|checkpoint <file> | torch <directory>\n", argv[0]);
    return 2;
  }
  try {
    const std::string_view mode = argv[1];
    if (mode == "write") {
      const Reference reference;
      mpx::io::save_safetensors(argv[2], reference.tensors(),
                                {{"source", "mpx"}, {"unicode", "\xc3\xa9\"\\"}});
      return 0;
    }
    if (mode == "check") return check(argv[2]);
    if (mode == "checkpoint") {
      write_checkpoint(argv[2]);
      return 0;
    }
    if (mode == "torch") {
      write_torch_cases(argv[2]);
      return 0;
    }
    std::fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
