// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `WordNetGlosses`: the synsets of WordNet's four data files (by default the Debian package
/// `wordnet-base`) with their gloss, their words and their supersense label (the lexicographer file,
/// one of 45), split by synset into training, validation and test sets.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "mpx/error.hpp"

namespace mpx::data {

/// @brief Where the Debian package `wordnet-base` installs WordNet 3.0's database files.
inline constexpr const char* wordnet_system_dir = "/usr/share/wordnet";

/// @brief `$MPX_WORDNET_DIR` if set and not empty, else `/usr/share/wordnet`.
[[nodiscard]] inline std::filesystem::path default_wordnet_dir() {
  const char* from_environment = std::getenv("MPX_WORDNET_DIR");
  if (from_environment != nullptr && from_environment[0] != '\0') return from_environment;
  return wordnet_system_dir;
}

/// @brief The syntactic category of a WordNet data file (adjective satellites belong to `Adjective`).
enum class PartOfSpeech : std::uint8_t {
  Noun,       ///< data.noun, synset type `n`
  Verb,       ///< data.verb, synset type `v`
  Adjective,  ///< data.adj, synset types `a` and `s` (satellite)
  Adverb,     ///< data.adv, synset type `r`
};

/// @brief WordNet's letter for a part of speech: `n`, `v`, `a` or `r`.
/// @param part_of_speech the category
[[nodiscard]] constexpr char part_of_speech_letter(PartOfSpeech part_of_speech) noexcept {
  constexpr std::array<char, 4> letters{'n', 'v', 'a', 'r'};
  return letters[static_cast<std::size_t>(part_of_speech)];
}

/// @brief The suffix of a part of speech's data file: `noun`, `verb`, `adj` or `adv`.
/// @param part_of_speech the category
[[nodiscard]] constexpr std::string_view part_of_speech_file_suffix(PartOfSpeech part_of_speech) noexcept {
  constexpr std::array<std::string_view, 4> suffixes{"noun", "verb", "adj", "adv"};
  return suffixes[static_cast<std::size_t>(part_of_speech)];
}

/// @brief Number of WordNet 3.0's lexicographer files, the supersense labels.
inline constexpr std::int32_t wordnet_supersense_count = 45;

/// @brief WordNet 3.0's lexicographer file names in file-number order (lexnames(5WN)): label i of a
/// synset is the file it was written in, `wordnet_supersenses[i]`. Used when the WordNet directory
/// has no `lexnames` file, as Debian's `wordnet-base` has none.
inline constexpr std::array<std::string_view, wordnet_supersense_count> wordnet_supersenses{
    "adj.all",          "adj.pert",           "adv.all",
    "noun.Tops",        "noun.act",           "noun.animal",
    "noun.artifact",    "noun.attribute",     "noun.body",
    "noun.cognition",   "noun.communication", "noun.event",
    "noun.feeling",     "noun.food",          "noun.group",
    "noun.location",    "noun.motive",        "noun.object",
    "noun.person",      "noun.phenomenon",    "noun.plant",
    "noun.possession",  "noun.process",       "noun.quantity",
    "noun.relation",    "noun.shape",         "noun.state",
    "noun.substance",   "noun.time",          "verb.body",
    "verb.change",      "verb.cognition",     "verb.communication",
    "verb.competition", "verb.consumption",   "verb.contact",
    "verb.creation",    "verb.emotion",       "verb.motion",
    "verb.perception",  "verb.possession",    "verb.social",
    "verb.stative",     "verb.weather",       "adj.ppl"};

/// @brief The set a synset belongs to.
enum class WordNetSplit : std::uint8_t {
  Train,       ///< for training (and for building the vocabulary)
  Validation,  ///< for choosing hyperparameters and checkpoints
  Test,        ///< for the final score only
};

/// @brief Shares of the validation and test sets, in percent of the synsets; the rest is training.
struct WordNetSplitOptions {
  std::int32_t validation_percent = 10;  ///< synsets whose bucket lies in the validation range
  std::int32_t test_percent = 10;        ///< synsets whose bucket lies in the test range

