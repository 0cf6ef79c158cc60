# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""Where a char-GPT training step spends its time, per operation, in mpx and in PyTorch: one Markdown
table from `perf script` of `train_cpu --profile P` (cpu-clock samples with call stacks; each sample
goes to the innermost frame that names an operation) and the JSON of `torch_char_gpt.py profile`
(self CPU time per aten operation). Both are scaled to ms per step by the step's median. oneDNN's
kernels are compiled at run time and carry no symbol: a sample whose leaf frame perf cannot name
("[unknown]") is counted as matmul, since in the char-GPT step oneDNN runs the GEMMs and nothing else.

usage: profile_table.py MPX_PERF_SCRIPT MPX_STEP_MS TORCH_JSON"""

import json
import re
import sys

# (operation, regex of an mpx frame, regex of an aten operation), innermost mpx frame first.
OPERATIONS = [
    ("matmul (GEMM, bias and activation epilogues)",
     r"mpx::cpu::gemm<|mpx::cpu::detail::widen_a_and_multiply|Eigen::internal::(gebp|gemm_pack|general_matrix)|"
     r"libdnnl|^\s*[0-9a-f]+ \[unknown\]",
     r"^aten::(mm|addmm|bmm|matmul|linear|sum)$"),
    ("GELU (not in a GEMM epilogue)", r"gelu_(forward|backward)|gelu<", r"^aten::gelu"),
    ("attention softmax and causal mask", r"(causal|attention)_softmax", r"^aten::(_softmax|_softmax_backward_data|masked_fill_?)$"),
    ("attention head split and merge (permutes)", r"attention_(split|merge)_heads",
     r"^aten::(copy_|cat|clone|contiguous|_to_copy|transpose|permute|view|reshape|_unsafe_view|t|split|"
     r"split_with_sizes|chunk|expand|as_strided|unsqueeze|squeeze|slice|select)$"),
    ("LayerNorm", r"layer_norm", r"^aten::native_layer_norm"),
    ("residual adds", r"Backend<mpx::Host>::add<", r"^aten::add_?$"),
    ("cross-entropy", r"softmax_cross_entropy", r"^aten::(_log_softmax|_log_softmax_backward_data|nll_loss.*)$"),
    ("embeddings", r"embedding", r"^aten::(embedding.*|index_select|index_add_|embedding_dense_backward)$"),
    ("dropout", r"dropout", r"^aten::(native_dropout.*|dropout)$"),
    ("optimizer and loss scaler", r"adamw|sgd_update|unscale_and_inspect|flag_nonfinite|FinishStep|BeginStep",
     r"^optimizer: "),
    ("zeroing and allocation", r"zero_grad|set_zero|memset|malloc|free|fill_uniform|ensure_shape",
     r"^aten::(zero_|zeros|fill_|empty.*|resize_)$"),
    ("framework (autograd nodes, dispatch)", r"$^", r"Backward0$|^autograd::|^aten::(detach|ones_like|to)$"),
]


def mpx_seconds(path):
    """Share of the samples per operation, from `perf script -F ip,sym` (samples separated by blank
    lines, one tab-indented frame per line, leaf first)."""
    counts, total = {}, 0
    with open(path, encoding="utf-8", errors="replace") as f:
        sample = []
        for line in list(f) + ["\n"]:
            if line.strip():
                sample.append(line)
                continue
            if not sample:
                continue
            total += 1
            frames = [line for line in sample if line.startswith("\t")]  # leaf first; any header skipped
            name = "other"
            for frame in frames:
                match = next((op for op, mpx, _ in OPERATIONS if re.search(mpx, frame)), None)
                if match:
                    name = match
                    break
            counts[name] = counts.get(name, 0) + 1
            sample = []
    return {name: count / total for name, count in counts.items()}


def torch_shares(path):
    ops = json.load(open(path, encoding="utf-8"))
    per_op = ops["ops"]
    total = sum(per_op.values())
    shares = {}
    for key, ms in per_op.items():
        name = next((op for op, _, aten in OPERATIONS if re.search(aten, key)), "other")
        shares[name] = shares.get(name, 0.0) + ms / total
    return ops["step_ms"], shares


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    mpx_share = mpx_seconds(sys.argv[1])
    mpx_ms = float(sys.argv[2])
    torch_ms, torch_share = torch_shares(sys.argv[3])
    print(f"| operation | mpx ms/step | mpx share | PyTorch ms/step | PyTorch share |")
    print("| --- | --- | --- | --- | --- |")
    for name in [op for op, _, _ in OPERATIONS] + ["other"]:
        a, b = mpx_share.get(name, 0.0), torch_share.get(name, 0.0)
        print(f"| {name} | {a * mpx_ms:.2f} | {100 * a:.1f}% | {b * torch_ms:.2f} | {100 * b:.1f}% |")
    print(f"| **step** | **{mpx_ms:.2f}** | 100% | **{torch_ms:.2f}** | 100% |")


if __name__ == "__main__":
    main()
