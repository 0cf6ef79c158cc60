// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `TextCorpus`: a directory of text files (by default the Debian package `fortunes`) read as
/// bytes, with a byte-level vocabulary, int32 token ids and a training/validation split.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "mpx/error.hpp"

namespace mpx::data {

/// @brief Where the Debian package `fortunes` installs its text files (one file per topic).
inline constexpr const char* fortunes_system_dir = "/usr/share/games/fortunes";

/// @brief `$MPX_TEXT_CORPUS` if set and not empty, else `/usr/share/games/fortunes`.
[[nodiscard]] inline std::filesystem::path default_text_corpus_path() {
  const char* from_environment = std::getenv("MPX_TEXT_CORPUS");
  if (from_environment != nullptr && from_environment[0] != '\0') return from_environment;
  return fortunes_system_dir;
}

/// @brief One file of a `TextCorpus` and where its bytes lie in `TextCorpus::text()`.
struct TextFile {
  std::filesystem::path path;  ///< the file as found (directory / name)
  std::int64_t offset = 0;     ///< index of its first byte in the corpus text
  std::int64_t size = 0;       ///< its length in bytes
};

namespace detail {

/// Appended to the "not found" message so that its reader knows the one command that fixes it.
inline constexpr const char* text_corpus_install_hint =
    "the default corpus comes from the Debian package fortunes "
    "(`apt-get install fortunes` puts it in /usr/share/games/fortunes); set MPX_TEXT_CORPUS or pass "
    "a directory or file to mpx::data::TextCorpus to read text from elsewhere";

/// Token ids are int32 and window starts are drawn as 32-bit words: 1 GiB keeps both far from their
/// limits and a mistaken path (a disk image, a home directory of videos) from exhausting memory.
inline constexpr std::int64_t text_corpus_max_bytes = std::int64_t{1} << 30;

template <class... Parts>
[[noreturn]] void fail_text_corpus(const std::filesystem::path& path, Parts&&... what) {
  throw io_error(
      mpx::detail::concat("mpx::data::TextCorpus: \"", path.string(), "\": ", std::forward<Parts>(what)...));
}

/// The whole file as bytes; `io_error` naming the file if it cannot be read.
[[nodiscard]] inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_text_corpus(path, "cannot be opened");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail_text_corpus(path, "read failed after ", bytes.size(), " bytes");
  return bytes;
}

/// A NUL byte never occurs in text and almost always in binary formats (fortune's `.dat` indexes,
/// images, compressed files): the same test `grep` and `diff` use to call a file binary.
[[nodiscard]] inline bool looks_binary(std::string_view bytes) noexcept {
  return bytes.find('\0') != std::string_view::npos;
}

/// Files of a directory that hold corpus text: regular files that are not symbolic links, not
/// named `*.dat` (fortune's binary indexes) or `*.u8` (fortune's links to the same text), sorted by
/// name so that the text is the same on every file system.
[[nodiscard]] inline std::vector<std::filesystem::path> text_files_of(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code status;
  for (std::filesystem::directory_iterator it(dir, status), end; !status && it != end; it.increment(status)) {
    const std::filesystem::directory_entry& entry = *it;
    std::error_code entry_status;  // an entry that vanishes or cannot be inspected is not text to read
    if (entry.is_symlink(entry_status) || !entry.is_regular_file(entry_status)) continue;
    const std::filesystem::path extension = entry.path().extension();
    if (extension == ".dat" || extension == ".u8") continue;
    files.push_back(entry.path());
  }
  if (status) fail_text_corpus(dir, "cannot be listed (", status.message(), ")");
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.filename().string() < b.filename().string(); });
  return files;
}

}  // namespace detail

/// @brief A text corpus as bytes: the vocabulary of the distinct bytes present, the text as int32
/// token ids, and a split into a training part and a validation part.
///
/// A directory is read non-recursively (so the `off/` subdirectory of Debian's `fortunes-off` is
/// not): its regular files in byte-wise order of their names, skipping symbolic links, `*.dat` and
/// `*.u8` files and any file containing a NUL byte (binary), concatenated as they are (the fortune
/// files end with their `%` separator line, so topics stay apart). A file path is read whatever its
/// name. The text is taken as bytes, not decoded: UTF-8 characters outside ASCII become several
/// tokens, so any file loads and `decode(encode(s)) == s` for every byte string of the vocabulary.
///
/// Token id i stands for the i-th smallest byte present (`vocabulary()[i]`), so ids are dense in
/// [0, `vocabulary_size()`) and the same text always gets the same ids.
///
/// The validation part is the last `validation_fraction` of the text, cut at a file boundary when
/// one lies close enough: the boundary nearest to byte (1 - fraction) × size is taken when it leaves
/// between half and 1.5 times the requested validation length; otherwise (a single file, or files too
/// large for that) the cut is at that byte. A file boundary keeps validation text from continuing a
/// training entry; with `fortunes` it holds out the last topics of the alphabet (tao … zippy, 9.6%).
class TextCorpus {
 public:
  /// @brief How the text is split.
  struct Options {
    /// @brief Share of the text, at its end, held out for validation; in [0, 1).
    double validation_fraction = 0.1;

