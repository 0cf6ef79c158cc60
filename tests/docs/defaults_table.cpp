// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Prints the tables of defaults that docs/ shows, each between the lines
//   <!-- generated: tests/docs/defaults_table.cpp#NAME -->   and   <!-- end generated -->
// Every mpx value is read from the code: an Options struct built with `{}`, a named default constant
// (`LayerNorm::default_epsilon`), or a layer built with its defaults and looked at (its initial
// weights, whether an optimizer decays each of its parameters). The PyTorch column compares each
// value with torch's default (torch 2.15, `inspect.signature`), written here once; a value that
// differs says so in bold. tests/docs/check_generated_in_docs.py compares the pages with this
// output (CTest: docs_defaults_in_sync) and, with --fix, rewrites them.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <mpx/mpx.hpp>

namespace {

using mpx::detail::concat;
using L = mpx::nn::layers<mpx::fp32>;

// ---- text --------------------------------------------------------------------------------------

// The shortest decimal that reads back to `value` in its own type (a float's 1e-5 is "1e-5", not
// the double 9.99999974737875e-06 it widens to), exponents without padding: 1e-08 -> 1e-8.
template <class T>
std::string number(T value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isinf(value)) return value > 0 ? "+inf" : "-inf";
    }
    char buffer[64];
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
    std::string text(buffer, end);
    if (const auto e = text.find('e'); e != std::string::npos) {
      std::size_t digits = e + 1;
      if (text[digits] == '+') text.erase(digits, 1);
      if (text[digits] == '-') ++digits;
      while (digits + 1 < text.size() && text[digits] == '0') text.erase(digits, 1);
    }
    return text;
  }
}

std::string code(std::string_view text) {
  return concat("`", text, "`");
}

template <class T>
std::string code_number(T value) {
  return code(number(value));
}

// The C++ type of a field, for the loss-scaling table's `type` column.
template <class T>
constexpr std::string_view type_name() {
  if constexpr (std::is_same_v<T, float>) {
    return "float";
  } else if constexpr (std::is_same_v<T, double>) {
    return "double";
  } else if constexpr (std::is_same_v<T, int>) {
    return "int";
  } else {
    static_assert(mpx::detail::always_false<T>, "defaults_table: name this field's type in type_name()");
  }
}

// A Python float or int as Python's `repr` writes it (torch's signatures print this way):
// 0.001, 1e-08, 65536.0, 2000.
template <class T>
std::string python(T value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "True" : "False";
  } else if constexpr (std::is_integral_v<T>) {
    return number(value);
  } else {
    const double x = value;
    char buffer[64];
    const bool fixed = x == 0.0 || (std::abs(x) >= 1e-4 && std::abs(x) < 1e16);
    const auto end =
        fixed ? std::to_chars(buffer, buffer + sizeof buffer, x, std::chars_format::fixed).ptr
              : std::to_chars(buffer, buffer + sizeof buffer, x, std::chars_format::scientific).ptr;
    std::string text(buffer, end);
    if (fixed && text.find('.') == std::string::npos) text.append(".0");
    return text;
  }
}

// The PyTorch column: "same (`text`)" or "**differs**: torch `text`", then `note`.
std::string compare(bool same, std::string_view torch_text, std::string_view note = {}) {
  std::string text =
      same ? concat("same (`", torch_text, "`)") : concat("**differs**: torch `", torch_text, "`");
  if (!note.empty()) text.append("; ").append(note);
  return text;
}

// The PyTorch column for an mpx default against torch's, compared in the type of mpx's field (a
// float epsilon of 1e-5 equals torch's 1e-5). `argument` names torch's: "lr" gives `lr=0.001`,
// "DataLoader(shuffle)" gives `DataLoader(shuffle=False)`.
template <class T, class Torch>
std::string versus(T mpx_value, Torch torch_value, std::string_view argument, std::string_view note = {}) {
  const std::string value = python(torch_value);
  const std::string text = argument.ends_with(')')
                               ? concat(argument.substr(0, argument.size() - 1), "=", value, ")")
                               : concat(argument, "=", value);
  return compare(mpx_value == static_cast<T>(torch_value), text, note);
}

template <class S>
std::string scaler_name() {
  if constexpr (std::is_same_v<S, mpx::DynamicLossScaling>) {
    return "`mpx::DynamicLossScaling`";
  } else if constexpr (std::is_same_v<S, mpx::StaticLossScaling>) {
    return "`mpx::StaticLossScaling`";
  } else {
    static_assert(std::is_same_v<S, mpx::NoLossScaling>, "defaults_table: name this scaler in scaler_name()");
    return "`mpx::NoLossScaling`";
  }
}

