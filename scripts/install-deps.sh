#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Installs the Debian packages mpx builds, tests and trains with, and the Python packages of the
# safetensors interop test; does nothing when all are present.
set -euo pipefail

packages=(
  cmake g++ make ccache clang-format   # toolchain
  libeigen3-dev libboost-dev           # Eigen 3.4 (CPU GEMM, half/bfloat16), Boost.Hana
  librandom123-dev                     # Philox counter-based random bits (host and device)
  catch2                               # tests (Catch2 2.13)
  zlib1g-dev dataset-fashion-mnist     # gzip'd IDX reader and the default dataset
  clang libclang-rt-dev                # libFuzzer targets (tests/fuzz)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "mpx: installing missing Debian packages: ${missing[*]}"
  sudo_cmd=()
  if [[ "$(id -u)" -ne 0 ]]; then
    sudo_cmd=(sudo)
  fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python's safetensors, numpy and ml_dtypes (bfloat16) for tests/interop. Optional: without them (no
# pip, no network) that one test is skipped and says why.
python_modules_present() { python3 -c "import numpy, safetensors, ml_dtypes" > /dev/null 2>&1; }
if command -v python3 > /dev/null && ! python_modules_present; then
  echo "mpx: installing Python packages for the interop test: numpy safetensors ml_dtypes"
  python3 -m pip install --user -q numpy safetensors ml_dtypes 2> /dev/null ||
    python3 -m pip install --user -q --break-system-packages numpy safetensors ml_dtypes ||
    echo "mpx: pip could not install them; the Python interop test will be skipped"
fi
