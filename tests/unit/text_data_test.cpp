// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The text data of the character model: TextCorpus on small directories written here (file order,
// what is skipped, vocabulary, split) and, where the Debian package is installed, on the real fortunes
// corpus; TextWindows (shift by one, the documented Philox draw recomputed here, reproducibility,
// resume) and SequentialTextWindows (the evaluation pass); and what the errors say.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

#include <mpx/data/text_corpus.hpp>
#include <mpx/data/text_windows.hpp>
#include <mpx/error.hpp>
#include <mpx/numeric/random.hpp>
#include <mpx/tensor/tensor.hpp>

#include "../support/error_matchers.hpp"

#include "../support/temp_dir.hpp"

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

namespace fs = std::filesystem;
using mpx::Host;
using mpx::Tensor;
using mpx::data::SequentialTextWindows;
using mpx::data::TextCorpus;
using mpx::data::TextWindows;
using mpx::test::MessageContains;
using Tokens = Tensor<std::int32_t, Host>;

// A scratch directory of this test file's own.
class TempDir : public mpx::test::TempDir {
 public:
  TempDir() : mpx::test::TempDir("mpx_text_data_test") {}
};

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

/// `count` bytes of lowercase text that differ from file to file.
std::string filler(std::size_t count, char first) {
  std::string text(count, first);
  for (std::size_t i = 0; i < count; ++i) text[i] = static_cast<char>('a' + (first - 'a' + i) % 26);
  return text;
}

/// Token sequence 0, 1, ..., n - 1: a window's values are then its positions.
std::vector<std::int32_t> iota_tokens(std::int32_t n) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(n));
  for (std::int32_t i = 0; i < n; ++i) tokens[static_cast<std::size_t>(i)] = i;
  return tokens;
}

std::vector<std::int32_t> values(const Tokens& tensor) {
  return {tensor.values().begin(), tensor.values().end()};
}

/// The window starts of batch k as TextWindows documents them, written out here from the definition
/// of Lemire's method (accept the high word of w × bound unless its low word is below 2^32 mod bound)
/// rather than with the library's helper.
std::vector<std::int64_t> documented_starts(std::uint64_t seed, std::uint64_t k, std::uint64_t bound,
                                            std::size_t rows) {
  const std::uint64_t threshold = (std::uint64_t{1} << 32) % bound;
  std::vector<std::int64_t> starts;
  std::uint64_t index = 0;
  while (starts.size() < rows) {
    const std::uint64_t product = std::uint64_t{mpx::random_bits(seed, k, index++)} * bound;
    if ((product & 0xffffffffu) >= threshold) starts.push_back(static_cast<std::int64_t>(product >> 32));
  }
  return starts;
}

}  // namespace

TEST_CASE("TextCorpus reads a directory's text files in name order and skips .dat, .u8, links, binaries",
          "[data][text]") {
  const TempDir dir;
  write_file(dir / "b-second", "second file\n%\n");
  write_file(dir / "a-first", "first file\n%\n");
  write_file(dir / "c-third", "");           // empty files are read (they add nothing)
  write_file(dir / "a-first.dat", "index");  // text, but skipped by name: fortune's index files
  write_file(dir / "binary", std::string("ab\0cd", 5));
  fs::create_symlink(dir / "a-first", dir / "a-first.u8");
  fs::create_symlink(dir / "b-second", dir / "link-to-second");
  write_file(dir / "zz.u8", "a .u8 regular file is skipped too\n");
  fs::create_directories(dir / "off");
  write_file(dir / "off" / "nested", "not read: directories are not descended into\n");

  const TextCorpus corpus(dir.path());
  CHECK(corpus.text() == "first file\n%\nsecond file\n%\n");
  REQUIRE(corpus.files().size() == 3);
  CHECK(corpus.files()[0].path.filename() == "a-first");
  CHECK(corpus.files()[1].path.filename() == "b-second");
  CHECK(corpus.files()[2].path.filename() == "c-third");
  CHECK(corpus.files()[0].offset == 0);
  CHECK(corpus.files()[1].offset == 13);
  CHECK(corpus.files()[1].size == 14);
  CHECK(corpus.files()[2].offset == 27);
  CHECK(corpus.files()[2].size == 0);
  CHECK(corpus.skipped_binary_files() == 1);
  CHECK(corpus.size() == 27);
  CHECK(corpus.path() == dir.path());
}

