#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Installs what is missing, builds everything (CUDA targets too when nvcc is found) and runs all tests,
# then builds the CPU tests again under AddressSanitizer + UndefinedBehaviorSanitizer and runs them.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# PyTorch, for the parity tests against it: from a cold pip cache its wheels are several GB, so they
# download while the build compiles, and the tests wait for them only before running.
mkdir -p build/tools
MPX_INSTALL_TORCH=1 setsid scripts/install-deps.sh > build/tools/torch-install.log 2>&1 &
torch_install=$!  # its own process group, so that a failed build stops pip too:
trap 'kill -- -"$torch_install" 2> /dev/null || true' EXIT
# Without a GPU the CUDA targets are only compiled and linked (their tests skip), so their host code
# is compiled at -O1, which halves nvcc's share of the build (MPX_CUDA_CHECK_ONLY, docs/building.md).
if nvidia-smi -L > /dev/null 2>&1; then cuda_check_only=OFF; else cuda_check_only=ON; fi
# The benchmarks are compiled to prove that they build, never timed here: at -O1, and refusing to run
# (MPX_BENCH_CHECK_ONLY; the scripts that time them configure it off).
cmake --preset default -DMPX_CUDA_CHECK_ONLY=$cuda_check_only -DMPX_BENCH_CHECK_ONLY=ON
cmake --build --preset default --parallel "$(nproc)"
wait "$torch_install" || echo "mpx: installing torch failed; the parity tests against PyTorch will be skipped"
trap - EXIT
cat build/tools/torch-install.log
ctest --preset default

# Sanitizers: the unit, static and interop tests built with -fsanitize=address,undefined (less
# UBSan's null, alignment and pointer-overflow checks: docs/reliability.md) -fno-sanitize-recover=all
# (preset "asan": CPU only, no examples or benchmarks); any report fails.
cmake --preset asan
cmake --build --preset asan --parallel "$(nproc)"
ctest --preset asan
