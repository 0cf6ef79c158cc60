// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The data of the encoder example: WordNetGlosses on small WordNet directories written here (the
// fields, the labels, what every malformed line is told) and, where the Debian package is installed,
// on the real WordNet 3.0; the split (its documented hash recomputed here, proportions,
// independence of file order); WordVocabulary (tokens, order, encode, to_string / from_string and
// their errors); PaddedBatches (padding, truncation, bucketing, each sequence once per epoch); and
// mask_tokens (BERT's counts and rates, what is never masked, reproducibility); and the whole
// pipeline as docs/encoder.md shows it.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <mpx/backend/cross_entropy_spec.hpp>
#include <mpx/data/masked_lm.hpp>
#include <mpx/data/padded_batches.hpp>
#include <mpx/data/word_vocabulary.hpp>
#include <mpx/data/wordnet_glosses.hpp>
#include <mpx/error.hpp>
#include <mpx/io/safetensors.hpp>
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
using mpx::data::LastBatch;
using mpx::data::MaskedLmOptions;
using mpx::data::PaddedBatch;
using mpx::data::PaddedBatches;
using mpx::data::PartOfSpeech;
using mpx::data::WordNetGlosses;
using mpx::data::WordNetSplit;
using mpx::data::WordVocabulary;
using mpx::test::MessageContains;
using Ids = Tensor<std::int32_t, Host>;
using Sequences = std::vector<std::vector<std::int32_t>>;

// A scratch directory of this test file's own.
class TempDir : public mpx::test::TempDir {
 public:
  TempDir() : mpx::test::TempDir("mpx_encoder_data_test") {}
};

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

// The licence lines every real data file begins with: two spaces, a line number, text.
const std::string licence = "  1 This software and database is being provided to you  \n  2   \n";

// A small WordNet directory in the real files' format (two spaces after each gloss, as WordNet
// writes them), with a lexnames file of six lexicographer files. Tests change one file at a time.
struct WordNetFiles {
  std::string lexnames =
      "00\tadj.all\t3\n01\tadv.all\t4\n02\tnoun.animal\t1\n03\tnoun.plant\t1\n04\tverb.motion\t2\n05\tnoun."
      "Tops\t1\n";
  std::string noun = licence +
                     "00001740 02 n 02 big_cat 0 Lion 1 001 @ 00002000 n 0000 | a large feline; \"the lion "
                     "roars\"  \n"
                     "00002000 03 n 01 oak 0 000 | a tree  \n";
  std::string verb =
      licence + "00001740 04 v 01 run 0 001 @ 00001800 v 0000 02 + 02 00 + 08 01 | move fast on foot  \n";
  std::string adj = licence +
                    "00000100 00 a 01 big(a) 0 000 | large in size  \n"
                    "00000200 00 s 02 huge(p) 0 immense a 000 | very large  \n";
  std::string adv = licence + "00000300 01 r 01 quickly 0 000 | with speed  \n";
  bool with_lexnames = true;

  void write(const fs::path& dir) const {
    if (with_lexnames) write_file(dir / "lexnames", lexnames);
    write_file(dir / "data.noun", noun);
    write_file(dir / "data.verb", verb);
    write_file(dir / "data.adj", adj);
    write_file(dir / "data.adv", adv);
  }
};

// The bucket as wordnet_split_bucket documents it, written out here from splitmix64's published
// definition rather than with the library's helper.
std::int32_t documented_bucket(char letter, std::uint64_t offset) {
  std::uint64_t z = offset * 256 + static_cast<std::uint8_t>(letter) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<std::int32_t>((z ^ (z >> 31)) % 100);
}

}  // namespace

// ---- WordNetGlosses ------------------------------------------------------------------------------

TEST_CASE("WordNetGlosses reads synsets: offsets, labels, words, glosses, in file order", "[data][wordnet]") {
  const TempDir dir;
  WordNetFiles{}.write(dir.path());
  const WordNetGlosses glosses(dir.path());

  REQUIRE(glosses.label_count() == 6);
  CHECK(glosses.label_names()[2] == "noun.animal");
  CHECK(glosses.label_names()[4] == "verb.motion");
  REQUIRE(glosses.synsets().size() == 6);
  CHECK(glosses.path() == dir.path());

  const mpx::data::WordNetSynset& lion = glosses.synsets()[0];
  CHECK(lion.offset == 1740);
  CHECK(lion.part_of_speech == PartOfSpeech::Noun);
  CHECK_FALSE(lion.satellite);
  CHECK(lion.label == 2);
  CHECK(lion.label_name == "noun.animal");
  CHECK(lion.words == std::vector<std::string>{"big cat", "Lion"});  // `_` read as a space, case kept
  CHECK(lion.gloss == "a large feline; \"the lion roars\"");         // trimmed
  CHECK(glosses.synsets()[1].words == std::vector<std::string>{"oak"});
  CHECK(glosses.synsets()[1].label_name == "noun.plant");

  const mpx::data::WordNetSynset& run = glosses.synsets()[2];
  CHECK(run.part_of_speech == PartOfSpeech::Verb);
  CHECK(run.offset == 1740);  // the same offset as a noun: offsets are per file
  CHECK(run.label_name == "verb.motion");
  CHECK(run.gloss == "move fast on foot");

  // Adjectives: the syntactic markers (a), (p) are dropped; a satellite is marked.
  CHECK(glosses.synsets()[3].words == std::vector<std::string>{"big"});
  CHECK_FALSE(glosses.synsets()[3].satellite);
  CHECK(glosses.synsets()[4].words == std::vector<std::string>{"huge", "immense"});
  CHECK(glosses.synsets()[4].satellite);
  CHECK(glosses.synsets()[4].part_of_speech == PartOfSpeech::Adjective);
  CHECK(glosses.synsets()[5].part_of_speech == PartOfSpeech::Adverb);
  CHECK(glosses.synsets()[5].label_name == "adv.all");

  // Every synset in exactly one set, the one its hash gives.
  std::size_t listed = 0;
  for (const WordNetSplit split : {WordNetSplit::Train, WordNetSplit::Validation, WordNetSplit::Test}) {
    for (const std::int64_t i : glosses.indices(split)) {
      CHECK(glosses.synsets()[static_cast<std::size_t>(i)].split == split);
      ++listed;
    }
  }
  CHECK(listed == glosses.synsets().size());
  for (const mpx::data::WordNetSynset& synset : glosses.synsets()) {
    CHECK(synset.split == mpx::data::wordnet_split_of(synset.part_of_speech, synset.offset));
  }
}

