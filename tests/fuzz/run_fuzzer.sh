#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
# Builds one libFuzzer target with clang (ASan + UBSan) and runs it for a while on its seed corpus.
#   tests/fuzz/run_fuzzer.sh <safetensors|idx|json> <seconds> <work directory>
# Exits 77 (registered as SKIP in CTest) when clang++ cannot build a libFuzzer program here
# (Debian: apt-get install clang libclang-rt-dev). A longer run: see docs/reliability.md.
set -euo pipefail
target="$1"
seconds="$2"
work="$3"
source_dir="$(cd "$(dirname "$0")/../.." && pwd)"
cxx="${MPX_FUZZ_CXX:-clang++}"

mkdir -p "$work"
if ! command -v "$cxx" > /dev/null ||
   ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
     "$cxx" -x c++ -fsanitize=fuzzer - -o "$work/probe" > /dev/null 2>&1; then
  echo "SKIP: $cxx cannot build libFuzzer programs here (Debian: apt-get install clang libclang-rt-dev)"
  exit 77
fi

libs=()
[[ "$target" == idx ]] && libs=(-lz)
binary="$work/${target}_fuzz"
"$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Wall -Werror \
  -I"$source_dir/include" "$source_dir/tests/fuzz/${target}_fuzz.cpp" "${libs[@]}" -o "$binary"

# New inputs go to a scratch corpus in the build folder; the committed seeds are only read.
mkdir -p "$work/corpus_$target"
# -malloc_limit_mb: no single allocation may exceed 16 MiB although inputs are at most 4 KiB (IDX may
# legitimately inflate gzip'd input ~1000x); the parsers must never trust a size from the header.
exec "$binary" -max_total_time="$seconds" -max_len=4096 -malloc_limit_mb=16 -rss_limit_mb=2048 \
  -print_final_stats=1 "$work/corpus_$target" "$source_dir/tests/fuzz/corpus/$target"