struct Table {
  std::string name;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }

  void print() const {
    std::printf("<!-- generated: tests/docs/defaults_table.cpp#%s -->\n", name.c_str());
    const auto line = [](const std::vector<std::string>& cells) {
      std::string text = "|";
      for (const auto& cell : cells) text.append(" ").append(cell).append(" |");
      std::printf("%s\n", text.c_str());
    };
    line(header);
    line(std::vector<std::string>(header.size(), "---"));
    for (const auto& row : rows) line(row);
    std::printf("<!-- end generated -->\n");
  }
};

// ---- looking at layers built with their defaults -----------------------------------------------

std::string_view init_name(mpx::nn::Init init) {
  switch (init) {
    case mpx::nn::Init::KaimingUniform: return "Kaiming-uniform: U(-b, b), b = sqrt(6 / fan_in)";
    case mpx::nn::Init::XavierUniform: return "Xavier-uniform: U(-b, b), b = sqrt(6 / (fan_in + fan_out))";
    case mpx::nn::Init::Zeros: return "zeros";
    case mpx::nn::Init::Ones: return "ones";
  }
  return "?";
}

// "0" or "1" when every element of the parameter's master weights is that value, else a phrase that
// makes the page differ (and the test fail) until the table says what the code now does.
template <class Param>
std::string constant_value(Param& parameter) {
  const auto& master = parameter.master();
  const float first = static_cast<float>(master[0]);
  for (std::int64_t i = 0; i < master.numel(); ++i) {
    if (static_cast<float>(master[i]) != first) return "not a constant: update this table's text";
  }
  return number(first);
}

// The names of the parameters that `make_optimizer(model)` leaves unchanged by one update with zero
// gradients from weights of 1: those its weight decay does not reach. A model holding every
// parameterised layer (Embedding, PositionalEmbedding, LayerNorm, attention, Linear with biases).
template <class MakeOptimizer>
std::vector<std::string> parameters_not_decayed(MakeOptimizer make_optimizer) {
  mpx::nn::Sequential model{L::embedding(8, 4), L::positional_embedding(8, 4), L::layer_norm(4),
                            L::causal_self_attention(4, 2), L::linear(4, 8)};
  model.for_each_parameter([](std::string_view, auto& p) {
    p.master().fill(1.0f);
    p.refresh_compute_copy();
    p.zero_grad();
  });
  auto optimizer = make_optimizer(model);
  optimizer.step();
  std::vector<std::string> kept;
  model.for_each_parameter([&](std::string_view name, auto& p) {
    if (constant_value(p) == "1") kept.emplace_back(name);
  });
  return kept;
}

std::string decay_reach(const std::vector<std::string>& kept) {
  if (kept.empty())
    return "every parameter it updates: weights, biases, LayerNorm's weight and bias, embeddings";
  std::string text = "all parameters but";
  for (const auto& name : kept) text.append(" ").append(code(name));
  return text;
}

// Dropout's p: its default, or "required" while the constructor has none (a template, so that
// the branch not taken is not compiled).
template <class Drop>
void dropout_row(Table& t) {
  const std::string meaning = "probability of zeroing an element in training";
  if constexpr (std::is_default_constructible_v<Drop>) {
    t.add({"`Dropout`", "`p`", code_number(Drop{}.p()), meaning, versus(Drop{}.p(), 0.5, "nn.Dropout(p)")});
  } else {
    t.add({"`Dropout`", "`p`", "none: required", meaning, "**differs**: torch `nn.Dropout(p=0.5)`"});
  }
}

// ---- the tables --------------------------------------------------------------------------------