TEST_CASE("WordNetGlosses without a lexnames file uses WordNet 3.0's 45 lexicographer files",
          "[data][wordnet]") {
  const TempDir dir;
  WordNetFiles files;
  files.with_lexnames = false;
  files.noun = licence + "00001740 05 n 01 lion 0 000 | a large feline  \n";
  files.verb = licence + "00001740 38 v 01 run 0 000 01 + 02 00 | move fast  \n";
  files.adj = licence + "00000100 44 a 01 broken 0 000 | damaged  \n";
  files.adv = licence + "00000300 02 r 01 quickly 0 000 | with speed  \n";
  files.write(dir.path());
  const WordNetGlosses glosses(dir.path());
  REQUIRE(glosses.label_count() == 45);
  CHECK(glosses.label_names()[0] == "adj.all");
  CHECK(glosses.label_names()[3] == "noun.Tops");
  CHECK(glosses.label_names()[44] == "adj.ppl");
  CHECK(glosses.synsets()[0].label_name == "noun.animal");
  CHECK(glosses.synsets()[1].label_name == "verb.motion");
  CHECK(glosses.synsets()[2].label_name == "adj.ppl");
  CHECK(glosses.synsets()[3].label_name == "adv.all");
}

TEST_CASE("default_wordnet_dir honours MPX_WORDNET_DIR", "[data][wordnet]") {
  const char* saved = std::getenv("MPX_WORDNET_DIR");
  const std::string saved_value = saved != nullptr ? saved : "";
  ::setenv("MPX_WORDNET_DIR", "/some/where", 1);
  CHECK(mpx::data::default_wordnet_dir() == "/some/where");
  ::setenv("MPX_WORDNET_DIR", "", 1);
  CHECK(mpx::data::default_wordnet_dir() == "/usr/share/wordnet");
  ::unsetenv("MPX_WORDNET_DIR");
  CHECK(mpx::data::default_wordnet_dir() == mpx::data::wordnet_system_dir);
  if (saved != nullptr) ::setenv("MPX_WORDNET_DIR", saved_value.c_str(), 1);
}

TEST_CASE("WordNetGlosses names the directory or file that is missing and how to install WordNet",
          "[data][wordnet]") {
  const TempDir dir;
  CHECK_THROWS_MATCHES(WordNetGlosses(dir / "nowhere"), mpx::io_error,
                       MessageContains({(dir / "nowhere").string(), "not a WordNet directory",
                                        "apt-get install wordnet-base", "MPX_WORDNET_DIR"}));
  WordNetFiles{}.write(dir.path());
  fs::remove(dir / "data.verb");
  CHECK_THROWS_MATCHES(
      WordNetGlosses(dir.path()), mpx::io_error,
      MessageContains({(dir / "data.verb").string(), "not found", "apt-get install wordnet-base",
                       "/usr/share/wordnet", "MPX_WORDNET_DIR"}));
  CHECK_THROWS_MATCHES(WordNetGlosses(dir.path(), {.validation_percent = 60, .test_percent = 50}),
                       mpx::invalid_argument,
                       MessageContains({"validation_percent = 60", "test_percent = 50", "sum <= 100"}));
}

TEST_CASE("WordNetGlosses rejects every malformed line, naming the file, the line and the content",
          "[data][wordnet]") {
  const TempDir dir;
  const std::string noun_path = (dir / "data.noun").string();
  // The malformed line replaces the noun file's first synset: line 3, after the two licence lines.
  WordNetFiles{}.write(dir.path());
  const auto noun_error = [&](const std::string& line) -> std::string {
    write_file(dir / "data.noun", licence + line + "\n00002000 03 n 01 oak 0 000 | a tree  \n");
    try {
      const WordNetGlosses glosses(dir.path());
    } catch (const mpx::io_error& e) {
      return e.what();
    }
    return "<nothing thrown>";
  };
  const auto check = [&](const std::string& line, std::initializer_list<std::string> fragments) {
    INFO(line);
    const std::string message = noun_error(line);
    INFO(message);
    CHECK(message.find(noun_path) != std::string::npos);
    CHECK(message.find(" line 3: ") != std::string::npos);
    for (const std::string& fragment : fragments) CHECK(message.find(fragment) != std::string::npos);
  };

  check("00001740 02 n zz lion 0 000 | a cat",
        {"w_cnt \"zz\"", "not a hexadecimal number", "00001740 02 n zz"});
  check("00001740 02 n 00 000 | a cat", {"w_cnt is 0"});
  // w_cnt too large: the next word's lex_id is `@`; too small: p_cnt reads a word.
  check("00001740 02 n 03 big_cat 0 Lion 1 001 @ 00002000 n 0000 | a cat",
        {"lex_id of word 3 \"001\" \"@\"", "hexadecimal"});
  check("00001740 02 n 01 big_cat 0 Lion 1 001 @ 00002000 n 0000 | a cat", {"p_cnt \"Lion\"", "decimal"});
  // p_cnt too large / too small.
  check("00001740 02 n 01 lion 0 002 @ 00002000 n 0000 | a cat",
        {"missing pointer_symbol of pointer 2 of 2 (p_cnt) (field 12)", "11 fields"});
  check("00001740 02 n 01 lion 0 000 @ 00002000 n 0000 | a cat",
        {"4 unexpected fields before `|`, from \"@\" (field 8)", "w_cnt or p_cnt wrong"});
  check("00001740 02 n 01 lion 0 001 @ 0000200x n 0000 | a cat", {"synset_offset of pointer 1 \"0000200x\""});
  check("00001740 02 n 01 lion 0 001 @ 00002000 q 0000 | a cat", {"pos \"q\" of pointer 1"});
  check("00001740 02 n 01 lion 0 000 a cat", {"no `|`", "truncated"});
  check("00001740 02 n 01 lion", {"no `|`"});
  check("00001740 02 n | a cat", {"missing w_cnt (field 4)"});
  check("00001740 02 n 01 lion 0 000 |   ", {"gloss after `|` is empty"});
  check("0000174x 02 n 01 lion 0 000 | a cat", {"synset_offset \"0000174x\"", "decimal"});
  check("00001740 06 n 01 lion 0 000 | a cat", {"lex_filenum 6 is out of range", "numbered 0 to 5"});
  check("00001740 04 n 01 lion 0 000 | a cat", {"lex_filenum 4 (verb.motion) is not a noun file"});
  check("00001740 02 v 01 lion 0 000 | a cat", {"ss_type \"v\" is invalid in a noun file"});
  check("", {"empty line"});
  // The next line has the same offset.
  CHECK_THAT(noun_error("00002000 03 n 01 ash 0 000 | a tree"),
             Catch::Contains("line 4: synset_offset 2000 occurs twice (lines 3 and 4)"));

  // Verb frames: f_cnt is required and each frame is `+ f_num w_num`.
  WordNetFiles files;
  files.verb = licence + "00001740 04 v 01 run 0 000 | move fast  \n";
  files.write(dir.path());
  CHECK_THROWS_MATCHES(WordNetGlosses(dir.path()), mpx::io_error,
                       MessageContains({(dir / "data.verb").string(), "line 3", "missing f_cnt"}));
  files.verb = licence + "00001740 04 v 01 run 0 000 01 - 02 00 | move fast  \n";
  files.write(dir.path());
  CHECK_THROWS_MATCHES(WordNetGlosses(dir.path()), mpx::io_error,
                       MessageContains({"frame 1 starts with \"-\"; expected `+`"}));

  // Without a lexnames file the labels are WordNet's 45.
  files = WordNetFiles{};
  files.with_lexnames = false;
  files.noun = licence + "00001740 45 n 01 lion 0 000 | a cat\n";
  files.write(dir.path());
  fs::remove(dir / "lexnames");
  CHECK_THROWS_MATCHES(WordNetGlosses(dir.path()), mpx::io_error,
                       MessageContains({noun_path, "line 3", "lex_filenum 45 is out of range", "0 to 44"}));
}

