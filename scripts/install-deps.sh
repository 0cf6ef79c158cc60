#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Installs the Debian packages mpx builds, tests and trains with, plus any named as arguments (e.g.
# `scripts/install-deps.sh gnuplot-nox`); does nothing when all are present.
set -euo pipefail

packages=(
  cmake g++ make ccache clang-format   # toolchain
  libeigen3-dev libboost-dev           # Eigen 3.4 (CPU GEMM, half/bfloat16), Boost.Hana
  librandom123-dev                     # Philox counter-based random bits (host and device)
  catch2                               # tests (Catch2 2.13)
  zlib1g-dev dataset-fashion-mnist     # gzip'd IDX reader and the default dataset
  "$@"                                 # what the calling script needs besides
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "mpx: installing missing Debian packages: ${missing[*]}"
sudo_cmd=()
if [[ "$(id -u)" -ne 0 ]]; then
  sudo_cmd=(sudo)
fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