Table layers() {
  Table t{"layers", {"layer", "setting", "default", "meaning", "PyTorch"}, {}};
  mpx::nn::Linear<mpx::fp32> linear(6, 5);
  mpx::nn::Linear<mpx::fp32> twin(6, 5);
  mpx::nn::Linear<mpx::fp32> redrawn(6, 5);
  redrawn.initialize(0, 0);
  bool equal_twins = true, seed_zero = true;
  for (std::int64_t i = 0; i < linear.weight().master().numel(); ++i) {
    equal_twins = equal_twins && linear.weight().master()[i] == twin.weight().master()[i];
    seed_zero = seed_zero && linear.weight().master()[i] == redrawn.weight().master()[i];
  }
  t.add({"every model and layer", "mode", linear.training() ? "training" : "evaluation",
         "`nn::EvaluationMode` or `set_training(false)` switches to evaluation",
         linear.training() ? "same (modules start in `train()` mode)"
                           : "**differs**: modules start in `train()` mode"});
  t.add({"every layer", "initial weights",
         seed_zero ? concat("drawn when built, from seed 0, stream 0",
                            equal_twins ? ": layers of one shape start equal" : "")
                   : "not from seed 0: update this table's text",
         "`model.initialize(seed)` draws every layer again, each from its own stream",
         "torch draws from its global generator (`torch.manual_seed`)"});

  using LinearOptions = mpx::nn::Linear<mpx::fp32>::Options;
  t.add({"`Linear`", "`.bias`", code_number(LinearOptions{}.bias),
         "a learned bias [out_features]; optional: `{.bias = false}` leaves it out",
         versus(LinearOptions{}.bias, true, "nn.Linear(bias)")});
  const auto init_none = LinearOptions{}.init;
  const auto init_relu = mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::ReLU>::Options{}.init;
  const auto init_gelu = mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::GELU>::Options{}.init;
  t.add({"`Linear`", "`.init` (weight)",
         concat(init_name(init_none), " without an activation; ",
                init_relu == init_gelu
                    ? concat(init_name(init_relu), " with ReLU or GELU")
                    : concat(init_name(init_relu), " with ReLU, ", init_name(init_gelu), " with GELU")),
         "`{.init = mpx::nn::Init::...}` chooses another",
         "**differs**: torch U(-b, b), b = 1 / sqrt(fan_in) (`kaiming_uniform_(a=sqrt(5))`)"});
  t.add({"`Linear`", "bias's initial value", constant_value(*linear.bias()),
         "zero again after every `initialize`", "**differs**: torch U(-b, b), b = 1 / sqrt(fan_in)"});

  using Norm = mpx::nn::LayerNorm<mpx::fp32>;
  Norm norm(4);
  std::vector<std::string> norm_parameters;
  norm.for_each_parameter([&](std::string_view name, auto&) { norm_parameters.emplace_back(name); });
  t.add({"`LayerNorm`", "`epsilon`", code_number(Norm::default_epsilon) + " (float)",
         "added to the variance: (x - mean) / sqrt(var + epsilon)",
         versus(Norm::default_epsilon, 1e-5, "nn.LayerNorm(eps)")});
  std::string gamma = "?", beta = "?";
  norm.for_each_parameter(
      [&](std::string_view name, auto& p) { (name == "weight" ? gamma : beta) = constant_value(p); });
  const bool both = norm_parameters == std::vector<std::string>{"weight", "bias"};
  t.add({"`LayerNorm`", "`weight` (gamma)", concat(gamma, both ? ", always learned" : ""), "not optional",
         "same init; torch can leave it out (`elementwise_affine=False`)"});
  t.add({"`LayerNorm`", "`bias` (beta)", concat(beta, both ? ", always learned" : ""), "not optional",
         "same init; torch can leave it out (`bias=False`)"});

  dropout_row<mpx::nn::Dropout<mpx::fp32>>(t);
  t.add({"`GELU`, `Linear` with `nn::gelu`", "form", "tanh approximation (the only one)",
         "what cuBLASLt's GELU epilogue computes",
         "**differs**: torch `nn.GELU(approximate='none')`, the erf form; mpx's is `approximate='tanh'`"});

  using CrossEntropyOptions = mpx::nn::SoftmaxCrossEntropy<mpx::fp32>::Options;
  t.add({"`SoftmaxCrossEntropy`", "`.label_smoothing`", code_number(CrossEntropyOptions{}.label_smoothing),
         "weight of the uniform distribution mixed into the target",
         versus(CrossEntropyOptions{}.label_smoothing, 0.0, "nn.CrossEntropyLoss(label_smoothing)")});
  t.add({"`SoftmaxCrossEntropy`", "`.ignore_index`", code_number(CrossEntropyOptions{}.ignore_index),
         "rows with this label add no loss and no gradient",
         versus(CrossEntropyOptions{}.ignore_index, -100, "nn.CrossEntropyLoss(ignore_index)")});
  t.add({"`SoftmaxCrossEntropy`, `MSELoss`", "reduction", "mean (the only one)",
         "the loss is the mean over rows (MSE: over elements)",
         "same (`reduction='mean'`); torch also has 'sum' and 'none'"});
  return t;
}

