#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Runs ON a lent GPU machine, from the repository root, with build-gpu/ carried over (made here by
# scripts/gpu_build.sh; the device has the CUDA 13 runtime, cuBLASLt and PyTorch, but no headers and
# nothing to download). A lease is 15 minutes of device time in all (the machine's start, 1-2
# minutes, every call and every idle minute), so the stages come in two calls, the most valuable
# first, each stage with its own cap, each allowed to fail without stopping the rest:
#
#   run1 (at most 7 minutes; `all`: run1 and run2 in one call of 570 s, in the order tests example
#   resnet diffusion gemm mlp chargpt memcheck nccl racecheck, for a lease whose second call might not
#   get a warm machine)
#   tests      mpx_cuda_tests, one process per tag (its tests not run under an earlier tag), each tag
#              capped and the whole stage capped, so that a crash or a hang loses one tag; a failed
#              GEMM tag ([gemm], [paths], or a log naming a cuBLAS status) runs again with
#              CUBLASLT_LOG_LEVEL=2 and its cuBLASLt log kept
#   example    examples/fashion_mnist.cpp on the GPU: --device cuda, all four precisions, one epoch
#              (--full: 10 epochs), Fashion-MNIST from build-gpu/fashion-mnist
#   resnet     examples/resnet.cpp on cuDNN: all precisions, one epoch of 8192 images
#   diffusion  examples/diffusion.cpp on the GPU: its default run (fp32, bf16, fp16; 3 epochs; 500
#              samples scored by the carried classifier build-gpu/resnet.fp32.safetensors), the samples'
#              picture in the logs
#   memcheck   compute-sanitizer --tool memcheck on a short subset of tags (MEMCHECK_TAGS), mpx's
#              own kernels only (--kernel-name kns=mpx: cuBLASLt's are not ours to check)
#   run2 (only when at least 6 minutes remain)
#   gemm       gemm_cuda against raw cuBLASLt, bf16 at 4096^3 and 8192^3
#   mlp        mlp_step_cuda, then its PyTorch peer bench/peers/torch_mlp_step.py (eager AMP and
#              torch.compile)
#   chargpt    examples/char_gpt.cpp on the GPU (all precisions, 300 steps, the fortunes corpus from
#              build-gpu/corpus), then bench/peers/torch_char_gpt.py bench --device cuda --compile
#   nccl       mpx_nccl_smoke once, after the tests: NCCL_SOCKET_IFNAME=lo (bootstrap over loopback),
#              NCCL_DEBUG=INFO into its log, 45 s at most, never run again after a timeout
#   racecheck  compute-sanitizer racecheck, then synccheck, on RACECHECK_TAGS, mpx's kernels only
#   and on their own (--full, a later lease): linear (linear_cuda), fashion (fashion_mnist_step_cuda
#   and its peer).
#
# Results go to $OUT/bench/results/ AS THEY COME: after every step, summary.md (device, clocks, each
# step's status and time, the bars of bench/peers/compare.py) and logs.tar.gz (every log so far) are
# written again beside the benchmarks' JSON, so a call cut short still brings back everything done.
# At most 8 files: what the device tool brings back. Without $OUT, ./out is used.
#
# A binary that cannot start (a library missing) is a failed step whose log holds its `ldd`, never a
# silent zero. Without a GPU, or with --dry-run, nothing runs: every stage is listed with the command
# it would run, the plan's time per stage is printed against the 15 minutes, and the carry's size is
# checked against the device tool's 64 MiB.
#
# Usage: scripts/gpu_session.sh [--full] [--dry-run] [--budget SECONDS] [run1 | run2 | all | STAGE...]
#   --budget  the call's own limit (default: 420 s for run1, 330 s for run2, 570 s for all, 540 s
#             otherwise); a step
#             that would start with under 20 s left is reported as skipped
# Exit status: 0 when every step passed, 1 otherwise (the summary says which), 77 when there is no
# GPU (0 with --dry-run).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

full=0
dry_run=0
budget=""
stages=()
usage="usage: scripts/gpu_session.sh [--full] [--dry-run] [--budget SECONDS] [run1 | run2 | all | tests example resnet diffusion memcheck gemm mlp chargpt nccl racecheck linear fashion]"
while (($#)); do
  case $1 in
    --full) full=1 ;;
    --dry-run) dry_run=1 ;;
    --budget) budget=$2; shift ;;
    run1) stages+=(tests example resnet diffusion memcheck); : "${budget:=420}" ;;
    run2) stages+=(gemm mlp chargpt nccl racecheck); : "${budget:=330}" ;;
    all) stages+=(tests example resnet diffusion gemm mlp chargpt memcheck nccl racecheck); : "${budget:=570}" ;;
    tests | example | resnet | diffusion | memcheck | gemm | mlp | chargpt | nccl | racecheck | linear | fashion)
      stages+=("$1") ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
