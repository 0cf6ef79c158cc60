// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A BERT-style encoder in mixed precision: pretrained with a masked-language-model objective on
// WordNet's glosses and the fortunes corpus, then fine-tuned to tell each gloss's supersense (45 classes:
// noun.animal, verb.motion, ...), in fp32, bf16 and fp16. The same classifier trained from scratch and a
// bag-of-words linear baseline show what pretraining buys. Sentences have their own lengths: batches
// are padded to their longest gloss (bucketed by length), and the attention masks the padding
// (`nn::PaddedSelfAttention` inside `nn::PaddedSequences`). The pretrained weights go to a file, from
// which the classifier loads the encoder body (`io::load_matching_weights`); with several fine-tuning
// learning rates the run is a precision x learning-rate sweep. The data: docs/encoder.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <mpx/experiment/data_parallel_job.hpp>
#include <mpx/experiment/encoder.hpp>
#include <mpx/experiment/progress.hpp>
#include <mpx/experiment/records.hpp>
#include <mpx/experiment/usage.hpp>
#include <mpx/mpx.hpp>

namespace {

struct Settings {
  std::string precision = "all";
  int pretrain_epochs = 4;
  int finetune_epochs = 4;
  std::int64_t batch = 64;
  double pretrain_lr = 1e-3;
  std::vector<double> finetune_lrs = {1e-3};  // several: a precision x learning-rate sweep
  std::uint64_t seed = 42;
  std::int64_t width = 128;
  std::int64_t max_length = 32;    // tokens kept of a gloss, [CLS] and [SEP] included
  std::int64_t vocabulary = 5000;  // the most frequent training words, the special tokens included
  std::int64_t train_samples = 0;  // 0: the whole training split, the pretraining text
  std::int64_t labelled = 5000;    // training glosses whose labels fine-tuning uses (0: all)
  std::int64_t test_samples = 0;   // 0: the whole test split (fewer for smoke runs)
  std::string pretrain_text = "glosses+fortunes";
  std::filesystem::path fortunes = mpx::data::default_text_corpus_path();
  std::string pretrained = "encoder_mlm";  // the pretrained weights: <this>.<precision>.safetensors
  std::string csv = "encoder_metrics.csv";
};

struct EpochRecord {
  BOOST_HANA_DEFINE_STRUCT(EpochRecord, (std::string, precision), (std::string, phase), (double, lr),
                           (int, epoch), (double, train_loss), (double, test_accuracy), (float, loss_scale),
                           (std::int64_t, skipped_steps), (double, seconds));
};

struct Summary {
  std::string precision;
  double pretrain_loss = 0, finetuned_accuracy = 0, scratch_accuracy = 0, seconds_per_50 = 0;
  double best_lr = 0;                                     // the fine-tuning rate of finetuned_accuracy
  std::vector<std::pair<double, double>> accuracy_by_lr;  // (lr, fine-tuned test accuracy)
  std::int64_t peak_bytes = 0, activation_bytes = 0, skipped_steps = 0;
  float loss_scale = 1;
};

// Glosses as token ids ([CLS] gloss [SEP]) and labels, per split.
struct Split {
  std::vector<std::vector<std::int32_t>> sequences;
  std::vector<std::int32_t> labels;
};
struct Data {
  mpx::data::WordVocabulary vocabulary;
  Split train, labelled, test;  // labelled: a subset of train, spread evenly over it
  std::int32_t classes = 0;
  std::vector<std::vector<std::int32_t>> pretraining;  // the training glosses, then the fortunes
};

Data load(const Settings& s) {
  const mpx::data::WordNetGlosses wordnet;
  std::vector<std::string> training_texts;
  for (const std::int64_t i : wordnet.indices(mpx::data::WordNetSplit::Train))
    training_texts.push_back(wordnet.synsets()[static_cast<std::size_t>(i)].gloss);
  Data data{mpx::data::WordVocabulary::build(training_texts, {.min_count = 2, .max_size = s.vocabulary}),
            {},
            {},
            {},
            wordnet.label_count(),
            {}};
  const mpx::data::SpecialTokens tokens;
  // `limit` glosses spread evenly over the split (the files list nouns, verbs, adjectives and adverbs
  // in turn, so the first ones would hold a few nouns' labels only); 0: all.
  const auto fill = [&](mpx::data::WordNetSplit which, Split& split, std::int64_t limit) {
    const auto indices = wordnet.indices(which);
    const auto count = std::int64_t(indices.size());
    const std::int64_t taken = limit > 0 ? std::min(limit, count) : count;
    for (std::int64_t k = 0; k < taken; ++k) {
      const std::int64_t i = indices[static_cast<std::size_t>(k * count / taken)];
      const auto& synset = wordnet.synsets()[static_cast<std::size_t>(i)];
      std::vector<std::int32_t> ids{tokens.cls};
      for (const std::int32_t id : data.vocabulary.encode(synset.gloss)) ids.push_back(id);
      ids.push_back(tokens.sep);
      split.sequences.push_back(std::move(ids));
      split.labels.push_back(synset.label);
    }
  };
  fill(mpx::data::WordNetSplit::Train, data.train, s.train_samples);
  const auto train_count = std::int64_t(data.train.labels.size());
  const std::int64_t labelled = s.labelled > 0 ? std::min(s.labelled, train_count) : train_count;
  for (std::int64_t k = 0; k < labelled; ++k) {
    const auto i = static_cast<std::size_t>(k * train_count / labelled);
    data.labelled.sequences.push_back(data.train.sequences[i]);
    data.labelled.labels.push_back(data.train.labels[i]);
  }
  fill(mpx::data::WordNetSplit::Test, data.test, s.test_samples);
  data.pretraining = data.train.sequences;
  if (s.pretrain_text == "glosses+fortunes") {
    // Each fortune (the text between two "%" lines) as one sequence, [CLS] words [SEP], in the
    // glosses' vocabulary (its other words are [UNK]); the batches keep its first max_length tokens
    // as they keep a gloss's.
    const mpx::data::TextCorpus fortunes(s.fortunes);
    std::istringstream text{std::string(fortunes.text())};
    std::string line, fortune;
    const auto add = [&] {
      const std::vector<std::int32_t> words = data.vocabulary.encode(fortune);
      fortune.clear();
      if (words.empty()) return;
      std::vector<std::int32_t> ids{tokens.cls};
      ids.insert(ids.end(), words.begin(), words.end());
      ids.push_back(tokens.sep);
      data.pretraining.push_back(std::move(ids));
    };
    while (std::getline(text, line)) {
      if (line == "%") {
        add();
      } else {
        fortune.append(line).push_back('\n');
      }
    }
    add();
    // --train-samples limits the fortunes as it limits the glosses, spread evenly over them.
    const auto glosses = data.train.sequences.size(), pieces = data.pretraining.size() - glosses;
    if (s.train_samples > 0 && pieces > std::size_t(s.train_samples)) {
      const auto taken = std::size_t(s.train_samples);
      for (std::size_t k = 1; k < taken; ++k)  // piece k * pieces / taken >= k moves down to k
        data.pretraining[glosses + k] = std::move(data.pretraining[glosses + k * pieces / taken]);
      data.pretraining.resize(glosses + taken);
    }
  }
  return data;
}

mpx::data::PaddedBatchOptions batch_options(const Settings& s, std::uint64_t seed, bool shuffle) {
  return {.batch_size = s.batch,
          .max_length = s.max_length,
          .seed = seed,
          .shuffle = shuffle,
          .bucket_by_length = true};
}

// BERT's learning-rate schedule: a linear warm-up over the first 6% of the steps, then a linear
// decay to zero at the last.
double scheduled_lr(double peak, std::int64_t step, std::int64_t steps) {
  const double warmup = std::max(1.0, 0.06 * double(steps));
  const double t = double(step) + 1.0;
  return peak * (t < warmup ? t / warmup
                            : std::max(0.0, (double(steps) - t + 1.0) / (double(steps) - warmup + 1.0)));
}

std::span<const std::int32_t> lengths_of(const mpx::data::PaddedBatch& batch) {
  return {batch.lengths.data(), static_cast<std::size_t>(batch.lengths.numel())};
}

// Test accuracy of a classifier (evaluation mode: nothing kept for backward).
template <class Model>
double accuracy(Model& model, const Settings& s, const Split& split) {
  mpx::data::PaddedBatches batches(split.sequences, batch_options(s, 0, false));
  mpx::data::PaddedBatch batch;
  std::int64_t correct = 0, total = 0;
  {
    const mpx::nn::EvaluationMode evaluating(model);
    while (batches.next(batch)) {
      model.set_lengths(lengths_of(batch));
      const mpx::Tensor<std::int32_t> predicted = mpx::nn::predict(model.forward(batch.ids));
      for (std::int64_t r = 0; r < predicted.numel(); ++r)
        correct += predicted[r] ==
                   split.labels[static_cast<std::size_t>(batch.indices[static_cast<std::size_t>(r)])];
      total += predicted.numel();
    }
  }
  model.forget_inputs();
  return double(correct) / double(total);
}

// Trains a classifier on the labelled glosses for `epochs`; returns its test accuracy.
template <mpx::PrecisionPolicy P, class Model>
double finetune(Model& model, const Settings& s, const Data& data, const std::string& phase, double lr,
                std::vector<EpochRecord>& records, Summary& summary) {
  auto loss = mpx::nn::layers<P>::softmax_cross_entropy();
  mpx::optim::AdamW optimizer(model, {.lr = lr, .weight_decay = 0.01});
  mpx::Trainer trainer(model, loss, optimizer);
  mpx::data::PaddedBatches batches(data.labelled.sequences, batch_options(s, s.seed + 1, true));
  mpx::data::PaddedBatch batch;
  mpx::Tensor<std::int32_t> labels;
  double test = 0;
  for (int epoch = 0; epoch < s.finetune_epochs; ++epoch) {
    char label[64];
    std::snprintf(label, sizeof label, "%-10s %-9s %d/%d lr %g", std::string(P::name).c_str(), phase.c_str(),
                  epoch + 1, s.finetune_epochs, lr);
    mpx::experiment::ProgressBar bar(label);
    batches.start_epoch(std::uint64_t(epoch));
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    std::int64_t steps = 0, skipped = 0;
    while (batches.next(batch)) {
      const std::int64_t rows = batch.lengths.numel();
      if (labels.numel() != rows) labels = mpx::Tensor<std::int32_t>(mpx::Shape{rows});
      for (std::int64_t r = 0; r < rows; ++r)
        labels[r] =
            data.labelled.labels[static_cast<std::size_t>(batch.indices[static_cast<std::size_t>(r)])];
      model.set_lengths(lengths_of(batch));
      optimizer.set_lr(scheduled_lr(lr, epoch * batches.batches_per_epoch() + steps,
                                    s.finetune_epochs * batches.batches_per_epoch()));
      const mpx::StepResult result = trainer.step(batch.ids, labels);
      loss_sum += result.loss;
      skipped += result.stepped ? 0 : 1;
      ++steps;
      char status[64];
      std::snprintf(status, sizeof status, "loss %.4f  scale %g", result.loss, double(result.loss_scale));
      bar.update(steps, batches.batches_per_epoch(), status);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    test = accuracy(model, s, data.test);
    char status[96];
    std::snprintf(status, sizeof status, "loss %.4f  test %.2f%%  %.0f s", loss_sum / double(steps),
                  100 * test, seconds);
    bar.finish(steps, status);
    records.push_back({std::string(P::name), phase, lr, epoch + 1, loss_sum / double(steps), test,
                       trainer.scaler().scale(), skipped, seconds});
    summary.skipped_steps += skipped;
  }
  return test;
}

// "fp32", "bf16", "fp16": the names --precision takes.
std::string short_name(std::string_view precision) {
  return std::string(precision.substr(0, precision.find('_')));
}

// Pretrains the masked-LM and saves it to `path`; fills the summary's pretraining columns.
template <mpx::PrecisionPolicy P>
void pretrain(const mpx::experiment::EncoderShape& shape, const Settings& s, const Data& data,
              const std::string& path, std::vector<EpochRecord>& records, Summary& summary) {
  // [pretrain]
  auto mlm = mpx::experiment::masked_lm<P>(shape);
  mlm.initialize(s.seed);
  auto loss = mpx::nn::layers<P>::softmax_cross_entropy();
  mpx::optim::AdamW optimizer(mlm, {.lr = s.pretrain_lr, .weight_decay = 0.01});
  mpx::Trainer trainer(mlm, loss, optimizer);
  mpx::data::PaddedBatches batches(data.pretraining, batch_options(s, s.seed, true));
  const mpx::data::MaskedLmOptions masking{.vocabulary_size = std::int32_t(data.vocabulary.size()),
                                           .seed = s.seed};
  mpx::data::PaddedBatch batch;
  mpx::Tensor<std::int32_t> inputs, targets, chosen;
  std::vector<std::int32_t> rows;
  std::uint64_t step = 0;
  for (int epoch = 0; epoch < s.pretrain_epochs; ++epoch) {
    char label[64];
    std::snprintf(label, sizeof label, "%-10s pretrain  %d/%d", std::string(P::name).c_str(), epoch + 1,
                  s.pretrain_epochs);
    mpx::experiment::ProgressBar bar(label);
    batches.start_epoch(std::uint64_t(epoch));
    const auto start = std::chrono::steady_clock::now();
    std::optional<std::chrono::steady_clock::time_point> timed_from;
    double loss_sum = 0;
    std::int64_t steps = 0, skipped = 0;
    while (batches.next(batch)) {
      // The corrupted batch, and the head's rows and targets: the chosen tokens only.
      mpx::data::mask_tokens(batch.ids, batch.lengths, masking, step++, inputs, targets);
      mpx::data::chosen_tokens(targets, masking.ignore_index, rows, chosen);
      mlm.set_lengths(lengths_of(batch));
      mlm.select_tokens(rows);
      optimizer.set_lr(scheduled_lr(s.pretrain_lr, std::int64_t(step) - 1,
                                    s.pretrain_epochs * batches.batches_per_epoch()));
      const mpx::StepResult result = trainer.step(inputs, chosen);
      loss_sum += result.loss;
      skipped += result.stepped ? 0 : 1;
      ++steps;
      // The time of 50 steps after 10 of warm-up (buffers grown, caches warm).
      if (steps == 10) timed_from = std::chrono::steady_clock::now();
      if (steps == 60 && timed_from) {
        summary.seconds_per_50 =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - *timed_from).count();
      }
      char status[64];
      std::snprintf(status, sizeof status, "loss %.4f  scale %g", result.loss, double(result.loss_scale));
      bar.update(steps, batches.batches_per_epoch(), status);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    summary.pretrain_loss = loss_sum / double(steps);
    char status[96];
    std::snprintf(status, sizeof status, "masked-LM loss %.4f  %.0f s", summary.pretrain_loss, seconds);
    bar.finish(steps, status);
    records.push_back({summary.precision, "pretrain", s.pretrain_lr, epoch + 1, summary.pretrain_loss, 0.0,
                       trainer.scaler().scale(), skipped, seconds});
    summary.skipped_steps += skipped;
  }
  // [pretrain]
  summary.peak_bytes = trainer.first_step_memory().peak;
  summary.activation_bytes = trainer.first_step_memory().activations;
  summary.loss_scale = trainer.scaler().scale();
  mpx::io::save_weights(mlm, path);
}

template <mpx::PrecisionPolicy P>
Summary train(const Settings& s, const Data& data, std::vector<EpochRecord>& records) {
  Summary summary;
  summary.precision = P::name;
  const mpx::experiment::EncoderShape shape{.vocabulary = data.vocabulary.size(),
                                            .max_length = s.max_length,
                                            .width = s.width,
                                            .blocks = 2,
                                            .heads = 4,
                                            .classes = data.classes};
  // The pretrained weights are in a file: written now, or with --pretrain-epochs 0 by an earlier run.
  const std::string pretrained = s.pretrained + "." + short_name(P::name) + ".safetensors";
  if (s.pretrain_epochs > 0) pretrain<P>(shape, s, data, pretrained, records, summary);
  // [finetune]
  // Each classifier loads the encoder body from the pretrained file (its heads keep their fresh
  // weights: the report says which tensors loaded and why the others did not).
  for (const double lr : s.finetune_lrs) {
    auto classifier = mpx::experiment::sequence_classifier<P>(shape);
    classifier.initialize(s.seed + 2);
    const mpx::io::WeightMatch match = mpx::io::load_matching_weights(classifier, pretrained);
    if (lr == s.finetune_lrs.front()) std::printf("%s: %s\n", pretrained.c_str(), match.summary().c_str());
    const double accuracy = finetune<P>(classifier, s, data, "finetune", lr, records, summary);
    summary.accuracy_by_lr.emplace_back(lr, accuracy);
    if (accuracy > summary.finetuned_accuracy) {
      summary.finetuned_accuracy = accuracy;
      summary.best_lr = lr;
    }
  }
  // [finetune]
  // From scratch at the learning rate the pretrained encoder did best with.
  auto scratch = mpx::experiment::sequence_classifier<P>(shape);
  scratch.initialize(s.seed + 2);
  summary.scratch_accuracy = finetune<P>(scratch, s, data, "scratch", summary.best_lr, records, summary);
  mpx::experiment::write_csv(s.csv, std::span<const EpochRecord>(records));
  return summary;
}

// The baseline: logistic regression on each gloss's bag of words (token counts, log(1 + count)), in
// fp32, over the same vocabulary, batches and epochs as the fine-tuning.
double bag_of_words(const Settings& s, const Data& data) {
  const auto vocabulary = data.vocabulary.size();
  using L = mpx::nn::layers<mpx::fp32>;
  mpx::nn::Sequential model{L::linear(vocabulary, data.classes)};
  model.initialize(s.seed);
  auto loss = L::softmax_cross_entropy();
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2, .weight_decay = 0.0});
  mpx::Trainer trainer(model, loss, optimizer);
  const auto features = [&](const Split& split, const mpx::data::PaddedBatch& batch, mpx::Tensor<float>& x,
                            mpx::Tensor<std::int32_t>& y) {
    const std::int64_t rows = batch.lengths.numel(), columns = batch.ids.shape()[1];
    x = mpx::Tensor<float>(mpx::Shape{rows, vocabulary});
    y = mpx::Tensor<std::int32_t>(mpx::Shape{rows});
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t t = 0; t < batch.lengths[r]; ++t)
        x[r * vocabulary + batch.ids[r * columns + t]] += 1.0f;
      y[r] = split.labels[static_cast<std::size_t>(batch.indices[static_cast<std::size_t>(r)])];
    }
    for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = std::log1p(x[i]);
  };
  mpx::data::PaddedBatches batches(data.labelled.sequences, batch_options(s, s.seed + 1, true));
  mpx::data::PaddedBatch batch;
  mpx::Tensor<float> x;
  mpx::Tensor<std::int32_t> y;
  for (int epoch = 0; epoch < s.finetune_epochs; ++epoch) {
    batches.start_epoch(std::uint64_t(epoch));
    while (batches.next(batch)) {
      features(data.labelled, batch, x, y);
      trainer.step(x, y);
    }
  }
  mpx::data::PaddedBatches test_batches(data.test.sequences, batch_options(s, 0, false));
  std::int64_t correct = 0, total = 0;
  const mpx::nn::EvaluationMode evaluating(model);
  while (test_batches.next(batch)) {
    features(data.test, batch, x, y);
    const mpx::Tensor<std::int32_t> predicted = mpx::nn::predict(model.forward(x));
    for (std::int64_t r = 0; r < y.numel(); ++r) correct += predicted[r] == y[r];
    total += y.numel();
  }
  return double(correct) / double(total);
}

