#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""Reads the JSON of mpx's CUDA benchmarks and of their PyTorch peers (one session's results) and
prints a Markdown table of every bar of issue 7: the measured ratio, the bar, and whether it is met.
Every ratio is listed, met or not; a case a file does not hold is listed as not measured. Rows marked
"info" have no bar of their own (other precisions than the bar names) and are there for context.

Usage: compare.py [--results DIR] [--output PATH] [--strict]
  --results DIR  folder holding gemm_cuda.json, linear_cuda.json, mlp_step_cuda.json,
                 fashion_mnist_step_cuda.json, torch_mlp_step.json, torch_fashion_mnist_step.json
                 (default: bench/results beside this script's folder)
  --output PATH  also write the table there
  --strict       exit 1 when a bar is not met or not measured
Only the standard library is needed.
"""

import argparse
import json
import os
import sys

FILES = {
    "gemm": "gemm_cuda.json",
    "linear": "linear_cuda.json",
    "mlp": "mlp_step_cuda.json",
    "fashion": "fashion_mnist_step_cuda.json",
    "torch_mlp": "torch_mlp_step.json",
    "torch_fashion": "torch_fashion_mnist_step.json",
}
AMP = ("fp16_mixed", "bf16_mixed")
# The bars on the MLP step against PyTorch eager AMP, by batch.
EAGER_BAR = {512: 1.4, 4096: 1.1}


class Table:
    def __init__(self):
        self.rows = []

    def add(self, benchmark, case, measured, bar, met):
        """met: True, False, None (not measured) or "info" (no bar)."""
        self.rows.append((benchmark, case, measured, bar, met))

    def markdown(self):
        lines = ["| benchmark | case | measured | bar | met |", "| --- | --- | --- | --- | --- |"]
        for benchmark, case, measured, bar, met in self.rows:
            verdict = {True: "yes", False: "**no**", None: "not measured", "info": "info"}[met]
            lines.append(f"| {benchmark} | {case} | {measured} | {bar} | {verdict} |")
        return "\n".join(lines)

    def failures(self):
        return sum(1 for row in self.rows if row[4] is False or row[4] is None)


def load(folder, key):
    path = os.path.join(folder, FILES[key])
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as error:
        print(f"compare.py: {path} is not valid JSON ({error}); treated as missing", file=sys.stderr)
        return None


def ms(value):
    return f"{value:.3f} ms" if value is not None else "-"


def gemm_rows(table, gemm):
    if gemm is None:
        table.add("gemm_cuda", "bf16/fp16 4096^3, 8192^3", "-", ">= 0.98 of raw cublasLtMatmul", None)
        return
    bar = gemm.get("required_ratio", 0.98)
    for case in gemm["cases"]:
        applies = case["precision"] in ("bf16", "fp16")
        ratio = case["ratio_mpx_over_raw"]
        table.add(
            "gemm_cuda",
            f"{case['precision']} {case['m']}^3",
            f"{ratio:.3f} ({case['mpx_tflops']:.0f} vs {case['raw_tflops']:.0f} TFLOP/s)",
            f">= {bar} of raw" if applies else "-",
            (ratio >= bar) if applies else "info",
        )


def linear_rows(table, linear):
    if linear is None:
        table.add("linear_cuda", "Linear + bias + GELU fwd+bwd", "-", ">= 0.95 of the three raw GEMMs", None)
        return
    bar = linear.get("required_ratio", 0.95)
    for case in linear["cases"]:
        ratio = case["ratio_raw_over_mpx"]
        table.add(
            "linear_cuda",
            f"{case['precision']} S={case['batch']}",
            f"{ratio:.3f} ({ms(case['mpx_median_ms'])} vs {ms(case['raw_median_ms'])})",
            f">= {bar} of raw GEMMs",
            ratio >= bar,
        )


def find(cases, **match):
    for case in cases:
        if all(case.get(key) == value for key, value in match.items()):
            return case
    return None


def mlp_rows(table, mlp, peer):
    if mlp is None:
        table.add("mlp_step_cuda", "3 x Linear(4096), batch 512 / 4096", "-", "all", None)
        return
    floor_bar = mlp.get("floor_bar", 1.15)
    for case in mlp["cases"]:
        applies = case["precision"] == "bf16_mixed"
        ratio = case["ratio_to_floor"]
        table.add(
            "mlp_step_cuda",
            f"{case['precision']} batch {case['batch']}: step / floor",
            f"{ratio:.3f} ({ms(case['step_ms'])} vs {ms(case['floor_ms'])} = GEMMs {ms(case['gemm_ms'])} + "
            f"optimizer {ms(case['optimizer_ms'])})",
            f"<= {floor_bar}" if applies else "-",
            (ratio <= floor_bar) if applies else "info",
        )
    speedup_bar = mlp.get("fp32_speedup_bar", 5.0)
    for entry in mlp.get("speedup_bf16_over_fp32", []):
        table.add(
            "mlp_step_cuda",
            f"bf16 vs strict fp32, batch {entry['batch']}",
            f"{entry['ratio']:.2f}x",
            f">= {speedup_bar}x",
            entry["ratio"] >= speedup_bar,
        )
    torch_cases = peer["cases"] if peer else []
    for case in mlp["cases"]:
        precision, batch = case["precision"], case["batch"]
        amp = precision in AMP
        for variant, bar in (("eager", EAGER_BAR.get(batch, 1.0)), ("compile", 1.0)):
            label = "PyTorch eager" if variant == "eager" else "torch.compile"
            peer_case = find(torch_cases, precision=precision, batch=batch, variant=variant)
            if peer_case is None:
                if amp and (variant == "eager" or precision == "bf16_mixed"):
                    table.add("mlp_step_cuda", f"{precision} batch {batch} vs {label}", "-", f">= {bar}x", None)
                continue
            speedup = peer_case["step_ms"] / case["step_ms"]
            graph = case.get("graph_step_ms")
            graph_note = f"; mpx graph {ms(graph)}" if graph else ""
            table.add(
                "mlp_step_cuda",
                f"{precision} batch {batch} vs {label}",
                f"{speedup:.2f}x (mpx {ms(case['step_ms'])} vs {ms(peer_case['step_ms'])}{graph_note})",
                f">= {bar}x" if amp else "-",
                (speedup >= bar) if amp else "info",
            )
            mpx_peak = case["peak_bytes_with_workspace"]
            memory_ratio = mpx_peak / peer_case["peak_bytes"]
            table.add(
                "mlp_step_cuda",
                f"{precision} batch {batch} peak memory vs {label}",
                f"{memory_ratio:.3f} (mpx {mpx_peak / 2**20:.0f} MiB incl. workspace vs "
                f"{peer_case['peak_bytes'] / 2**20:.0f} MiB)",
                "<= 1.0" if amp else "-",
                (memory_ratio <= 1.0) if amp else "info",
            )


def fashion_rows(table, fashion, peer):
    if fashion is None:
        table.add("fashion_mnist_step_cuda", "CUDA graph vs PyTorch eager", "-", ">= 5x steps/s", None)
        return
    torch_cases = peer["cases"] if peer else []
    for case in fashion["cases"]:
        precision = case["precision"]
        eager = find(torch_cases, precision=precision, variant="eager")
        graph_rate = case.get("graph_steps_per_second")
        if eager is None or graph_rate is None:
            why = "no PyTorch eager result" if eager is None else f"no graph ({case.get('graph_error')})"
            table.add("fashion_mnist_step_cuda", f"{precision}: graph vs PyTorch eager", why, ">= 5x steps/s", None)
            continue
        speedup = graph_rate / eager["steps_per_second"]
        table.add(
            "fashion_mnist_step_cuda",
            f"{precision}: graph vs PyTorch eager",
            f"{speedup:.2f}x ({graph_rate:.0f} vs {eager['steps_per_second']:.0f} steps/s; mpx eager "
            f"{case['eager_steps_per_second']:.0f})",
            ">= 5x steps/s",
            speedup >= 5.0,
        )
        for variant in ("compile", "compile-reduce-overhead"):
            compiled = find(torch_cases, precision=precision, variant=variant)
            if compiled is not None:
                table.add(
                    "fashion_mnist_step_cuda",
                    f"{precision}: graph vs torch.compile ({variant})",
                    f"{graph_rate / compiled['steps_per_second']:.2f}x ({compiled['steps_per_second']:.0f} steps/s)",
                    "-",
                    "info",
                )


def environment_lines(documents):
    lines = []
    for key, document in documents.items():
        if document is None:
            continue
        device = document.get("device", {})
        software = document.get("software", {})
        details = [device.get("name", "?"), f"driver {device.get('driver_version')}"]
        if "cuda_runtime_version" in device:
            details += [f"CUDA runtime {device['cuda_runtime_version']}", f"cuBLASLt {device.get('cublaslt_version')}"]
        if software:
            details += [
                f"torch {software.get('torch_version')}",
                f"CUDA {software.get('cuda_version')}",
                f"cuDNN {software.get('cudnn_version')}",
                f"cuBLASLt {software.get('cublaslt_version')}",
            ]
        date = document.get("machine", {}).get("date")
        lines.append(f"- `{FILES[key]}`: {', '.join(str(d) for d in details)}" + (f" ({date})" if date else ""))
    return lines


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=os.path.join(os.path.dirname(here), "results"))
    parser.add_argument("--output")
    parser.add_argument("--strict", action="store_true")
    settings = parser.parse_args(argv)
    documents = {key: load(settings.results, key) for key in FILES}
    table = Table()
    gemm_rows(table, documents["gemm"])
    linear_rows(table, documents["linear"])
    mlp_rows(table, documents["mlp"], documents["torch_mlp"])
    fashion_rows(table, documents["fashion"], documents["torch_fashion"])
    text = "\n".join(
        ["Measured on:", *environment_lines(documents), "", table.markdown(), ""]
        + [f"{table.failures()} bar(s) not met or not measured."]
    )
    print(text)
    if settings.output:
        with open(settings.output, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return 1 if settings.strict and table.failures() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