  /// @brief Throws `mpx::invalid_argument` naming the fields unless both are in [0, 100] and their
  /// sum is at most 100.
  void validate() const {
    if (validation_percent < 0 || test_percent < 0 || validation_percent + test_percent > 100) {
      throw invalid_argument(mpx::detail::concat(
          "mpx::data::WordNetSplitOptions: validation_percent = ", validation_percent,
          ", test_percent = ", test_percent, " are invalid; expected both >= 0 with a sum <= 100"));
    }
  }
};

namespace detail {

/// splitmix64's finaliser (Steele, Lea and Flood 2014): a fixed 64-bit mix that a peer in any
/// language reproduces in four lines, unlike `std::hash`, which may differ between builds.
[[nodiscard]] constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  std::uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace detail

/// @brief The split bucket of a synset, in [0, 100): `splitmix64(offset * 256 + c) % 100`, c the
/// ASCII code of its part of speech's letter (`n`, `v`, `a`, `r`; satellites count as `a`).
///
/// A synset is identified by its data file and its offset in it, so the bucket depends on nothing
/// else: not on the order of the files or lines, the platform or the standard library.
/// @param part_of_speech the synset's data file
/// @param offset its synset_offset (the byte offset of its line in that file)
[[nodiscard]] constexpr std::int32_t wordnet_split_bucket(PartOfSpeech part_of_speech,
                                                          std::int64_t offset) noexcept {
  const std::uint64_t key = static_cast<std::uint64_t>(offset) * 256u +
                            static_cast<std::uint8_t>(part_of_speech_letter(part_of_speech));
  return static_cast<std::int32_t>(detail::splitmix64(key) % 100u);
}

/// @brief The set of a synset: bucket b = `wordnet_split_bucket(part_of_speech, offset)` is
/// training below 100 - validation - test, validation below 100 - test, test above (with the
/// defaults: buckets 0-79 train, 80-89 validation, 90-99 test).
/// @param part_of_speech the synset's data file
/// @param offset its synset_offset
/// @param options the shares (not validated here; `WordNetGlosses` validates them)
[[nodiscard]] constexpr WordNetSplit wordnet_split_of(PartOfSpeech part_of_speech, std::int64_t offset,
                                                      const WordNetSplitOptions& options = {}) noexcept {
  const std::int32_t bucket = wordnet_split_bucket(part_of_speech, offset);
  if (bucket < 100 - options.validation_percent - options.test_percent) return WordNetSplit::Train;
  if (bucket < 100 - options.test_percent) return WordNetSplit::Validation;
  return WordNetSplit::Test;
}

/// @brief One synset of WordNet: its gloss, its words and its supersense label.
struct WordNetSynset {
  std::int64_t offset = 0;                           ///< synset_offset, unique within its data file
  PartOfSpeech part_of_speech = PartOfSpeech::Noun;  ///< the data file it was read from
  bool satellite = false;                            ///< an adjective satellite (synset type `s`)
  std::int32_t label = 0;                            ///< lex_filenum: the lexicographer file's index
  std::string label_name;                            ///< that file's name, e.g. "noun.animal"
  std::vector<std::string> words;                    ///< the synset's words, `_` read as a space
  std::string gloss;                                 ///< the text after `|`, trimmed
  WordNetSplit split = WordNetSplit::Train;          ///< its set (`wordnet_split_of`)
};

namespace detail {

/// Appended to the "not found" messages so that their reader knows the one command that fixes them.
inline constexpr const char* wordnet_install_hint =
    "WordNet 3.0 comes from the Debian package wordnet-base "
    "(`apt-get install wordnet-base` puts it in /usr/share/wordnet); set MPX_WORDNET_DIR or pass a "
    "directory to mpx::data::WordNetGlosses to read it from elsewhere";

/// WordNet 3.0's largest data file has 15 MB: a limit far above it keeps a mistaken path (a disk
/// image named data.noun) from filling memory.
inline constexpr std::uintmax_t wordnet_max_file_bytes = std::uintmax_t{1} << 30;

template <class... Parts>
[[noreturn]] void fail_wordnet(const std::filesystem::path& path, Parts&&... what) {
  throw io_error(mpx::detail::concat("mpx::data::WordNetGlosses: \"", path.string(), "\"",
                                     std::forward<Parts>(what)...));
}

/// The line as a message quotes it: at most 100 characters, then "...".
[[nodiscard]] inline std::string wordnet_excerpt(std::string_view line) {
  constexpr std::size_t limit = 100;
  return line.size() <= limit ? std::string(line) : std::string(line.substr(0, limit)) + "...";
}

[[nodiscard]] inline std::string read_wordnet_file(const std::filesystem::path& path) {
  std::error_code status;
  if (!std::filesystem::exists(path, status)) fail_wordnet(path, " not found; ", wordnet_install_hint);
  if (std::filesystem::is_directory(path, status)) fail_wordnet(path, " is a directory; expected a file");
  const std::uintmax_t size = std::filesystem::file_size(path, status);
  if (status) fail_wordnet(path, " cannot be read (", status.message(), ")");
  if (size > wordnet_max_file_bytes) {
    fail_wordnet(path, " has ", size, " bytes, more than the limit of ", wordnet_max_file_bytes,
                 "; expected a WordNet data file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_wordnet(path, " cannot be opened");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail_wordnet(path, " read failed after ", bytes.size(), " bytes");
  return bytes;
}

/// Calls `line_fn(number, line)` for each line of `text` (numbered from 1, without its `\n` or a
/// `\r` before it); a final line without `\n` counts too.
template <class LineFn>
void for_each_line(std::string_view text, LineFn&& line_fn) {
  std::int64_t number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line_fn(++number, line);
  }
}

/// The fields of `text` separated by spaces or tabs, into `fields` (cleared first).
inline void split_fields(std::string_view text, std::vector<std::string_view>& fields) {
  fields.clear();
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    const std::size_t begin = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > begin) fields.push_back(text.substr(begin, i - begin));
  }
}

[[nodiscard]] inline std::string_view trim_spaces(std::string_view text) noexcept {
  const std::size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

/// The value of `digits` in `base` (10 or 16) if it has 1 to `max_digits` digits of that base and
/// nothing else.
[[nodiscard]] inline std::optional<std::int64_t> parse_unsigned(std::string_view digits, int base,
                                                                std::size_t max_digits) noexcept {
  if (digits.empty() || digits.size() > max_digits) return std::nullopt;
  std::int64_t value = 0;
  for (const char c : digits) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (base == 16 && c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (base == 16 && c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) return std::nullopt;
    value = value * base + digit;
  }
  return value;
}

/// One lexicographer file: its name and the part of speech of its synsets.
struct LexicographerFile {
  std::string name;
  PartOfSpeech part_of_speech = PartOfSpeech::Noun;
};

/// The part of speech a lexicographer file's name begins with, as `lexnames`' built-in table has it.
[[nodiscard]] constexpr PartOfSpeech part_of_speech_of_file_name(std::string_view name) noexcept {
  if (name.starts_with("noun.")) return PartOfSpeech::Noun;
  if (name.starts_with("verb.")) return PartOfSpeech::Verb;
  if (name.starts_with("adv.")) return PartOfSpeech::Adverb;
  return PartOfSpeech::Adjective;
}

[[nodiscard]] inline std::vector<LexicographerFile> builtin_lexicographer_files() {
  std::vector<LexicographerFile> files;
  files.reserve(wordnet_supersenses.size());
  for (const std::string_view name : wordnet_supersenses) {
    files.push_back({std::string(name), part_of_speech_of_file_name(name)});
  }
  return files;
}

/// Reads a `lexnames` file: lines `NN name category` (category 1 noun, 2 verb, 3 adjective,
/// 4 adverb), numbered 0, 1, 2, ... in order; blank lines are skipped.
[[nodiscard]] inline std::vector<LexicographerFile> read_lexnames(const std::filesystem::path& path) {
  const std::string text = read_wordnet_file(path);
  std::vector<LexicographerFile> files;
  std::vector<std::string_view> fields;
  for_each_line(text, [&](std::int64_t number, std::string_view line) {
    split_fields(line, fields);
    if (fields.empty()) return;
    const auto fail = [&](auto&&... what) {
      fail_wordnet(path, " line ", number, ": ", what..., ", in \"", wordnet_excerpt(line), "\"");
    };
    if (fields.size() != 3) {
      fail(fields.size(), " fields; expected 3 (file number, name, syntactic category)");
    }
    const std::optional<std::int64_t> index = parse_unsigned(fields[0], 10, 3);
    if (!index || *index != static_cast<std::int64_t>(files.size())) {
      fail("file number \"", fields[0], "\" is not ", files.size(),
           "; expected the files numbered 0, 1, 2, ...");
    }
    const std::optional<std::int64_t> category = parse_unsigned(fields[2], 10, 1);
    if (!category || *category < 1 || *category > 4) {
      fail("syntactic category \"", fields[2],
           "\" is invalid; expected 1 (noun), 2 (verb), 3 (adjective) or 4 (adverb)");
    }
    files.push_back({std::string(fields[1]), static_cast<PartOfSpeech>(*category - 1)});
  });
  if (files.empty()) fail_wordnet(path, " holds no lexicographer files; expected lines `NN name category`");
  return files;
}

/// What the synset types of a data file may be: `n`, `v`, `as` or `r`.
[[nodiscard]] constexpr std::string_view synset_types_of(PartOfSpeech part_of_speech) noexcept {
  constexpr std::array<std::string_view, 4> types{"n", "v", "as", "r"};
  return types[static_cast<std::size_t>(part_of_speech)];
}

/// A word as WordNet writes it, for a reader: `_` becomes a space, and an adjective's syntactic
/// marker (`(a)`, `(p)`, `(ip)`: prenominal, predicate, immediately postnominal) is dropped.
[[nodiscard]] inline std::string readable_word(std::string_view word, PartOfSpeech part_of_speech) {
  if (part_of_speech == PartOfSpeech::Adjective) {
    for (const std::string_view marker : {"(a)", "(p)", "(ip)"}) {
      if (word.size() > marker.size() && word.ends_with(marker)) {
        word.remove_suffix(marker.size());
        break;
      }
    }
  }
  std::string text(word);
  std::replace(text.begin(), text.end(), '_', ' ');
  return text;
}

/// Parses one synset line of a data file (wndb(5WN)):
/// `offset lex_filenum ss_type w_cnt word lex_id ... p_cnt [ptr ...] [frames ...] | gloss`.
class SynsetLineParser {
 public:
  SynsetLineParser(const std::filesystem::path& path, PartOfSpeech part_of_speech,
                   const std::vector<LexicographerFile>& lexicographer_files,
                   const WordNetSplitOptions& split)
      : path_(path), part_of_speech_(part_of_speech), files_(lexicographer_files), split_(split) {}

  [[nodiscard]] WordNetSynset parse(std::int64_t number, std::string_view line) {
    number_ = number;
    line_ = line;
    if (line.empty()) fail("empty line; expected a synset or a comment line starting with two spaces");
    const std::size_t bar = line.find('|');
    if (bar == std::string_view::npos) fail("no `|` before a gloss (a truncated line?)");
    split_fields(line.substr(0, bar), fields_);
    next_ = 0;

    WordNetSynset synset;
    synset.part_of_speech = part_of_speech_;
    synset.offset = number_field("synset_offset", 10, 10);
    synset.label = static_cast<std::int32_t>(number_field("lex_filenum", 10, 3));
    if (synset.label >= static_cast<std::int32_t>(files_.size())) {
      fail("lex_filenum ", synset.label, " is out of range; the lexicographer files are numbered 0 to ",
           files_.size() - 1);
    }
    const LexicographerFile& file = files_[static_cast<std::size_t>(synset.label)];
    if (file.part_of_speech != part_of_speech_) {
      fail("lex_filenum ", synset.label, " (", file.name, ") is not a ",
           part_of_speech_file_suffix(part_of_speech_),
           " file; expected a label of this data file's part of speech");
    }
    synset.label_name = file.name;
    const std::string_view type = field("ss_type");
    if (type.size() != 1 || synset_types_of(part_of_speech_).find(type[0]) == std::string_view::npos) {
      fail("ss_type \"", type, "\" is invalid in a ", part_of_speech_file_suffix(part_of_speech_),
           " file; expected one of \"", synset_types_of(part_of_speech_), "\"");
    }
    synset.satellite = type[0] == 's';

    const std::int64_t words = number_field("w_cnt", 16, 2);
    if (words == 0) fail("w_cnt is 0; expected at least one word");
    synset.words.reserve(static_cast<std::size_t>(words));
    for (std::int64_t w = 0; w < words; ++w) {
      const std::string_view word = field("word ", w + 1, " of ", words, " (w_cnt)");
      static_cast<void>(number_field("lex_id", 16, 2, " of word ", w + 1, " \"", word, "\""));
      synset.words.push_back(readable_word(word, part_of_speech_));
    }

    const std::int64_t pointers = number_field("p_cnt", 10, 3);
    for (std::int64_t p = 0; p < pointers; ++p) {
      static_cast<void>(field("pointer_symbol of pointer ", p + 1, " of ", pointers, " (p_cnt)"));
      static_cast<void>(number_field("synset_offset", 10, 10, " of pointer ", p + 1));
      const std::string_view pos = field("pos of pointer ", p + 1);
      if (pos.size() != 1 || std::string_view("nvasr").find(pos[0]) == std::string_view::npos) {
        fail("pos \"", pos, "\" of pointer ", p + 1, " is invalid; expected n, v, a, s or r");
      }
      static_cast<void>(number_field("source/target", 16, 4, " of pointer ", p + 1));
    }

    if (part_of_speech_ == PartOfSpeech::Verb) {
      const std::int64_t frames = number_field("f_cnt", 10, 2);
      for (std::int64_t f = 0; f < frames; ++f) {
        const std::string_view plus = field("`+` of frame ", f + 1, " of ", frames, " (f_cnt)");
        if (plus != "+") fail("frame ", f + 1, " starts with \"", plus, "\"; expected `+`");
        static_cast<void>(number_field("f_num", 10, 2, " of frame ", f + 1));
        static_cast<void>(number_field("w_num", 16, 2, " of frame ", f + 1));
      }
    }
    if (next_ != fields_.size()) {
      fail(fields_.size() - next_, " unexpected fields before `|`, from \"", fields_[next_], "\" (field ",
           next_ + 1, "); is w_cnt or p_cnt wrong?");
    }

    synset.gloss = std::string(trim_spaces(line.substr(bar + 1)));
    if (synset.gloss.empty()) fail("the gloss after `|` is empty");
    synset.split = wordnet_split_of(part_of_speech_, synset.offset, split_);
    return synset;
  }

 private:
  template <class... Parts>
  [[noreturn]] void fail(Parts&&... what) const {
    fail_wordnet(path_, " line ", number_, ": ", std::forward<Parts>(what)..., ", in \"",
                 wordnet_excerpt(line_), "\"");
  }

  /// The next field; an error naming it (`what...`) if the line has no more before `|`.
  template <class... Parts>
  [[nodiscard]] std::string_view field(Parts&&... what) {
    if (next_ >= fields_.size()) {
      fail("missing ", std::forward<Parts>(what)..., " (field ", next_ + 1, "): the line has ",
           fields_.size(), " fields before `|`");
    }
    return fields_[next_++];
  }

  /// The next field as a number of 1 to `max_digits` digits in `base`.
  template <class... Parts>
  [[nodiscard]] std::int64_t number_field(const char* name, int base, std::size_t max_digits,
                                          Parts&&... where) {
    const std::string_view text = field(name, where...);
    const std::optional<std::int64_t> value = parse_unsigned(text, base, max_digits);
    if (!value) {
      fail(name, where..., " \"", text, "\" (field ", next_, ") is not a ",
           base == 16 ? "hexadecimal" : "decimal", " number of 1 to ", max_digits, " digits");
    }
    return *value;
  }

  const std::filesystem::path& path_;
  PartOfSpeech part_of_speech_;
  const std::vector<LexicographerFile>& files_;
  WordNetSplitOptions split_;
  std::vector<std::string_view> fields_;
  std::size_t next_ = 0;
  std::int64_t number_ = 0;
  std::string_view line_;
};

}  // namespace detail

/// @brief WordNet's synsets with their glosses and supersense labels, for gloss -> supersense
/// classification and masked-LM pretraining on the glosses.
///
/// Reads `data.noun`, `data.verb`, `data.adj` and `data.adv` of a WordNet 3.0 database directory
/// (wndb(5WN)), in that order, each in file order. Lines starting with two spaces (the licence) are
/// skipped; every other line is a synset, `synset_offset lex_filenum ss_type w_cnt word lex_id
/// [word lex_id ...] p_cnt [pointer ...] [frames ...] | gloss`, and is checked field by field: decimal
/// offset, lex_filenum and p_cnt, hexadecimal w_cnt, lex_id and source/target, four fields per
/// pointer, the verb frames, nothing left before `|`, a non-empty gloss, a label of the file's part
/// of speech, no offset twice in a file. A synset's label is its lex_filenum, the index of its
/// lexicographer file (`noun.animal`, `verb.motion`, ...): 45 supersenses in WordNet 3.0. Their
/// names come from a `lexnames` file in the directory if there is one (`NN name category` per line),
/// else from `wordnet_supersenses` (Debian's `wordnet-base` ships no `lexnames`).
///
/// Each synset is in one set by `wordnet_split_of` (80/10/10 by default): a fixed hash of its part of
/// speech and offset, so the sets are the same on every machine and whatever the file order.
class WordNetGlosses {
 public:
  /// @brief Shares of the validation and test sets.
  using Options = WordNetSplitOptions;