TEST_CASE("WordNetGlosses rejects a malformed lexnames file, naming the line", "[data][wordnet]") {
  const TempDir dir;
  const std::string path = (dir / "lexnames").string();
  WordNetFiles files;
  files.lexnames = "00\tadj.all\t3\n02\tadv.all\t4\n";
  files.write(dir.path());
  CHECK_THROWS_MATCHES(WordNetGlosses(dir.path()), mpx::io_error,
                       MessageContains({path, "line 2", "file number \"02\" is not 1"}));
  files.lexnames = "00\tadj.all\t3\n01\tadv.all\n";
  files.write(dir.path());
  CHECK_THROWS_MATCHES(WordNetGlosses(dir.path()), mpx::io_error,
                       MessageContains({path, "line 2", "2 fields; expected 3"}));
  files.lexnames = "00\tadj.all\t7\n";
  files.write(dir.path());
  CHECK_THROWS_MATCHES(WordNetGlosses(dir.path()), mpx::io_error,
                       MessageContains({path, "line 1", "syntactic category \"7\" is invalid"}));
  files.lexnames = "\n";
  files.write(dir.path());
  CHECK_THROWS_MATCHES(WordNetGlosses(dir.path()), mpx::io_error,
                       MessageContains({path, "holds no lexicographer files"}));
}

TEST_CASE("The WordNet split is the documented hash: deterministic, independent of file order, 80/10/10",
          "[data][wordnet]") {
  const char letters[] = {'n', 'v', 'a', 'r'};
  std::map<WordNetSplit, std::int64_t> counts;
  constexpr std::int64_t per_part = 50000;
  for (int p = 0; p < 4; ++p) {
    const auto part = static_cast<PartOfSpeech>(p);
    REQUIRE(mpx::data::part_of_speech_letter(part) == letters[p]);
    for (std::int64_t offset = 0; offset < per_part; ++offset) {
      const std::int32_t bucket = mpx::data::wordnet_split_bucket(part, offset);
      REQUIRE(bucket == documented_bucket(letters[p], static_cast<std::uint64_t>(offset)));
      const WordNetSplit split = mpx::data::wordnet_split_of(part, offset);
      REQUIRE(split == (bucket < 80   ? WordNetSplit::Train
                        : bucket < 90 ? WordNetSplit::Validation
                                      : WordNetSplit::Test));
      ++counts[split];
    }
  }
  // 200000 synsets: the standard deviation of a 10% share is 0.07 points; 0.5 points is 7 of them.
  constexpr double total = 4.0 * per_part;
  CHECK(std::abs(static_cast<double>(counts[WordNetSplit::Train]) / total - 0.8) < 0.005);
  CHECK(std::abs(static_cast<double>(counts[WordNetSplit::Validation]) / total - 0.1) < 0.005);
  CHECK(std::abs(static_cast<double>(counts[WordNetSplit::Test]) / total - 0.1) < 0.005);

  // Other shares move the boundaries: buckets 0-69 train, 70-99 validation, no test.
  const mpx::data::WordNetSplitOptions no_test{.validation_percent = 30, .test_percent = 0};
  for (std::int64_t offset = 0; offset < 1000; ++offset) {
    const std::int32_t bucket = mpx::data::wordnet_split_bucket(PartOfSpeech::Verb, offset);
    CHECK(mpx::data::wordnet_split_of(PartOfSpeech::Verb, offset, no_test) ==
          (bucket < 70 ? WordNetSplit::Train : WordNetSplit::Validation));
  }

  // The same synsets in another line order are split alike.
  const TempDir forward_dir;
  const TempDir reversed_dir;
  WordNetFiles files;
  std::string forward;
  std::string reversed;
  for (int i = 0; i < 40; ++i) {
    const std::string line =
        std::to_string(10000000 + 97 * i) + " 02 n 01 cat" + std::to_string(i) + " 0 000 | a cat\n";
    forward += line;
    reversed = line + reversed;
  }
  files.noun = licence + forward;
  files.write(forward_dir.path());
  files.noun = licence + reversed;
  files.write(reversed_dir.path());
  const auto splits_by_offset = [](const WordNetGlosses& glosses) {
    std::map<std::pair<PartOfSpeech, std::int64_t>, WordNetSplit> splits;
    for (const auto& synset : glosses.synsets())
      splits[{synset.part_of_speech, synset.offset}] = synset.split;
    return splits;
  };
  const WordNetGlosses a(forward_dir.path());
  const WordNetGlosses b(reversed_dir.path());
  CHECK(a.synsets().front().offset == b.synsets()[39].offset);
  CHECK(splits_by_offset(a) == splits_by_offset(b));
}

TEST_CASE("WordNetGlosses reads the real WordNet 3.0: 117659 synsets, 45 labels, the split's sizes",
          "[data][wordnet][real]") {
  const fs::path dir = mpx::data::default_wordnet_dir();
  if (!fs::exists(dir / "data.noun")) {
    WARN("SKIPPED: WordNet not found in " << dir << " (apt-get install wordnet-base)");
    return;
  }
  const WordNetGlosses glosses(dir);
  CHECK(glosses.synsets().size() == 117659);
  REQUIRE(glosses.label_count() == 45);
  std::map<PartOfSpeech, std::int64_t> per_part;
  std::set<std::int32_t> labels_used;
  std::int64_t satellites = 0;
  for (const auto& synset : glosses.synsets()) {
    ++per_part[synset.part_of_speech];
    labels_used.insert(synset.label);
    satellites += synset.satellite ? 1 : 0;
  }
  // `grep -vc '^  ' data.noun` etc.
  CHECK(per_part[PartOfSpeech::Noun] == 82115);
  CHECK(per_part[PartOfSpeech::Verb] == 13767);
  CHECK(per_part[PartOfSpeech::Adjective] == 18156);
  CHECK(per_part[PartOfSpeech::Adverb] == 3621);
  CHECK(satellites == 10693);
  CHECK(labels_used.size() == 45);
  // Pinned: a change of the split's hash or shares shows here.
  CHECK(glosses.indices(WordNetSplit::Train).size() == 94069);
  CHECK(glosses.indices(WordNetSplit::Validation).size() == 11820);
  CHECK(glosses.indices(WordNetSplit::Test).size() == 11770);
  const auto& entity = glosses.synsets().front();
  CHECK(entity.offset == 1740);
  CHECK(entity.label_name == "noun.Tops");
  CHECK(entity.words == std::vector<std::string>{"entity"});
  CHECK(entity.gloss ==
        "that which is perceived or known or inferred to have its own distinct existence (living or "
        "nonliving)");

  std::vector<std::string_view> train_glosses;
  for (const std::int64_t i : glosses.indices(WordNetSplit::Train)) {
    train_glosses.push_back(glosses.synsets()[static_cast<std::size_t>(i)].gloss);
  }
  CHECK(WordVocabulary::build(train_glosses, {.min_count = 2}).size() == 31451);
}

