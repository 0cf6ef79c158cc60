// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::ParameterList`: any parameters, of any precisions, gathered for an optimizer that
/// should update only them (a fine-tuned head, two models trained together, a frozen body).

#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace mpx::nn {

/// @brief References to parameters (`nn::Parameter<P, Device>`, possibly of different precisions),
/// visited in the order given and named "0", "1", ...; an optimizer built over it updates those
/// parameters only. It holds pointers: the parameters must outlive it and the optimizer.
/// @code
/// mpx::optim::AdamW head_only(mpx::nn::ParameterList{*model.layer<2>().bias(), model.layer<2>().weight()},
///                             {.lr = 1e-3});
/// @endcode
template <class... Parameters>
class ParameterList {
  static_assert(sizeof...(Parameters) > 0, "mpx::nn::ParameterList needs at least one parameter");
  using first = std::tuple_element_t<0, std::tuple<Parameters...>>;
  static_assert((std::is_same_v<typename Parameters::device_type, typename first::device_type> && ...),
                "mpx::nn::ParameterList: every parameter must live on the same device");

 public:
  /// @brief Device the parameters live on.
  using device_type = typename first::device_type;

  /// @brief Gathers `parameters` (held by pointer).
  explicit ParameterList(Parameters&... parameters) : parameters_(&parameters...) {}

  /// @brief Calls f(name, parameter) for every parameter in order; the names are "0", "1", ...
  template <class F>
  void for_each_parameter(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (f(std::string_view(std::to_string(I)), *std::get<I>(parameters_)), ...);
    }
    (std::index_sequence_for<Parameters...>{});
  }

 private:
  std::tuple<Parameters*...> parameters_;
};

/// @brief Deduces the list's parameter types from the parameters given.
template <class... Parameters>
ParameterList(Parameters&...) -> ParameterList<Parameters...>;

/// @brief Whether `T` is an `nn::ParameterList` (optimizers hold one by value, a model by reference).
template <class T>
inline constexpr bool is_parameter_list_v = false;
/// @brief An `nn::ParameterList` is one.
template <class... Parameters>
inline constexpr bool is_parameter_list_v<ParameterList<Parameters...>> = true;

}  // namespace mpx::nn