  /// @brief Reads the WordNet directory `dir` with the default 80/10/10 split.
  /// @param dir a WordNet database directory (holding data.noun, data.verb, data.adj, data.adv)
  explicit WordNetGlosses(const std::filesystem::path& dir = default_wordnet_dir())
      : WordNetGlosses(dir, Options{}) {}

  /// @brief Reads the WordNet directory `dir` and splits its synsets as `options` say.
  /// @param dir a WordNet database directory (holding data.noun, data.verb, data.adj, data.adv)
  /// @param options shares of the validation and test sets
  /// @throws mpx::io_error naming the path for a missing directory or data file (with how to install
  /// WordNet), and naming the path, the line number and the line for a malformed line or `lexnames`
  /// entry; mpx::invalid_argument for invalid options.
  WordNetGlosses(const std::filesystem::path& dir, const Options& options) : dir_(dir), options_(options) {
    options_.validate();
    std::error_code status;
    if (!std::filesystem::is_directory(dir, status)) {
      detail::fail_wordnet(dir, " is not a WordNet directory (not found or not a directory); ",
                           detail::wordnet_install_hint);
    }
    const std::filesystem::path lexnames = dir / "lexnames";
    const std::vector<detail::LexicographerFile> files = std::filesystem::exists(lexnames, status)
                                                             ? detail::read_lexnames(lexnames)
                                                             : detail::builtin_lexicographer_files();
    for (const detail::LexicographerFile& file : files) label_names_.push_back(file.name);
    for (const PartOfSpeech part_of_speech :
         {PartOfSpeech::Noun, PartOfSpeech::Verb, PartOfSpeech::Adjective, PartOfSpeech::Adverb}) {
      read_data_file(dir / ("data." + std::string(part_of_speech_file_suffix(part_of_speech))),
                     part_of_speech, files);
    }
    if (synsets_.empty()) detail::fail_wordnet(dir, " holds no synsets in its four data files");
    for (std::size_t i = 0; i < synsets_.size(); ++i) {
      indices_[static_cast<std::size_t>(synsets_[i].split)].push_back(static_cast<std::int64_t>(i));
    }
  }

