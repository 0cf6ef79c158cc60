// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `WordVocabulary`: a word-level vocabulary for an encoder (lowercased words and punctuation
/// marks, five special tokens at fixed ids), built from training texts and saved as text beside a
/// checkpoint.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mpx/data/special_tokens.hpp"
#include "mpx/error.hpp"

namespace mpx::data {

namespace detail {

/// A byte that belongs to a word: an ASCII letter or digit, or any byte of a UTF-8 sequence (>= 0x80),
/// so that a word with accented letters stays one token.
[[nodiscard]] constexpr bool is_word_byte(unsigned char byte) noexcept {
  return (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
         byte >= 0x80;
}

/// Spaces and control characters separate tokens and are no token themselves.
[[nodiscard]] constexpr bool is_separator_byte(unsigned char byte) noexcept {
  return byte <= ' ' || byte == 0x7f;
}

[[nodiscard]] constexpr char ascii_lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

/// Calls `token_fn(std::string_view)` for each token of `text`, in order (`WordVocabulary::tokenize`'s
/// rule). The views are valid during the call only.
template <class TokenFn>
void for_each_word_token(std::string_view text, TokenFn&& token_fn) {
  std::string word;
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (is_separator_byte(byte)) {
      ++i;
    } else if (is_word_byte(byte)) {
      word.clear();
      for (; i < text.size() && is_word_byte(static_cast<unsigned char>(text[i])); ++i) {
        word.push_back(ascii_lower(text[i]));
      }
      token_fn(std::string_view(word));
    } else {
      token_fn(text.substr(i, 1));  // a punctuation mark is a token of its own
      ++i;
    }
  }
}

/// `std::hash<std::string_view>` for every string type, so that a map keyed by std::string is looked
/// up with a view, without a copy. Lookup only: no order or result depends on it.
struct WordHash {
  using is_transparent = void;
  [[nodiscard]] std::size_t operator()(std::string_view word) const noexcept {
    return std::hash<std::string_view>{}(word);
  }
};

}  // namespace detail

/// @brief Which words `WordVocabulary::build` keeps.
struct WordVocabularyOptions {
  /// @brief Words seen fewer times than this in the texts are left out (encode to [UNK]).
  std::int64_t min_count = 1;
  /// @brief Largest size of the vocabulary, the special tokens included (the most frequent words
  /// are kept); 0: no limit.
  std::int64_t max_size = 0;