// ---- WordVocabulary ------------------------------------------------------------------------------

TEST_CASE("WordVocabulary tokenizes lowercased words and single punctuation marks", "[data][vocabulary]") {
  CHECK(WordVocabulary::tokenize("The cat's toy (red).") ==
        std::vector<std::string>{"the", "cat", "'", "s", "toy", "(", "red", ")", "."});
  CHECK(WordVocabulary::tokenize("  A1\tb2\n--x  ") == std::vector<std::string>{"a1", "b2", "-", "-", "x"});
  CHECK(WordVocabulary::tokenize("Caf\xc3\xa9 [MASK]") ==
        std::vector<std::string>{"caf\xc3\xa9", "[", "mask", "]"});  // UTF-8 stays in its word
  CHECK(WordVocabulary::tokenize("").empty());
}

TEST_CASE("WordVocabulary orders words by count then by word, with the special tokens first",
          "[data][vocabulary]") {
  const std::vector<std::string> texts{"b a a", "c B a", "d."};
  const WordVocabulary vocabulary = WordVocabulary::build(texts);
  REQUIRE(vocabulary.size() == 10);
  for (std::int32_t id = 0; id < 5; ++id)
    CHECK(vocabulary.word_of(id) == WordVocabulary::special_words[static_cast<std::size_t>(id)]);
  // a: 3, b: 2, then count 1 in byte order: "." < "c" < "d".
  CHECK(vocabulary.word_of(5) == "a");
  CHECK(vocabulary.word_of(6) == "b");
  CHECK(vocabulary.word_of(7) == ".");
  CHECK(vocabulary.word_of(8) == "c");
  CHECK(vocabulary.word_of(9) == "d");
  CHECK(vocabulary.id_of("[CLS]") == WordVocabulary::cls_id);
  CHECK(vocabulary.id_of("[MASK]") == 4);
  CHECK(vocabulary.id_of("b") == 6);
  CHECK(vocabulary.id_of("zebra") == WordVocabulary::unk_id);
  CHECK(vocabulary.contains("d"));
  CHECK_FALSE(vocabulary.contains("zebra"));

  CHECK(vocabulary.encode("A b, zebra d.") == std::vector<std::int32_t>{5, 6, 1, 1, 9, 7});  // "," is unknown
  const std::vector<std::int32_t> framed{2, 5, 6, 1, 3, 0};
  CHECK(vocabulary.decode(framed) == "[CLS] a b [UNK] [SEP] [PAD]");
  CHECK_THROWS_MATCHES(vocabulary.decode(std::vector<std::int32_t>{5, 10}), mpx::invalid_argument,
                       MessageContains({"id 10 at position 1", "outside [0, 10)"}));
  CHECK_THROWS_MATCHES(static_cast<void>(vocabulary.word_of(-1)), mpx::invalid_argument,
                       MessageContains({"id -1", "[0, 10)"}));

  // The same texts in another order give the same vocabulary.
  const std::vector<std::string> shuffled{"d.", "c B a", "b a a"};
  CHECK(WordVocabulary::build(shuffled) == vocabulary);

  const WordVocabulary frequent = WordVocabulary::build(texts, {.min_count = 2});
  CHECK(frequent.size() == 7);
  CHECK(frequent.word_of(6) == "b");
  const WordVocabulary capped = WordVocabulary::build(texts, {.max_size = 6});
  CHECK(capped.size() == 6);
  CHECK(capped.word_of(5) == "a");
  CHECK(WordVocabulary::build(texts, {.max_size = 5}).size() == 5);
  CHECK(WordVocabulary().size() == 5);

  CHECK_THROWS_MATCHES(WordVocabulary::build(texts, {.min_count = 0}), mpx::invalid_argument,
                       MessageContains({"min_count = 0"}));
  CHECK_THROWS_MATCHES(WordVocabulary::build(texts, {.max_size = 4}), mpx::invalid_argument,
                       MessageContains({"max_size = 4", "special tokens"}));
  const mpx::data::SpecialTokens tokens = WordVocabulary::special_tokens();
  CHECK((tokens.pad == 0 && tokens.unk == 1 && tokens.cls == 2 && tokens.sep == 3 && tokens.mask == 4));
}

TEST_CASE("WordVocabulary round-trips through to_string and from_string", "[data][vocabulary]") {
  const std::vector<std::string> texts{"the cat sat; the dog ran", "caf\xc3\xa9 au lait"};
  const WordVocabulary vocabulary = WordVocabulary::build(texts);
  const std::string text = vocabulary.to_string();
  CHECK(text.rfind("mpx-word-vocabulary 1 14\n[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n;\nau\n", 0) == 0);
  CHECK(text.back() == '\n');
  const WordVocabulary loaded = WordVocabulary::from_string(text);
  CHECK(loaded == vocabulary);
  CHECK(loaded.encode("The dog, caf\xc3\xa9") == vocabulary.encode("The dog, caf\xc3\xa9"));
  CHECK(WordVocabulary::from_string(text.substr(0, text.size() - 1)) == vocabulary);  // no final newline
  CHECK(WordVocabulary::from_string(WordVocabulary().to_string()) == WordVocabulary());
}

TEST_CASE("WordVocabulary::from_string rejects a malformed or mismatched text, naming the line",
          "[data][vocabulary]") {
  const std::string specials = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
  const auto error = [](const std::string& text) {
    try {
      static_cast<void>(WordVocabulary::from_string(text));
    } catch (const mpx::io_error& e) {
      return std::string(e.what());
    }
    return std::string("<nothing thrown>");
  };
  CHECK_THAT(error(""), Catch::Contains("line 1") && Catch::Contains("empty text"));
  CHECK_THAT(error("hello world\n" + specials),
             Catch::Contains("line 1 \"hello world\"") && Catch::Contains("not a vocabulary header"));
  CHECK_THAT(error("mpx-word-vocabulary 2 5\n" + specials),
             Catch::Contains("format version \"2\" is not supported") && Catch::Contains("reads version 1"));
  CHECK_THAT(error("mpx-word-vocabulary 1 five\n" + specials),
             Catch::Contains("size \"five\" is not a decimal"));
  CHECK_THAT(error("mpx-word-vocabulary 1 7\n" + specials + "cat\n"),
             Catch::Contains("declares 7 words but 6 lines follow") && Catch::Contains("truncated"));
  CHECK_THAT(error("mpx-word-vocabulary 1 3\n[PAD]\n[UNK]\n[CLS]\n"), Catch::Contains("size 3 is invalid"));
  CHECK_THAT(
      error("mpx-word-vocabulary 1 6\n[PAD]\n[CLS]\n[UNK]\n[SEP]\n[MASK]\ncat\n"),
      Catch::Contains("line 3 \"[CLS]\"") && Catch::Contains("expected the special token [UNK] at id 1"));
  CHECK_THAT(error("mpx-word-vocabulary 1 6\n" + specials + "Cat\n"),
             Catch::Contains("line 7 \"Cat\"") && Catch::Contains("word of id 5 is not a token"));
  CHECK_THAT(error("mpx-word-vocabulary 1 6\n" + specials + "ice cream\n"),
             Catch::Contains("line 7 \"ice cream\"") && Catch::Contains("not a token"));
  CHECK_THAT(error("mpx-word-vocabulary 1 6\n" + specials + "\n"), Catch::Contains("line 7 \"\""));
  CHECK_THAT(error("mpx-word-vocabulary 1 6\n" + specials + "--\n"), Catch::Contains("not a token"));
  CHECK_THAT(error("mpx-word-vocabulary 1 7\n" + specials + "cat\ncat\n"),
             Catch::Contains("line 8 \"cat\"") && Catch::Contains("listed twice (first at id 5, line 7)"));
  CHECK_THAT(error("mpx-word-vocabulary 1 6\n" + specials + "[PAD]\n"), Catch::Contains("not a token"));
}

