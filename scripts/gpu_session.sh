#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Runs ON a lent GPU machine, from the repository root, with build-gpu/ carried over (made here by
# scripts/gpu_build.sh; the device has the CUDA 13 runtime, cuBLASLt and PyTorch, but no headers and
# nothing to download). Steps, in order, each logged, each allowed to fail without stopping the rest:
#   tests     mpx_cuda_tests (Catch2; exit 77 would mean it saw no device)
#   example   examples/fashion_mnist.cpp on the GPU: --device cuda, bf16, one epoch (--full: all
#             four precisions, 10 epochs), Fashion-MNIST from build-gpu/fashion-mnist
#   gemm      gemm_cuda
#   linear    linear_cuda
#   mlp       mlp_step_cuda, then its PyTorch peer bench/peers/torch_mlp_step.py
#   fashion   fashion_mnist_step_cuda, then bench/peers/torch_fashion_mnist_step.py
#   memcheck  compute-sanitizer --tool memcheck on mpx_cuda_tests (last: it gets the time left)
# Every JSON goes to $OUT/bench/results/ with summary.md (device, clocks, each step's status and
# time, and bench/peers/compare.py's table of the issue's bars) and logs.tar.gz (every log): at most
# 8 files, which is what the device tool brings back. Without $OUT, ./out is used.
#
# The device tool stops a command after 600 s. By default the benchmarks and peers run with --quick
# (fewer repetitions; gemm and linear at 4096 only; torch.compile for bf16 only) and every step is
# cut to the time left before a deadline (--budget, default 540 s from the start), so that one call
# runs everything; a step that would start too late is reported as skipped. With --full the
# benchmarks use their default settings: run the stages over several calls then, e.g.
#   scripts/gpu_session.sh tests memcheck
#   scripts/gpu_session.sh --full gemm linear
#   scripts/gpu_session.sh --full mlp
#   scripts/gpu_session.sh --full fashion
#
# Usage: scripts/gpu_session.sh [--full] [--budget SECONDS] [all | bench | STAGE...]
# Exit status: 0 when every step passed, 1 otherwise (the summary says which).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

full=0
budget=540
stages=()
while (($#)); do
  case $1 in
    --full) full=1 ;;
    --budget) budget=$2; shift ;;
    all) stages+=(tests example gemm linear mlp fashion memcheck) ;;
    bench) stages+=(gemm linear mlp fashion) ;;
    tests | example | memcheck | gemm | linear | mlp | fashion) stages+=("$1") ;;
    *) echo "usage: scripts/gpu_session.sh [--full] [--budget SECONDS] [all | bench | tests example gemm linear mlp fashion memcheck]" >&2; exit 2 ;;
  esac
  shift
done
((${#stages[@]})) || stages=(tests example gemm linear mlp fashion memcheck)

start=$(date +%s)
deadline=$((start + budget))
root=$PWD
bin=${MPX_GPU_BIN:-$root/build-gpu/bin}
results=${OUT:-$root/out}/bench/results
logs=$(mktemp -d)
mkdir -p "$results"
steps_table=$logs/steps.md
failures=0
quick=(--quick)
((full)) && quick=()
export PYTHONUNBUFFERED=1

# ---- libraries: the device's CUDA runtime and cuBLASLt first, the carried fallbacks last ----------
library_dirs=()
for library in libcudart.so.13 libcublasLt.so.13; do
  if ! ldconfig -p | grep -q "$library"; then
    found=$(find /usr/local /opt /usr/lib -name "$library*" -print -quit 2>/dev/null)
    [[ -n "$found" ]] && library_dirs+=("$(dirname "$found")")
  fi
done
library_path=$(IFS=:; echo "${library_dirs[*]-}")
export LD_LIBRARY_PATH="${library_path:+$library_path:}${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$root/build-gpu/lib"

# Fashion-MNIST as gpu_build.sh carried it: the example needs it, the trainer test prefers it.
if [[ -d "$root/build-gpu/fashion-mnist" ]]; then export MPX_FASHION_MNIST_DIR="$root/build-gpu/fashion-mnist"; fi

sanitizer=$(command -v compute-sanitizer || true)
for candidate in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [[ -z "$sanitizer" && -x "$candidate" ]] && sanitizer=$candidate
done

# run_step NAME LIMIT_SECONDS COMMAND...: runs it under a time limit, logs it, records its status.
run_step() {
  local name=$1 limit=$2
  shift 2
  local left=$((deadline - $(date +%s)))
  if ((left < 20)); then
    echo "| $name | skipped: out of time ($left s left) | 0 s | \`$*\` |" >>"$steps_table"
    failures=$((failures + 1))
    echo "== $name: skipped, out of time"
    return
  fi
  ((limit > left - 10)) && limit=$((left - 10))
  echo "== $name (at most $limit s): $*"
  local t0
  t0=$(date +%s)
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  local seconds=$(($(date +%s) - t0))
  local status
  case $rc in
    0) status="passed" ;;
    77) status="**skipped: no device (exit 77)**"; failures=$((failures + 1)) ;;
    124 | 137) status="**timed out after $limit s**"; failures=$((failures + 1)) ;;
    *) status="**failed (exit $rc)**"; failures=$((failures + 1)) ;;
  esac
  echo "| $name | $status | $seconds s | \`$*\` |" >>"$steps_table"
  tail -n 14 "$logs/$name.log"
  echo "-- $name: $status in $seconds s"
}

