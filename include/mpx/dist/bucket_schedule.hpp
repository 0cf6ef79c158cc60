// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `dist::BucketSchedule`: during one backward, which of a model's gradients are final and
/// which buckets may start reducing. The bookkeeping that `dist::MpiGradientSync` and
/// `dist::NcclGradientSync` share; it knows no MPI, NCCL or device, so the unit tests check it
/// alone.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mpx/dist/buckets.hpp"
#include "mpx/error.hpp"

namespace mpx::dist {

/// @brief The gradient tensors of `model`'s parameters, in `for_each_parameter` order; a compile
/// error unless they are `Gradient`s.
template <class Gradient, class Model>
[[nodiscard]] std::vector<Gradient*> model_gradients(Model& model) {
  std::vector<Gradient*> gradients;
  model.for_each_parameter([&](std::string_view, auto& parameter) {
    auto& gradient = parameter.grad();
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(gradient)>, Gradient>,
                  "mpx::dist: a gradient sync's Grad must be the model's gradient type "
                  "(mpx::accumulate_t of its precision; the deduction guides pick it)");
    gradients.push_back(&gradient);
  });
  return gradients;
}

/// @brief Plans the buckets of a fixed list of gradients (`plan_buckets`), then, in each backward,
/// counts the gradients reported final and hands out the buckets whose gradients are all final,
/// strictly in bucket order: every rank starts the same collectives in the same order, as MPI and
/// NCCL need, whatever order its layers report in.
/// @code
/// schedule.begin();                       // a backward starts
/// schedule.report(final_gradients);       // as layers finish
/// while (schedule.next_ready()) launch(schedule.take_next());
/// // after backward: launch the rest, then check the trainer's list
/// while (!schedule.all_taken()) launch(schedule.take_next());
/// @endcode
/// @tparam Gradient the gradient tensor type.
template <class Gradient>
class BucketSchedule {
 public:
  /// @brief Plans buckets of at most `bucket_elements` over `gradients` (the model's, in
  /// `for_each_parameter` order), ready for the first backward. `owner` names the sync in error
  /// messages (a string that outlives the schedule, such as a literal). Throws
  /// `mpx::invalid_argument` unless `bucket_elements >= 1`.
  BucketSchedule(std::vector<Gradient*> gradients, std::int64_t bucket_elements, std::string_view owner)
      : owner_(owner), gradients_(std::move(gradients)) {
    std::vector<std::int64_t> sizes;
    sizes.reserve(gradients_.size());
    for (std::size_t t = 0; t < gradients_.size(); ++t) {
      index_.emplace(gradients_[t], t);
      sizes.push_back(gradients_[t]->numel());
    }
    buckets_ = plan_buckets(sizes, bucket_elements);
    bucket_of_.resize(gradients_.size());
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      for (std::size_t t : buckets_[b].tensors) bucket_of_[t] = b;
    pending_.resize(buckets_.size());
    reported_.resize(gradients_.size());
    begin();
  }

  /// @brief A backward starts: every bucket waits for all its gradients again.
  void begin() {
    for (std::size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].tensors.size();
    std::fill(reported_.begin(), reported_.end(), char{0});
    next_ = 0;
  }

  /// @brief Marks `final_gradients` final. Throws `mpx::error` for a gradient that is not one of
  /// the planned ones or is reported twice in one backward.
  void report(std::span<Gradient* const> final_gradients) {
    for (Gradient* gradient : final_gradients) {
      const auto found = index_.find(gradient);
      if (found == index_.end()) {
        throw error(mpx::detail::concat(owner_,
                                        ": a gradient reported final is not one of the model's this sync "
                                        "was built for"));
      }
      const std::size_t t = found->second;
      if (reported_[t] != 0) {
        throw error(
            mpx::detail::concat(owner_, ": gradient ", t, " was reported final twice in one backward"));
      }
      reported_[t] = 1;
      --pending_[bucket_of_[t]];
    }
  }

  /// @brief Whether the next bucket in order has all its gradients final.
  [[nodiscard]] bool next_ready() const noexcept { return next_ < buckets_.size() && pending_[next_] == 0; }
  /// @brief Whether every bucket of this backward has been handed out.
  [[nodiscard]] bool all_taken() const noexcept { return next_ == buckets_.size(); }
  /// @brief Hands out the next bucket in order (ready or not: after backward, the rest go
  /// regardless). Precondition: `!all_taken()`.
  std::size_t take_next() noexcept { return next_++; }

  /// @brief Throws `mpx::error` unless `trainer_gradients` are exactly the planned gradients, in
  /// order: a sync built from another model, or from one that moved since, would reduce the wrong
  /// memory.
  void require_same_gradients(std::span<Gradient* const> trainer_gradients) const {
    if (trainer_gradients.size() != gradients_.size() ||
        !std::equal(trainer_gradients.begin(), trainer_gradients.end(), gradients_.begin())) {
      throw error(mpx::detail::concat(owner_, ": the trainer's ", trainer_gradients.size(),
                                      " gradients are not the ", gradients_.size(),
                                      " this sync was built for; build the sync from the model the trainer "
                                      "trains, after the model is in place (it must not move afterwards)"));
    }
  }

  /// @brief The buckets, in launch order.
  [[nodiscard]] const std::vector<Bucket>& buckets() const noexcept { return buckets_; }
  /// @brief The planned gradients, in `for_each_parameter` order (bucket plans index them).
  [[nodiscard]] const std::vector<Gradient*>& gradients() const noexcept { return gradients_; }

 private:
  std::string_view owner_;
  std::vector<Gradient*> gradients_;
  std::unordered_map<const Gradient*, std::size_t> index_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;  // gradient -> its bucket
  std::vector<std::size_t> pending_;    // gradients of each bucket not yet final in this backward
  std::vector<char> reported_;          // gradient reported final in this backward
  std::size_t next_ = 0;                // the next bucket to hand out
};

}  // namespace mpx::dist