  /// @brief Throws `mpx::invalid_argument` naming the field unless `min_count` >= 1 and `max_size`
  /// is 0 or at least 5 (room for the special tokens) and below 2^31 (int32 ids).
  void validate() const {
    if (min_count < 1) {
      throw invalid_argument(mpx::detail::concat("mpx::data::WordVocabularyOptions: min_count = ", min_count,
                                                 " is invalid; expected >= 1"));
    }
    if (max_size != 0 && (max_size < std::int64_t{5} || max_size > std::int64_t{0x7fffffff})) {
      throw invalid_argument(mpx::detail::concat(
          "mpx::data::WordVocabularyOptions: max_size = ", max_size,
          " is invalid; expected 0 (no limit) or 5 to 2^31 - 1 (the special tokens take 5 ids)"));
    }
  }
};

/// @brief Words and punctuation marks to int32 ids for an encoder, with [PAD] = 0, [UNK] = 1,
/// [CLS] = 2, [SEP] = 3 and [MASK] = 4, then the words of the training texts by descending count.
///
/// Tokens (`tokenize`): the text is lowercased (ASCII letters only) and cut into maximal runs of
/// letters and digits (bytes of UTF-8 characters count as letters) and single punctuation marks;
/// spaces and control characters separate tokens. "The cat's toy (red)." gives `the cat ' s toy
/// ( red ) .`. A word the vocabulary lacks encodes to [UNK]; no token of the text can be a special
/// token (a `[` is a token of its own).
///
/// `build` orders the words by descending count, ties by the word's bytes, so the same texts give
/// the same ids on every machine; `Options` drop rare words and cap the size. `to_string` and
/// `from_string` save and restore the vocabulary exactly, e.g. as a checkpoint's metadata entry.
class WordVocabulary {
 public:
  /// @brief Id of [PAD].
  static constexpr std::int32_t pad_id = 0;
  /// @brief Id of [UNK].
  static constexpr std::int32_t unk_id = 1;
  /// @brief Id of [CLS].
  static constexpr std::int32_t cls_id = 2;
  /// @brief Id of [SEP].
  static constexpr std::int32_t sep_id = 3;
  /// @brief Id of [MASK].
  static constexpr std::int32_t mask_id = 4;
  /// @brief The special tokens' spellings, in id order; the ids of the words start after them.
  static constexpr std::array<std::string_view, 5> special_words{"[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                                                 "[MASK]"};
  /// @brief The first line's first field in `to_string`'s text.
  static constexpr std::string_view format_name = "mpx-word-vocabulary";
  /// @brief The format version `to_string` writes and `from_string` reads.
  static constexpr int format_version = 1;

  /// @brief Which words `build` keeps.
  using Options = WordVocabularyOptions;

  /// @brief A vocabulary of the special tokens alone.
  WordVocabulary() {
    for (const std::string_view word : special_words) add(word);
  }

  /// @brief The tokens of `text` as `encode` sees them (see the class comment).
  /// @param text any bytes; UTF-8 characters outside ASCII stay inside their words
  [[nodiscard]] static std::vector<std::string> tokenize(std::string_view text) {
    std::vector<std::string> tokens;
    detail::for_each_word_token(text, [&](std::string_view token) { tokens.emplace_back(token); });
    return tokens;
  }

  /// @brief The vocabulary of `texts`: the special tokens, then every token seen at least
  /// `options.min_count` times, by descending count, ties by the token's bytes, cut at
  /// `options.max_size`.
  /// @param texts the training texts: a range of anything convertible to `std::string_view`
  /// @param options which words are kept
  /// @throws mpx::invalid_argument for invalid options, or words beyond int32 ids without `max_size`.
  template <std::ranges::input_range Texts>
  requires std::convertible_to<std::ranges::range_reference_t<const Texts&>, std::string_view>
  [[nodiscard]] static WordVocabulary build(const Texts& texts, const Options& options = {}) {
    options.validate();
    std::unordered_map<std::string, std::int64_t, detail::WordHash, std::equal_to<>> counts;
    for (const auto& text : texts) {
      detail::for_each_word_token(std::string_view(text), [&](std::string_view token) {
        const auto found = counts.find(token);
        if (found != counts.end()) {
          ++found->second;
        } else {
          counts.emplace(std::string(token), 1);
        }
      });
    }
    std::vector<std::pair<std::string_view, std::int64_t>> ranked;
    for (const auto& [word, count] : counts) {
      if (count >= options.min_count) ranked.emplace_back(word, count);
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    const auto words_kept = static_cast<std::size_t>(
        options.max_size == 0
            ? static_cast<std::int64_t>(ranked.size())
            : std::min<std::int64_t>(options.max_size - static_cast<std::int64_t>(special_words.size()),
                                     static_cast<std::int64_t>(ranked.size())));
    if (ranked.size() + special_words.size() > std::size_t{0x7fffffff} && options.max_size == 0) {
      throw invalid_argument(mpx::detail::concat("mpx::data::WordVocabulary::build: ", ranked.size(),
                                                 " distinct words do not fit int32 ids; set max_size"));
    }
    WordVocabulary vocabulary;
    vocabulary.words_.reserve(special_words.size() + words_kept);
    for (std::size_t i = 0; i < words_kept; ++i) vocabulary.add(ranked[i].first);
    return vocabulary;
  }

  /// @brief Number of ids: the special tokens and the words (the embedding's and the masked-LM
  /// output layer's number of rows).
  [[nodiscard]] std::int32_t size() const noexcept { return static_cast<std::int32_t>(words_.size()); }

  /// @brief The ids of the special tokens, for `PaddedBatches` and `mask_tokens`.
  [[nodiscard]] static constexpr SpecialTokens special_tokens() noexcept {
    return {.pad = pad_id, .unk = unk_id, .cls = cls_id, .sep = sep_id, .mask = mask_id};
  }

  /// @brief Whether `word` (a token, or a special token's spelling) has an id of its own.
  /// @param word the token, as `tokenize` writes it
  [[nodiscard]] bool contains(std::string_view word) const { return ids_.find(word) != ids_.end(); }

  /// @brief The id of `word` (a token, or a special token's spelling such as "[CLS]"); [UNK]'s id if
  /// the vocabulary lacks it.
  /// @param word the token, as `tokenize` writes it (lowercase)
  [[nodiscard]] std::int32_t id_of(std::string_view word) const {
    const auto found = ids_.find(word);
    return found == ids_.end() ? unk_id : found->second;
  }

  /// @brief The word (or special token's spelling) with id `id`.
  /// @param id a token id
  /// @throws mpx::invalid_argument naming the id unless it is in [0, `size()`).
  [[nodiscard]] const std::string& word_of(std::int32_t id) const {
    if (id < 0 || id >= size()) {
      throw invalid_argument(mpx::detail::concat("mpx::data::WordVocabulary::word_of: id ", id,
                                                 " is outside [0, ", size(), ")"));
    }
    return words_[static_cast<std::size_t>(id)];
  }

  /// @brief The ids of the tokens of `text` ([UNK] for a word the vocabulary lacks), without [CLS]
  /// or [SEP]: an encoder's input is `[CLS] encode(text) [SEP]`.
  /// @param text any bytes
  [[nodiscard]] std::vector<std::int32_t> encode(std::string_view text) const {
    std::vector<std::int32_t> ids;
    detail::for_each_word_token(text, [&](std::string_view token) { ids.push_back(id_of(token)); });
    return ids;
  }

  /// @brief The words of `ids` joined by single spaces, special tokens spelled as "[CLS]" etc.: for
  /// reading, not the inverse of `encode` (case, spacing and unknown words are lost).
  /// @param ids token ids
  /// @throws mpx::invalid_argument naming the id and its position if one lies outside [0, `size()`).
  [[nodiscard]] std::string decode(std::span<const std::int32_t> ids) const {
    std::string text;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= size()) {
        throw invalid_argument(mpx::detail::concat("mpx::data::WordVocabulary::decode: id ", ids[i],
                                                   " at position ", i, " is outside [0, ", size(), ")"));
      }
      if (i != 0) text.push_back(' ');
      text += words_[static_cast<std::size_t>(ids[i])];
    }
    return text;
  }