TEST_CASE("WordVocabulary survives a checkpoint's metadata: quotes, backslashes, UTF-8",
          "[data][vocabulary]") {
  const std::vector<std::string> texts{"say \"hi\" \\ to caf\xc3\xa9 \t (twice) \"hi\""};
  const WordVocabulary vocabulary = WordVocabulary::build(texts);
  REQUIRE(vocabulary.contains("\""));
  REQUIRE(vocabulary.contains("\\"));
  const std::string file = mpx::io::encode_safetensors({}, {{"vocabulary", vocabulary.to_string()}});
  std::vector<std::byte> bytes(file.size());
  std::transform(file.begin(), file.end(), bytes.begin(), [](char c) { return static_cast<std::byte>(c); });
  const mpx::io::SafetensorsFile parsed = mpx::io::parse_safetensors(std::move(bytes), "memory");
  CHECK(WordVocabulary::from_string(parsed.metadata().at("vocabulary")) == vocabulary);
}

// ---- PaddedBatches -------------------------------------------------------------------------------

namespace {

std::vector<std::int32_t> row_of(const Ids& ids, std::int64_t row) {
  const std::int64_t columns = ids.shape()[1];
  return {ids.data() + row * columns, ids.data() + (row + 1) * columns};
}

/// `count` sequences `[CLS] w... [SEP]` of lengths 3 to 3 + spread - 1, word ids from 5 on.
Sequences framed_sequences(std::int32_t count, std::int32_t spread, std::uint64_t seed) {
  Sequences sequences;
  for (std::int32_t i = 0; i < count; ++i) {
    const auto words =
        1 + static_cast<std::int32_t>(mpx::random_bits(seed, 0, static_cast<std::uint64_t>(i)) %
                                      static_cast<std::uint32_t>(spread));
    std::vector<std::int32_t> sequence{2};
    for (std::int32_t w = 0; w < words; ++w) sequence.push_back(5 + (i * 7 + w) % 50);
    sequence.push_back(3);
    sequences.push_back(sequence);
  }
  return sequences;
}

/// Every batch of one epoch, as (indices, lengths, ids) triples.
struct DealtBatch {
  std::vector<std::int64_t> indices;
  std::vector<std::int32_t> lengths;
  std::vector<std::int32_t> ids;
  std::int64_t columns = 0;
  bool operator==(const DealtBatch&) const = default;
};

std::vector<DealtBatch> epoch_of(PaddedBatches& batches, std::uint64_t epoch) {
  batches.start_epoch(epoch);
  std::vector<DealtBatch> dealt;
  PaddedBatch batch;
  while (batches.next(batch)) {
    dealt.push_back({batch.indices,
                     {batch.lengths.values().begin(), batch.lengths.values().end()},
                     {batch.ids.values().begin(), batch.ids.values().end()},
                     batch.ids.shape()[1]});
  }
  return dealt;
}

}  // namespace

TEST_CASE("PaddedBatches pads each batch to its longest sequence and gives lengths and indices",
          "[data][padded_batches]") {
  const Sequences sequences{{2, 10, 3}, {2, 11, 12, 13, 3}, {2, 3}, {2, 14, 15, 3}, {2, 16, 3}};
  PaddedBatches batches(sequences, {.batch_size = 2, .max_length = 16, .shuffle = false});
  CHECK(batches.batches_per_epoch() == 3);
  PaddedBatch batch;
  REQUIRE(batches.next(batch));
  REQUIRE(batch.ids.shape() == mpx::Shape{2, 5});
  CHECK(row_of(batch.ids, 0) == std::vector<std::int32_t>{2, 10, 3, 0, 0});
  CHECK(row_of(batch.ids, 1) == std::vector<std::int32_t>{2, 11, 12, 13, 3});
  CHECK(batch.lengths.shape() == mpx::Shape{2});
  CHECK(batch.lengths[0] == 3);
  CHECK(batch.lengths[1] == 5);
  CHECK(batch.indices == std::vector<std::int64_t>{0, 1});
  REQUIRE(batches.next(batch));
  REQUIRE(batch.ids.shape() == mpx::Shape{2, 4});
  CHECK(row_of(batch.ids, 0) == std::vector<std::int32_t>{2, 3, 0, 0});
  CHECK(batch.indices == std::vector<std::int64_t>{2, 3});
  REQUIRE(batches.next(batch));  // the last, smaller batch
  REQUIRE(batch.ids.shape() == mpx::Shape{1, 3});
  CHECK(batch.indices == std::vector<std::int64_t>{4});
  CHECK_FALSE(batches.next(batch));
  CHECK(batches.position() == 3);

  // Another [PAD] id, and dropping the last batch.
  mpx::data::SpecialTokens tokens;
  tokens.pad = 99;
  PaddedBatches dropping(
      sequences, {.batch_size = 2, .shuffle = false, .last_batch = LastBatch::Drop, .tokens = tokens});
  CHECK(dropping.batches_per_epoch() == 2);
  REQUIRE(dropping.next(batch));
  CHECK(row_of(batch.ids, 0) == std::vector<std::int32_t>{2, 10, 3, 99, 99});
  REQUIRE(dropping.next(batch));
  CHECK_FALSE(dropping.next(batch));
  CHECK(dropping.order().back() == 4);  // the dropped sequence is listed last
}

TEST_CASE("PaddedBatches truncates long sequences, keeping a final [SEP]", "[data][padded_batches]") {
  const Sequences sequences{{2, 10, 11, 12, 13, 3}, {2, 10, 11, 12, 13}, {2, 10, 11, 3}, {2, 10, 3}};
  PaddedBatches batches(sequences, {.batch_size = 4, .max_length = 4, .shuffle = false});
  PaddedBatch batch;
  REQUIRE(batches.next(batch));
  REQUIRE(batch.ids.shape() == mpx::Shape{4, 4});
  CHECK(row_of(batch.ids, 0) == std::vector<std::int32_t>{2, 10, 11, 3});   // first 3, then its [SEP]
  CHECK(row_of(batch.ids, 1) == std::vector<std::int32_t>{2, 10, 11, 12});  // no [SEP]: the first 4
  CHECK(row_of(batch.ids, 2) == std::vector<std::int32_t>{2, 10, 11, 3});   // exactly 4: unchanged
  CHECK(row_of(batch.ids, 3) == std::vector<std::int32_t>{2, 10, 3, 0});
  CHECK(std::vector<std::int32_t>(batch.lengths.values().begin(), batch.lengths.values().end()) ==
        std::vector<std::int32_t>{4, 4, 4, 3});
  CHECK(batches.length(0) == 4);
  CHECK(batches.length(3) == 3);
}