TEST_CASE("TextCorpus reads a single named file whatever its name, and rejects a binary one",
          "[data][text]") {
  const TempDir dir;
  write_file(dir / "words.dat", "named explicitly, so read\n");
  const TextCorpus corpus(dir / "words.dat");
  CHECK(corpus.text() == "named explicitly, so read\n");
  REQUIRE(corpus.files().size() == 1);

  write_file(dir / "image", std::string("\x89PNG\0\0", 6));
  CHECK_THROWS_MATCHES(TextCorpus(dir / "image"), mpx::io_error,
                       MessageContains({(dir / "image").string(), "binary", "byte 4 is NUL"}));
}

TEST_CASE("TextCorpus's vocabulary is the sorted distinct bytes and encode/decode round-trip",
          "[data][text]") {
  const TempDir dir;
  const std::string text = "hello, world\n\xc3\xa9t\xc3\xa9\n";  // "été" in UTF-8: bytes, not characters
  write_file(dir / "text", text);
  const TextCorpus corpus(dir / "text");

  const std::vector<std::uint8_t> expected{'\n', ' ', ',', 'd', 'e',  'h', 'l',
                                           'o',  'r', 't', 'w', 0xa9, 0xc3};
  CHECK(std::vector<std::uint8_t>(corpus.vocabulary().begin(), corpus.vocabulary().end()) == expected);
  CHECK(corpus.vocabulary_size() == 13);

  const std::vector<std::int32_t> ids = corpus.encode("hello");
  CHECK(ids == std::vector<std::int32_t>{5, 4, 6, 6, 7});
  CHECK(std::vector<std::int32_t>(corpus.tokens().begin(), corpus.tokens().end()) == corpus.encode(text));
  CHECK(corpus.decode(corpus.tokens()) == text);
  CHECK(corpus.decode(corpus.encode("world, det\xc3")) == "world, det\xc3");
  for (std::int32_t id = 0; id < corpus.vocabulary_size(); ++id) {
    const std::vector<std::int32_t> one{id};
    CHECK(corpus.encode(corpus.decode(one)) == one);
  }

  CHECK_THROWS_MATCHES(corpus.encode("held!"), mpx::invalid_argument,
                       MessageContains({"encode", "byte 33", "position 4", "13 bytes"}));
  const std::vector<std::int32_t> bad{0, 13};
  CHECK_THROWS_MATCHES(corpus.decode(bad), mpx::invalid_argument,
                       MessageContains({"decode", "token id 13", "position 1", "[0, 13)"}));
  const std::vector<std::int32_t> negative{-1};
  CHECK_THROWS_MATCHES(corpus.decode(negative), mpx::invalid_argument, MessageContains({"token id -1"}));
}