Table cnn_layers() {
  Table t{"cnn_layers", {"layer", "setting", "default", "meaning", "PyTorch"}, {}};
  const mpx::nn::Conv2dOptions conv{};
  const auto pair = [](mpx::Size2d s) { return s.h == s.w ? code_number(s.h) : concat(s.h, " x ", s.w); };
  t.add({"`Conv2d`", "`.stride`", pair(conv.stride), "rows and columns between two outputs' windows",
         versus(conv.stride.h, conv.stride.w == 1 ? 1 : -1, "nn.Conv2d(stride)")});
  t.add({"`Conv2d`", "`.padding`", pair(conv.padding), "zeros added on each side",
         versus(conv.padding.h, conv.padding.w == 0 ? 0 : -1, "nn.Conv2d(padding)")});
  t.add({"`Conv2d`", "`.dilation`", pair(conv.dilation), "rows and columns between two taps of the kernel",
         versus(conv.dilation.h, conv.dilation.w == 1 ? 1 : -1, "nn.Conv2d(dilation)")});
  t.add({"`Conv2d`", "`.groups`", code_number(conv.groups), "independent channel groups",
         versus(conv.groups, 1, "nn.Conv2d(groups)")});
  t.add({"`Conv2d`", "`.bias`", code_number(conv.bias),
         "a learned bias [out_channels]; `{.bias = false}` before a norm",
         versus(conv.bias, true, "nn.Conv2d(bias)")});
  mpx::nn::Conv2d<mpx::fp32> layer(2, 3, 3);
  t.add({"`Conv2d`", "`.init` (weight)",
         concat(init_name(conv.init), ", fan_in = in_channels / groups KH KW"),
         "`{.init = mpx::nn::Init::...}` chooses another",
         "**differs**: torch U(-b, b), b = 1 / sqrt(fan_in) (`kaiming_uniform_(a=sqrt(5))`)"});
  t.add({"`Conv2d`", "bias's initial value", constant_value(*layer.bias()),
         "zero again after every `initialize`", "**differs**: torch U(-b, b), b = 1 / sqrt(fan_in)"});
  t.add({"`Conv2d` and every image layer", "layout",
         "channels-last: x [N, H, W, C], weight [O, KH, KW, C / groups]",
         "the layout Tensor Cores read (cuDNN's NHWC and KRSC)",
         "**differs**: NCHW and OIHW; `permute(0, 3, 1, 2)` maps mpx's to torch's"});
  const mpx::nn::Pool2dOptions pool{};
  const mpx::nn::MaxPool2d<mpx::fp32> max_pool(3);
  t.add({"`MaxPool2d`, `AvgPool2d`", "`.stride`",
         pool.stride == mpx::Size2d{0} && max_pool.window().stride == mpx::Size2d{3}
             ? "the kernel size"
             : "not the kernel size: update this table",
         "rows and columns between two windows", "same (`stride=None`: the kernel size)"});
  t.add({"`MaxPool2d`, `AvgPool2d`", "`.padding`", pair(pool.padding),
         "rows and columns added on each side, at most half the kernel",
         versus(pool.padding.h, pool.padding.w == 0 ? 0 : -1, "nn.MaxPool2d(padding)")});
  t.add({"`AvgPool2d`", "`.count_include_pad`", code_number(pool.count_include_pad),
         "the divisor is the kernel's area, padding counted as zeros",
         versus(pool.count_include_pad, true, "nn.AvgPool2d(count_include_pad)")});
  t.add({"`MaxPool2d`", "dilation, `ceil_mode`, `return_indices`", "1, false, none", "not offered",
         "same defaults; torch can change them"});
  using GN = mpx::nn::GroupNorm<mpx::fp32>;
  t.add({"`GroupNorm`", "`epsilon`", code_number(GN::default_epsilon) + " (float)",
         "added to each group's variance", versus(GN::default_epsilon, 1e-5, "nn.GroupNorm(eps)")});
  const mpx::nn::BatchNormOptions bn{};
  t.add({"`BatchNorm2d`", "`.epsilon`", code_number(bn.epsilon) + " (float)", "added to the variance",
         versus(bn.epsilon, 1e-5, "nn.BatchNorm2d(eps)")});
  t.add({"`BatchNorm2d`", "`.momentum`", code_number(bn.momentum),
         "weight of the batch in the running statistics",
         versus(bn.momentum, 0.1, "nn.BatchNorm2d(momentum)")});
  mpx::nn::BatchNorm2d<mpx::fp32> batch_norm(2);
  t.add({"`BatchNorm2d`, `GroupNorm`", "`weight` (gamma), `bias` (beta)",
         concat(constant_value(batch_norm.weight()), ", ", constant_value(batch_norm.bias()),
                ", always learned"),
         "not optional", "same init; torch can leave them out (`affine=False`)"});
  t.add({"`BatchNorm2d`", "running mean, running variance",
         concat(number(batch_norm.running_mean()[0]), ", ", number(batch_norm.running_var()[0])),
         "buffers, saved with the weights", "same; torch also keeps `num_batches_tracked`"});
  const mpx::nn::Upsample<mpx::fp32> upsample;
  t.add({"`Upsample`", "scale factor", code_number(std::get<std::int64_t>(upsample.describe()[0].value)),
         "nearest neighbour, integer factors",
         "**differs**: `nn.Upsample` has no default scale; mode 'nearest' is its default"});
  return t;
}

