// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `experiment::sweep`: run one generic experiment once per precision configuration, each
/// instantiated at compile time, and collect one record per run.
/// @code
/// auto records = mpx::experiment::sweep(
///     boost::hana::tuple_t<mpx::fp32, mpx::bf16_mixed, mpx::bf16_pure>,
///     [&](auto config) {
///       using Config = decltype(config);  // Config::precision, Config::layers, Config::scaling
///       return train_and_measure<Config>();  // returns the same record type for every run
///     });
/// @endcode

#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/hana/at.hpp>
#include <boost/hana/cartesian_product.hpp>
#include <boost/hana/filter.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/transform.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>
#include <boost/hana/unpack.hpp>

#include "mpx/error.hpp"
#include "mpx/experiment/layer_precisions.hpp"
#include "mpx/policy/loss_scaling.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::experiment {

/// @brief The loss scaling a plan needs unless told otherwise: dynamic if any layer computes in fp16.
template <LayerPrecisionPlan Layers>
using plan_default_scaler_t = default_scaler_for_t<Layers::has_half_compute>;

/// @brief One configuration of a sweep: the layers' precisions and the loss-scaling policy.
/// @tparam Layers  a `LayerPrecisions` plan.
/// @tparam Scaling a loss-scaling policy; by default dynamic when any layer computes in fp16.
template <LayerPrecisionPlan Layers, LossScalingPolicy Scaling = plan_default_scaler_t<Layers>>
struct Config {
  static_assert(mpx::detail::scaler_suits_half<Layers::has_half_compute, Scaling>,
                "mpx::experiment::Config: a plan with fp16 layers needs loss scaling; use "
                "mpx::DynamicLossScaling (the default) or opt in with "
                "mpx::AllowFp16Underflow<mpx::NoLossScaling>");

  using layers = Layers;                    ///< the per-layer precisions
  using precision = typename Layers::body;  ///< the hidden layers' precision
  using scaling = Scaling;                  ///< the loss-scaling policy

  /// @brief The plan's name, with "/scaler:<name>" when the scaling is not the plan's default.
  [[nodiscard]] static std::string name() {
    std::string text = Layers::name();
    if constexpr (!std::is_same_v<Scaling, plan_default_scaler_t<Layers>>) {
      text.append("/scaler:").append(Scaling::name);
    }
    return text;
  }
};

namespace detail {
// A sweep list element as a Config: a precision policy means "every layer in it", a plan means "its
// default scaling".
template <class T>
struct as_config {
  static_assert(PrecisionPolicy<T> || LayerPrecisionPlan<T>,
                "mpx::experiment::sweep: every element of the list must be a precision policy "
                "(e.g. mpx::bf16_mixed), an mpx::experiment::LayerPrecisions<...> or an "
                "mpx::experiment::Config<...>");
  using type = void;
};
template <PrecisionPolicy P>
struct as_config<P> {
  using type = Config<LayerPrecisions<P>>;
};
template <LayerPrecisionPlan L>
struct as_config<L> {
  using type = Config<L>;
};
template <class L, class S>
struct as_config<Config<L, S>> {
  using type = Config<L, S>;
};

// Checks in order, so that one mistake gives one message: an element that is no configuration
// (as_config has said so already), an empty list, a callable that does not take every configuration.
template <class F, class... Configs>
auto collect(F& run) {
  if constexpr ((std::is_void_v<Configs> || ...)) {
    return;
  } else if constexpr (sizeof...(Configs) == 0) {
    static_assert(mpx::detail::always_false<F>,
                  "mpx::experiment::sweep: the list of configurations is empty; pass at least one, "
                  "e.g. boost::hana::tuple_t<mpx::fp32, mpx::bf16_mixed>");
  } else if constexpr (!(std::is_invocable_v<F&, Configs> && ...)) {
    static_assert(mpx::detail::always_false<F>,
                  "mpx::experiment::sweep: the callable must accept every configuration; write it as "
                  "a generic lambda, [&](auto config) { using P = typename decltype(config)::precision; "
                  "... }");
  } else {
    using Record = std::invoke_result_t<F&, std::tuple_element_t<0, std::tuple<Configs...>>>;
    static_assert(!std::is_void_v<Record>,
                  "mpx::experiment::sweep: the callable must return a record (one per run)");
    static_assert((std::is_same_v<std::invoke_result_t<F&, Configs>, Record> && ...),
                  "mpx::experiment::sweep: the callable must return the same record type for every "
                  "configuration");
    std::vector<Record> records;
    records.reserve(sizeof...(Configs));
    (records.push_back(run(Configs{})), ...);
    return records;
  }
}
}  // namespace detail

/// @brief Calls `run(config)` once per element of `configurations`, in order, and returns the
/// records it returned.
///
/// @param configurations a Hana list of types (`boost::hana::tuple_t<...>`), each a precision
///        policy, an `experiment::LayerPrecisions` plan or an `experiment::Config`.
/// @param run a generic callable taking a `Config` object (an empty tag whose member types say the
///        precisions and the scaling) and returning the same record type every time.
///
/// An empty list, an element of another kind, or a callable that does not accept every
/// configuration is a compile error that says so.
template <class Configurations, class Run>
auto sweep(Configurations configurations, Run&& run) {
  return boost::hana::unpack(configurations, [&](auto... types) {
    return detail::collect<Run, typename detail::as_config<typename decltype(types)::type>::type...>(run);
  });
}

/// @brief The sweep over every pairing of `precisions` with `scalers` that is sound (fp16 without
/// loss scaling is left out unless the scaler opts in with `mpx::AllowFp16Underflow`), precisions
/// outermost.
template <class Precisions, class Scalers, class Run>
auto sweep(Precisions precisions, Scalers scalers, Run&& run) {
  namespace hana = boost::hana;
  const auto pairs = hana::cartesian_product(hana::make_tuple(precisions, scalers));
  const auto sound = hana::filter(pairs, [](auto pair) {
    using P = typename decltype(+hana::at_c<0>(pair))::type;
    using S = typename decltype(+hana::at_c<1>(pair))::type;
    static_assert(PrecisionPolicy<P>, "mpx::experiment::sweep: the first list must hold precision policies");
    static_assert(LossScalingPolicy<S>,
                  "mpx::experiment::sweep: the second list must hold loss-scaling policies");
    return hana::bool_c<scaler_suits_v<P, S>>;
  });
  const auto configurations = hana::transform(sound, [](auto pair) {
    using P = typename decltype(+hana::at_c<0>(pair))::type;
    using S = typename decltype(+hana::at_c<1>(pair))::type;
    return hana::type_c<Config<LayerPrecisions<P>, S>>;
  });
  return sweep(configurations, std::forward<Run>(run));
}

}  // namespace mpx::experiment
