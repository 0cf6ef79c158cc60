// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::PaddedSequences<Body>`: a model over a batch of sequences padded to one length, as an
/// encoder reads variable-length sentences: the body's `nn::PaddedSelfAttention` layers attend to
/// each sequence's real tokens only.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpx/error.hpp"
#include "mpx/nn/gather_tokens.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_base.hpp"
#include "mpx/nn/step_key.hpp"
#include "mpx/nn/token_type_embedding.hpp"
#include "mpx/nn/training_mode.hpp"
#include "mpx/tensor/tensor.hpp"
#include "mpx/tensor/transfer.hpp"

namespace mpx::nn {

namespace detail {
// A class template, so that the "in instantiation of" note above a failure names the body.
template <class Body>
struct check_padded_sequences {
  static_assert(
      Layer<Body>,
      "mpx::nn::PaddedSequences<Body>: the body (see check_padded_sequences above) must be a layer: "
      "input_type, output_type, device_type, kind, forward(x) and backward(dy, input_grad)");
  /// The body's precision; read through this check so that a body that is no layer fails it first.
  using precision = typename Body::precision;
};
}  // namespace detail

/// @brief y = body(x) over x [batch, sequence, ...], a batch of sequences padded to one length, every
/// `nn::PaddedSelfAttention` in the body masking the keys past each sequence's length.
///
/// `set_lengths(lengths)` (one per sequence, from the host: its number of real tokens, which come
/// first) comes before each forward. It copies them to the device, into the same buffer every time,
/// so a captured training step replays with the new lengths. The other layers work per position and
/// need no mask; the outputs at padded positions are computed and must be ignored by the loss (the
/// cross-entropy's ignore index at those targets, or pooling that reads a real position):
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed>;
/// mpx::nn::PaddedSequences model{mpx::nn::Sequential{
///     L::embedding(vocabulary, 128), L::positional_embedding(64, 128),
///     mpx::nn::Residual{mpx::nn::Sequential{L::layer_norm(128), L::padded_self_attention(128, 4)}}, ...}};
/// model.set_lengths(batch.lengths);    // std::span<const std::int32_t>, one per sequence
/// const auto& y = model.forward(ids);  // ids [batch, longest]
/// @endcode
/// A masked-language model predicts the masked tokens only: `select_tokens(rows)` names them (rows
/// n T + t of the batch's tokens) and the body's `nn::GatherTokens` layer takes them, so that the
/// vocabulary-sized output layer after it runs on those rows alone. `set_token_types(types)` gives
/// the body's `nn::TokenTypeEmbedding` layers each token's type (BERT's segment ids; type 0 for
/// every token until it is called).
/// Parameters and buffers keep the body's names (the lengths are an input, not a parameter), and the
/// model describes itself as its body does, so weights move between the two freely. It trains as a
/// `Sequential` does (`Trainer`, weight files and checkpoints): set the lengths of each batch before
/// `trainer.step(ids, targets)`. The lengths are not split across micro-batches
/// (`MicroBatches{k}`): such a step is a shape error that says so.
/// @tparam Body a layer over [batch, sequence, ...] with at least one `PaddedSelfAttention`.
template <class Body>
class PaddedSequences
    : public LayerBase<PaddedSequences<Body>, typename detail::check_padded_sequences<Body>::precision,
                       typename Body::device_type, typename Body::input_type, typename Body::output_type> {
  using In = typename Body::input_type;
  using Out = typename Body::output_type;
  using Device = typename Body::device_type;
  using Base = LayerBase<PaddedSequences, typename Body::precision, Device, In, Out>;

 public:
  /// @brief Layer name used in messages.
  static constexpr std::string_view kind = "PaddedSequences";
  using Base::forward;
  /// @brief Whether the body computes in fp16 anywhere (and so needs loss scaling).
  static constexpr bool has_half_compute = computes_in_half<Body>();

  /// @brief Runs `body` over padded sequences.
  /// @param body the model; its `PaddedSelfAttention` layers read the lengths set here.
  /// @throws mpx::invalid_argument when the body has no `PaddedSelfAttention` layer.
  explicit PaddedSequences(Body body)
      : body_(std::move(body)),
        lengths_(std::make_unique<Tensor<std::int32_t, Device>>()),
        selection_(std::make_unique<TokenSelection<Device>>()),
        token_types_(std::make_unique<TokenTypes<Device>>()) {
    std::int64_t readers = 0;
    nn::for_each_layer(body_, [&](auto& layer) {
      if constexpr (requires { layer.bind_sequence_lengths(lengths_.get()); }) {
        layer.bind_sequence_lengths(lengths_.get());
        ++readers;
      }
      if constexpr (requires { layer.bind_token_selection(selection_.get()); }) {
        layer.bind_token_selection(selection_.get());
      }
      if constexpr (requires { layer.bind_token_types(token_types_.get()); }) {
        layer.bind_token_types(token_types_.get());
        has_token_types_ = true;
      }
    });
    if (readers == 0) {
      throw invalid_argument(
          "mpx::nn::PaddedSequences: the body has no PaddedSelfAttention layer to read the sequences' "
          "lengths; "
          "use padded_self_attention(...) for its attention");
    }
    set_label(this->label());
  }

  /// @brief Initialises the body from (seed, stream).
  void initialize(std::uint64_t seed, std::uint64_t stream) { body_.initialize(seed, stream); }
  /// @brief Initialises the body from `seed`, as a `Sequential` model initialises.
  void initialize(std::uint64_t seed) { initialize(seed, 0); }

  /// @brief The lengths of the next forward's sequences: the number of real tokens of each, the
  /// positions from there on being padding.
  /// @param lengths one per sequence (host memory), each >= 0.
  /// @throws mpx::invalid_argument naming the sequence when a length is negative.
  void set_lengths(std::span<const std::int32_t> lengths) {
    const auto negative = std::find_if(lengths.begin(), lengths.end(), [](std::int32_t n) { return n < 0; });
    if (negative != lengths.end()) {
      throw invalid_argument(mpx::detail::concat(this->label(), ": sequence ", negative - lengths.begin(),
                                                 " has length ", *negative,
                                                 "; lengths are counts of tokens, >= 0"));
    }
    longest_ = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
    const Shape shape{static_cast<std::int64_t>(lengths.size())};
    ensure_shape(host_lengths_, shape);
    std::copy(lengths.begin(), lengths.end(), host_lengths_.data());
    ensure_shape(*lengths_, shape);
    mpx::copy(*lengths_, host_lengths_);
  }

  /// @brief The tokens the body's `GatherTokens` layers take in the next forward: row n T + t for
  /// token t of sequence n (T the batch's padded length), in the order the output is to have them
  /// (a masked-language model's chosen tokens, as `data::chosen_tokens` lists them).
  /// @param rows distinct rows, each >= 0 (host memory); checked against the batch in forward.
  /// @throws mpx::invalid_argument naming the entry for a negative or repeated row.
  void select_tokens(std::span<const std::int32_t> rows) {
    std::vector<std::int32_t> sorted(rows.begin(), rows.end());
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      if (sorted[i] < 0 || (i > 0 && sorted[i] == sorted[i - 1])) {
        throw invalid_argument(mpx::detail::concat(this->label(), ": token row ", sorted[i],
                                                   sorted[i] < 0 ? " is negative" : " is chosen twice",
                                                   "; select_tokens takes distinct rows n T + t"));
      }
    }
    const Shape shape{static_cast<std::int64_t>(rows.size())};
    ensure_shape(selection_->host, shape);
    std::copy(rows.begin(), rows.end(), selection_->host.data());
    ensure_shape(selection_->device, shape);
    mpx::copy(selection_->device, selection_->host);
  }