TEST_CASE("PaddedBatches deals every sequence once per epoch, reproducibly, with and without bucketing",
          "[data][padded_batches]") {
  const Sequences sequences = framed_sequences(1003, 40, 5);
  for (const bool bucket : {false, true}) {
    INFO("bucket_by_length = " << bucket);
    const PaddedBatches::Options options{
        .batch_size = 16, .max_length = 32, .seed = 11, .bucket_by_length = bucket, .bucket_batches = 4};
    PaddedBatches batches(sequences, options);
    PaddedBatches again(sequences, options);
    CHECK(batches.batches_per_epoch() == 63);
    std::set<std::vector<std::int64_t>> first_batches;
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
      const std::vector<DealtBatch> dealt = epoch_of(batches, epoch);
      REQUIRE(dealt.size() == 63);
      CHECK(dealt == epoch_of(again, epoch));  // same seed and epoch, same batches
      std::vector<std::int64_t> seen;
      for (const DealtBatch& batch : dealt) {
        std::int64_t longest = 0;
        for (std::size_t r = 0; r < batch.indices.size(); ++r) {
          const std::int64_t index = batch.indices[r];
          seen.push_back(index);
          const auto& sequence = sequences[static_cast<std::size_t>(index)];
          const auto length = std::min<std::int64_t>(static_cast<std::int64_t>(sequence.size()), 32);
          CHECK(batch.lengths[r] == length);
          longest = std::max(longest, length);
          for (std::int64_t t = 0; t < batch.columns; ++t) {
            const std::int32_t id =
                batch.ids[r * static_cast<std::size_t>(batch.columns) + static_cast<std::size_t>(t)];
            if (t >= length) {
              CHECK(id == 0);
            } else if (t == length - 1) {
              CHECK(id == 3);  // every sequence ends with [SEP], truncated or not
            } else {
              CHECK(id == sequence[static_cast<std::size_t>(t)]);
            }
          }
        }
        CHECK(batch.columns == longest);
      }
      CHECK(std::vector<std::int64_t>(batches.order().begin(), batches.order().end()) == seen);
      std::sort(seen.begin(), seen.end());
      std::vector<std::int64_t> all(sequences.size());
      std::iota(all.begin(), all.end(), std::int64_t{0});
      CHECK(seen == all);
      first_batches.insert(dealt.front().indices);
    }
    CHECK(first_batches.size() == 3);  // each epoch deals another order

    // Another seed, other batches; resuming mid-epoch deals the rest alike.
    PaddedBatches::Options other = options;
    other.seed = 12;
    PaddedBatches reseeded(sequences, other);
    CHECK_FALSE(epoch_of(reseeded, 1) == epoch_of(batches, 1));
    const std::vector<DealtBatch> epoch2 = epoch_of(batches, 2);
    again.resume(2, 40);
    PaddedBatch batch;
    REQUIRE(again.next(batch));
    CHECK(batch.indices == epoch2[40].indices);
  }
}

TEST_CASE("PaddedBatches' bucketing groups similar lengths and pads less", "[data][padded_batches]") {
  const Sequences sequences = framed_sequences(2000, 60, 9);
  const auto padding = [&](bool bucket) {
    PaddedBatches batches(
        sequences,
        {.batch_size = 20, .max_length = 64, .seed = 3, .bucket_by_length = bucket, .bucket_batches = 10});
    std::int64_t padded = 0;
    for (const DealtBatch& batch : epoch_of(batches, 0)) {
      for (const std::int32_t length : batch.lengths) padded += batch.columns - length;
    }
    return padded;
  };
  const std::int64_t plain = padding(false);
  const std::int64_t bucketed = padding(true);
  INFO("padding cells: plain " << plain << ", bucketed " << bucketed);
  CHECK(bucketed * 5 < plain);

  // One chunk holding every batch: the batches are a sorted order cut in pieces, so their length
  // ranges do not overlap.
  PaddedBatches whole(
      sequences,
      {.batch_size = 20, .max_length = 64, .seed = 3, .bucket_by_length = true, .bucket_batches = 100});
  std::vector<std::pair<std::int32_t, std::int32_t>> ranges;
  for (const DealtBatch& batch : epoch_of(whole, 0)) {
    ranges.emplace_back(*std::min_element(batch.lengths.begin(), batch.lengths.end()),
                        *std::max_element(batch.lengths.begin(), batch.lengths.end()));
  }
  CHECK_FALSE(std::is_sorted(ranges.begin(), ranges.end()));  // the batch order is shuffled
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t b = 1; b < ranges.size(); ++b) CHECK(ranges[b - 1].second <= ranges[b].first);
}

TEST_CASE("PaddedBatches rejects invalid options and empty sequences", "[data][padded_batches]") {
  const Sequences sequences{{2, 3}, {}, {2, 5, 3}};
  CHECK_THROWS_MATCHES(PaddedBatches(sequences, {}), mpx::invalid_argument,
                       MessageContains({"sequence 1 is empty"}));
  const Sequences fine{{2, 3}};
  CHECK_THROWS_MATCHES(PaddedBatches(fine, {.batch_size = 0}), mpx::invalid_argument,
                       MessageContains({"batch_size = 0"}));
  CHECK_THROWS_MATCHES(PaddedBatches(fine, {.max_length = 1}), mpx::invalid_argument,
                       MessageContains({"max_length = 1", "expected 2"}));
  CHECK_THROWS_MATCHES(PaddedBatches(fine, {.bucket_batches = 0}), mpx::invalid_argument,
                       MessageContains({"bucket_batches = 0"}));
  PaddedBatches batches(fine, {});
  CHECK_THROWS_MATCHES(batches.resume(0, 2), mpx::invalid_argument,
                       MessageContains({"position 2", "epoch of 1 batches"}));
}

// ---- mask_tokens ---------------------------------------------------------------------------------

namespace {

/// A padded batch of `rows` rows `[CLS] w... [SEP] [PAD]...` with words drawn from [5, vocabulary)
/// and an [UNK] every 9th word: row b holds b % 60 words (row 0: [CLS] [SEP] only).
void make_batch(std::int64_t rows, std::int32_t vocabulary, Ids& ids, Ids& lengths) {
  const std::int64_t columns = 62;
  ids = Ids(mpx::Shape{rows, columns});  // zeros: [PAD]
  lengths = Ids(mpx::Shape{rows});
  for (std::int64_t b = 0; b < rows; ++b) {
    const std::int64_t words = b % 60;
    ids[b * columns] = 2;
    for (std::int64_t w = 0; w < words; ++w) {
      const auto bits = mpx::random_bits(77, static_cast<std::uint64_t>(b), static_cast<std::uint64_t>(w));
      ids[b * columns + 1 + w] =
          w % 9 == 8 ? 1 : 5 + static_cast<std::int32_t>(bits % static_cast<std::uint32_t>(vocabulary - 5));
    }
    ids[b * columns + 1 + words] = 3;
    lengths[b] = static_cast<std::int32_t>(words + 2);
  }
}

}  // namespace