Table sequence_layers() {
  Table t{"sequence_layers", {"layer", "setting", "default", "meaning", "PyTorch"}, {}};
  const mpx::nn::EmbeddingOptions embedding{};
  t.add({"`Embedding`", "`.init_std`", code_number(embedding.init_std), "weight drawn from N(0, init_std^2)",
         embedding.init_std == 1.0 ? "same (`nn.Embedding`: N(0, 1)); GPT-2 and nanoGPT use 0.02"
                                   : "**differs**: `nn.Embedding` draws from N(0, 1)"});
  const mpx::nn::PositionalEmbeddingOptions positional{};
  t.add({"`PositionalEmbedding`", "`.init_std`", code_number(positional.init_std),
         "weight drawn from N(0, init_std^2)",
         "no such layer: GPT-2's `wpe` is an `nn.Embedding` (N(0, 1) by default), drawn from N(0, 0.02^2) by "
         "nanoGPT"});
  // SelfAttention is the causal form's class template with another mask (nn::BasicSelfAttention): one
  // set of defaults, read here from the causal form.
  using Attention = mpx::nn::CausalSelfAttention<mpx::fp32>;
  t.add({"`CausalSelfAttention`, `SelfAttention`", "`.bias`", code_number(Attention::Options{}.bias),
         "biases on the qkv and output projections; optional: `{.bias = false}`",
         versus(Attention::Options{}.bias, true, "nn.MultiheadAttention(bias)", "nanoGPT's default too")});
  Attention attention(4, 2);
  std::string bias_values;
  attention.for_each_parameter([&](std::string_view name, auto& p) {
    if (name.ends_with(".bias")) {
      const std::string value = constant_value(p);
      bias_values = bias_values.empty() || bias_values == value ? value : "not all equal: update";
    }
  });
  t.add(
      {"`CausalSelfAttention`, `SelfAttention`", "projection weights",
       std::string(init_name(mpx::nn::Linear<mpx::fp32>::Options{}.init)), "`qkv` and `proj` are `Linear`s",
       "**differs** from nanoGPT: N(0, 0.02^2) (`c_proj`: 0.02 / sqrt(2 n_layer)); `nn.MultiheadAttention`'s "
       "in_proj is Xavier-uniform too"});
  t.add({"`CausalSelfAttention`, `SelfAttention`", "projection biases' initial value", bias_values,
         "as `Linear`'s", "same as nanoGPT's"});
  return t;
}

Table optimizers() {
  Table t{"optimizers", {"optimizer", "option", "default", "meaning", "PyTorch"}, {}};
  const mpx::SgdSettings sgd{};
  t.add({"`SGD`", "`.lr`", code_number(sgd.lr), "learning rate", versus(sgd.lr, 1e-3, "lr")});
  t.add({"`SGD`", "`.momentum`", code_number(sgd.momentum), "0: plain SGD",
         versus(sgd.momentum, 0, "momentum")});
  t.add({"`SGD`", "`.dampening`", code_number(sgd.dampening), "dampening of the momentum update",
         versus(sgd.dampening, 0, "dampening")});
  t.add({"`SGD`", "`.weight_decay`", code_number(sgd.weight_decay),
         "L2: `weight_decay * w` added to the gradient", versus(sgd.weight_decay, 0, "weight_decay")});
  t.add({"`SGD`", "`.nesterov`", code_number(sgd.nesterov), "Nesterov momentum",
         versus(sgd.nesterov, false, "nesterov")});
  t.add({"`SGD`", "`.rounding_seed`", code_number(sgd.rounding_seed),
         "seed of stochastic rounding into 16-bit master weights (pure precisions)", "mpx only"});
  const mpx::AdamWSettings adamw{};
  t.add({"`AdamW`", "`.lr`", code_number(adamw.lr), "learning rate", versus(adamw.lr, 1e-3, "lr")});
  const std::string betas = concat("betas=(", python(0.9), ", ", python(0.999), ")");
  t.add({"`AdamW`", "`.beta1`", code_number(adamw.beta1), "decay of the first moment",
         compare(adamw.beta1 == 0.9, betas)});
  t.add({"`AdamW`", "`.beta2`", code_number(adamw.beta2), "decay of the second moment",
         compare(adamw.beta2 == 0.999, betas)});
  t.add({"`AdamW`", "`.epsilon`", code_number(adamw.epsilon), "added to sqrt of the second moment",
         versus(adamw.epsilon, 1e-8, "eps")});
  t.add({"`AdamW`", "`.weight_decay`", code_number(adamw.weight_decay),
         "decoupled: w is multiplied by 1 - lr * weight_decay",
         versus(adamw.weight_decay, 1e-2, "weight_decay")});
  t.add({"`AdamW`", "`.rounding_seed`", code_number(adamw.rounding_seed),
         "seed of stochastic rounding into 16-bit master weights (pure precisions)", "mpx only"});

  const auto sgd_kept =
      parameters_not_decayed([](auto& model) { return mpx::optim::SGD(model, {.weight_decay = 0.1}); });
  const auto adamw_kept = parameters_not_decayed([](auto& model) { return mpx::optim::AdamW(model, {}); });
  const bool same_reach = sgd_kept == adamw_kept;
  const std::string reach_note =
      "same with one parameter group (torch's default); nanoGPT and Hugging Face exempt biases and norm "
      "weights with a second group, which mpx does not have";
  if (same_reach) {
    t.add({"`SGD`, `AdamW`", "weight decay applies to", decay_reach(adamw_kept),
           "no parameter groups: one `weight_decay` for all", reach_note});
  } else {
    t.add({"`SGD`", "weight decay applies to", decay_reach(sgd_kept), "", reach_note});
    t.add({"`AdamW`", "weight decay applies to", decay_reach(adamw_kept), "", reach_note});
  }
  return t;
}

