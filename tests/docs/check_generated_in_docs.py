#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""Docs show what a program prints from the code, never a hand-copied value that can rot.

A program (tests/docs/defaults_table.cpp) prints blocks, each between two marker lines:

    <!-- generated: tests/docs/defaults_table.cpp#optimizers -->
    | optimizer | option | default | ...
    <!-- end generated -->

A Markdown page (README.md, docs/*.md) shows a block by holding the same lines. This check runs the
program and fails when a page's block differs from the program's, names a block the program does
not print, or when a printed block is on no page; `--fix` rewrites the pages' blocks from the
program's output (a block missing from every page must still be placed by hand).

usage: check_generated_in_docs.py PROGRAM [--fix]
"""
import difflib
import pathlib
import re
import subprocess
import sys

BLOCK = re.compile(r"^<!-- generated: (?P<key>\S+) -->\n(?P<body>.*?)^<!-- end generated -->\n", re.M | re.S)


def blocks(text: str) -> dict[str, str]:
    return {m["key"]: m["body"] for m in BLOCK.finditer(text)}


def main() -> int:
    arguments = [a for a in sys.argv[1:] if a != "--fix"]
    fix = "--fix" in sys.argv[1:]
    if len(arguments) != 1:
        print(__doc__)
        return 2
    program = arguments[0]
    root = pathlib.Path(__file__).resolve().parents[2]
    printed = blocks(subprocess.run([program], check=True, capture_output=True, text=True).stdout)
    if not printed:
        print(f"{program} printed no block")
        return 1
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    stale, misplaced, shown = [], [], set()  # --fix repairs the stale blocks, not the misplaced ones
    for page in pages:
        text = page.read_text()
        name = page.relative_to(root)

        def replace(match: re.Match) -> str:
            key, body = match["key"], match["body"]
            if key not in printed:
                misplaced.append(f"{name}: shows block {key}, which {program} does not print")
                return match[0]
            shown.add(key)
            if body != printed[key]:
                diff = difflib.unified_diff(body.splitlines(keepends=True), printed[key].splitlines(keepends=True),
                                            f"{name} ({key})", f"{program} output")
                stale.append(f"{name}: block {key} differs from what the code prints:\n{''.join(diff)}")
            return f"<!-- generated: {key} -->\n{printed[key]}<!-- end generated -->\n"

        new_text = BLOCK.sub(replace, text)
        if fix and new_text != text:
            page.write_text(new_text)
    misplaced += [f"block {key} is on no page: paste it, with its marker lines, where it belongs"
                  for key in sorted(printed.keys() - shown)]
    if misplaced or (stale and not fix):
        print("\n".join(misplaced + ([] if fix else stale)))
        if stale and not fix:
            print(f"to regenerate: python3 tests/docs/check_generated_in_docs.py {program} --fix\n"
                  "(build the program first: cmake --build build/default --target defaults_table)")
        return 1
    rewritten = f" ({len(stale)} rewritten)" if fix and stale else ""
    print(f"{len(shown)} generated blocks checked in {len(pages)} pages{rewritten}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