TEST_CASE("mask_tokens chooses BERT's count of real tokens and corrupts them 80/10/10", "[data][mlm]") {
  constexpr std::int32_t vocabulary = 1000;
  Ids ids;
  Ids lengths;
  make_batch(600, vocabulary, ids, lengths);
  const MaskedLmOptions options{.vocabulary_size = vocabulary, .seed = 5};
  CHECK(options.ignore_index == -100);
  CHECK(options.ignore_index == mpx::default_ignore_index);  // the cross-entropy loss's

  Ids inputs;
  Ids targets;
  std::int64_t chosen = 0;
  std::int64_t masked = 0;
  std::int64_t replaced = 0;
  std::int64_t kept = 0;
  std::int64_t eligible_total = 0;
  const std::int64_t columns = ids.shape()[1];
  for (std::uint64_t step = 0; step < 4; ++step) {
    const std::int64_t returned = mpx::data::mask_tokens(ids, lengths, options, step, inputs, targets);
    REQUIRE(inputs.shape() == ids.shape());
    REQUIRE(targets.shape() == ids.shape());
    std::int64_t counted = 0;
    for (std::int64_t b = 0; b < ids.shape()[0]; ++b) {
      std::int64_t eligible = 0;
      std::int64_t row_chosen = 0;
      for (std::int64_t t = 0; t < columns; ++t) {
        const std::int64_t at = b * columns + t;
        const std::int32_t original = ids[at];
        const bool special = original < 5;  // [PAD] [UNK] [CLS] [SEP] [MASK]
        if (t < lengths[b] && !special) ++eligible;
        if (targets[at] == options.ignore_index) {
          CHECK(inputs[at] == original);  // untouched where not chosen
          continue;
        }
        // Chosen: a real, non-special token, whose target is the original.
        REQUIRE(t < lengths[b]);
        REQUIRE_FALSE(special);
        CHECK(targets[at] == original);
        ++row_chosen;
        if (inputs[at] == 4) {
          ++masked;
        } else if (inputs[at] == original) {
          ++kept;
        } else {
          ++replaced;
          CHECK(inputs[at] >= 5);
          CHECK(inputs[at] < vocabulary);
        }
      }
      const std::int64_t expected =
          eligible == 0 ? 0 : std::max<std::int64_t>(1, std::llround(static_cast<double>(eligible) * 0.15));
      CHECK(row_chosen == expected);
      counted += row_chosen;
      eligible_total += eligible;
    }
    CHECK(returned == counted);
    chosen += counted;
  }
  // About 15% of the eligible tokens (a little more: short rows round up to one).
  const double rate = static_cast<double>(chosen) / static_cast<double>(eligible_total);
  CHECK(rate > 0.15);
  CHECK(rate < 0.17);
  // About 9500 chosen: the standard deviation of the 80% share is 0.41 points, of a 10% share 0.31;
  // the bounds are 5 of them. A random token equals the original with probability 1/995 (kept).
  const double n = static_cast<double>(chosen);
  INFO("chosen " << chosen << ": masked " << masked << ", replaced " << replaced << ", kept " << kept);
  CHECK(chosen > 9000);
  CHECK(std::abs(static_cast<double>(masked) / n - 0.8) < 0.021);
  CHECK(std::abs(static_cast<double>(replaced) / n - 0.1) < 0.016);
  CHECK(std::abs(static_cast<double>(kept) / n - 0.1) < 0.016);
}

TEST_CASE("mask_tokens is reproducible for a (seed, step), masks short rows once, works in place",
          "[data][mlm]") {
  Ids ids;
  Ids lengths;
  make_batch(61, 50, ids, lengths);
  const MaskedLmOptions options{.vocabulary_size = 50, .seed = 1};
  Ids inputs_a;
  Ids targets_a;
  Ids inputs_b;
  Ids targets_b;
  mpx::data::mask_tokens(ids, lengths, options, 7, inputs_a, targets_a);
  mpx::data::mask_tokens(ids, lengths, options, 7, inputs_b, targets_b);
  CHECK(std::equal(inputs_a.values().begin(), inputs_a.values().end(), inputs_b.values().begin()));
  CHECK(std::equal(targets_a.values().begin(), targets_a.values().end(), targets_b.values().begin()));
  mpx::data::mask_tokens(ids, lengths, options, 8, inputs_b, targets_b);
  CHECK_FALSE(std::equal(targets_a.values().begin(), targets_a.values().end(), targets_b.values().begin()));
  MaskedLmOptions reseeded = options;
  reseeded.seed = 2;
  mpx::data::mask_tokens(ids, lengths, reseeded, 7, inputs_b, targets_b);
  CHECK_FALSE(std::equal(targets_a.values().begin(), targets_a.values().end(), targets_b.values().begin()));

  // Row 0 is [CLS] [SEP]: nothing to choose. Row 1 has one word: it is chosen.
  const std::int64_t columns = ids.shape()[1];
  for (std::int64_t t = 0; t < columns; ++t) CHECK(targets_a[t] == -100);
  CHECK(targets_a[columns + 1] == ids[columns + 1]);

  // In place: the same corruption written over the ids.
  Ids in_place = Ids::uninitialized(ids.shape());
  std::copy_n(ids.data(), ids.numel(), in_place.data());
  Ids targets_c;
  mpx::data::mask_tokens(in_place, lengths, options, 7, in_place, targets_c);
  CHECK(std::equal(in_place.values().begin(), in_place.values().end(), inputs_a.values().begin()));
  CHECK(std::equal(targets_c.values().begin(), targets_c.values().end(), targets_a.values().begin()));

  // All [MASK] with mask_fraction 1; nothing changed with both fractions 0.
  MaskedLmOptions all_masked = options;
  all_masked.mask_fraction = 1.0;
  all_masked.random_fraction = 0.0;
  mpx::data::mask_tokens(ids, lengths, all_masked, 7, inputs_b, targets_b);
  for (std::int64_t i = 0; i < ids.numel(); ++i) {
    if (targets_b[i] != -100) CHECK(inputs_b[i] == 4);
  }
  MaskedLmOptions unchanged = options;
  unchanged.mask_fraction = 0.0;
  unchanged.random_fraction = 0.0;
  mpx::data::mask_tokens(ids, lengths, unchanged, 7, inputs_b, targets_b);
  CHECK(std::equal(inputs_b.values().begin(), inputs_b.values().end(), ids.values().begin()));
}