{
  echo "== device"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv
  nvidia-smi
  echo "== libraries"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for binary in "$bin"/*; do echo "$binary:"; ldd "$binary" | grep -E "not found|cuda|cublas|gomp|libz" ; done
  echo "compute-sanitizer: ${sanitizer:-not found}"
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())'
} >"$logs/environment.log" 2>&1
head -n 3 "$logs/environment.log"
grep "=> not found" "$logs/environment.log" && echo "(a library is missing: see environment.log)"

for stage in "${stages[@]}"; do
  case $stage in
    tests) run_step tests 150 "$bin/mpx_cuda_tests" ;;
    example)
      example_settings=(--precision bf16 --epochs 1)
      ((full)) && example_settings=(--precision all --epochs 10)
      run_step fashion_mnist_example 240 "$bin/fashion_mnist" --device cuda "${example_settings[@]}" \
        --csv "$logs/fashion_mnist_cuda.csv" ;;
    memcheck)
      if [[ -n "$sanitizer" ]]; then
        run_step memcheck 240 "$sanitizer" --tool memcheck --error-exitcode 3 "$bin/mpx_cuda_tests"
      else
        echo "| memcheck | **skipped: compute-sanitizer not found** | 0 s | |" >>"$steps_table"
        failures=$((failures + 1))
      fi ;;
    gemm) run_step gemm_cuda 120 "$bin/gemm_cuda" "${quick[@]}" --json "$results/gemm_cuda.json" ;;
    linear) run_step linear_cuda 120 "$bin/linear_cuda" "${quick[@]}" --json "$results/linear_cuda.json" ;;
    mlp)
      run_step mlp_step_cuda 180 "$bin/mlp_step_cuda" "${quick[@]}" --json "$results/mlp_step_cuda.json"
      run_step torch_mlp_step 300 python3 bench/peers/torch_mlp_step.py "${quick[@]}" --json "$results/torch_mlp_step.json" ;;
    fashion)
      run_step fashion_mnist_step_cuda 120 "$bin/fashion_mnist_step_cuda" "${quick[@]}" \
        --json "$results/fashion_mnist_step_cuda.json"
      run_step torch_fashion_mnist_step 240 python3 bench/peers/torch_fashion_mnist_step.py "${quick[@]}" \
        --json "$results/torch_fashion_mnist_step.json" ;;
  esac
done

# ---- summary.md, logs.tar.gz; nothing else beside the JSON (the tool brings back 8 files) -------
summary=$results/summary.md
{
  echo "# GPU session $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "Stages: ${stages[*]}; $([[ $full == 1 ]] && echo "full settings" || echo "--quick settings"); $(($(date +%s) - start)) s in all."
  echo
  echo '```'
  sed -n '2,3p' "$logs/environment.log"
  grep -E "^torch " "$logs/environment.log"
  echo '```'
  echo
  echo "| step | status | time | command |"
  echo "| --- | --- | --- | --- |"
  cat "$steps_table" 2>/dev/null
  echo
  echo "## Bars"
  echo
  python3 bench/peers/compare.py --results "$results"
} >"$summary" 2>&1
tar -czf "$results/logs.tar.gz" -C "$logs" .
find "$results" -maxdepth 1 -type f ! -name '*.json' ! -name summary.md ! -name logs.tar.gz -delete
rm -rf "$logs"

echo
cat "$summary"
((failures == 0))
