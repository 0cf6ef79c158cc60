#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Where the char-GPT training step (bench/train_cpu's: 4 blocks, width 128, context 64, batch 16)
# spends its time, per operation, in mpx and in PyTorch, for fp32 and bf16_mixed at 1 and 2 threads:
# mpx sampled by `perf record -e cpu-clock` with call stacks (no hardware counters needed), PyTorch by
# torch.profiler; bench/peers/profile_table.py prints one table per case (docs/benchmarks.md).
# Needs perf (Debian linux-perf) and the tools venv's torch (scripts/test.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
python=build/tools/python/bin/python
out=${PROFILE_DIR:-build/profile}  # perf data and per-case stacks and JSON
mkdir -p "$out"
scripts/install-deps.sh linux-perf > /dev/null
cmake --preset default -DMPX_BENCH_CHECK_ONLY=OFF > /dev/null  # scripts/test.sh may have left it on
cmake --build --preset default --target train_cpu --parallel "$(nproc)" > /dev/null
for threads in 1 2; do
  for precision in fp32 bf16_mixed; do
    echo "## ${precision}, ${threads} thread(s)"
    OMP_NUM_THREADS=$threads perf record -q -e cpu-clock -F 1000 --call-graph dwarf,8192 \
      -o "$out/mpx.perf" build/default/bench/train_cpu --profile "$precision" --steps 20 > "$out/mpx.txt"
    step_ms=$(sed -n 's/.*median \([0-9.]*\) ms\/step.*/\1/p' "$out/mpx.txt")
    perf script -i "$out/mpx.perf" -F ip,sym 2> /dev/null > "$out/mpx_${precision}_${threads}.stacks"
    OMP_NUM_THREADS=$threads "$python" bench/peers/torch_char_gpt.py profile --precision "$precision" \
      --threads "$threads" --steps 20 2> /dev/null | tail -1 > "$out/torch_${precision}_${threads}.json"
    "$python" bench/peers/profile_table.py "$out/mpx_${precision}_${threads}.stacks" "$step_ms" \
      "$out/torch_${precision}_${threads}.json"
    echo
  done
done