TEST_CASE("TextCorpus splits at the nearest file boundary within half the validation length, else exactly",
          "[data][text]") {
  const TempDir dir;  // four files of 400, 300, 200 and 100 bytes: boundaries at 400, 700 and 900
  write_file(dir / "1", filler(400, 'a'));
  write_file(dir / "2", filler(300, 'b'));
  write_file(dir / "3", filler(200, 'c'));
  write_file(dir / "4", filler(100, 'd'));

  const auto split_at = [&](double fraction) { return TextCorpus(dir.path(), {fraction}).split(); };
  CHECK(TextCorpus(dir.path()).split() == 900);  // default 0.1: exactly the boundary
  CHECK(split_at(0.25) == 700);                  // cut 750, boundary 700 is 50 <= 125 away
  CHECK(split_at(0.5) == 400);                   // cut 500, boundary 400 is 100 <= 250 away
  CHECK(split_at(0.04) == 960);                  // cut 960, nearest boundary 60 > 20 away: exact
  CHECK(split_at(0.0) == 1000);                  // no validation
  CHECK(split_at(0.95) == 400);                  // cut 50, boundary 400 is 350 <= 475 away

  const TextCorpus corpus(dir.path(), {0.25});
  CHECK(corpus.train_tokens().size() == 700);
  CHECK(corpus.validation_tokens().size() == 300);
  CHECK(corpus.train_tokens().data() == corpus.tokens().data());
  CHECK(corpus.validation_tokens().data() == corpus.tokens().data() + 700);
  CHECK(corpus.decode(corpus.validation_tokens()).substr(0, 200) == filler(200, 'c'));
  CHECK(TextCorpus(dir.path(), {0.0}).validation_tokens().empty());

  SECTION("a single file is cut at the exact byte") {
    write_file(dir / "single", filler(1000, 'a'));
    CHECK(TextCorpus(dir / "single").split() == 900);
    CHECK(TextCorpus(dir / "single", {0.333}).split() == 667);
  }
  SECTION("a boundary too far from the cut is not taken") {
    const TempDir uneven;  // 100 + 900 bytes: the only boundary is 800 bytes from the cut at 900
    write_file(uneven / "a", filler(100, 'a'));
    write_file(uneven / "b", filler(900, 'b'));
    CHECK(TextCorpus(uneven.path()).split() == 900);
  }
  SECTION("a validation fraction outside [0, 1) is rejected, naming the value") {
    for (const double fraction : {1.0, -0.1, 1.5, std::nan("")}) {
      INFO("validation_fraction " << fraction);
      CHECK_THROWS_MATCHES(TextCorpus(dir.path(), {fraction}), mpx::invalid_argument,
                           MessageContains({"validation_fraction = ", "[0, 1)"}));
    }
    CHECK_THROWS_MATCHES(TextCorpus(dir.path(), {1.5}), mpx::invalid_argument, MessageContains({"= 1.5 "}));
  }
}

TEST_CASE("TextCorpus's errors name the path and, for a missing corpus, the command that installs it",
          "[data][text]") {
  const TempDir dir;
  CHECK_THROWS_MATCHES(
      TextCorpus(dir / "no-such-corpus"), mpx::io_error,
      MessageContains({(dir / "no-such-corpus").string(), "not found", "apt-get install fortunes",
                       "/usr/share/games/fortunes", "MPX_TEXT_CORPUS"}));

  CHECK_THROWS_MATCHES(TextCorpus(dir.path()), mpx::io_error,
                       MessageContains({dir.path().string(), "holds no text", "0 text files"}));
  write_file(dir / "empty", "");
  write_file(dir / "binary", std::string(3, '\0'));
  CHECK_THROWS_MATCHES(TextCorpus(dir.path()), mpx::io_error,
                       MessageContains({dir.path().string(), "holds no text", "1 text files of 0 bytes",
                                        "1 binary files skipped"}));
  CHECK_THROWS_MATCHES(TextCorpus(dir / "empty"), mpx::io_error, MessageContains({"holds no text"}));
}

TEST_CASE("default_text_corpus_path honours MPX_TEXT_CORPUS", "[data][text]") {
  const char* saved = std::getenv("MPX_TEXT_CORPUS");
  const std::string saved_value = saved != nullptr ? saved : "";
  ::setenv("MPX_TEXT_CORPUS", "/some/where", 1);
  CHECK(mpx::data::default_text_corpus_path() == "/some/where");
  ::setenv("MPX_TEXT_CORPUS", "", 1);
  CHECK(mpx::data::default_text_corpus_path() == "/usr/share/games/fortunes");
  ::unsetenv("MPX_TEXT_CORPUS");
  CHECK(mpx::data::default_text_corpus_path() == mpx::data::fortunes_system_dir);
  if (saved != nullptr) ::setenv("MPX_TEXT_CORPUS", saved_value.c_str(), 1);
}

