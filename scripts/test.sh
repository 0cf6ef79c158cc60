#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Installs what is missing, builds everything (CUDA targets too when nvcc is found) and runs all tests,
# then builds the CPU tests again under AddressSanitizer + UndefinedBehaviorSanitizer and runs them.
set -euo pipefail
cd "$(dirname "$0")/.."

MPX_INSTALL_TORCH=1 scripts/install-deps.sh  # torch too: the parity tests run against it
cmake --preset default
cmake --build --preset default --parallel "$(nproc)"
ctest --preset default

# Sanitizers: the unit, static and interop tests built with -fsanitize=address,undefined
# -fno-sanitize-recover=all (preset "asan": CPU only, no examples or benchmarks); any report fails.
cmake --preset asan
cmake --build --preset asan --parallel "$(nproc)"
ctest --preset asan