((${#stages[@]})) || { stages=(tests example resnet diffusion memcheck); : "${budget:=420}"; }
: "${budget:=540}"

# Each stage's cap in seconds: the plan. A stage never runs past its cap or the call's budget.
declare -A planned=([tests]=150 [example]=40 [resnet]=80 [diffusion]=90 [memcheck]=60 [gemm]=40
                    [mlp]=110 [chargpt]=80 [nccl]=30 [racecheck]=40 [linear]=60 [fashion]=150)
lease=900          # device seconds in one lease
machine_start=120  # seconds a cold start has taken (1-2 minutes)

# Sanitizers are 10-100x slower: a short subset that covers the hand-written kernels (reductions with
# shared memory, the unfused GEMM path, the optimizers, the graph of a step). [large] marks the tests
# whose GEMMs are benchmark-sized: too slow under a sanitizer.
memcheck_tags=${MEMCHECK_TAGS:-"[paths]~[large],[layer_norm],[loss],[activation],[tensor_ops]"}
# racecheck stays off the GEMM tags: with cuBLASLt's kernels left out by the filter, the sanitizer
# failed on an H200 ("failed to handle a hardware exception") at the first fused GEMM.
racecheck_tags=${RACECHECK_TAGS:-"[layer_norm],[loss],[tensor_ops],[activation]"}
only_mpx_kernels=(--kernel-name kns=mpx)  # a substring of every kernel of namespace mpx, mangled or not

start=$(date +%s)
deadline=$((start + budget))
root=$PWD
bin=${MPX_GPU_BIN:-$root/build-gpu/bin}
results=${OUT:-$root/out}/bench/results
logs=$(mktemp -d)
mkdir -p "$results"
steps_table=$logs/steps.md
: >"$steps_table"
failures=0
bench_ran=0
quick=(--quick)
((full)) && quick=()
export PYTHONUNBUFFERED=1

# ---- the plan, against the lease ----------------------------------------------------------------
plan_seconds=0
for stage in "${stages[@]}"; do plan_seconds=$((plan_seconds + planned[$stage])); done
{
  echo "plan: ${stages[*]}; budget $budget s"
  for stage in "${stages[@]}"; do printf '  %-10s %4d s\n' "$stage" "${planned[$stage]}"; done
  printf '  %-10s %4d s (capped at the budget: %d s)\n' total "$plan_seconds" "$budget"
  echo "  lease: a cold start (~$machine_start s) + this call ($budget s) = $((machine_start + budget)) s of $lease s;" \
    "run1 + run2 in two calls: $((machine_start + 420 + 330)) s, all in one call: $((machine_start + 570)) s"
  if [[ -d "$root/build-gpu" ]]; then
    carry_bytes=$(du -sb "$root/build-gpu" | cut -f1)
    tree_bytes=$(git -C "$root" ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
    echo "  carry: build-gpu $carry_bytes bytes + working tree ${tree_bytes:-?} bytes, of 67108864 (64 MiB)"
    ((carry_bytes + ${tree_bytes:-0} <= 67108864)) || echo "  **carry too large for the device tool**"
  else
    echo "  carry: **build-gpu/ is missing: run scripts/gpu_build.sh**"
  fi
} | tee "$logs/plan.log"

# gpu_build.sh packs the binaries (bin.tar.xz): unpacked once, on the device only (unpacked here,
# they would travel with the next call and overflow its 64 MiB).
if ((!dry_run)) && [[ -f "$root/build-gpu/bin.tar.xz" && ! -d "$root/build-gpu/bin" ]] && nvidia-smi -L >/dev/null 2>&1; then
  tar -xJf "$root/build-gpu/bin.tar.xz" -C "$root/build-gpu" || echo "gpu_session.sh: cannot unpack build-gpu/bin.tar.xz"
fi

# ---- libraries: the device's CUDA runtime and cuBLASLt first, the carried fallbacks last ----------
# find_library NAME: the folder of NAME where the loader's cache does not know it: the CUDA toolkit's
# folders, python3's site-packages (pip's nvidia-* wheels: nvidia/*/lib), then anywhere under /usr
# and /opt. Prints nothing when the cache has it or nothing is found.
find_library() {
  local name=$1 found=""
  ldconfig -p | grep -q "$name" && return
  for candidate in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
                   /usr/local/cuda-13*/lib64 /usr/local/cuda-13*/targets/x86_64-linux/lib; do
    if [[ -e "$candidate/$name" ]]; then echo "$candidate"; return; fi
  done
  found=$(python3 -c '
import glob, os, site, sys
name = sys.argv[1]
for root in [*site.getsitepackages(), site.getusersitepackages(), *sys.path]:
    for found in glob.glob(os.path.join(root, "nvidia", "*", "lib", name)):
        print(os.path.dirname(found))
        raise SystemExit
' "$name" 2>/dev/null)
  [[ -z "$found" ]] && found=$(find /usr /opt /root -xdev -name "$name" -print -quit 2>/dev/null | xargs -r dirname)
  echo "$found"
}
library_dirs=()
declare -A library_found
for library in libcudart.so.13 libcublasLt.so.13 libnccl.so.2 libcudnn.so.9 libnvrtc.so.13; do
  if ((dry_run)); then continue; fi
  dir=$(find_library "$library")
  library_found[$library]=${dir:-"the loader's cache (or nowhere: see environment.log)"}
  [[ -n "$dir" ]] && library_dirs+=("$dir")
done
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

# ---- the results, written again after every step ----------------------------------------------
write_results() {
  local summary=$results/summary.md
  {
    echo "# GPU session $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "Stages: ${stages[*]}; $([[ $full == 1 ]] && echo "full settings" || echo "--quick settings")$([[ $dry_run == 1 ]] && echo ", DRY RUN (no GPU): nothing ran"); $(($(date +%s) - start)) s so far of a $budget s budget."
    echo
    echo '```'
    sed -n '2,3p' "$logs/environment.log" 2>/dev/null
    grep -E "^(torch|cuBLASLt|nvcc) " "$logs/environment.log" 2>/dev/null
    echo '```'
    echo
    echo "| step | status | time | command |"
    echo "| --- | --- | --- | --- |"
    cat "$steps_table"
    if [[ -f "$logs/bars.md" ]]; then
      echo
      echo "## Bars (bench/peers/compare.py; a bar whose benchmark is not in this call reads 'not measured')"
      echo
      cat "$logs/bars.md"
    fi
  } >"$summary.tmp" 2>&1 && mv "$summary.tmp" "$summary"
  tar -czf "$results/logs.tar.gz.tmp" -C "$logs" . 2>/dev/null && mv "$results/logs.tar.gz.tmp" "$results/logs.tar.gz"
}

# record NAME STATUS SECONDS COMMAND...: one row of the steps table, then the results again.
record() {
  local name=$1 status=$2 seconds=$3
  shift 3
  echo "| $name | $status | $seconds s | \`$*\` |" >>"$steps_table"
  write_results
}

# run_step NAME LIMIT_SECONDS COMMAND...: runs it under a time limit (and the budget), logs it,
# records its status. Sets step_rc to the command's exit status (0 in a dry run, 127 when the binary
# cannot start, 124 when it was not started for want of time).
run_step() {
  local name=$1 limit=$2
  shift 2
  step_rc=0
  if ((dry_run)); then
    record "$name" "skipped: dry run, no GPU" 0 "$@"
    echo "-- $name: skipped (dry run, at most $limit s): $*"
    return
  fi
  # A binary whose libraries are missing: its ldd is the log, and the step failed.
  if [[ $1 == "$bin"/* ]] && { [[ ! -x $1 ]] || ldd "$1" 2>&1 | grep -q "not found"; }; then
    { echo "$1 cannot start:"; ls -l "$1"; ldd "$1"; } >"$logs/$name.log" 2>&1
    step_rc=127
    failures=$((failures + 1))
    record "$name" "**cannot start: missing file or library (ldd in its log)**" 0 "$@"
    cat "$logs/$name.log"
    return
  fi
  local left=$((deadline - $(date +%s)))
  if ((left < 20)); then
    step_rc=124
    failures=$((failures + 1))
    record "$name" "skipped: out of time ($left s left)" 0 "$@"
    echo "== $name: skipped, out of time"
    return
  fi
  ((limit > left - 10)) && limit=$((left - 10))
  echo "== $name (at most $limit s): $*"
  local t0
  t0=$(date +%s)
  timeout --signal=TERM --kill-after=5 "$limit" "$@" >"$logs/$name.log" 2>&1
  local rc=$?
  step_rc=$rc
  local status
  case $rc in
    0) status="passed" ;;
    77) status="**skipped: no device (exit 77)**"; failures=$((failures + 1)) ;;
    124 | 137) status="**timed out after $limit s**"; failures=$((failures + 1)) ;;
    *) status="**failed (exit $rc)**"; failures=$((failures + 1)) ;;
  esac
  record "$name" "$status" $(($(date +%s) - t0)) "$@"
  tail -n 14 "$logs/$name.log"
  echo "-- $name: $status in $(($(date +%s) - t0)) s"
}

if ((dry_run)); then
  echo "dry run on $(hostname): no GPU" >"$logs/environment.log"
else
  {
    echo "== device"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv
    nvcc --version 2>/dev/null | tail -n 2 | sed 's/^/nvcc /'
    python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())'
    for library in "${!library_found[@]}"; do echo "$library: ${library_found[$library]}"; done
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    ldconfig -p | grep -E "libcublasLt|libcudart|libnccl"
    echo "compute-sanitizer: ${sanitizer:-not found}"
    nvidia-smi
    for binary in "$bin"/*; do echo "$binary:"; ldd "$binary" | grep -E "not found|cuda|cublas|nccl|gomp|libz"; done
  } >"$logs/environment.log" 2>&1
  head -n 3 "$logs/environment.log"
  grep "=> not found" "$logs/environment.log" && echo "(a library is missing: see environment.log)"
fi
write_results

# The tags of mpx_cuda_tests (listing needs no device), [cuda] and the hidden ones left out.
cuda_test_tags() {
  "$bin/mpx_cuda_tests" --list-tags 2>/dev/null | grep -oE '\[[^]]+\]' | grep -vE '^\[(cuda|\.|!.*)\]$' | awk '!seen[$0]++'
}

# tests: one process per tag, [trainer] (the longest) last; a test runs under the first of its tags.
run_tests_by_tag() {
  local tags=() done_filter="" tag filter log limit stage_deadline
  stage_deadline=$(($(date +%s) + planned[tests]))
  # Catch2's --list-tags exits with the number of tags, so the listing itself says whether it ran.
  if ((!dry_run)) && ! { "$bin/mpx_cuda_tests" --list-tags >"$logs/tests.list.log" 2>&1
                         grep -q "tags" "$logs/tests.list.log"; }; then
    # It cannot even list its tests: a missing library, most likely. That is a failure, not zero tests.
    run_step tests.list 30 "$bin/mpx_cuda_tests" --list-tags
    return
  fi
  if [[ -x "$bin/mpx_cuda_tests" ]]; then
    mapfile -t tags < <(cuda_test_tags | grep -vxF '[trainer]'; cuda_test_tags | grep -xF '[trainer]')
  fi
  ((${#tags[@]})) || { run_step tests "${planned[tests]}" "$bin/mpx_cuda_tests"; return; }
  for tag in "${tags[@]}" "[cuda]"; do
    filter="$tag$done_filter"
    [[ $tag == "[cuda]" ]] || done_filter="$done_filter~$tag"
    # A tag whose tests all ran under earlier tags: nothing to run (Catch2 would fail on no match).
    if ((!dry_run)); then
      [[ -n $("$bin/mpx_cuda_tests" --list-test-names-only "$filter" 2>/dev/null | grep -v '^$') ]] || continue
    fi
    limit=60
    [[ $tag == "[trainer]" ]] && limit=150  # 200 steps on the CPU and the GPU, five precisions
    ((limit > stage_deadline - $(date +%s))) && limit=$((stage_deadline - $(date +%s)))
    if ((limit < 10 && !dry_run)); then
      failures=$((failures + 1))
      record "tests$tag" "skipped: the tests stage's ${planned[tests]} s are spent" 0 "$bin/mpx_cuda_tests" "$filter"
      continue
    fi
    run_step "tests$tag" "$limit" "$bin/mpx_cuda_tests" "$filter" --durations yes
    # A GEMM failure (not a timeout): the same tag again with cuBLASLt's trace, the kernels it chose.
    if ((step_rc != 0 && step_rc != 77 && step_rc != 124 && step_rc != 137 && step_rc != 127)) &&
       { [[ $tag == "[gemm]" || $tag == "[paths]" ]] || grep -qE "CUBLAS_STATUS" "$logs/tests$tag.log"; }; then
      log="$logs/tests$tag.cublaslt.log"
      CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE="$log" run_step "tests$tag.cublaslt" 60 "$bin/mpx_cuda_tests" "$filter"
      failures=$((failures - (step_rc != 0 ? 1 : 0)))  # the rerun repeats a failure already counted
      [[ -f "$log" ]] && truncate -s '<4M' "$log"
    fi
  done
}

sanitize() {  # sanitize TOOL TAGS LIMIT
  if [[ -z "$sanitizer" && $dry_run == 0 ]]; then
    failures=$((failures + 1))
    record "$1" "**skipped: compute-sanitizer not found**" 0 compute-sanitizer
    return
  fi
  run_step "$1" "$3" "${sanitizer:-compute-sanitizer}" --tool "$1" "${only_mpx_kernels[@]}" --error-exitcode 3 \
    "$bin/mpx_cuda_tests" "$2"
  # A sanitizer too old for the kernel filter: once more over every kernel, cuBLASLt's included.
  if ((step_rc != 0)) && grep -qiE "unrecognized option|unknown option|invalid (option|filter)" "$logs/$1.log"; then
    run_step "$1.unfiltered" "$3" "${sanitizer:-compute-sanitizer}" --tool "$1" --error-exitcode 3 \
      "$bin/mpx_cuda_tests" "$2"
  fi
}

for stage in "${stages[@]}"; do
  case $stage in
    tests) run_tests_by_tag ;;
    example)
      epochs=1
      ((full)) && epochs=10
      run_step fashion_mnist_example "${planned[example]}" "$bin/fashion_mnist" --device cuda --precision all \
        --epochs "$epochs" --csv "$logs/fashion_mnist_cuda.csv" ;;
    resnet)
      # The ResNet example on cuDNN: every precision, one short epoch (the first calls build the
      # convolution plans).
      run_step resnet_example "${planned[resnet]}" "$bin/resnet" --device cuda --precision all --epochs 1 \
        --train-samples 8192 --test-samples 2000 --csv "$logs/resnet_cuda.csv" ;;
    diffusion)
      # The default run (its table is the result); the classifier that scores it was trained on the
      # CPU here and carried (gpu_build.sh), so the scores compare with docs/diffusion.md's.
      run_step diffusion_example "${planned[diffusion]}" "$bin/diffusion" --device cuda \
        --classifier "$root/build-gpu/resnet.fp32.safetensors" --csv "$logs/diffusion_cuda.csv" \
        --png "$logs/diffusion_samples_cuda.png" ;;
    gemm)
      bench_ran=1
      run_step gemm_cuda "${planned[gemm]}" "$bin/gemm_cuda" "${quick[@]}" --sizes 4096,8192 --json "$results/gemm_cuda.json" ;;
    memcheck) sanitize memcheck "$memcheck_tags" "${planned[memcheck]}" ;;
    racecheck)
      sanitize racecheck "$racecheck_tags" $((planned[racecheck] * 2 / 3))
      sanitize synccheck "$racecheck_tags" $((planned[racecheck] / 3)) ;;
    nccl)
      # Once: NCCL's bootstrap over loopback, its log on; a timeout is not rerun.
      NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET,ENV \
        run_step nccl_smoke "${planned[nccl]}" "$bin/mpx_nccl_smoke" ;;
    mlp)
      bench_ran=1
      run_step mlp_step_cuda 60 "$bin/mlp_step_cuda" "${quick[@]}" --json "$results/mlp_step_cuda.json"
      run_step torch_mlp_step $((planned[mlp] - 60)) python3 bench/peers/torch_mlp_step.py "${quick[@]}" \
        --json "$results/torch_mlp_step.json" ;;
    chargpt)
      run_step char_gpt_cuda 30 "$bin/char_gpt" --device cuda --precision all --steps 300 --sample 0 \
        --corpus "$root/build-gpu/corpus"
      run_step torch_char_gpt_cuda $((planned[chargpt] - 30)) sh -c \
        "python3 bench/peers/torch_char_gpt.py bench --device cuda --compile --steps 20 >'$results/torch_char_gpt_cuda.json'" ;;
    linear)
      bench_ran=1
      run_step linear_cuda "${planned[linear]}" "$bin/linear_cuda" "${quick[@]}" --json "$results/linear_cuda.json" ;;
    fashion)
      bench_ran=1
      run_step fashion_mnist_step_cuda 50 "$bin/fashion_mnist_step_cuda" "${quick[@]}" \
        --json "$results/fashion_mnist_step_cuda.json"
      run_step torch_fashion_mnist_step $((planned[fashion] - 50)) python3 bench/peers/torch_fashion_mnist_step.py \
        "${quick[@]}" --json "$results/torch_fashion_mnist_step.json" ;;
  esac
done

# ---- bars: reported, each measured ratio against its bar (a missed bar is a finding, not a failed step)
if ((bench_ran && !dry_run)); then
  python3 bench/peers/compare.py --results "$results" >"$logs/bars.md" 2>&1
fi
write_results
find "$results" -maxdepth 1 -type f ! -name '*.json' ! -name summary.md ! -name logs.tar.gz -delete
rm -rf "$logs"

echo
cat "$results/summary.md"
if [[ ${no_device:-0} == 1 ]]; then exit 77; fi
((failures == 0))