  /// @brief The token types of the next forwards, one per token of the padded batch, row major (n T
  /// + t for token t of sequence n): the rows of the body's `nn::TokenTypeEmbedding` tables they add.
  /// An empty span makes every token type 0 again (the default).
  /// @param types one per token (host memory), each >= 0; the count is checked against the batch,
  ///              and the types against the table, in forward.
  /// @throws mpx::invalid_argument naming the token for a negative type, or when the body has no
  ///         `TokenTypeEmbedding` layer to read them.
  void set_token_types(std::span<const std::int32_t> types) {
    if (!has_token_types_ && !types.empty()) {
      throw invalid_argument(mpx::detail::concat(this->label(),
                                                 ": the body has no TokenTypeEmbedding layer to read "
                                                 "token types; add token_type_embedding(...) to it"));
    }
    const auto negative = std::find_if(types.begin(), types.end(), [](std::int32_t n) { return n < 0; });
    if (negative != types.end()) {
      throw invalid_argument(mpx::detail::concat(this->label(), ": token ", negative - types.begin(),
                                                 " has type ", *negative, "; types are table rows, >= 0"));
    }
    if (types.empty()) {
      *token_types_ = TokenTypes<Device>{};
      return;
    }
    const Shape shape{static_cast<std::int64_t>(types.size())};
    if (token_types_->host.rank() != 0) {  // a batch's [N, T] back to one row, the buffer kept
      token_types_->host.reshape(Shape{token_types_->host.numel()});
      token_types_->device.reshape(Shape{token_types_->device.numel()});
    }
    ensure_shape(token_types_->host, shape);
    std::copy(types.begin(), types.end(), token_types_->host.data());
    ensure_shape(token_types_->device, shape);
    mpx::copy(token_types_->device, token_types_->host);
  }

