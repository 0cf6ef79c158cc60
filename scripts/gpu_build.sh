#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Builds the CUDA targets for a lent GPU machine HERE (it has no Eigen, Boost or Catch2 headers) and
# leaves only what must travel in build-gpu/: stripped binaries packed in bin.tar.xz (for bin/: the
# Fashion-MNIST, char-GPT,
# ResNet and diffusion examples, with their nvcc halves, as bin/fashion_mnist, bin/char_gpt,
# bin/resnet and bin/diffusion), the Fashion-MNIST files in fashion-mnist/, the fortunes text in
# corpus/ and the diffusion score's classifier (resnet.fp32.safetensors) when they fit (the device has
# no Debian packages) and, where a binary links them, libgomp and zlib in lib/ as fallbacks for an
# image that lacks them (scripts/gpu_session.sh puts them last on the library path). Release, sm_90
# machine code only (90-real: no PTX to carry), no -march=native (the device's CPU is another one),
# -lineinfo so that compute-sanitizer names source lines. The CMake tree itself stays in
# build/gpu-tree.
#
# The device has no MPI, so the tree is configured without it (MPX_ENABLE_MPI=OFF: the example trains
# alone) and no carried binary may need libmpi. NCCL stays: bin/mpx_nccl_smoke (tests/mpi/
# nccl_smoke_test.cu) links libnccl.so.2, which is not carried (over 200 MB): the device has its own,
# in the CUDA toolkit's lib or in pip's nvidia-nccl-cu13 (python3's site-packages/nvidia/nccl/lib),
# and scripts/gpu_session.sh puts whichever it finds on the library path.
#
# Usage: scripts/gpu_build.sh            (JOBS=N to change the 2 parallel jobs; TARGETS="a b" to build
#                                        and carry only those, e.g. TARGETS=mpx_nccl_smoke)
# With Fashion-MNIST (31 MB) the default targets do not all fit the device tool's 64 MiB with the
# working tree: SESSION=all builds what `scripts/gpu_session.sh all` runs (every target but
# linear_cuda and fashion_mnist_step_cuda); a later call's TARGETS="mpx_cuda_tests linear_cuda
# fashion_mnist_step_cuda" fits beside the dataset for the `linear fashion` stages.
# Then carry "build-gpu" and run scripts/gpu_session.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."

tree=build/gpu-tree
carry=build-gpu
targets=(mpx_cuda_tests mpx_nccl_smoke gemm_cuda linear_cuda mlp_step_cuda fashion_mnist_step_cuda
         example_fashion_mnist example_char_gpt example_resnet example_diffusion)
if [[ ${SESSION:-} == all ]]; then
  targets=(mpx_cuda_tests mpx_nccl_smoke gemm_cuda mlp_step_cuda example_fashion_mnist example_char_gpt
           example_resnet example_diffusion)
fi
if [[ -n "${TARGETS:-}" ]]; then read -r -a targets <<<"$TARGETS"; fi
# The device tool carries 64 MiB: the working tree (tracked and untracked files git does not ignore)
# and build-gpu/ together. Half a MiB is kept spare for files written before the call.
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- | tail -n 1 | cut -f1)
limit_bytes=$((64 * 1024 * 1024 - tree_bytes - 512 * 1024))

options=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real -DMPX_ENABLE_CUDA=ON
         -DMPX_ENABLE_MPI=OFF -DMPX_ENABLE_NCCL=ON -DMPX_NATIVE_ARCH=OFF -DMPX_BUILD_TESTS=ON
         -DMPX_BUILD_BENCH=ON -DMPX_BENCH_CHECK_ONLY=OFF -DMPX_BUILD_EXAMPLES=ON -DMPX_INSTALL=OFF "-DCMAKE_CUDA_FLAGS=-lineinfo"
         -DMPX_ENABLE_ONEDNN=OFF)  # the device machine has no libdnnl: its CPU references run Eigen's kernel
if command -v ccache >/dev/null; then
  options+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
if [[ -f "$tree/CMakeCache.txt" ]]; then
  cmake -S . -B "$tree" "${options[@]}" >/dev/null  # already configured: keep its generator
else
  if command -v ninja >/dev/null; then options+=(-G Ninja); fi
  cmake -S . -B "$tree" "${options[@]}"
fi
cmake --build "$tree" --parallel "${JOBS:-2}" --target "${targets[@]}"

