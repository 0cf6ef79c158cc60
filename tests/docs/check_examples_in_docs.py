#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""Docs show code from examples/ and tests/, never a private copy that can rot.

A Markdown page includes a file with a marker line followed by a fenced block:

    <!-- include: examples/cpu_gemm.cpp -->
    ```cpp
    ...the file, without its two SPDX lines...
    ```

A part of a file is included with `path#name`: the lines between two marker lines `// [name]` in the
file (the markers themselves left out), as Doxygen's \\snippet does.

This check fails when a block differs from its file; `--fix` rewrites the blocks from the files.
"""
import pathlib
import re
import sys

MARKER = re.compile(r"^<!-- include: (?P<path>[^\s#]+)(?:#(?P<snippet>[\w-]+))? -->\n```(?P<lang>\w*)\n(?P<body>.*?)^```\n",
                    re.M | re.S)


def file_body(root: pathlib.Path, relative: str, snippet: str | None) -> str | None:
    lines = (root / relative).read_text().splitlines(keepends=True)
    if snippet is None:
        return "".join(line for line in lines if "SPDX-" not in line)
    marks = [i for i, line in enumerate(lines) if line.strip() == f"// [{snippet}]"]
    if len(marks) != 2:
        return None
    return "".join(lines[marks[0] + 1:marks[1]])


def main() -> int:
    root = pathlib.Path(__file__).resolve().parents[2]
    fix = "--fix" in sys.argv
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    stale, included = [], 0
    for page in pages:
        text = page.read_text()

        def replace(match: re.Match) -> str:
            nonlocal included
            included += 1
            path, snippet = match["path"], match["snippet"]
            name = path if snippet is None else f"{path}#{snippet}"
            if not (root / path).is_file():
                stale.append(f"{page.relative_to(root)}: includes {path}, which does not exist")
                return match[0]
            body = file_body(root, path, snippet)
            if body is None:
                stale.append(f"{page.relative_to(root)}: {path} must hold exactly two lines `// [{snippet}]`")
                return match[0]
            if body != match["body"]:
                stale.append(f"{page.relative_to(root)}: the block for {name} differs from the file")
            return f"<!-- include: {name} -->\n```{match['lang']}\n{body}```\n"

        new_text = MARKER.sub(replace, text)
        if fix and new_text != text:
            page.write_text(new_text)
    if stale and not fix:
        print("\n".join(stale))
        print("run: python3 tests/docs/check_examples_in_docs.py --fix")
        return 1
    print(f"{included} included code blocks checked in {len(pages)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
