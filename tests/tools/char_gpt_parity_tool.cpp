// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx's side of tests/interop/char_gpt_parity.py: builds the char-GPT of
// mpx/experiment/char_gpt.hpp in fp32 (no dropout), saves its initial weights, trains it `steps`
// steps with AdamW on random windows of a fixed text, and writes what PyTorch needs to replay the run:
//   <dir>/initial.safetensors   the initial weights, under mpx's parameter names
//   <dir>/run.json              the shape, the optimizer's settings, every step's batch and loss
//
// usage: char_gpt_parity_tool <dir> [steps]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <mpx/experiment/char_gpt.hpp>
#include <mpx/mpx.hpp>

namespace {

// Any text will do; this one has enough distinct characters to exercise the embedding.
constexpr const char* k_text =
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be "
    "in want of a wife. However little known the feelings or views of such a man may be on his first "
    "entering a neighbourhood, this truth is so well fixed in the minds of the surrounding families, "
    "that he is considered the rightful property of some one or other of their daughters. -- Jane Austen\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: char_gpt_parity_tool <dir> [steps]\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int steps = argc > 2 ? std::atoi(argv[2]) : 50;
  std::filesystem::create_directories(dir);
  try {
    // Vocabulary: the distinct bytes of the text, in byte order.
    const std::string text = k_text;
    std::vector<int> id_of(256, -1);
    std::int64_t vocabulary = 0;
    for (int byte = 0; byte < 256; ++byte) {
      if (text.find(static_cast<char>(byte)) != std::string::npos)
        id_of[byte] = static_cast<int>(vocabulary++);
    }
    const mpx::experiment::GptShape shape{.vocabulary = vocabulary, .context = 16, .width = 48, .heads = 4};
    const std::int64_t batch = 4;
    auto model = mpx::experiment::char_gpt<mpx::fp32, mpx::Host, 2>(shape);
    model.initialize(3);
    mpx::io::save_weights(model, dir / "initial.safetensors");
    auto loss = mpx::nn::layers<mpx::fp32>::softmax_cross_entropy();
    const mpx::optim::AdamW<decltype(model)>::Options adamw{.lr = 3e-3, .weight_decay = 0.1};
    mpx::optim::AdamW optimizer(model, adamw);
    mpx::Trainer trainer(model, loss, optimizer);

    std::mt19937_64 rng(7);
    std::uniform_int_distribution<std::size_t> start(
        0, text.size() - static_cast<std::size_t>(shape.context) - 1);
    std::ofstream out(dir / "run.json");
    out.precision(17);
    out << "{\"vocabulary\": " << vocabulary << ", \"context\": " << shape.context
        << ", \"width\": " << shape.width << ", \"heads\": " << shape.heads
        << ", \"blocks\": 2, \"batch\": " << batch << ", \"lr\": " << adamw.lr << ", \"betas\": ["
        << adamw.beta1 << ", " << adamw.beta2 << "], \"eps\": " << adamw.epsilon
        << ", \"weight_decay\": " << adamw.weight_decay << ", \"steps\": [";
    mpx::Tensor<std::int32_t> x(mpx::Shape{batch, shape.context}), y(mpx::Shape{batch, shape.context});
    for (int step = 0; step < steps; ++step) {
      for (std::int64_t b = 0; b < batch; ++b) {
        const std::size_t first = start(rng);
        for (std::int64_t t = 0; t < shape.context; ++t) {
          x[b * shape.context + t] = id_of[static_cast<unsigned char>(text[first + t])];
          y[b * shape.context + t] = id_of[static_cast<unsigned char>(text[first + t + 1])];
        }
      }
      const mpx::StepResult result = trainer.step(x, y);
      out << (step ? ",\n" : "\n") << "{\"inputs\": [";
      for (std::int64_t i = 0; i < x.numel(); ++i) out << (i ? "," : "") << x[i];
      out << "], \"targets\": [";
      for (std::int64_t i = 0; i < y.numel(); ++i) out << (i ? "," : "") << y[i];
      out << "], \"loss\": " << result.loss << "}";
    }
    out << "]}\n";
  } catch (const mpx::error& e) {
    std::fprintf(stderr, "char_gpt_parity_tool: %s\n", e.what());
    return 1;
  }
  return 0;
}