TEST_CASE("TextWindows: targets are the inputs shifted by one, starts follow the documented Philox draw",
          "[data][text]") {
  const std::vector<std::int32_t> tokens = iota_tokens(50);  // a window's values are its positions
  TextWindows windows(tokens, {.batch_size = 6, .context = 7, .seed = 42});
  Tokens inputs;
  Tokens targets;
  for (std::uint64_t k = 0; k < 20; ++k) {
    INFO("batch " << k);
    REQUIRE(windows.position() == k);
    const std::vector<std::int64_t> starts = windows.window_starts(k);
    CHECK(starts == documented_starts(42, k, 50 - 7, 6));
    windows.next(inputs, targets);
    REQUIRE(inputs.shape() == mpx::Shape{6, 7});
    REQUIRE(targets.shape() == mpx::Shape{6, 7});
    for (std::int64_t b = 0; b < 6; ++b) {
      const std::int64_t start = starts[static_cast<std::size_t>(b)];
      CHECK(start >= 0);
      CHECK(start + 7 < 50);  // the last target exists
      for (std::int64_t t = 0; t < 7; ++t) {
        CHECK(inputs[b * 7 + t] == start + t);
        CHECK(targets[b * 7 + t] == start + t + 1);
      }
    }
  }
}

TEST_CASE("TextWindows: batch k depends only on (seed, k), and resuming at k continues the stream",
          "[data][text]") {
  std::vector<std::int32_t> tokens(300);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((i * 7919) % 61);
  const TextWindows::Options options{.batch_size = 4, .context = 16, .seed = 7};

  TextWindows continuing(tokens, options);
  std::vector<std::vector<std::int32_t>> inputs_seen;
  std::vector<std::vector<std::int32_t>> targets_seen;
  Tokens x;
  Tokens y;
  for (int k = 0; k < 12; ++k) {
    continuing.next(x, y);
    inputs_seen.push_back(values(x));
    targets_seen.push_back(values(y));
  }
  CHECK(continuing.position() == 12);
  CHECK(inputs_seen[0] != inputs_seen[1]);

  TextWindows again(tokens, options);  // a second instance replays the same batches
  for (int k = 0; k < 12; ++k) {
    again.next(x, y);
    CHECK(values(x) == inputs_seen[static_cast<std::size_t>(k)]);
    CHECK(values(y) == targets_seen[static_cast<std::size_t>(k)]);
  }

  TextWindows resumed(tokens, options);  // resuming at batch 5, as from a checkpoint taken there
  resumed.set_position(5);
  for (int k = 5; k < 12; ++k) {
    resumed.next(x, y);
    CHECK(values(x) == inputs_seen[static_cast<std::size_t>(k)]);
    CHECK(values(y) == targets_seen[static_cast<std::size_t>(k)]);
  }
  CHECK(resumed.position() == 12);

  TextWindows other_seed(tokens, {.batch_size = 4, .context = 16, .seed = 8});
  other_seed.next(x, y);
  CHECK(values(x) != inputs_seen[0]);

  // The batch tensors are reused: no reallocation once they have the batch's shape.
  const std::int32_t* buffer = x.data();
  continuing.next(x, y);
  CHECK(x.data() == buffer);
}

TEST_CASE("TextWindows draws every start about equally often", "[data][text]") {
  const std::vector<std::int32_t> tokens = iota_tokens(20);  // 20 - 4 = 16 possible starts
  TextWindows windows(tokens, {.batch_size = 64, .context = 4, .seed = 3});
  std::vector<std::int64_t> counts(16, 0);
  for (std::uint64_t k = 0; k < 100; ++k) {
    for (const std::int64_t start : windows.window_starts(k)) ++counts[static_cast<std::size_t>(start)];
  }
  // 6400 draws, 400 expected per start, standard deviation about 19.4: a 5-sigma band.
  for (std::size_t s = 0; s < counts.size(); ++s) {
    INFO("start " << s);
    CHECK(counts[s] > 300);
    CHECK(counts[s] < 500);
  }
}

