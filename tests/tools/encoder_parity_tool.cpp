// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx's side of tests/interop/encoder_parity.py: the masked-LM encoder of mpx/experiment/encoder.hpp
// in fp32 (a small shape), trained as examples/encoder.cpp pretrains it (padded batches bucketed by
// length, data::mask_tokens' corruption, the chosen tokens' cross-entropy, AdamW with weight decay)
// for `steps` steps on synthetic sentences. It writes what PyTorch needs to replay the run:
//   <dir>/initial.safetensors   the initial weights and the model's description (io::save_weights)
//   <dir>/gradients.safetensors every parameter's gradient of the probe batch's loss at the initial
//                               weights, under the parameter's name, and "output": the logits
//   <dir>/final.safetensors     the weights after the last step
//   <dir>/classifier.safetensors, classifier_logits.safetensors
//                               the sequence classifier of the same shape (5 classes): its initial
//                               weights, and its logits on the probe batch ("logits")
//   <dir>/run.json              the shape, AdamW's settings, the probe batch (the first batch with an
//                               empty sequence added, its tokens chosen in reverse order) and every step's
//                               batch: corrupted ids, lengths, chosen rows, their targets, and mpx's loss
//
// usage: encoder_parity_tool <dir> [steps]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <mpx/experiment/encoder.hpp>
#include <mpx/mpx.hpp>

#include "../support/parity_files.hpp"