  /// @brief The vocabulary as text: a header line `mpx-word-vocabulary 1 <size>` (name, format
  /// version, number of ids), then one word per line in id order, the special tokens first. Every
  /// line ends with `\n`. `from_string(v.to_string()) == v`.
  [[nodiscard]] std::string to_string() const {
    std::string text = mpx::detail::concat(format_name, ' ', format_version, ' ', size(), '\n');
    for (const std::string& word : words_) text.append(word).push_back('\n');
    return text;
  }

  /// @brief The vocabulary that `to_string` wrote.
  /// @param text the text, with or without a final `\n`
  /// @throws mpx::io_error naming the line and its content for a missing or malformed header, another
  /// format version, a word count other than the header's, special tokens other than [PAD] [UNK]
  /// [CLS] [SEP] [MASK] at ids 0 to 4, a word `tokenize` cannot produce (empty, uppercase, holding a
  /// space or several punctuation marks), or a word listed twice.
  [[nodiscard]] static WordVocabulary from_string(std::string_view text) {
    const auto fail = [](std::int64_t line, std::string_view content, auto&&... what) {
      constexpr std::size_t limit = 100;
      const std::string shown =
          content.size() <= limit ? std::string(content) : std::string(content.substr(0, limit)) + "...";
      throw io_error(mpx::detail::concat("mpx::data::WordVocabulary::from_string: line ", line, " \"", shown,
                                         "\": ", what...));
    };
    std::vector<std::string_view> lines;
    for (std::string_view rest = text; !rest.empty();) {
      const std::size_t end = rest.find('\n');
      lines.push_back(rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    }
    if (lines.empty())
      fail(1, "", "empty text; expected a header `", format_name, " ", format_version, " <size>`");

    const std::string_view header = lines[0];
    const std::size_t first_space = header.find(' ');
    const std::size_t second_space =
        first_space == std::string_view::npos ? first_space : header.find(' ', first_space + 1);
    if (second_space == std::string_view::npos || header.substr(0, first_space) != format_name) {
      fail(1, header, "not a vocabulary header; expected `", format_name, " ", format_version, " <size>`");
    }
    const std::string_view version = header.substr(first_space + 1, second_space - first_space - 1);
    if (version != mpx::detail::exact_text(format_version)) {
      fail(1, header, "format version \"", version, "\" is not supported; this mpx reads version ",
           format_version);
    }
    const std::string_view size_text = header.substr(second_space + 1);
    std::int64_t declared = 0;
    if (size_text.empty() || size_text.size() > 10 ||
        !std::all_of(size_text.begin(), size_text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      fail(1, header, "size \"", size_text, "\" is not a decimal number");
    }
    for (const char c : size_text) declared = declared * 10 + (c - '0');
    const auto found = static_cast<std::int64_t>(lines.size()) - 1;
    if (found != declared) {
      fail(1, header, "the header declares ", declared, " words but ", found,
           " lines follow; the text is truncated or does not belong to this header");
    }
    if (declared < static_cast<std::int64_t>(special_words.size()) || declared > std::int64_t{0x7fffffff}) {
      fail(1, header, "size ", declared, " is invalid; expected 5 (the special tokens) to 2^31 - 1");
    }

    WordVocabulary vocabulary;  // holds the special tokens already
    for (std::size_t id = 0; id < special_words.size(); ++id) {
      if (lines[id + 1] != special_words[id]) {
        fail(static_cast<std::int64_t>(id) + 2, lines[id + 1], "expected the special token ",
             special_words[id], " at id ", id,
             "; this vocabulary's special tokens are [PAD] [UNK] [CLS] [SEP] [MASK] at ids 0 to 4");
      }
    }
    vocabulary.words_.reserve(lines.size() - 1);
    for (std::size_t id = special_words.size(); id + 1 < lines.size(); ++id) {
      const std::string_view word = lines[id + 1];
      const auto line = static_cast<std::int64_t>(id) + 2;
      if (!is_token(word)) {
        fail(line, word, "word of id ", id,
             " is not a token (a run of lowercase letters and digits, or one punctuation mark)");
      }
      const auto earlier = vocabulary.ids_.find(word);
      if (earlier != vocabulary.ids_.end()) {
        fail(line, word, "word of id ", id, " is listed twice (first at id ", earlier->second, ", line ",
             earlier->second + 2, ")");
      }
      vocabulary.add(word);
    }
    return vocabulary;
  }

  /// @brief Two vocabularies are equal when they give every word the same id.
  /// @param other the vocabulary to compare with
  [[nodiscard]] bool operator==(const WordVocabulary& other) const { return words_ == other.words_; }

 private:
  /// Whether `tokenize` can produce `word`: one punctuation mark, or a run of word bytes with no
  /// ASCII capital.
  [[nodiscard]] static bool is_token(std::string_view word) noexcept {
    if (word.empty()) return false;
    const auto first = static_cast<unsigned char>(word[0]);
    if (!detail::is_word_byte(first)) return word.size() == 1 && !detail::is_separator_byte(first);
    return std::all_of(word.begin(), word.end(), [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return detail::is_word_byte(byte) && !(byte >= 'A' && byte <= 'Z');
    });
  }

  void add(std::string_view word) {
    ids_.emplace(std::string(word), static_cast<std::int32_t>(words_.size()));
    words_.emplace_back(word);
  }

  std::vector<std::string> words_;
  std::unordered_map<std::string, std::int32_t, detail::WordHash, std::equal_to<>> ids_;
};

}  // namespace mpx::data
