#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Builds the CUDA targets for a lent GPU machine HERE (it has no Eigen, Boost or Catch2 headers) and
# leaves only what must travel in build-gpu/: stripped binaries in bin/ (the Fashion-MNIST example,
# compiled by nvcc, as bin/fashion_mnist), the Fashion-MNIST files in fashion-mnist/ when they fit
# (the device has no Debian dataset package) and, where a binary links them, libgomp and zlib in lib/
# as fallbacks for an image that lacks them (scripts/gpu_session.sh puts them last on the library path). Release, sm_90, no -march=native (the device's CPU is another one), -lineinfo so
# that compute-sanitizer names source lines. The CMake tree itself stays in build/gpu-tree.
#
# The device has no MPI, so the tree is configured without it (MPX_ENABLE_MPI=OFF: the example trains
# alone) and no carried binary may need libmpi. NCCL stays: bin/mpx_nccl_smoke (tests/mpi/
# nccl_smoke_test.cu) links libnccl.so.2, which is not carried (over 200 MB): the device has its own,
# in the CUDA toolkit's lib or in pip's nvidia-nccl-cu13 (python3's site-packages/nvidia/nccl/lib),
# and scripts/gpu_session.sh puts whichever it finds on the library path.
#
# Usage: scripts/gpu_build.sh            (JOBS=N to change the 2 parallel jobs; TARGETS="a b" to build
#                                        and carry only those, e.g. TARGETS=mpx_nccl_smoke)
# Then carry "build-gpu" and run scripts/gpu_session.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."

tree=build/gpu-tree
carry=build-gpu
targets=(mpx_cuda_tests mpx_nccl_smoke gemm_cuda linear_cuda mlp_step_cuda fashion_mnist_step_cuda
         example_fashion_mnist)
if [[ -n "${TARGETS:-}" ]]; then read -r -a targets <<<"$TARGETS"; fi
limit_bytes=$((60 * 1024 * 1024))  # the device tool carries 64 MiB with the working tree

options=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMPX_ENABLE_CUDA=ON
         -DMPX_ENABLE_MPI=OFF -DMPX_ENABLE_NCCL=ON -DMPX_NATIVE_ARCH=OFF -DMPX_BUILD_TESTS=ON
         -DMPX_BUILD_BENCH=ON -DMPX_BUILD_EXAMPLES=ON -DMPX_INSTALL=OFF "-DCMAKE_CUDA_FLAGS=-lineinfo")
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

rm -rf "$carry"
mkdir -p "$carry/bin" "$carry/lib"
for target in "${targets[@]}"; do
  name=${target#example_}  # examples' binaries drop the prefix (OUTPUT_NAME)
  binary=$(find "$tree" -type f -name "$name" -perm -u+x | head -n 1)
  if [[ -z "$binary" ]]; then
    echo "gpu_build.sh: built $target but cannot find its binary $name under $tree" >&2
    exit 1
  fi
  strip --strip-unneeded -o "$carry/bin/$name" "$binary"
done
needed=$(for binary in "$carry"/bin/*; do ldd "$binary"; done)
if grep -q "libmpi" <<<"$needed"; then
  echo "gpu_build.sh: a carried binary needs libmpi, which the device does not have:" >&2
  for binary in "$carry"/bin/*; do ldd "$binary" | grep -q libmpi && echo "  $binary" >&2; done
  exit 1
fi
for library in libgomp.so.1 libz.so.1; do
  grep -q "$library" <<<"$needed" || continue
  path=$(ldconfig -p | awk -v name="$library" '$1 == name && /x86-64/ && !found {print $NF; found = 1}')
  if [[ -n "$path" ]]; then cp -L "$path" "$carry/lib/"; fi
done

# The dataset, if it fits beside the binaries (30 MB): the example stage needs it, the trainer test
# uses it when present (and Gaussian blobs otherwise).
dataset=${MPX_FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
if [[ -d "$dataset" ]]; then
  dataset_bytes=$(du -sbL "$dataset" | cut -f1)
  if (($(du -sb "$carry" | cut -f1) + dataset_bytes <= limit_bytes)); then
    mkdir -p "$carry/fashion-mnist"
    cp -L "$dataset"/*-ubyte.gz "$carry/fashion-mnist/"
  else
    echo "gpu_build.sh: Fashion-MNIST ($dataset_bytes bytes) does not fit; the example stage will fail" >&2
  fi
fi

bytes=$(du -sb "$carry" | cut -f1)
du -sh "$carry"/bin/* "$carry"/lib/* "$carry"/fashion-mnist 2>/dev/null || true
if ((bytes > limit_bytes)); then
  echo "gpu_build.sh: $carry holds $bytes bytes, more than the $limit_bytes that can travel" >&2
  exit 1
fi
echo "gpu_build.sh: $carry is ready ($bytes bytes); carry it and run scripts/gpu_session.sh on the device"