namespace {

constexpr std::int64_t k_batch = 8, k_sentences = 160;
constexpr std::uint64_t k_seed = 5;
// The classes are the sequence classifier's; the masked-LM has none.
const mpx::experiment::EncoderShape k_shape{
    .vocabulary = 48, .max_length = 16, .width = 32, .blocks = 2, .heads = 4, .classes = 5};

// The sentences: [CLS], 0 to 17 words in an arithmetic progression modulo the 43 words (something to
// learn), [SEP]; those longer than max_length are truncated to it by the batches. Every 23rd is a
// single word and no [CLS] or [SEP]: a sequence of length 1, its only token chosen.
std::vector<std::vector<std::int32_t>> sentences() {
  const mpx::data::SpecialTokens tokens;
  const std::uint64_t words = static_cast<std::uint64_t>(k_shape.vocabulary) - 5;
  std::mt19937_64 rng(k_seed);
  std::vector<std::vector<std::int32_t>> out;
  for (std::int64_t i = 0; i < k_sentences; ++i) {
    const std::uint64_t first = rng() % words, stride = 1 + rng() % 3, count = rng() % 18;
    const auto word = [&](std::uint64_t j) {
      return static_cast<std::int32_t>(5 + (first + j * stride) % words);
    };
    if (i % 23 == 0) {
      out.push_back({word(0)});
      continue;
    }
    std::vector<std::int32_t> sentence{tokens.cls};
    for (std::uint64_t j = 0; j < count; ++j) sentence.push_back(word(j));
    sentence.push_back(tokens.sep);
    out.push_back(std::move(sentence));
  }
  return out;
}

std::span<const std::int32_t> span_of(const mpx::Tensor<std::int32_t>& t) {
  return {t.data(), static_cast<std::size_t>(t.numel())};
}

// One batch as the model sees it: corrupted ids, lengths, the chosen rows and their targets, and
// each token's type.
struct Batch {
  mpx::Tensor<std::int32_t> inputs, lengths, chosen;
  std::vector<std::int32_t> rows, types;
};

// Token types as a sentence pair would have them: 0 for the first half of each sequence's real
// tokens, 1 from there on (padding included), so that both rows of the type table train.
std::vector<std::int32_t> pair_types(const mpx::Tensor<std::int32_t>& inputs,
                                     const mpx::Tensor<std::int32_t>& lengths) {
  const std::int64_t sequences = inputs.shape()[0], positions = inputs.shape()[1];
  std::vector<std::int32_t> types(static_cast<std::size_t>(sequences * positions));
  for (std::int64_t n = 0; n < sequences; ++n)
    for (std::int64_t t = 0; t < positions; ++t)
      types[std::size_t(n * positions + t)] = 2 * t >= lengths[n] ? 1 : 0;
  return types;
}

// Writes `{"ids": [...], "lengths": [...], "rows": [...], "targets": [...]`, the object left open for
// the caller's fields.
void write_batch(std::ostream& out, const Batch& b) {
  const auto list = [&](const char* name, std::span<const std::int32_t> values) {
    out << "\"" << name << "\": [";
    for (std::size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
    out << "]";
  };
  out << "{";
  list("ids", span_of(b.inputs));
  out << ", ";
  list("lengths", span_of(b.lengths));
  out << ", ";
  list("rows", b.rows);
  out << ", ";
  list("targets", span_of(b.chosen));
  out << ", ";
  list("token_types", b.types);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: encoder_parity_tool <dir> [steps]\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int steps = argc > 2 ? std::atoi(argv[2]) : 50;
  if (steps < 1) {
    std::fprintf(stderr, "encoder_parity_tool: steps = %s, expected a whole number >= 1\n", argv[2]);
    return 2;
  }
  std::filesystem::create_directories(dir);
  try {
    auto model = mpx::experiment::masked_lm<mpx::fp32>(k_shape);
    model.initialize(k_seed);
    mpx::io::save_weights(model, dir / "initial.safetensors");
    auto loss = mpx::nn::layers<mpx::fp32>::softmax_cross_entropy();

    // The batches as the example deals and corrupts them.
    const std::vector<std::vector<std::int32_t>> text = sentences();
    mpx::data::PaddedBatches batches(text, {.batch_size = k_batch,
                                            .max_length = k_shape.max_length,
                                            .seed = k_seed,
                                            .shuffle = true,
                                            .bucket_by_length = true,
                                            .bucket_batches = 2});
    const mpx::data::MaskedLmOptions masking{.vocabulary_size = std::int32_t(k_shape.vocabulary),
                                             .seed = k_seed};
    mpx::data::PaddedBatch padded;
    std::uint64_t epoch = 0, step = 0;
    const auto next_batch = [&](Batch& b) {
      while (!batches.next(padded)) batches.start_epoch(++epoch);
      mpx::Tensor<std::int32_t> targets;
      mpx::data::mask_tokens(padded.ids, padded.lengths, masking, step++, b.inputs, targets);
      mpx::data::chosen_tokens(targets, masking.ignore_index, b.rows, b.chosen);
      b.lengths = padded.lengths.clone();
      b.types = pair_types(b.inputs, b.lengths);
      if (b.rows.empty()) throw mpx::error("a batch without a chosen token");
    };
    const auto select = [](auto& m, const Batch& b) {
      m.set_lengths(span_of(b.lengths));
      m.select_tokens(b.rows);
      m.set_token_types(b.types);
    };

    std::vector<Batch> run(static_cast<std::size_t>(steps));
    for (Batch& b : run) next_batch(b);

    // The probe: the first batch and a sequence of length 0 (all [PAD]), whose attention gives zeros
    // in mpx and must not give NaN in the rebuild (its gradients would carry them), the chosen tokens
    // in reverse order (GatherTokens keeps the order it is given).
    Batch probe{.inputs = mpx::Tensor<std::int32_t>(mpx::Shape{k_batch + 1, run[0].inputs.shape()[1]}),
                .lengths = mpx::Tensor<std::int32_t>(mpx::Shape{k_batch + 1}),
                .chosen = mpx::Tensor<std::int32_t>(run[0].chosen.shape()),
                .rows = std::vector<std::int32_t>(run[0].rows.rbegin(), run[0].rows.rend()),
                .types = {}};
    std::copy_n(run[0].inputs.data(), run[0].inputs.numel(), probe.inputs.data());
    std::copy_n(run[0].lengths.data(), k_batch, probe.lengths.data());
    std::reverse_copy(run[0].chosen.data(), run[0].chosen.data() + run[0].chosen.numel(),
                      probe.chosen.data());
    probe.types = pair_types(probe.inputs, probe.lengths);

    // The forward and backward at the initial weights: the logits from the model, the gradients
    // from a step of plain SGD on an identical copy (lr 1e-30 barely moves its weights; the gradients
    // stay in its parameters).
    {
      select(model, probe);
      const mpx::Tensor<float> output = model.forward(probe.inputs).clone();
      model.forget_inputs();
      auto copy = mpx::experiment::masked_lm<mpx::fp32>(k_shape);
      copy.initialize(k_seed);
      mpx::optim::SGD copy_optimizer(copy, {.lr = 1e-30});
      mpx::Trainer probe_trainer(copy, loss, copy_optimizer);
      select(copy, probe);
      if (!probe_trainer.step(probe.inputs, probe.chosen).stepped) {
        throw mpx::error("the gradient probe's step was skipped");
      }
      mpx::test::save_gradients(dir / "gradients.safetensors", copy, output);
    }
    // The classifier's logits on the probe batch: its head reads each sequence's first token
    // (FirstToken), which the empty sequence's attention output (zeros) reaches too.
    {
      auto classifier = mpx::experiment::sequence_classifier<mpx::fp32>(k_shape);
      classifier.initialize(k_seed + 1);
      mpx::io::save_weights(classifier, dir / "classifier.safetensors");
      classifier.set_lengths(span_of(probe.lengths));
      classifier.set_token_types(probe.types);
      const mpx::Tensor<float>& logits = classifier.forward(probe.inputs);
      const std::vector<mpx::io::TensorToWrite> tensors{mpx::test::f32_entry("logits", logits)};
      mpx::io::save_safetensors(dir / "classifier_logits.safetensors", tensors);
    }

    // The example's optimizer settings.
    const mpx::optim::AdamW<decltype(model)>::Options adamw{.lr = 1e-3, .weight_decay = 0.01};
    mpx::optim::AdamW optimizer(model, adamw);
    mpx::Trainer trainer(model, loss, optimizer);
    std::ofstream out(dir / "run.json");
    out.precision(17);
    out << "{\"vocabulary\": " << k_shape.vocabulary << ", \"max_length\": " << k_shape.max_length
        << ", \"width\": " << k_shape.width << ", \"blocks\": " << k_shape.blocks
        << ", \"heads\": " << k_shape.heads << ", \"lr\": " << adamw.lr << ", \"betas\": [" << adamw.beta1
        << ", " << adamw.beta2 << "], \"eps\": " << adamw.epsilon
        << ", \"weight_decay\": " << adamw.weight_decay << ",\n\"probe\": ";
    write_batch(out, probe);
    out << "},\n\"steps\": [";
    for (int k = 0; k < steps; ++k) {
      const Batch& b = run[static_cast<std::size_t>(k)];
      select(model, b);
      const mpx::StepResult result = trainer.step(b.inputs, b.chosen);
      if (!result.stepped) throw mpx::error("a training step was skipped");
      out << (k ? ",\n" : "\n");
      write_batch(out, b);
      out << ", \"loss\": " << result.loss << "}";
    }
    out << "]}\n";
    mpx::io::save_weights(model, dir / "final.safetensors");
  } catch (const mpx::error& e) {
    std::fprintf(stderr, "encoder_parity_tool: %s\n", e.what());
    return 1;
  }
  return 0;
}