  /// @brief The directory read.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return dir_; }
  /// @brief The split's shares.
  [[nodiscard]] const Options& options() const noexcept { return options_; }
  /// @brief Every synset: the nouns, verbs, adjectives and adverbs, each in file order.
  [[nodiscard]] std::span<const WordNetSynset> synsets() const noexcept { return synsets_; }
  /// @brief The label names in label order: `label_names()[s.label] == s.label_name`.
  [[nodiscard]] std::span<const std::string> label_names() const noexcept { return label_names_; }
  /// @brief Number of labels (45 in WordNet 3.0), the classifier's number of classes.
  [[nodiscard]] std::int32_t label_count() const noexcept {
    return static_cast<std::int32_t>(label_names_.size());
  }
  /// @brief Indices into `synsets()` of the synsets in `split`, in increasing order.
  /// @param split the set
  [[nodiscard]] std::span<const std::int64_t> indices(WordNetSplit split) const noexcept {
    return indices_[static_cast<std::size_t>(split)];
  }

 private:
  void read_data_file(const std::filesystem::path& path, PartOfSpeech part_of_speech,
                      const std::vector<detail::LexicographerFile>& files) {
    const std::string text = detail::read_wordnet_file(path);
    std::vector<std::pair<std::int64_t, std::int64_t>> offsets;  // (offset, line number)
    detail::SynsetLineParser parser(path, part_of_speech, files, options_);
    detail::for_each_line(text, [&](std::int64_t number, std::string_view line) {
      if (line.starts_with("  ")) return;  // the licence and copyright lines
      synsets_.push_back(parser.parse(number, line));
      offsets.emplace_back(synsets_.back().offset, number);
    });
    // The split and any index built on it take (part of speech, offset) to name one synset.
    std::sort(offsets.begin(), offsets.end());
    const auto twice = std::adjacent_find(offsets.begin(), offsets.end(),
                                          [](const auto& a, const auto& b) { return a.first == b.first; });
    if (twice != offsets.end()) {
      // Sorted by (offset, line): the second occurrence is the later line.
      detail::fail_wordnet(path, " line ", std::next(twice)->second, ": synset_offset ", twice->first,
                           " occurs twice (lines ", twice->second, " and ", std::next(twice)->second,
                           "); expected each synset once");
    }
  }

  std::filesystem::path dir_;
  Options options_;
  std::vector<std::string> label_names_;
  std::vector<WordNetSynset> synsets_;
  std::array<std::vector<std::int64_t>, 3> indices_;
};

}  // namespace mpx::data