Table trainer() {
  Table t{"trainer", {"setting", "default", "meaning", "PyTorch"}, {}};
  using Model = mpx::nn::Sequential<mpx::nn::Linear<mpx::fp32>>;
  using Options =
      mpx::Trainer<Model, mpx::nn::SoftmaxCrossEntropy<mpx::fp32>, mpx::optim::AdamW<Model>>::Options;
  const Options options{};
  // The clipping coefficient at norm 0 is max_norm / (0 + its epsilon).
  const double clip_epsilon = 1.0 / mpx::clip_coefficient(1.0, 0.0);
  t.add({"`.max_grad_norm`",
         options.max_grad_norm ? code_number(*options.max_grad_norm) : "off (`std::nullopt`)",
         concat("clip the global L2 norm of the unscaled gradients to this; coefficient max_norm / (norm + ",
                number(clip_epsilon), ")"),
         clip_epsilon == 1e-6
             ? std::string("same as not calling `clip_grad_norm_`; when on, the same coefficient")
             : concat("**differs** when on: `clip_grad_norm_`'s coefficient is max_norm / (norm + ",
                      number(1e-6), ")")});
  t.add({"`.scaler`", "the policy's defaults", "[loss_scaling.md](loss_scaling.md#the-knobs)", "—"});
  t.add(
      {"`.adapt_threads`", options.adapt_threads ? "`true`" : "`false`",
       "on the CPU, run a step on fewer threads than OpenMP's count where steps measured faster so "
       "(beside a busy process); the same bits on any count ([training.md](training.md#threads-on-the-cpu))",
       "—"});
  using Fp16Body = mpx::nn::Sequential<mpx::nn::Linear<mpx::fp16_mixed>, mpx::nn::Linear<mpx::fp32>>;
  using Bf16Body = mpx::nn::Sequential<mpx::nn::Linear<mpx::bf16_mixed>, mpx::nn::Linear<mpx::fp32>>;
  t.add(
      {"scaler policy (4th template argument)",
       concat(scaler_name<mpx::model_default_scaler_t<Fp16Body>>(), " when any layer computes in fp16, else ",
              scaler_name<mpx::model_default_scaler_t<Bf16Body>>()),
       "an fp16 body with an fp32 head counts as fp16", "torch scales only with a `GradScaler` you make"});
  return t;
}

Table default_scalers() {
  Table t{"default_scalers", {"precision", "default scaler"}, {}};
  const auto row = [&]<class P>(P) {
    t.add({code(concat("mpx::", P::name)), scaler_name<mpx::default_scaler_t<P>>()});
  };
  row(mpx::fp64{});
  row(mpx::fp32{});
  row(mpx::tf32{});
  row(mpx::bf16_mixed{});
  row(mpx::fp16_mixed{});
  row(mpx::bf16_pure{});
  return t;
}