TEST_CASE("chosen_tokens lists mask_tokens' chosen rows in order, with their targets", "[data][mlm]") {
  mpx::Tensor<std::int32_t> targets(mpx::Shape{2, 3});
  const std::int32_t values[] = {-100, 7, -100, 9, -100, 11};
  for (std::int64_t i = 0; i < 6; ++i) targets[i] = values[i];
  std::vector<std::int32_t> rows = {99};  // cleared first
  mpx::Tensor<std::int32_t> chosen;
  mpx::data::chosen_tokens(targets, -100, rows, chosen);
  CHECK(rows == std::vector<std::int32_t>{1, 3, 5});
  REQUIRE(chosen.shape() == mpx::Shape{3});
  CHECK(chosen[0] == 7);
  CHECK(chosen[1] == 9);
  CHECK(chosen[2] == 11);
  const mpx::Tensor<std::int32_t> flat(mpx::Shape{6});
  CHECK_THROWS_AS(mpx::data::chosen_tokens(flat, -100, rows, chosen), mpx::shape_error);
}

TEST_CASE("mask_tokens rejects invalid options and batches, naming the values", "[data][mlm]") {
  Ids ids;
  Ids lengths;
  make_batch(3, 50, ids, lengths);
  Ids inputs;
  Ids targets;
  const auto mask = [&](const MaskedLmOptions& options) {
    return mpx::data::mask_tokens(ids, lengths, options, 0, inputs, targets);
  };
  CHECK_THROWS_MATCHES(mask({}), mpx::invalid_argument,
                       MessageContains({"special token id 0 is outside [0, vocabulary_size = 0)"}));
  CHECK_THROWS_MATCHES(mask({.vocabulary_size = 5}), mpx::invalid_argument,
                       MessageContains({"vocabulary_size = 5 leaves no token besides the 5 special ones"}));
  CHECK_THROWS_MATCHES(mask({.vocabulary_size = 50, .probability = 0.0}), mpx::invalid_argument,
                       MessageContains({"probability = 0", "(0, 1]"}));
  CHECK_THROWS_MATCHES(mask({.vocabulary_size = 50, .mask_fraction = 0.95}), mpx::invalid_argument,
                       MessageContains({"mask_fraction = 0.95", "random_fraction = 0.1"}));
  CHECK_THROWS_MATCHES(mask({.vocabulary_size = 50, .ignore_index = 7}), mpx::invalid_argument,
                       MessageContains({"ignore_index = 7 is a token id"}));
  ids[62 + 1] = 45;  // row 1, position 1
  CHECK_THROWS_MATCHES(
      mask({.vocabulary_size = 40}), mpx::invalid_argument,
      MessageContains({"token 45 at row 1, position 1 is outside [0, vocabulary_size = 40)"}));
  lengths[1] = 100;
  CHECK_THROWS_MATCHES(mask({.vocabulary_size = 50}), mpx::invalid_argument,
                       MessageContains({"lengths[1] = 100", "[0, T = 62]"}));
  Ids short_lengths(mpx::Shape{2});
  CHECK_THROWS_MATCHES(
      mpx::data::mask_tokens(ids, short_lengths, {.vocabulary_size = 50}, 0, inputs, targets),
      mpx::shape_error, MessageContains({"[3, 62]", "[2]", "expected ids [B, T] and lengths [B]"}));
}

// ---- The pipeline, as docs/encoder.md shows it -------------------------------------------------

TEST_CASE("The encoder's data: glosses, vocabulary, padded batches, masked-LM targets and labels",
          "[data][encoder]") {
  const TempDir dir;
  WordNetFiles files;
  files.noun = licence;
  for (int i = 0; i < 60; ++i) {
    files.noun += std::to_string(10000000 + 97 * i) + (i % 2 == 0 ? " 02" : " 03") + " n 01 thing" +
                  std::to_string(i) + " 0 000 | a living thing " + std::to_string(i % 7) + " of the set\n";
  }
  files.write(dir.path());
  const fs::path wordnet_dir = dir.path();
  // [encoder-data]
  // WordNet's glosses and their supersenses (no argument: $MPX_WORDNET_DIR or /usr/share/wordnet).
  const mpx::data::WordNetGlosses wordnet(wordnet_dir);
  std::vector<std::string_view> glosses;
  std::vector<std::int32_t> labels;
  for (const std::int64_t i : wordnet.indices(mpx::data::WordNetSplit::Train)) {
    glosses.push_back(wordnet.synsets()[static_cast<std::size_t>(i)].gloss);
    labels.push_back(wordnet.synsets()[static_cast<std::size_t>(i)].label);
  }
  // The vocabulary of the training glosses, and each gloss as [CLS] words [SEP].
  const auto vocabulary = mpx::data::WordVocabulary::build(glosses, {.min_count = 2});
  std::vector<std::vector<std::int32_t>> sequences;
  for (const std::string_view gloss : glosses) {
    std::vector<std::int32_t> ids{mpx::data::WordVocabulary::cls_id};
    const std::vector<std::int32_t> words = vocabulary.encode(gloss);
    ids.insert(ids.end(), words.begin(), words.end());
    ids.push_back(mpx::data::WordVocabulary::sep_id);
    sequences.push_back(std::move(ids));
  }
  mpx::data::PaddedBatches batches(sequences,
                                   {.batch_size = 32, .max_length = 64, .seed = 1, .bucket_by_length = true});
  const mpx::data::MaskedLmOptions masking{.vocabulary_size = vocabulary.size(), .seed = 2};

  mpx::data::PaddedBatch batch;
  mpx::Tensor<std::int32_t, mpx::Host> inputs;   // [B, T] ids with 15% of the words corrupted
  mpx::Tensor<std::int32_t, mpx::Host> targets;  // [B, T] the original ids there, -100 elsewhere
  mpx::Tensor<std::int32_t, mpx::Host> classes;  // [B] each gloss's supersense
  std::uint64_t step = 0;
  for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
    batches.start_epoch(epoch);
    while (batches.next(batch)) {
      // Pretraining: the encoder reads `inputs` (batch.lengths are its attention's key counts), the
      // cross-entropy loss compares its predictions with `targets`.
      mpx::data::mask_tokens(batch.ids, batch.lengths, masking, step++, inputs, targets);
      // Fine-tuning: the labels of the batch's glosses, for a classifier on the [CLS] output.
      classes = mpx::Tensor<std::int32_t, mpx::Host>::uninitialized(mpx::Shape{batch.lengths.numel()});
      for (std::size_t row = 0; row < batch.indices.size(); ++row) {
        classes[static_cast<std::int64_t>(row)] = labels[static_cast<std::size_t>(batch.indices[row])];
      }
    }
  }
  // Saved beside the weights: mpx::io::save_checkpoint(path, trainer, {{"vocabulary", text}}).
  const std::string text = vocabulary.to_string();
  // [encoder-data]
  CHECK(glosses.size() == wordnet.indices(WordNetSplit::Train).size());
  CHECK(glosses.size() > 40);
  CHECK(vocabulary.id_of("living") > 4);
  CHECK(step == 2 * static_cast<std::uint64_t>(batches.batches_per_epoch()));
  CHECK(WordVocabulary::from_string(text) == vocabulary);
  CHECK(inputs.shape() == batch.ids.shape());
  CHECK(classes.shape()[0] == batch.ids.shape()[0]);
}

}  // namespace MPX_UNITY_ID
}  // namespace