TEST_CASE("TextWindows shards: the ranks' rows are the rows of one global batch, in rank order",
          "[data][text][dist]") {
  // Each rank draws (and drops) the rows before its own: a rejected word would shift every later draw.
  const std::vector<std::int32_t> tokens = iota_tokens(20);
  TextWindows whole(tokens, {.batch_size = 9, .context = 7, .seed = 5});
  std::vector<TextWindows> ranks;
  for (std::int64_t r = 0; r < 3; ++r)
    ranks.emplace_back(tokens,
                       TextWindows::Options{.batch_size = 3, .context = 7, .seed = 5, .shard = {r, 3}});
  Tokens x;
  Tokens y;
  Tokens xr;
  Tokens yr;
  for (std::uint64_t k = 0; k < 8; ++k) {
    INFO("batch " << k);
    whole.next(x, y);
    const std::vector<std::int32_t> all_inputs = values(x);
    const std::vector<std::int32_t> all_targets = values(y);
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      INFO("rank " << r);
      ranks[r].next(xr, yr);
      REQUIRE(xr.shape() == mpx::Shape{3, 7});
      const auto first = static_cast<std::ptrdiff_t>(r * 3 * 7);
      CHECK(values(xr) ==
            std::vector<std::int32_t>(all_inputs.begin() + first, all_inputs.begin() + first + 21));
      CHECK(values(yr) ==
            std::vector<std::int32_t>(all_targets.begin() + first, all_targets.begin() + first + 21));
      CHECK(ranks[r].position() == k + 1);  // global batches, as a checkpoint records them
    }
  }
  // The ranks' draws differ: rank 1's first batch is not rank 0's.
  CHECK(ranks[0].window_starts(0) != ranks[1].window_starts(0));
  CHECK_THROWS_MATCHES(TextWindows(tokens, {.batch_size = 2, .context = 4, .seed = 1, .shard = {2, 2}}),
                       mpx::invalid_argument, MessageContains({"TextWindows", "shard = {index 2, count 2}"}));
  CHECK_THROWS_MATCHES(TextWindows(tokens, {.batch_size = 2, .context = 4, .seed = 1, .shard = {0, 0}}),
                       mpx::invalid_argument, MessageContains({"shard = {index 0, count 0}"}));
}

TEST_CASE("SequentialTextWindows covers the text once in non-overlapping windows, the last batch smaller",
          "[data][text]") {
  const std::vector<std::int32_t> tokens = iota_tokens(27);  // (27 - 1) / 5 = 5 windows, 1 token unscored
  SequentialTextWindows pass(tokens, {.batch_size = 2, .context = 5, .seed = 99});
  CHECK(pass.windows() == 5);
  CHECK(pass.batches() == 3);
  CHECK(pass.scored_tokens() == 25);

  const auto run = [&] {
    std::vector<std::int64_t> rows;
    std::vector<std::int32_t> all_inputs;
    std::vector<std::int32_t> all_targets;
    Tokens x;
    Tokens y;
    while (pass.next(x, y)) {
      REQUIRE(x.shape()[1] == 5);
      REQUIRE(y.shape() == x.shape());
      rows.push_back(x.shape()[0]);
      for (const std::int32_t v : x.values()) all_inputs.push_back(v);
      for (const std::int32_t v : y.values()) all_targets.push_back(v);
    }
    CHECK_FALSE(pass.next(x, y));  // stays exhausted
    CHECK(rows == std::vector<std::int64_t>{2, 2, 1});
    CHECK(all_inputs == iota_tokens(25));  // windows 0-4, 5-9, ... 20-24 in order
    for (std::size_t i = 0; i < all_targets.size(); ++i) CHECK(all_targets[i] == all_inputs[i] + 1);
    return all_inputs;
  };
  const std::vector<std::int32_t> first = run();
  pass.rewind();
  CHECK(run() == first);

  // The seed plays no part: evaluation windows are the same in every run.
  SequentialTextWindows other(tokens, {.batch_size = 2, .context = 5, .seed = 1});
  Tokens x;
  Tokens y;
  REQUIRE(other.next(x, y));
  CHECK(values(x) == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});

  // Exactly context + 1 tokens: one window.
  const std::vector<std::int32_t> six = iota_tokens(6);
  CHECK(SequentialTextWindows(six, {.batch_size = 4, .context = 5}).windows() == 1);
}