  /// @brief y = body(x), each sequence's padding masked in the body's attention.
  /// @param x [batch, sequence, ...]: token ids, or features.
  /// @throws mpx::error before any `set_lengths`; mpx::shape_error naming the layer when x's batch is
  ///         not the number of lengths, a length exceeds x's sequence, or the token types set are not
  ///         one per token.
  const Tensor<Out, Device>& forward(const Tensor<In, Device>& x) {
    if (lengths_->rank() != 1) {
      throw error(mpx::detail::concat(this->label(), ": set_lengths(...) must come before forward"));
    }
    const std::int64_t sequences = lengths_->shape()[0];
    if (x.rank() < 2 || x.shape()[0] != sequences) {
      const bool split = x.rank() >= 1 && x.shape()[0] > 0 && sequences % x.shape()[0] == 0;
      throw shape_error(mpx::detail::concat(
          this->label(), ": x ", x.shape(), " is not [batch, sequence, ...] with one sequence per length (",
          sequences, " lengths set)",
          split ? "; the lengths are not split across micro-batches: train with one micro-batch per step"
                : ""));
    }
    if (longest_ > x.shape()[1]) {
      throw shape_error(mpx::detail::concat(this->label(), ": a sequence of length ", longest_,
                                            " in a batch padded to ", x.shape()[1], " positions (x ",
                                            x.shape(), ")"));
    }
    if (token_types_->host.rank() != 0) {
      const Shape tokens{x.shape()[0], x.shape()[1]};
      if (token_types_->host.numel() != tokens.numel()) {
        throw shape_error(mpx::detail::concat(this->label(), ": ", token_types_->host.numel(),
                                              " token types set for x ", x.shape(), " (", tokens.numel(),
                                              " tokens, one type each)"));
      }
      token_types_->host.reshape(tokens);
      token_types_->device.reshape(tokens);
    }
    return body_.forward(x);
  }

  /// @brief The body's gradients; returns its dx when `input_grad`.
  /// @param dy         dL/dy, of the forward's output shape.
  /// @param input_grad whether to compute dx (false returns null).
  const Tensor<In, Device>* backward(const Tensor<Out, Device>& dy, bool input_grad = true) {
    return body_.backward(dy, input_grad);
  }

  /// @brief Calls f(name, parameter) for the body's parameters, under the body's names.
  /// @tparam F a callable taking (std::string_view, Parameter&).
  /// @param f the callable.
  template <class F>
  void for_each_parameter(F&& f) {
    body_.for_each_parameter(std::forward<F>(f));
  }
  /// @brief Calls f(name, tensor) for the body's buffers, under the body's names.
  /// @tparam F a callable taking (std::string_view, tensor).
  /// @param f the callable.
  template <class F>
  void for_each_buffer(F&& f) {
    nn::for_each_buffer(body_, std::forward<F>(f));
  }
  /// @brief Names the model in messages; the body's layers are named as the body names them.
  /// @param label the model's path and kind.
  void set_label(std::string label) { Base::set_label(std::move(label)); }
  /// @brief Calls `f(body)` (nn::for_each_layer).
  /// @tparam F a callable taking a layer.
  /// @param f the callable.
  template <class F>
  void for_each_child(F&& f) {
    f(body_);
  }
  /// @brief Passes the mode to the body (see nn/training_mode.hpp).
  /// @param training true for training, false for evaluation.
  void set_training(bool training) {
    Base::set_training(training);
    nn::set_training(body_, training);
  }
  /// @brief Passes the running step to the layers that draw random numbers.
  /// @param key the step's key.
  void bind_step(const StepKey& key) { nn::bind_step(body_, key); }
  /// @brief Drops what the body saved for backward.
  void forget_input() noexcept {
    if constexpr (requires { body_.forget_input(); }) body_.forget_input();
  }
  /// @brief `forget_input()`, under the name a top-level model uses (as `Sequential`'s).
  void forget_inputs() noexcept { forget_input(); }

  /// @brief Sets every gradient to zero (a top-level model's duty, as `Sequential`'s).
  void zero_grad() {
    for_each_parameter([](std::string_view, auto& parameter) { parameter.zero_grad(); });
  }
  /// @brief Number of trainable scalars.
  [[nodiscard]] std::int64_t parameter_count() {
    std::int64_t count = 0;
    for_each_parameter([&](std::string_view, auto& parameter) { count += parameter.master().numel(); });
    return count;
  }

  /// @brief The body's description: the lengths are an input, so a model with them and one without
  /// describe the same weights.
  [[nodiscard]] auto describe() const { return body_.describe(); }

  /// @brief The body.
  [[nodiscard]] Body& body() noexcept { return body_; }
  /// @brief The lengths set last, on the host.
  [[nodiscard]] std::span<const std::int32_t> lengths() const noexcept {
    return {host_lengths_.data(), static_cast<std::size_t>(host_lengths_.numel())};
  }

 private:
  Body body_;
  // On the heap, so that the body's layers keep pointing at them when the model moves.
  std::unique_ptr<Tensor<std::int32_t, Device>> lengths_;
  std::unique_ptr<TokenSelection<Device>> selection_;
  std::unique_ptr<TokenTypes<Device>> token_types_;
  bool has_token_types_ = false;
  Tensor<std::int32_t, Host> host_lengths_;
  std::int64_t longest_ = 0;
};

/// @brief `PaddedSequences{body}`.
template <class Body>
PaddedSequences(Body) -> PaddedSequences<Body>;

}  // namespace mpx::nn
