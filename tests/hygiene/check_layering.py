#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""Checks that every header under include/mpx includes only what the layering allows.

The layers, bottom-up (a header may include its own layer and those below it):
    config.hpp, error.hpp, log.hpp  <  numeric/  <  policy/  <  tensor/  <  backend/ (the device-neutral
    interface: backend.hpp and the *_spec.hpp contracts)  <  backend/cpu/, backend/cuda/  <  nn/, optim/
    <  train/  <  dist/  <  io/, data/, experiment/  <  the umbrellas mpx.hpp, cuda.hpp, dist.hpp.
Besides the order:
  - backend/cpu/ and backend/cuda/ never include each other (sideways between backends);
  - nn/, optim/ and train/ name the backend interface only, never a concrete backend: a program gets
    `Backend<Host>` and `Backend<Cuda>` from the umbrellas.
Prints every violation as `file: includes X (why)` and exits 1 if there is one.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2] / "include"
INCLUDE = re.compile(r'^\s*#\s*include\s+[<"](mpx/[^>"]+)[>"]', re.MULTILINE)

UMBRELLAS = {"mpx/mpx.hpp", "mpx/cuda.hpp", "mpx/dist.hpp"}
RANKS = {"": 0, "numeric": 1, "policy": 2, "tensor": 3, "backend": 4, "backend/cpu": 5, "backend/cuda": 5,
         "nn": 6, "optim": 6, "train": 7, "dist": 8, "io": 9, "data": 9, "experiment": 9}
INTERFACE_ONLY = {"nn", "optim", "train"}


def layer_of(header: str) -> str:
    """The folder of `mpx/<folder>/<name>` that the ranks name ("" for the top-level headers)."""
    parts = header.split("/")[1:-1]
    for depth in range(len(parts), -1, -1):
        folder = "/".join(parts[:depth])
        if folder in RANKS:
            return folder
    raise KeyError(f"{header}: folder {'/'.join(parts)} has no place in the layering (add it to RANKS)")


def violations(header: str, included: str) -> list[str]:
    if header in UMBRELLAS:
        return []
    if included in UMBRELLAS:
        return ["an umbrella: include the headers it lists"]
    mine, theirs = layer_of(header), layer_of(included)
    found = []
    if RANKS[theirs] > RANKS[mine]:
        found.append(f"upward: {theirs or 'top'}/ is above {mine or 'top'}/")
    elif RANKS[theirs] == RANKS[mine] and mine != theirs and mine.startswith("backend/"):
        found.append(f"sideways between backends: {mine}/ and {theirs}/")
    if mine in INTERFACE_ONLY and theirs.startswith("backend/"):
        found.append(f"a concrete backend: {mine}/ names the interface (mpx/backend/backend.hpp, *_spec.hpp)")
    return found


def main() -> int:
    headers = sorted(p for p in ROOT.joinpath("mpx").rglob("*") if p.suffix in {".hpp", ".cuh", ".h"})
    problems = []
    for path in headers:
        header = path.relative_to(ROOT).as_posix()
        for included in INCLUDE.findall(path.read_text()):
            for why in violations(header, included):
                problems.append(f"{header}: includes {included} ({why})")
    for line in problems:
        print(line)
    print(f"{len(headers)} headers checked, {len(problems)} layering violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