TEST_CASE("Text windows reject a window longer than the text and invalid sizes, naming the values",
          "[data][text]") {
  const std::vector<std::int32_t> tokens = iota_tokens(10);
  CHECK_THROWS_MATCHES(TextWindows(tokens, {.batch_size = 2, .context = 10}), mpx::invalid_argument,
                       MessageContains({"TextWindows", "10 tokens", "context 10", "context + 1 = 11"}));
  CHECK_THROWS_MATCHES(SequentialTextWindows(tokens, {.batch_size = 2, .context = 12}), mpx::invalid_argument,
                       MessageContains({"SequentialTextWindows", "10 tokens", "context 12", "13"}));
  CHECK_THROWS_MATCHES(TextWindows(tokens, {.batch_size = 0, .context = 4}), mpx::invalid_argument,
                       MessageContains({"batch_size = 0"}));
  CHECK_THROWS_MATCHES(TextWindows(tokens, {.batch_size = 1, .context = 0}), mpx::invalid_argument,
                       MessageContains({"context = 0"}));
  CHECK_THROWS_MATCHES(TextWindows(std::span<const std::int32_t>{}, {.batch_size = 1, .context = 1}),
                       mpx::invalid_argument, MessageContains({"0 tokens", "context + 1 = 2"}));
  CHECK_NOTHROW(TextWindows(tokens, {.batch_size = 2, .context = 9}));  // exactly context + 1 tokens
}

TEST_CASE("TextCorpus reads the real fortunes corpus: over 1 MB of text, fewer than 256 distinct bytes",
          "[data][text][real]") {
  if (!fs::is_directory(mpx::data::default_text_corpus_path())) {
    WARN("SKIPPED: no text corpus in " << mpx::data::default_text_corpus_path()
                                       << " (apt-get install fortunes)");
    return;
  }
  // [usage]
  const mpx::data::TextCorpus corpus;  // the fortunes files; the last ~10% (whole files) for validation
  mpx::data::TextWindows batches(corpus.train_tokens(), {.batch_size = 32, .context = 128, .seed = 1});
  mpx::data::SequentialTextWindows validation(corpus.validation_tokens(), {.batch_size = 64, .context = 128});
  Tensor<std::int32_t, Host> inputs;   // [batch, context] token ids
  Tensor<std::int32_t, Host> targets;  // the token after each input
  batches.next(inputs, targets);       // batch 0; a checkpoint stores batches.position() to resume
  std::int64_t scored = 0;
  for (validation.rewind(); validation.next(inputs, targets);) scored += targets.numel();  // evaluate here
  // [usage]

  const std::int64_t held_out = static_cast<std::int64_t>(corpus.validation_tokens().size());
  INFO(corpus.files().size() << " files, " << corpus.size() << " bytes, vocabulary "
                             << corpus.vocabulary_size() << ", split at " << corpus.split() << " ("
                             << held_out << " validation bytes)");
  CHECK(corpus.size() >= 1'000'000);
  CHECK(corpus.vocabulary_size() < 256);
  CHECK(corpus.vocabulary_size() > 60);  // letters of both cases, digits, punctuation
  CHECK(corpus.files().size() > 10);
  for (const mpx::data::TextFile& file : corpus.files()) {
    CHECK(file.path.extension() != ".dat");
    CHECK(file.path.extension() != ".u8");
    CHECK_FALSE(fs::is_symlink(file.path));
  }
  CHECK(std::is_sorted(corpus.files().begin(), corpus.files().end(), [](const auto& a, const auto& b) {
    return a.path.filename().string() < b.path.filename().string();
  }));
  CHECK(std::abs(static_cast<double>(held_out) - 0.1 * static_cast<double>(corpus.size())) <=
        0.05 * static_cast<double>(corpus.size()));
  CHECK(corpus.decode(corpus.tokens()) == corpus.text());
  CHECK(batches.position() == 1);
  CHECK(scored == validation.scored_tokens());
  CHECK(scored > held_out - 128);
}

}  // namespace MPX_UNITY_ID
}  // namespace
