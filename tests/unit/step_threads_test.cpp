// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// cpu::StepThreads, the choice of each CPU step's thread count by measured step times: which count
// it picks on given times (an idle machine, a busy core, a machine that becomes idle again, steps of
// another size), and that a Trainer whose steps change count trains to the same bits.
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

#ifdef _OPENMP
#include <omp.h>
#endif

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::cpu::StepThreads;

// Runs `steps` steps of size `work` through `choice` on a machine where a step on n threads takes
// seconds(n); returns the count each step ran on.
template <class Seconds>
std::vector<int> run_steps(StepThreads& choice, int steps, int configured, const Seconds& seconds,
                           std::int64_t work = 1) {
  std::vector<int> counts;
  for (int i = 0; i < steps; ++i) {
    const int threads = choice.begin_step(work, configured);
    choice.end_step(threads, seconds(threads));
    counts.push_back(threads);
  }
  return counts;
}

// The probes among `counts` (runs of steps not on `current`), each checked to be probe_steps long.
int probes(const std::vector<int>& counts, int current) {
  int n = 0;
  for (std::size_t i = 0; i < counts.size();) {
    if (counts[i] == current) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < counts.size() && counts[end] == counts[i]) ++end;
    if (end < counts.size()) CHECK(end - i == static_cast<std::size_t>(StepThreads::probe_steps));
    ++n;
    i = end;
  }
  return n;
}

}  // namespace

TEST_CASE("StepThreads keeps OpenMP's count on an idle machine and probes ever less often",
          "[step_threads]") {
  StepThreads choice;
  // 2 threads run a step 1.9 times as fast as 1: every probe of 1 thread loses.
  const auto counts = run_steps(choice, 2000, 2, [](int n) { return n == 2 ? 1.0 : 1.9; });
  CHECK(choice.threads() == 2);
  // The first probe after reference_steps + first_probe_interval steps, then 16, 32, ..., 256 apart.
  CHECK(counts[StepThreads::reference_steps + StepThreads::first_probe_interval - 1] == 1);
  CHECK(probes(counts, 2) == 11);  // the first from step 16, then ever further apart, up to 256
}

TEST_CASE("StepThreads moves to fewer threads beside a busy process, and back once it is gone",
          "[step_threads]") {
  StepThreads choice;
  // A busy core: 2 threads take 3 times as long as 1.
  auto counts = run_steps(choice, 40, 2, [](int n) { return n == 2 ? 3.0 : 1.0; });
  CHECK(choice.threads() == 1);
  const int first_probe = StepThreads::reference_steps + StepThreads::first_probe_interval - 1;
  CHECK(counts[first_probe] == 1);                             // the probe
  CHECK(counts[first_probe + StepThreads::probe_steps] == 1);  // won: the current count
  // Still busy: probes of 2 threads lose and become rarer.
  counts = run_steps(choice, 600, 2, [](int n) { return n == 2 ? 3.0 : 1.0; });
  CHECK(choice.threads() == 1);
  CHECK(probes(counts, 1) <= 6);
  // Idle again: a probe of 2 threads wins within the longest interval.
  counts = run_steps(choice, static_cast<int>(StepThreads::longest_probe_interval) + 1, 2,
                     [](int n) { return n == 2 ? 1.0 : 1.9; });
  CHECK(choice.threads() == 2);
}

TEST_CASE("StepThreads: a probe must win by the required gain, and steps of another size start over",
          "[step_threads]") {
  SECTION("a probe 3% faster does not move the count") {
    StepThreads choice;
    run_steps(choice, 100, 2, [](int n) { return n == 2 ? 1.0 : 0.97; });
    CHECK(choice.threads() == 2);
  }
  SECTION("bimodal steps beside a busy process are judged by their mean") {
    // Like those measured on 2 cores beside `yes` (2-thread steps of 65-70 or 200 ms, 1-thread
    // steps of 60-63 ms): the median of the 2-thread steps, 65, would keep them (a 63 ms probe is
    // not 5% faster); their mean, about 115, does not.
    StepThreads choice;
    int step = 0;
    run_steps(choice, 40, 2, [&](int n) { return n == 1 ? 63.0 : ++step % 3 == 0 ? 200.0 : 65.0; });
    CHECK(choice.threads() == 1);
  }
  SECTION("alternating sizes never collect the reference steps a probe needs") {
    StepThreads choice;
    std::vector<int> counts;
    for (int i = 0; i < 200; ++i) {
      const std::int64_t work = i % 2;
      const int threads = choice.begin_step(work, 2);
      choice.end_step(threads, work == 0 ? 1.0 : 0.1);  // the small step would look like a win
      counts.push_back(threads);
    }
    CHECK(probes(counts, 2) == 0);
  }
  SECTION("halvings down to one thread, and back up") {
    StepThreads choice;
    // 8 threads configured, the fastest count 2.
    const auto seconds = [](int n) { return n == 2 ? 1.0 : n == 4 ? 1.5 : n == 8 ? 3.0 : 1.6; };
    run_steps(choice, 200, 8, seconds);
    CHECK(choice.threads() == 2);
  }
  SECTION("a changed OpenMP count starts over from it") {
    StepThreads choice;
    run_steps(choice, 40, 2, [](int n) { return n == 2 ? 3.0 : 1.0; });
    REQUIRE(choice.threads() == 1);
    CHECK(choice.begin_step(1, 4) == 4);
  }
}

#ifdef _OPENMP
TEST_CASE("A Trainer whose steps run on different thread counts trains to the same bits",
          "[step_threads][trainer]") {
  using P = mpx::bf16_mixed;
  auto make_model = [] {
    mpx::nn::Sequential model(mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(64, 512),
                              mpx::nn::Linear<P, mpx::nn::Activation::GELU>(512, 256),
                              mpx::nn::Linear<mpx::fp32>(256, 10));
    model.initialize(3);
    return model;
  };
  mpx::Tensor<float> x(mpx::Shape{128, 64});
  mpx::Tensor<std::int32_t> y(mpx::Shape{128});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = static_cast<float>((i * 7919) % 201) / 100.0f - 1.0f;
  for (std::int64_t i = 0; i < y.numel(); ++i) y[i] = static_cast<std::int32_t>((i * 31) % 10);

  const int threads_before = omp_get_max_threads();
  omp_set_num_threads(3);
  // 40 steps: probes (on 1 thread, then on 3 or 1) start at steps 16 and 34 whatever the times
  // measured, so the adapting trainer's steps do not all run on one count.
  auto train = [&](bool adapt) {
    auto model = make_model();
    auto loss = mpx::nn::layers<mpx::fp32>::softmax_cross_entropy();
    mpx::optim::AdamW optimizer(model, {.lr = 1e-3});
    mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = {}, .scaler = {}, .adapt_threads = adapt});
    for (int step = 0; step < 40; ++step) REQUIRE(trainer.step(x, y).stepped);
    CHECK(omp_get_max_threads() == 3);  // the step's count is its own
    std::vector<float> weights;
    model.for_each_parameter([&](std::string_view, auto& p) {
      for (std::int64_t i = 0; i < p.master().numel(); ++i) weights.push_back(p.master()[i]);
    });
    return weights;
  };
  const std::vector<float> fixed = train(false), adapting = train(true);
  omp_set_num_threads(threads_before);
  REQUIRE(fixed.size() == adapting.size());
  CHECK(std::memcmp(fixed.data(), adapting.data(), fixed.size() * sizeof(float)) == 0);
}
#endif

}  // namespace MPX_UNITY_ID
}  // namespace