const mpx::experiment::Usage usage(
    "encoder",
    "[--precision fp32|bf16|fp16|all] [--pretrain-epochs N] [--finetune-epochs N] [--batch N] "
    "[--pretrain-lr X] [--finetune-lr X[,X...]] [--seed N] [--width N] [--max-length N] [--vocabulary N] "
    "[--train-samples N] [--labelled N] [--test-samples N] [--pretrain-text glosses|glosses+fortunes] "
    "[--fortunes PATH] [--pretrained PREFIX] [--csv PATH]");

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    const std::string value = usage.value_after(argc, argv, i);
    const auto number = [&](double low, double high, const std::string& text = {}) {
      return usage.number(option, text.empty() ? value : text, low, high);
    };
    const auto whole_number = [&](double low, double high) {
      const double v = number(low, high);
      if (v != std::floor(v)) usage.fail(option + " " + value + ": expected a whole number");
      return v;
    };
    if (option == "--precision")
      s.precision = value;
    else if (option == "--pretrain-epochs")
      s.pretrain_epochs = int(whole_number(0, 100));  // 0: fine-tune from the --pretrained files
    else if (option == "--finetune-epochs")
      s.finetune_epochs = int(whole_number(1, 100));
    else if (option == "--batch")
      s.batch = std::int64_t(whole_number(1, 4096));
    else if (option == "--pretrain-lr")
      s.pretrain_lr = number(1e-12, 10);
    else if (option == "--finetune-lr") {
      s.finetune_lrs.clear();  // a comma-separated list: each precision fine-tunes at each rate
      std::istringstream list(value);
      for (std::string item; std::getline(list, item, ',');)
        s.finetune_lrs.push_back(number(1e-12, 10, item));
    } else if (option == "--seed")
      s.seed = std::uint64_t(whole_number(0, 9007199254740992.0));
    else if (option == "--width")
      s.width = std::int64_t(whole_number(4, 1024));
    else if (option == "--max-length")
      s.max_length = std::int64_t(whole_number(3, 512));
    else if (option == "--vocabulary")
      s.vocabulary = std::int64_t(whole_number(6, 1000000));
    else if (option == "--train-samples")
      s.train_samples = std::int64_t(whole_number(1, 1000000));
    else if (option == "--labelled")
      s.labelled = std::int64_t(whole_number(0, 1000000));
    else if (option == "--test-samples")
      s.test_samples = std::int64_t(whole_number(1, 1000000));
    else if (option == "--pretrain-text")
      s.pretrain_text = value;
    else if (option == "--fortunes")
      s.fortunes = value;
    else if (option == "--pretrained")
      s.pretrained = value;
    else if (option == "--csv")
      s.csv = value;
    else
      usage.fail("unknown option " + option);
  }
  usage.require_one_of("--precision", s.precision, {"fp32", "bf16", "fp16", "all"});
  usage.require_one_of("--pretrain-text", s.pretrain_text, {"glosses", "glosses+fortunes"});
  if (s.width % 4 != 0) usage.fail("--width " + std::to_string(s.width) + ": must divide into the 4 heads");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  return mpx::experiment::run_job(
      argc, argv, usage.program(), [&](const mpx::experiment::DataParallelJob& job) {
        if (job.size > 1)
          throw mpx::invalid_argument("the encoder example trains in one process (no mpirun yet)");
        const Data data = load(settings);
        std::printf(
            "WordNet glosses: %zu for training, %zu of them labelled for fine-tuning, %zu to test; %d "
            "supersenses; vocabulary %lld words; %zu sequences to pretrain on (%s)\n",
            data.train.labels.size(), data.labelled.labels.size(), data.test.labels.size(), data.classes,
            static_cast<long long>(data.vocabulary.size()), data.pretraining.size(),
            settings.pretrain_text.c_str());
        std::vector<EpochRecord> records;
        std::vector<Summary> summaries;
        boost::hana::for_each(boost::hana::tuple_t<mpx::fp32, mpx::bf16_mixed, mpx::fp16_mixed>,
                              [&](auto type) {
                                using P = typename decltype(type)::type;
                                if (settings.precision == "all" || settings.precision == short_name(P::name))
                                  summaries.push_back(train<P>(settings, data, records));
                              });
        const double baseline = bag_of_words(settings, data);
        const Summary* fp32 = summaries.front().precision == "fp32" ? &summaries.front() : nullptr;
        std::printf("\n%-11s %10s %11s %8s %11s %9s %10s %9s %13s %8s %11s\n", "precision", "MLM loss",
                    "fine-tuned", "at lr", "scratch", "50 steps", "speed-up", "peak", "activations",
                    "skipped", "loss scale");
        for (const Summary& s : summaries) {
          char speedup[16] = "-";
          if (fp32 != nullptr && s.seconds_per_50 > 0)
            std::snprintf(speedup, sizeof speedup, "%.2fx", fp32->seconds_per_50 / s.seconds_per_50);
          // The pretraining columns, "-" when this run did not pretrain (--pretrain-epochs 0).
          char loss[16] = "-", time[16] = "-", peak[16] = "-", activations[16] = "-";
          if (settings.pretrain_epochs > 0) {
            std::snprintf(loss, sizeof loss, "%.4f", s.pretrain_loss);
            std::snprintf(time, sizeof time, "%.2fs", s.seconds_per_50);
            std::snprintf(peak, sizeof peak, "%.1f MiB", double(s.peak_bytes) / (1 << 20));
            std::snprintf(activations, sizeof activations, "%.2f MiB",
                          double(s.activation_bytes) / (1 << 20));
          }
          std::printf("%-11s %10s %10.2f%% %8g %10.2f%% %9s %10s %9s %13s %8lld %11g\n", s.precision.c_str(),
                      loss, 100 * s.finetuned_accuracy, s.best_lr, 100 * s.scratch_accuracy, time, speedup,
                      peak, activations, static_cast<long long>(s.skipped_steps), double(s.loss_scale));
        }
        std::printf("bag-of-words baseline (logistic regression, fp32): %.2f%%\n", 100 * baseline);
        if (settings.finetune_lrs.size() > 1) {  // the sweep: fine-tuned accuracy per precision and rate
          std::printf("\nfine-tuned test accuracy by learning rate\n%-11s", "precision");
          for (const double lr : settings.finetune_lrs) std::printf(" %9g", lr);
          std::printf("\n");
          const Summary* best = nullptr;
          for (const Summary& s : summaries) {
            std::printf("%-11s", s.precision.c_str());
            for (const auto& [lr, accuracy] : s.accuracy_by_lr) std::printf(" %8.2f%%", 100 * accuracy);
            std::printf("\n");
            if (best == nullptr || s.finetuned_accuracy > best->finetuned_accuracy) best = &s;
          }
          std::printf("best: %s at learning rate %g, %.2f%%\n", best->precision.c_str(), best->best_lr,
                      100 * best->finetuned_accuracy);
        }
        std::printf("per-epoch metrics: %s\n", settings.csv.c_str());
      });
}