    /// @brief Throws `mpx::invalid_argument` naming the field unless 0 <= `validation_fraction` < 1.
    void validate() const {
      if (!(validation_fraction >= 0.0 && validation_fraction < 1.0)) {
        throw invalid_argument(mpx::detail::concat("mpx::data::TextCorpus::Options: validation_fraction = ",
                                                   mpx::detail::exact_text(validation_fraction),
                                                   " is invalid; expected a value in [0, 1)"));
      }
    }
  };

  /// @brief Reads `path` (a directory of text files or one file) with the default options.
  explicit TextCorpus(const std::filesystem::path& path = default_text_corpus_path())
      : TextCorpus(path, Options{}) {}

  /// @brief Reads `path` (a directory of text files or one file) and splits it as `options` say.
  /// @throws mpx::io_error naming the path if it does not exist (with the command that installs the
  /// default corpus), cannot be read, is a binary file, holds no text, or exceeds 1 GiB;
  /// mpx::invalid_argument for invalid options.
  TextCorpus(const std::filesystem::path& path, const Options& options) : path_(path), options_(options) {
    options_.validate();
    std::error_code status;
    const std::filesystem::file_status found = std::filesystem::status(path, status);
    if (!std::filesystem::exists(found)) {
      detail::fail_text_corpus(path, "not found; ", detail::text_corpus_install_hint);
    }
    if (std::filesystem::is_directory(found)) {
      read_directory(path);
    } else {
      read_file(path, /*explicitly_named=*/true);
    }
    if (text_.empty()) {
      detail::fail_text_corpus(path, "holds no text: ", files_.size(), " text files of 0 bytes, ",
                               skipped_binary_, " binary files skipped");
    }
    build_vocabulary();
    split_ = split_offset();
  }

  /// @brief The path the corpus was read from.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// @brief The files read, in order, with their place in `text()`.
  [[nodiscard]] std::span<const TextFile> files() const noexcept { return files_; }
  /// @brief Files of the directory skipped because they hold a NUL byte.
  [[nodiscard]] std::int64_t skipped_binary_files() const noexcept { return skipped_binary_; }
  /// @brief The options the corpus was split with.
  [[nodiscard]] const Options& options() const noexcept { return options_; }

  /// @brief All text: the files' bytes concatenated.
  [[nodiscard]] std::string_view text() const noexcept { return text_; }
  /// @brief Bytes of text, which is also the number of tokens.
  [[nodiscard]] std::int64_t size() const noexcept { return static_cast<std::int64_t>(text_.size()); }

  /// @brief The distinct bytes of the text in increasing order; token id i stands for `vocabulary()[i]`.
  [[nodiscard]] std::span<const std::uint8_t> vocabulary() const noexcept { return vocabulary_; }
  /// @brief Number of distinct bytes, the size of a character model's embedding and output layer.
  [[nodiscard]] std::int32_t vocabulary_size() const noexcept {
    return static_cast<std::int32_t>(vocabulary_.size());
  }

  /// @brief The token ids of `text`, one per byte.
  /// @throws mpx::invalid_argument naming the byte and its position if `text` holds a byte that is
  /// not in the vocabulary (e.g. a prompt with a character the corpus lacks).
  [[nodiscard]] std::vector<std::int32_t> encode(std::string_view text) const {
    std::vector<std::int32_t> ids(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto byte = static_cast<std::uint8_t>(text[i]);
      const std::int32_t id = id_of_[byte];
      if (id < 0) {
        throw invalid_argument(mpx::detail::concat("mpx::data::TextCorpus::encode: byte ", int{byte},
                                                   " at position ", i, " is not in the vocabulary of ",
                                                   vocabulary_.size(), " bytes of \"", path_.string(), "\""));
      }
      ids[i] = id;
    }
    return ids;
  }