Table loss_scaling() {
  Table t{"loss_scaling", {"field", "type", "default", "allowed", "meaning", "GradScaler"}, {}};
  using Options = mpx::DynamicLossScaling::Options;
  const Options o{};
  const auto field = [&]<class T>(std::string_view name, T value, std::string_view allowed,
                                  std::string_view meaning, std::string torch) {
    t.add({code(name), code(type_name<T>()), code_number(value), std::string(allowed), std::string(meaning),
           std::move(torch)});
  };
  field("init_scale", o.init_scale, "finite, > 0", "the first scale",
        versus(o.init_scale, 65536.0, "init_scale"));
  field("growth_factor", o.growth_factor, "finite, > 1",
        "scale multiplier after `growth_interval` clean steps",
        versus(o.growth_factor, 2.0, "growth_factor"));
  field("backoff_factor", o.backoff_factor, "in (0, 1)", "scale multiplier on an overflow",
        versus(o.backoff_factor, 0.5, "backoff_factor"));
  field("growth_interval", o.growth_interval, "≥ 1", "clean steps in a row before the scale grows",
        versus(o.growth_interval, 2000, "growth_interval"));
  field("min_scale", o.min_scale, "0 ≤ `min_scale` ≤ `init_scale`",
        o.min_scale == 0.0f ? "floor applied after a backoff; 0: off" : "floor applied after a backoff",
        "mpx only");
  field("max_scale", o.max_scale, "≥ `init_scale`",
        std::isinf(o.max_scale) ? "ceiling applied after growth; +inf: off" : "ceiling applied after growth",
        "mpx only");
  field("hysteresis", o.hysteresis, "≥ 1",
        o.hysteresis == 1 ? "consecutive overflows before a backoff; 1: off"
                          : "consecutive overflows before a backoff",
        "mpx only (Apex's and Megatron's)");
  const mpx::StaticLossScaling::Options fixed{};
  t.add({"`scale` (`StaticLossScaling`)", code(type_name<decltype(fixed.scale)>()), code_number(fixed.scale),
         "finite, > 0", "the fixed scale", "—"});
  return t;
}

std::string_view last_batch_name(mpx::data::LastBatch last) {
  switch (last) {
    case mpx::data::LastBatch::Keep: return "`LastBatch::Keep`";
    case mpx::data::LastBatch::Drop: return "`LastBatch::Drop`";
  }
  return "?";
}

Table batcher() {
  Table t{"batcher", {"class", "option", "default", "meaning", "PyTorch"}, {}};
  const mpx::data::Batcher::Options batcher{};
  t.add({"`Batcher`", "`.batch_size`", code_number(batcher.batch_size), "samples per batch",
         versus(batcher.batch_size, 1, "DataLoader(batch_size)")});
  t.add({"`Batcher`", "`.seed`", code_number(batcher.seed),
         "seed of the shuffle: the same seed, the same batches",
         "**differs**: torch draws a new seed in each process unless seeded (`torch.manual_seed`, "
         "`generator=`)"});
  t.add({"`Batcher`", "`.shuffle`", code_number(batcher.shuffle), "a new order each epoch",
         versus(batcher.shuffle, false, "DataLoader(shuffle)")});
  t.add({"`Batcher`", "`.last_batch`", std::string(last_batch_name(batcher.last_batch)),
         batcher.last_batch == mpx::data::LastBatch::Keep ? "a final partial batch is returned"
                                                          : "a final partial batch is skipped",
         batcher.last_batch == mpx::data::LastBatch::Keep
             ? "same (`DataLoader(drop_last=False)`)"
             : "**differs**: torch `DataLoader(drop_last=False)`"});
  t.add({"`Batcher`", "`.shard`",
         concat("`{.index = ", batcher.shard.index, ", .count = ", batcher.shard.count, "}`"),
         "this process's part of each batch (data parallel)", "torch shards with a `DistributedSampler`"});
  const mpx::data::ImageAugmentation& augmentation = batcher.augmentation;
  t.add({"`Batcher`", "`.augmentation.crop_padding`", code_number(augmentation.crop_padding),
         "pixels of padding on each side before a random crop back to the image's size; 0: no crop",
         "torchvision `RandomCrop(size, padding=p)`, a transform of its own"});
  t.add({"`Batcher`", "`.augmentation.padding_value`", code_number(augmentation.padding_value),
         "the padded pixels' value, in the dataset's normalised units",
         versus(augmentation.padding_value, 0, "RandomCrop(fill)", "torch pads before `Normalize`")});
  t.add({"`Batcher`", "`.augmentation.horizontal_flip`", code_number(augmentation.horizontal_flip),
         "mirror left to right with probability 1/2, after the crop",
         "torchvision `RandomHorizontalFlip(p=0.5)`, a transform of its own"});
  return t;
}

