#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Runs ON a lent GPU machine, from the repository root, with build-gpu/ carried over (made here by
# scripts/gpu_build.sh; the device has the CUDA 13 runtime, cuBLASLt and PyTorch, but no headers and
# nothing to download). Stages, in order, each logged, each allowed to fail without stopping the rest:
#   nccl       mpx_nccl_smoke: one rank joins NCCL from its own unique id (no MPI: the image has
#              none) and trains through dist::NcclGradientSync, bit-identical to no sync; prints the
#              NCCL version and file it ran with. On a failure it runs again with NCCL_DEBUG=INFO
#              and NCCL_SOCKET_IFNAME=lo (bootstrap over loopback), that log kept
#   tests      mpx_cuda_tests, one process per tag (its tests not run under an earlier tag), each with
#              its own time limit, so a crash or a hang loses one tag; a failed tag holding GEMM tests
#              runs again with CUBLASLT_LOG_LEVEL=2 and its cuBLASLt log kept
#   memcheck   compute-sanitizer --tool memcheck on a subset of tags (MEMCHECK_TAGS), its own limit
#   racecheck  compute-sanitizer --tool racecheck (shared-memory races) on RACECHECK_TAGS, its own limit
#   example    examples/fashion_mnist.cpp on the GPU: --device cuda, bf16, one epoch (--full: all
#              four precisions, 10 epochs), Fashion-MNIST from build-gpu/fashion-mnist
#   gemm       gemm_cuda
#   linear     linear_cuda
#   mlp        mlp_step_cuda, then its PyTorch peer bench/peers/torch_mlp_step.py
#   fashion    fashion_mnist_step_cuda, then bench/peers/torch_fashion_mnist_step.py
# Every JSON goes to $OUT/bench/results/ with summary.md (device, clocks, each step's status and
# time, and bench/peers/compare.py's table of the issue's bars) and logs.tar.gz (every log): at most
# 8 files, which is what the device tool brings back. Without $OUT, ./out is used.
#
# The device tool stops a command after 600 s, so the stages come in two calls of at most 10 minutes
# (each cut to --budget, default 540 s; a step that would start too late is reported as skipped):
#   scripts/gpu_session.sh run1     nccl tests memcheck racecheck example   (the default)
#   scripts/gpu_session.sh run2     gemm linear mlp fashion: benchmarks and peers, --quick
# By default the benchmarks and peers run with --quick (fewer repetitions; gemm and linear at 4096
# only; torch.compile for bf16 only). With --full they use their default settings: run the stages
# over more calls then, e.g. `--full gemm linear`, `--full mlp`, `--full fashion`.
#
# Without a GPU (or with --dry-run) nothing runs: every stage says what it would run and is reported
# as skipped, and the exit status is 0 with --dry-run, 77 otherwise (no device, as mpx_cuda_tests).
#
# Usage: scripts/gpu_session.sh [--full] [--dry-run] [--budget SECONDS] [run1 | run2 | all | bench | STAGE...]
# Exit status: 0 when every step passed and every bar of the benchmarks run was met, 1 otherwise (the
# summary says which), 77 when there is no GPU.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

full=0
dry_run=0
budget=540
stages=()
usage="usage: scripts/gpu_session.sh [--full] [--dry-run] [--budget SECONDS] [run1 | run2 | all | bench | nccl tests memcheck racecheck example gemm linear mlp fashion]"
while (($#)); do
  case $1 in
    --full) full=1 ;;
    --dry-run) dry_run=1 ;;
    --budget) budget=$2; shift ;;
    run1) stages+=(nccl tests memcheck racecheck example) ;;
    run2 | bench) stages+=(gemm linear mlp fashion) ;;
    all) stages+=(nccl tests memcheck racecheck example gemm linear mlp fashion) ;;
    nccl | tests | example | memcheck | racecheck | gemm | linear | mlp | fashion) stages+=("$1") ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