# Assembled beside the previous carry and swapped in only when it fits: a failed or oversized build
# leaves the previous build-gpu/ as it was.
staging=$carry.new
rm -rf "$staging"
mkdir -p "$staging/bin" "$staging/lib"
for target in "${targets[@]}"; do
  name=${target#example_}  # examples' binaries drop the prefix (OUTPUT_NAME)
  binary=$(find "$tree" -type f -name "$name" -perm -u+x | head -n 1)
  if [[ -z "$binary" ]]; then
    echo "gpu_build.sh: built $target but cannot find its binary $name under $tree" >&2
    exit 1
  fi
  strip --strip-unneeded -o "$staging/bin/$name" "$binary"
done
needed=$(for binary in "$staging"/bin/*; do ldd "$binary"; done)
if grep -q "libmpi" <<<"$needed"; then
  echo "gpu_build.sh: a carried binary needs libmpi, which the device does not have:" >&2
  for binary in "$staging"/bin/*; do ldd "$binary" | grep -q libmpi && echo "  $binary" >&2; done
  exit 1
fi
for library in libgomp.so.1 libz.so.1; do
  grep -q "$library" <<<"$needed" || continue
  path=$(ldconfig -p | awk -v name="$library" '$1 == name && /x86-64/ && !found {print $NF; found = 1}')
  if [[ -n "$path" ]]; then cp -L "$path" "$staging/lib/"; fi
done

# The binaries travel as one xz archive (53 MB stripped, 7 MB packed: room for the dataset beside
# them); scripts/gpu_session.sh unpacks it into build-gpu/bin/ on the device.
tar -cf - -C "$staging" bin | xz -T"${JOBS:-2}" -6 >"$staging/bin.tar.xz"
rm -rf "$staging/bin"

# The data the example stages read, each if it fits beside the binaries: Fashion-MNIST (30 MB; the
# trainer test uses it when present, Gaussian blobs otherwise) and the char-GPT's text corpus (from
# the fortunes package's text files; the device has no Debian packages).
copy_if_it_fits() {  # copy_if_it_fits NAME DESTINATION FILES...
  local name=$1 destination=$2
  shift 2
  local bytes
  bytes=$(du -cbL "$@" | tail -n 1 | cut -f1)
  if (($(du -sb "$staging" | cut -f1) + bytes <= limit_bytes)); then
    mkdir -p "$staging/$destination"
    cp -L "$@" "$staging/$destination/"
  else
    echo "gpu_build.sh: $name ($bytes bytes) does not fit; its stage will fail" >&2
  fi
}
dataset=${MPX_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
[[ -d "$dataset" ]] && copy_if_it_fits Fashion-MNIST fashion-mnist "$dataset"/*-ubyte.gz
# The corpus: the first fortunes files (by name) up to about 500 kB, enough for 300 steps of 16 x 64
# characters and the validation windows, and 2 MB less to carry than all of them.
# The classifier that scores the diffusion example's samples: examples/resnet.cpp's fp32 ResNet,
# trained on the CPU by scripts/diffusion.sh (1.2 MB), so the GPU's scores compare with the CPU's.
classifier=build/default/resnet.fp32.safetensors
if [[ " ${targets[*]} " == *" example_diffusion "* ]]; then
  if [[ -f "$classifier" ]]; then
    copy_if_it_fits "the diffusion score's classifier" . "$classifier"
  else
    echo "gpu_build.sh: no $classifier (scripts/diffusion.sh trains it): the diffusion stage will fail" >&2
  fi
fi
fortunes=/usr/share/games/fortunes
if [[ -d "$fortunes" ]]; then
  texts=()
  corpus_bytes=0
  while IFS= read -r text; do
    ((corpus_bytes > 500000)) && break
    texts+=("$text")
    corpus_bytes=$((corpus_bytes + $(stat -Lc %s "$text")))
  done < <(find "$fortunes" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' | sort)
  ((${#texts[@]})) && copy_if_it_fits "the fortunes corpus" corpus "${texts[@]}"
fi

bytes=$(du -sb "$staging" | cut -f1)
du -sh "$staging"/* "$staging"/lib/* 2>/dev/null || true
if ((bytes > limit_bytes)); then
  echo "gpu_build.sh: the new $carry would hold $bytes bytes, more than the $limit_bytes that can travel;" \
    "the previous $carry is kept" >&2
  exit 1
fi
rm -rf "$carry"
mv "$staging" "$carry"
echo "gpu_build.sh: $carry is ready ($bytes bytes); carry it and run scripts/gpu_session.sh on the device"