Table text_data() {
  Table t{"text_data", {"class", "option", "default", "meaning"}, {}};
  const mpx::data::TextWindowOptions windows{};
  t.add({"`TextWindows`, `SequentialTextWindows`", "`.batch_size`", code_number(windows.batch_size),
         "windows per batch"});
  t.add({"`TextWindows`, `SequentialTextWindows`", "`.context`", code_number(windows.context),
         "tokens per window"});
  t.add({"`TextWindows`", "`.seed`", code_number(windows.seed), "seed of the window starts"});
  t.add({"`TextWindows`", "`.shard`",
         concat("`{.index = ", windows.shard.index, ", .count = ", windows.shard.count, "}`"),
         "this process's rows of each batch (data parallel)"});
  const mpx::data::TextCorpus::Options corpus{};
  t.add({"`TextCorpus`", "`.validation_fraction`", code_number(corpus.validation_fraction),
         "share of the text, at its end, held out for validation"});
  return t;
}

Table encoder_data() {
  Table t{"encoder_data", {"class", "option", "default", "meaning"}, {}};
  const mpx::data::WordNetGlosses::Options split{};
  t.add({"`WordNetGlosses`", "`.validation_percent`", code_number(split.validation_percent),
         "synsets in the validation set, in percent (by the split's hash)"});
  t.add({"`WordNetGlosses`", "`.test_percent`", code_number(split.test_percent),
         "synsets in the test set, in percent; the rest is training"});
  const mpx::data::WordVocabulary::Options vocabulary{};
  t.add({"`WordVocabulary::build`", "`.min_count`", code_number(vocabulary.min_count),
         "words seen fewer times are left out (encode to [UNK])"});
  t.add({"`WordVocabulary::build`", "`.max_size`", code_number(vocabulary.max_size),
         "ids at most, the 5 special tokens included; 0: no limit"});
  const auto special = [](const mpx::data::SpecialTokens& tokens) {
    return concat("`{.pad = ", tokens.pad, ", .unk = ", tokens.unk, ", .cls = ", tokens.cls,
                  ", .sep = ", tokens.sep, ", .mask = ", tokens.mask, "}`");
  };
  const mpx::data::PaddedBatches::Options batches{};
  t.add({"`PaddedBatches`", "`.batch_size`", code_number(batches.batch_size), "sequences per batch"});
  t.add({"`PaddedBatches`", "`.max_length`", code_number(batches.max_length),
         "tokens a sequence keeps at most (a final [SEP] is kept)"});
  t.add({"`PaddedBatches`", "`.seed`", code_number(batches.seed), "seed of the shuffles"});
  t.add({"`PaddedBatches`", "`.shuffle`", code_number(batches.shuffle), "a new order each epoch"});
  t.add({"`PaddedBatches`", "`.bucket_by_length`", code_number(batches.bucket_by_length),
         "sort chunks of the order by length, then shuffle the batches"});
  t.add({"`PaddedBatches`", "`.bucket_batches`", code_number(batches.bucket_batches),
         "batches per bucketing chunk"});
  t.add({"`PaddedBatches`", "`.last_batch`", std::string(last_batch_name(batches.last_batch)),
         batches.last_batch == mpx::data::LastBatch::Keep ? "a final partial batch is returned"
                                                          : "a final partial batch is dropped"});
  t.add({"`PaddedBatches`", "`.tokens`", special(batches.tokens), "[PAD] written as padding, [SEP] kept"});
  const mpx::data::MaskedLmOptions masking{};
  t.add({"`mask_tokens`", "`.vocabulary_size`", code_number(masking.vocabulary_size),
         "required: the vocabulary's size"});
  t.add({"`mask_tokens`", "`.probability`", code_number(masking.probability),
         "share of each row's real non-special tokens chosen (at least one)"});
  t.add({"`mask_tokens`", "`.mask_fraction`", code_number(masking.mask_fraction),
         "share of the chosen tokens replaced by [MASK]"});
  t.add({"`mask_tokens`", "`.random_fraction`", code_number(masking.random_fraction),
         "share replaced by a random non-special token (the rest is kept)"});
  t.add({"`mask_tokens`", "`.tokens`", special(masking.tokens), "never chosen, never drawn"});
  t.add({"`mask_tokens`", "`.ignore_index`", code_number(masking.ignore_index),
         "target of the positions not chosen (the cross-entropy's default)"});
  t.add({"`mask_tokens`", "`.seed`", code_number(masking.seed), "seed of the draws (with the step)"});
  return t;
}

}  // namespace

int main() {
  try {
    for (const Table& table : {layers(), cnn_layers(), sequence_layers(), optimizers(), trainer(),
                               default_scalers(), loss_scaling(), batcher(), text_data(), encoder_data()}) {
      table.print();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "defaults_table: %s\n", e.what());
    return 1;
  }
  return 0;
}