((${#stages[@]})) || stages=(nccl tests memcheck racecheck example)
# Sanitizers are 10-100x slower: a subset that covers the hand-written kernels (reductions with
# shared memory, the unfused GEMM path, the optimizers, the graph of a step).
# [large] marks the tests whose GEMMs are benchmark-sized: too slow under a sanitizer.
memcheck_tags=${MEMCHECK_TAGS:-"[paths]~[large],[step],[layer_norm],[loss],[activation],[tensor_ops]"}
racecheck_tags=${RACECHECK_TAGS:-"[paths]~[large],[step],[layer_norm],[loss]"}

start=$(date +%s)
deadline=$((start + budget))
root=$PWD
bin=${MPX_GPU_BIN:-$root/build-gpu/bin}
results=${OUT:-$root/out}/bench/results
logs=$(mktemp -d)
mkdir -p "$results"
steps_table=$logs/steps.md
failures=0
bench_ran=0
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
# libnccl.so.2, which bin/mpx_nccl_smoke needs and gpu_build.sh does not carry (over 200 MB): where the
# loader's cache has none, the CUDA toolkit's lib directory, else pip's nvidia-nccl-cu13 (the NCCL
# PyTorch loads) in python3's site-packages: nvidia/nccl/lib.
nccl_dir=""
if ! ldconfig -p | grep -q "libnccl.so.2"; then
  for candidate in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
                   /usr/local/cuda-13*/lib64 /usr/local/cuda-13*/lib /usr/local/cuda-13*/targets/x86_64-linux/lib; do
    if [[ -e "$candidate/libnccl.so.2" ]]; then nccl_dir=$candidate; break; fi
  done
  if [[ -z "$nccl_dir" ]]; then
    nccl_dir=$(python3 -c '
import glob, os, site, sys
roots = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
for root in roots:
    for found in glob.glob(os.path.join(root, "nvidia", "nccl", "lib", "libnccl.so.2")):
        print(os.path.dirname(found))
        raise SystemExit
' 2>/dev/null)
  fi
  [[ -n "$nccl_dir" ]] && library_dirs+=("$nccl_dir")
fi
library_path=$(IFS=:; echo "${library_dirs[*]-}")
export LD_LIBRARY_PATH="${library_path:+$library_path:}${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$root/build-gpu/lib"

# Fashion-MNIST as gpu_build.sh carried it: the example needs it, the trainer test prefers it.
if [[ -d "$root/build-gpu/fashion-mnist" ]]; then export MPX_FASHION_MNIST_DIR="$root/build-gpu/fashion-mnist"; fi

sanitizer=$(command -v compute-sanitizer || true)
for candidate in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [[ -z "$sanitizer" && -x "$candidate" ]] && sanitizer=$candidate
done

# No GPU here (a dry run on a CPU machine): every step is reported, nothing runs.
if ((!dry_run)) && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_session.sh: no GPU (nvidia-smi -L fails): a dry run, every stage skipped"
  no_device=1
  dry_run=1
fi

# run_step NAME LIMIT_SECONDS COMMAND...: runs it under a time limit, logs it, records its status.
# Sets step_rc to the command's exit status (0 in a dry run).
run_step() {
  local name=$1 limit=$2
  shift 2
  step_rc=0
  if ((dry_run)); then
    echo "| $name | skipped: dry run, no GPU | 0 s | \`$*\` |" >>"$steps_table"
    echo "-- $name: skipped (dry run): $*"
    return
  fi
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
  step_rc=$rc
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

if ((dry_run)); then
  echo "dry run on $(hostname): no GPU" >"$logs/environment.log"
else
  {
    echo "== device"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv
    nvidia-smi
    echo "== libraries"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    for binary in "$bin"/*; do echo "$binary:"; ldd "$binary" | grep -E "not found|cuda|cublas|nccl|mpi|gomp|libz" ; done
    echo "libnccl.so.2: $(ldconfig -p | grep -q libnccl.so.2 && echo "in the loader's cache" || echo "${nccl_dir:-not found}")"
    echo "compute-sanitizer: ${sanitizer:-not found}"
    python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())'
  } >"$logs/environment.log" 2>&1
  head -n 3 "$logs/environment.log"
  grep "=> not found" "$logs/environment.log" && echo "(a library is missing: see environment.log)"
fi

# The tags of mpx_cuda_tests (listing needs no device), [cuda] and the hidden ones left out.
cuda_test_tags() {
  "$bin/mpx_cuda_tests" --list-tags 2>/dev/null | grep -oE '\[[^]]+\]' | grep -vE '^\[(cuda|\.|!.*)\]$' | awk '!seen[$0]++'
}

# tests: one process per tag; a test runs under the first of its tags in the list only.
run_tests_by_tag() {
  local tags done_filter="" tag filter log limit
  if [[ -x "$bin/mpx_cuda_tests" ]]; then
    mapfile -t tags < <(cuda_test_tags)
  else
    tags=()
    echo "| tests | **not found: $bin/mpx_cuda_tests (run scripts/gpu_build.sh and carry build-gpu)** | 0 s | |" >>"$steps_table"
    ((dry_run)) || failures=$((failures + 1))
    return
  fi
  for tag in "${tags[@]}" "[cuda]"; do
    filter="$tag$done_filter"
    [[ $tag == "[cuda]" ]] || done_filter="$done_filter~$tag"
    # A tag whose tests all ran under earlier tags: nothing to run (Catch2 would fail on no match).
    [[ -n $("$bin/mpx_cuda_tests" --list-test-names-only "$filter" 2>/dev/null | grep -v '^$') ]] || continue
    limit=120
    [[ $tag == "[trainer]" ]] && limit=240  # 200 steps on the CPU and the GPU, five precisions
    run_step "tests$tag" "$limit" "$bin/mpx_cuda_tests" "$filter" --durations yes
    if ((step_rc != 0 && step_rc != 77)) && grep -qE "gemm|cuBLASLt|cublasLt" "$logs/tests$tag.log" 2>/dev/null; then
      # A GEMM failure: the same tag again with cuBLASLt's trace (the kernels it chose and why).
      log="$logs/tests$tag.cublaslt.log"
      CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$log" run_step "tests$tag.cublaslt" 120 \
        "$bin/mpx_cuda_tests" "$filter"
      failures=$((failures - (step_rc != 0 ? 1 : 0)))  # the rerun repeats a failure already counted
      [[ -f "$log" ]] && truncate -s '<4M' "$log"
    fi
  done
}

# nccl: the smoke binary, again with NCCL's own log when it fails (not when it skips).
run_nccl_smoke() {
  if [[ ! -x "$bin/mpx_nccl_smoke" ]]; then
    echo "| nccl_smoke | **not found: $bin/mpx_nccl_smoke (run scripts/gpu_build.sh and carry build-gpu)** | 0 s | |" >>"$steps_table"
    ((dry_run)) || failures=$((failures + 1))
    return
  fi
  NCCL_DEBUG=${NCCL_DEBUG:-WARN} run_step nccl_smoke 120 "$bin/mpx_nccl_smoke"
  if ((step_rc != 0 && step_rc != 77)); then
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET,ENV NCCL_SOCKET_IFNAME=lo \
      run_step nccl_smoke.debug 120 "$bin/mpx_nccl_smoke"
    failures=$((failures - (step_rc != 0 ? 1 : 0)))  # the rerun repeats a failure already counted
  fi
}

for stage in "${stages[@]}"; do
  case $stage in
    nccl) run_nccl_smoke ;;
    tests) run_tests_by_tag ;;
    example)
      example_settings=(--precision bf16 --epochs 1)
      ((full)) && example_settings=(--precision all --epochs 10)
      run_step fashion_mnist_example 240 "$bin/fashion_mnist" --device cuda "${example_settings[@]}" \
        --csv "$logs/fashion_mnist_cuda.csv" ;;
    memcheck | racecheck)
      if [[ -n "$sanitizer" || $dry_run == 1 ]]; then
        tags=$memcheck_tags
        limit=150
        [[ $stage == racecheck ]] && tags=$racecheck_tags && limit=120
        run_step "$stage" "$limit" "${sanitizer:-compute-sanitizer}" --tool "$stage" --error-exitcode 3 \
          "$bin/mpx_cuda_tests" "$tags"
      else
        echo "| $stage | **skipped: compute-sanitizer not found** | 0 s | |" >>"$steps_table"
        failures=$((failures + 1))
      fi ;;
    gemm) bench_ran=1; run_step gemm_cuda 120 "$bin/gemm_cuda" "${quick[@]}" --json "$results/gemm_cuda.json" ;;
    linear) bench_ran=1; run_step linear_cuda 120 "$bin/linear_cuda" "${quick[@]}" --json "$results/linear_cuda.json" ;;
    mlp)
      bench_ran=1
      run_step mlp_step_cuda 180 "$bin/mlp_step_cuda" "${quick[@]}" --json "$results/mlp_step_cuda.json"
      run_step torch_mlp_step 300 python3 bench/peers/torch_mlp_step.py "${quick[@]}" --json "$results/torch_mlp_step.json" ;;
    fashion)
      bench_ran=1
      run_step fashion_mnist_step_cuda 120 "$bin/fashion_mnist_step_cuda" "${quick[@]}" \
        --json "$results/fashion_mnist_step_cuda.json"
      run_step torch_fashion_mnist_step 240 python3 bench/peers/torch_fashion_mnist_step.py "${quick[@]}" \
        --json "$results/torch_fashion_mnist_step.json" ;;
  esac
done

# ---- bars: a bar missed (or not measured) by the benchmarks of this call fails the session -------
bars=$logs/bars.md
bars_status="not checked: no benchmark ran in this call"
if ((bench_ran && !dry_run)); then
  if python3 bench/peers/compare.py --results "$results" --strict >"$bars" 2>&1; then
    bars_status="every bar met"
  else
    bars_status="**a bar was missed or not measured (see the table)**"
    failures=$((failures + 1))
  fi
elif ((bench_ran)); then
  bars_status="not checked: dry run"
fi

# ---- summary.md, logs.tar.gz; nothing else beside the JSON (the tool brings back 8 files) -------
summary=$results/summary.md
{
  echo "# GPU session $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "Stages: ${stages[*]}; $([[ $full == 1 ]] && echo "full settings" || echo "--quick settings")$([[ $dry_run == 1 ]] && echo ", DRY RUN (no GPU): nothing ran"); $(($(date +%s) - start)) s in all."
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
  echo "## Bars: $bars_status"
  echo
  [[ -f "$bars" ]] && cat "$bars"
} >"$summary" 2>&1
tar -czf "$results/logs.tar.gz" -C "$logs" .
find "$results" -maxdepth 1 -type f ! -name '*.json' ! -name summary.md ! -name logs.tar.gz -delete
rm -rf "$logs"

echo
cat "$summary"
if [[ ${no_device:-0} == 1 ]]; then exit 77; fi
((failures == 0))