  /// @brief The bytes that the token ids `ids` stand for.
  /// @throws mpx::invalid_argument naming the id and its position if one lies outside
  /// [0, `vocabulary_size()`).
  [[nodiscard]] std::string decode(std::span<const std::int32_t> ids) const {
    std::string text(ids.size(), '\0');
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= vocabulary_size()) {
        throw invalid_argument(mpx::detail::concat("mpx::data::TextCorpus::decode: token id ", ids[i],
                                                   " at position ", i, " is outside [0, ", vocabulary_size(),
                                                   ")"));
      }
      text[i] = static_cast<char>(vocabulary_[static_cast<std::size_t>(ids[i])]);
    }
    return text;
  }

  /// @brief The whole text as token ids.
  [[nodiscard]] std::span<const std::int32_t> tokens() const noexcept { return tokens_; }
  /// @brief Index of the first validation token: the training part is [0, split), validation the rest.
  [[nodiscard]] std::int64_t split() const noexcept { return split_; }
  /// @brief The training part, `tokens()[0, split())`.
  [[nodiscard]] std::span<const std::int32_t> train_tokens() const noexcept {
    return std::span<const std::int32_t>(tokens_).first(static_cast<std::size_t>(split_));
  }
  /// @brief The validation part, `tokens()[split(), size())`; empty when `validation_fraction` is 0.
  [[nodiscard]] std::span<const std::int32_t> validation_tokens() const noexcept {
    return std::span<const std::int32_t>(tokens_).subspan(static_cast<std::size_t>(split_));
  }

 private:
  void read_directory(const std::filesystem::path& dir) {
    for (const std::filesystem::path& file : detail::text_files_of(dir)) {
      read_file(file, /*explicitly_named=*/false);
    }
  }

  void read_file(const std::filesystem::path& file, bool explicitly_named) {
    std::error_code status;
    const std::uintmax_t bytes_on_disk = std::filesystem::file_size(file, status);
    if (status) detail::fail_text_corpus(file, "cannot be read (", status.message(), ")");
    // Checked before reading, so that a wrong path fails fast instead of filling memory.
    if (bytes_on_disk > static_cast<std::uintmax_t>(detail::text_corpus_max_bytes - size())) {
      detail::fail_text_corpus(file, "has ", bytes_on_disk, " bytes, which with the ", size(),
                               " bytes read before exceeds the corpus limit of ",
                               detail::text_corpus_max_bytes, " bytes");
    }
    std::string bytes = detail::read_text_file(file);
    if (detail::looks_binary(bytes)) {
      if (explicitly_named) {
        detail::fail_text_corpus(file, "is a binary file (byte ", bytes.find('\0'),
                                 " is NUL); expected text");
      }
      ++skipped_binary_;
      return;
    }
    files_.push_back(TextFile{file, size(), static_cast<std::int64_t>(bytes.size())});
    text_ += bytes;
  }

  void build_vocabulary() {
    std::array<bool, 256> present{};
    for (const char c : text_) present[static_cast<std::uint8_t>(c)] = true;
    id_of_.fill(-1);
    for (std::size_t byte = 0; byte < present.size(); ++byte) {
      if (!present[byte]) continue;
      id_of_[byte] = static_cast<std::int32_t>(vocabulary_.size());
      vocabulary_.push_back(static_cast<std::uint8_t>(byte));
    }
    tokens_.resize(text_.size());
    for (std::size_t i = 0; i < text_.size(); ++i) tokens_[i] = id_of_[static_cast<std::uint8_t>(text_[i])];
  }

  /// The split rule of the class comment: a file boundary within half the validation length of the
  /// exact cut, else the exact cut.
  [[nodiscard]] std::int64_t split_offset() const {
    const std::int64_t wanted_validation =
        static_cast<std::int64_t>(std::llround(options_.validation_fraction * static_cast<double>(size())));
    const std::int64_t exact = size() - wanted_validation;
    if (wanted_validation == 0) return exact;
    std::int64_t best = exact;
    std::int64_t best_distance = wanted_validation / 2 + 1;  // a boundary must come strictly closer
    for (const TextFile& file : files_) {
      if (file.offset <= 0 || file.offset >= size()) continue;  // inner boundaries only: both parts non-empty
      const std::int64_t distance = std::abs(file.offset - exact);
      if (distance < best_distance) {
        best = file.offset;
        best_distance = distance;
      }
    }
    return best;
  }

  std::filesystem::path path_;
  Options options_;
  std::vector<TextFile> files_;
  std::int64_t skipped_binary_ = 0;
  std::string text_;
  std::vector<std::uint8_t> vocabulary_;
  std::array<std::int32_t, 256> id_of_{};
  std::vector<std::int32_t> tokens_;
  std::int64_t split_ = 0;
};

}  // namespace mpx::data
