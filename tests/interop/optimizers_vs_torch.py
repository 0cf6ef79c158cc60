#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""mpx's AdamW and SGD against torch.optim, bit for bit (the measurements of docs/training.md).

tests/tools/optimizer_trajectory_tool runs 100 updates of mpx::cpu::adamw_update or sgd_update on
random fp32 parameters and writes the parameters, every gradient, and the parameters after updates
1, 10 and 100 to a safetensors file. This script replays the same updates with torch.optim in each
implementation torch offers on the CPU (single-tensor `foreach=False`, multi-tensor `foreach=True`,
`fused=True`, and the default), each in a fresh process per torch CPU kernel build
(ATEN_CPU_CAPABILITY: what torch picks here, and `default`, its build without SIMD), and reports the
share of parameters bit-identical to mpx's and the largest difference in ulps. It also measures, op
by op, whether torch's kernels round each operation on its own or fuse a multiply-add (FMA), and
whether its sqrt is correctly rounded: the causes of the differences.

usage: optimizers_vs_torch.py <optimizer_trajectory_tool> <scratch directory>
           [--markdown] [--capabilities native,avx2,default]
       optimizers_vs_torch.py --pow-survey [steps]

Fails unless every configuration in CLAIMS (what docs/training.md says mpx matches) is bit-identical
to mpx in every case after every snapshot; the others are reported. Exits 77 (CTest SKIP) when
torch, numpy or safetensors cannot be imported. --markdown prints the tables of docs/training.md;
--pow-survey counts the (beta, t) pairs where glibc's pow, which torch's bias corrections use,
is not correctly rounded (mpx::integer_power is), and whether that reaches an fp32 coefficient.
"""
import contextlib
import datetime
import hashlib
import json
import math
import os
import platform
import subprocess
import sys

try:
    import numpy as np
    import torch
    from safetensors import safe_open
    from safetensors.numpy import load_file
except ImportError as error:
    print(f"SKIP: torch, numpy or safetensors is missing ({error}); configure with "
          "-DMPX_TOOLS_PYTHON=<a Python with torch> to compare mpx's optimizers with torch.optim")
    sys.exit(77)

STEPS = 100
SNAPSHOTS = (1, 10, 100)
# All scalar; below one vector; 62 AVX-512 vectors + 8; 4096 AVX-512 vectors + 1.
SIZES = (1, 7, 1000, 65537)

# (name, tool settings); torch gets the same values. Settings not named take PyTorch's defaults
# (AdamW: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 1e-2; SGD: 0 for all but lr).
CASES = [
    ("AdamW defaults", {"optimizer": "adamw"}),
    ("AdamW lr 3e-4, betas (0.9, 0.95), wd 0.1", {"optimizer": "adamw", "lr": 3e-4, "beta2": 0.95,
                                                  "weight_decay": 0.1}),
    ("AdamW wd 0", {"optimizer": "adamw", "weight_decay": 0.0}),
    ("AdamW lr 1e-2, beta1 0.3 (lerp weight > 0.5)", {"optimizer": "adamw", "lr": 1e-2, "beta1": 0.3}),
    ("SGD lr 0.01", {"optimizer": "sgd", "lr": 0.01}),
    ("SGD momentum 0.9", {"optimizer": "sgd", "lr": 0.01, "momentum": 0.9}),
    ("SGD momentum 0.9, nesterov", {"optimizer": "sgd", "lr": 0.01, "momentum": 0.9, "nesterov": 1}),
    ("SGD momentum 0.9, wd 5e-4", {"optimizer": "sgd", "lr": 0.01, "momentum": 0.9, "weight_decay": 5e-4}),
    ("SGD momentum 0.9, dampening 0.1", {"optimizer": "sgd", "lr": 0.01, "momentum": 0.9, "dampening": 0.1}),
]

# torch.optim implementations: the constructor's keyword arguments. The last is a diagnosis, AdamW
# only: the single-tensor AdamW with Tensor.sqrt replaced by a correctly rounded one (numpy's).
EXACT_SQRT = "foreach=False, IEEE sqrt"
VARIANTS = {
    "foreach=False": {"foreach": False},
    "foreach=True": {"foreach": True},
    "default": {},
    "fused=True": {"fused": True},
    EXACT_SQRT: {"foreach": False},
}

# What mpx claims (docs/training.md): (optimizer, implementation, ATEN_CPU_CAPABILITY) bit-identical
# to mpx after every update of every case. The exact-sqrt row pins the one cause of the single-tensor
# AdamW's differences without SIMD.
CLAIMS = [
    ("adamw", "fused=True", "default"),
    ("adamw", EXACT_SQRT, "default"),
    ("sgd", "foreach=False", "default"),
    ("sgd", "foreach=True", "default"),
    ("sgd", "default", "default"),
    ("sgd", "fused=True", "default"),
]


def ordered(values):
    """fp32 values as integers whose differences count ulps (-0 and +0 are both 0)."""
    i = np.ascontiguousarray(values, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def compare(mpx_values, torch_values):
    """(elements bit-identical, largest difference in ulps)."""
    a, b = ordered(mpx_values), ordered(torch_values)
    return int(np.count_nonzero(a == b)), int(np.max(np.abs(a - b)))


def torch_optimizer(settings, params, kwargs):
    s = dict(settings)
    if s.pop("optimizer") == "adamw":
        return torch.optim.AdamW(params, lr=s.get("lr", 1e-3), betas=(s.get("beta1", 0.9), s.get("beta2", 0.999)),
                                 eps=s.get("eps", 1e-8), weight_decay=s.get("weight_decay", 1e-2), **kwargs)
    return torch.optim.SGD(params, lr=s["lr"], momentum=s.get("momentum", 0.0), dampening=s.get("dampening", 0.0),
                           weight_decay=s.get("weight_decay", 0.0), nesterov=bool(s.get("nesterov", 0)), **kwargs)


@contextlib.contextmanager
def ieee_sqrt():
    """Tensor.sqrt correctly rounded (numpy's) while inside."""
    original = torch.Tensor.sqrt
    torch.Tensor.sqrt = lambda self: torch.from_numpy(np.sqrt(self.detach().numpy()))
    try:
        yield
    finally:
        torch.Tensor.sqrt = original


# The tool's names of the optimizer state and torch's.
STATE_NAMES = {"adamw": {"exp_avg": "exp_avg", "exp_avg_sq": "exp_avg_sq"}, "sgd": {"momentum": "momentum_buffer"}}


def replay(settings, tensors, variant):
    """{t: {"params": array, state name: array}} after each snapshot's update, or the message of the
    error torch raised."""
    param = torch.nn.Parameter(torch.from_numpy(tensors["initial"].copy()))
    grads = tensors["grads"]
    state_names = STATE_NAMES[settings["optimizer"]]
    results = {}
    with ieee_sqrt() if variant == EXACT_SQRT else contextlib.nullcontext():
        try:
            optimizer = torch_optimizer(settings, [param], VARIANTS[variant])
            for t in range(1, grads.shape[0] + 1):
                param.grad = torch.from_numpy(grads[t - 1].copy())
                optimizer.step()
                if t in SNAPSHOTS:
                    state = optimizer.state[param]
                    results[t] = {"params": param.detach().numpy().copy()}
                    for name, torch_name in state_names.items():
                        if state.get(torch_name) is not None:
                            results[t][name] = state[torch_name].numpy().copy()
        except (RuntimeError, ValueError) as error:
            return str(error).splitlines()[0]
    return results


def check_settings(path, settings):
    """The tool echoes its settings as hex floats: they must be exactly the values torch gets."""
    with safe_open(path, "np") as f:
        metadata = f.metadata()
    for key, value in settings.items():
        if key != "optimizer" and key != "nesterov" and float.fromhex(metadata[key]) != value:
            raise RuntimeError(f"{path}: the tool ran with {key} = {metadata[key]}, not {value!r}")


def trajectory_file(tool, scratch, case_index, size):
    name, settings = CASES[case_index]
    path = os.path.join(scratch, f"case{case_index}_{size}.safetensors")
    if not os.path.exists(path):  # the worker of another kernel build may have written it
        arguments = [f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}" for k, v in settings.items()]
        subprocess.run([tool, path, f"size={size}", f"steps={STEPS}", f"seed={case_index + 1}",
                        "snapshots=" + ",".join(map(str, SNAPSHOTS))] + arguments, check=True)
        check_settings(path, settings)
    return path


def measure(tool, scratch):
    """Every case through the tool and through torch in this process's kernel build: a list of rows."""
    rows = []
    for case_index, (name, settings) in enumerate(CASES):
        for size in SIZES:
            tensors = load_file(trajectory_file(tool, scratch, case_index, size))
            for variant in VARIANTS:
                if variant == EXACT_SQRT and settings["optimizer"] != "adamw":
                    continue
                result = replay(settings, tensors, variant)
                row = {"case": name, "optimizer": settings["optimizer"], "size": size, "variant": variant,
                       "error": None, "snapshots": {}, "digest": None}
                if isinstance(result, str):
                    row["error"] = result
                else:
                    row["digest"] = hashlib.sha256(
                        b"".join(result[t]["params"].tobytes() for t in SNAPSHOTS)).hexdigest()
                    for t in SNAPSHOTS:
                        same, ulps = compare(tensors[f"params.{t}"], result[t]["params"])
                        # The optimizer state too: names whose values are not all bit-identical.
                        state_differs = [key for key in result[t] if key != "params" and
                                         compare(tensors[f"{key}.{t}"], result[t][key])[0] != size]
                        row["snapshots"][str(t)] = {"identical": same, "elements": size, "max_ulp": ulps,
                                                    "state_differs": state_differs}
                rows.append(row)
    return rows


def fma(a, b, c):
    """a * b + c rounded once, near enough for a share: the product of two floats is exact in double,
    and rounding the double sum again to float differs from one rounding only where the double lands
    exactly on a midpoint between two floats."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def probe_ops():
    """Each torch op the optimizers use, on 4099 random elements (vectors and a tail): the share of
    results equal to every operation rounded on its own (mpx), and to a fused multiply-add."""
    rng = np.random.default_rng(7)
    n = 4099
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    c = (rng.random(n, dtype=np.float32) + np.float32(0.5)).astype(np.float32)
    ta, tb, tc = (torch.from_numpy(x.copy()) for x in (a, b, c))
    f = np.float32
    v, w_small, w_large, s = f(0.3), f(0.1), f(0.7), f(0.7)
    probes = [  # (torch call, result, rounded separately, fused or None)
        ("x.add(y, alpha=0.3)", ta.add(tb, alpha=0.3), a + v * b, fma(b, np.full(n, v), a)),
        ("x.mul_(0.3)", ta.clone().mul_(0.3), a * v, None),
        ("x.lerp_(y, 0.1)", ta.clone().lerp_(tb, 0.1), a + w_small * (b - a), fma(np.full(n, w_small), b - a, a)),
        ("x.lerp_(y, 0.7)", ta.clone().lerp_(tb, 0.7), b - (b - a) * (f(1) - w_large),
         fma(np.full(n, w_large - f(1)), b - a, b)),
        ("x.addcmul_(y, z, value=0.3)", ta.clone().addcmul_(tb, tc, value=0.3), a + (v * b) * c, fma(v * b, c, a)),
        ("x.addcdiv_(y, z, value=0.3)", ta.clone().addcdiv_(tb, tc, value=0.3), a + (v * b) / c, None),
        ("x / 0.7", ta / 0.7, a / s, None),
        ("x + 1e-8", ta + 1e-8, a + f(1e-8), None),
        ("z.sqrt()", tc.sqrt(), np.sqrt(c), None),
    ]
    result = []
    for name, value, separate, fused in probes:
        value = value.numpy()
        result.append({"op": name, "separate": int(np.count_nonzero(value == separate)),
                       "fused": None if fused is None else int(np.count_nonzero(value == fused)),
                       "elements": n,
                       "max_ulp": compare(value, separate)[1] if name == "z.sqrt()" else None})
    return result


def run_worker(tool, scratch, capability):
    """measure() and probe_ops() in a fresh process whose torch runs the kernel build `capability`."""
    env = dict(os.environ)
    env.pop("ATEN_CPU_CAPABILITY", None)
    if capability != "native":
        env["ATEN_CPU_CAPABILITY"] = capability
    result = subprocess.run([sys.executable, __file__, "--worker", tool, scratch], env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"worker for ATEN_CPU_CAPABILITY={capability} failed:\n{result.stderr}")
    return json.loads(result.stdout)


def worker(tool, scratch):
    # One thread: where a tensor is split changes which elements take the scalar tail of a SIMD kernel
    # (without SIMD, as in the claims, nothing), and CI's machines are small.
    torch.set_num_threads(1)
    json.dump({"capability": torch.backends.cpu.get_cpu_capability(), "ops": probe_ops(),
               "rows": measure(tool, scratch)}, sys.stdout)


def pooled(rows):
    """{(case, variant): {"error", "snapshots": {t: identical, elements, max_ulp}, "sizes_differing"}}
    over all sizes."""
    table = {}
    for row in rows:
        entry = table.setdefault((row["case"], row["variant"]),
                                 {"error": row["error"], "snapshots": {}, "sizes_differing": []})
        for t, s in row["snapshots"].items():
            p = entry["snapshots"].setdefault(t, {"identical": 0, "elements": 0, "max_ulp": 0})
            p["identical"] += s["identical"]
            p["elements"] += s["elements"]
            p["max_ulp"] = max(p["max_ulp"], s["max_ulp"])
        if any(s["identical"] != s["elements"] for s in row["snapshots"].values()):
            entry["sizes_differing"].append(row["size"])
    return table


def same_bits(rows, reference):
    """For each other variant: whether torch gave it the same bits as `reference` in every case."""
    digests = {(r["case"], r["size"], r["variant"]): r["digest"] for r in rows}
    lines = []
    for variant in VARIANTS:
        keys = [(c, n) for c, n, v in digests if v == variant]
        if variant == reference or not keys:
            continue
        same = sum(digests[(c, n, variant)] is not None and digests[(c, n, variant)] == digests[(c, n, reference)]
                   for c, n in keys)
        lines.append(f"{variant} gives the same bits as {reference} in {same} of {len(keys)} runs")
    return lines


def share(s):
    """Percent identical; never rounded up to 100 unless all are."""
    if s["identical"] == s["elements"]:
        return "100"
    return f"{min(100.0 * s['identical'] / s['elements'], 99.99):.2f}"


def cell(entry):
    if entry["error"]:
        return "error: " + entry["error"]
    snapshots = entry["snapshots"]
    shares = " / ".join(share(snapshots[str(t)]) for t in SNAPSHOTS)
    return f"{shares} ({snapshots[str(SNAPSHOTS[-1])]['max_ulp']})"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def print_report(results, markdown):
    try:  # a private function of torch.optim: what an optimizer picks when neither is given
        from torch.optim.optimizer import _default_to_fused_or_foreach
        fused, foreach = _default_to_fused_or_foreach([torch.zeros(1)], differentiable=False, use_fused=False)
    except (ImportError, TypeError):
        fused = foreach = "unknown"
    print(f"torch {torch.__version__} (CPU kernels here: {results['native']['capability']}), "
          f"{cpu_model()}, glibc {platform.libc_ver()[1]}, {datetime.date.today().isoformat()}")
    print(f"torch.optim's default for CPU tensors: fused={fused}, foreach={foreach}")
    print(f"{STEPS} updates of fp32 tensors of {', '.join(map(str, SIZES))} elements per case "
          f"({sum(SIZES)} in all); each cell: % of parameters bit-identical to mpx's after "
          f"{' / '.join(map(str, SNAPSHOTS))} updates (largest difference in ulps after {SNAPSHOTS[-1]})")
    for capability, result in results.items():
        print(f"ATEN_CPU_CAPABILITY={capability}: " + "; ".join(same_bits(result["rows"], "foreach=False")))
    tables = {capability: pooled(result["rows"]) for capability, result in results.items()}
    if markdown:
        columns = [(capability, variant) for capability in results for variant in ("foreach=False", "fused=True")]
        if "default" in results:
            columns.insert(len(columns) - 1, ("default", EXACT_SQRT))
        print()
        print("| case | " + " | ".join(f"`{v}`, {results[c]['capability']} kernels" for c, v in columns) + " |")
        print("| --- |" + " --- |" * len(columns))
        for name, _ in CASES:
            cells = [cell(tables[c][(name, v)]) if (name, v) in tables[c] else "—" for c, v in columns]
            print(f"| {name} | " + " | ".join(cells) + " |")
    else:
        for capability, table in tables.items():
            print()
            print(f"ATEN_CPU_CAPABILITY={capability} (torch runs {results[capability]['capability']})")
            for (case, variant), entry in table.items():
                differing = entry["sizes_differing"]
                note = f"  differs at sizes {differing}" if differing else ""
                print(f"  {case:46s} {variant:26s} {cell(entry):32s}{note}")
    print()
    print("torch's ops against every operation rounded on its own (as mpx does) and against a fused "
          "multiply-add: % of 4099 random elements identical")
    if markdown:
        print()
        print("| op | " + " | ".join(f"{results[c]['capability']}: separate / FMA" for c in results) + " |")
        print("| --- |" + " --- |" * len(results))
    for per_capability in zip(*(result["ops"] for result in results.values())):
        name = per_capability[0]["op"]
        if markdown:
            print(f"| `{name}` | " + " | ".join(op_cell(o) for o in per_capability) + " |")
        else:
            print(f"  {name:30s} " + "  ".join(f"{results[c]['capability']}: {op_cell(o):28s}"
                                               for c, o in zip(results, per_capability)))


def op_cell(probe):
    separate = share({"identical": probe["separate"], "elements": probe["elements"]})
    fused = "—" if probe["fused"] is None else share({"identical": probe["fused"], "elements": probe["elements"]})
    extra = f" (max {probe['max_ulp']} ulp)" if probe["max_ulp"] is not None else ""
    return f"{separate} / {fused}{extra}"


def check_claims(results):
    """(why a claimed configuration is not bit-identical, one line per failing row; the claimed
    configurations this torch does not offer, e.g. fused=True on the CPU before torch 2.4)."""
    failures, unavailable = [], []
    for optimizer, variant, capability in CLAIMS:
        if capability not in results:
            failures.append(f"ATEN_CPU_CAPABILITY={capability} was not measured")
            continue
        rows = [r for r in results[capability]["rows"] if r["optimizer"] == optimizer and r["variant"] == variant]
        if not rows:
            failures.append(f"{optimizer} {variant}: no measurement")
        for row in rows:
            where = f"{row['case']}, {variant}, ATEN_CPU_CAPABILITY={capability}, {row['size']} elements"
            if row["error"]:
                unavailable.append(f"{where}: torch raised {row['error']}")
            for t, s in row["snapshots"].items():
                if s["identical"] != s["elements"]:
                    failures.append(f"{where}, after {t} updates: {s['elements'] - s['identical']} parameters "
                                    f"differ, by up to {s['max_ulp']} ulp")
                if s["state_differs"]:
                    failures.append(f"{where}, after {t} updates: optimizer state {s['state_differs']} differs")
    return failures, unavailable


def correctly_rounded_powers(beta, steps):
    """beta^t rounded to the nearest double for t = 1..steps, as mpx::integer_power computes it."""
    import mpmath  # comes with torch (through sympy)
    mpmath.mp.prec = 256
    power, b = mpmath.mpf(1), mpmath.mpf(beta)
    for _ in range(steps):
        power *= b
        yield float(power)


def pow_survey(steps):
    f32 = np.float32
    lr = 1e-3
    print(f"t = 1..{steps}, glibc {platform.libc_ver()[1]}: torch's single-tensor AdamW computes beta ** t "
          "and bias_correction2 ** 0.5 with Python's float pow (glibc); mpx rounds beta^t correctly and "
          "uses sqrt")
    for beta in (0.9, 0.95, 0.99, 0.999):
        misrounded = step_changed = sqrt_changed = pow_half = half_changed = 0
        for t, exact in enumerate(correctly_rounded_powers(beta, steps), start=1):
            glibc = beta ** float(t)
            if glibc != exact:
                misrounded += 1
                step_changed += f32(lr / (1 - glibc)) != f32(lr / (1 - exact))
                sqrt_changed += f32(math.sqrt(1 - glibc)) != f32(math.sqrt(1 - exact))
            if (1 - glibc) ** 0.5 != math.sqrt(1 - glibc):
                pow_half += 1
                half_changed += f32((1 - glibc) ** 0.5) != f32(math.sqrt(1 - glibc))
        print(f"beta {beta}: pow(beta, t) is not correctly rounded for {misrounded} t, changing fp32 "
              f"lr / (1 - beta^t) {step_changed} times and fp32 sqrt(1 - beta^t) {sqrt_changed} times; "
              f"pow(1 - beta^t, 0.5) != sqrt(1 - beta^t) for {pow_half} t, changing the fp32 value "
              f"{half_changed} times")


def main():
    if sys.argv[1:2] == ["--pow-survey"]:
        pow_survey(int(sys.argv[2]) if len(sys.argv) > 2 else 10000)
        return 0
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    tool, scratch = sys.argv[1], sys.argv[2]
    options = sys.argv[3:]
    capabilities = ["native", "default"]
    if "--capabilities" in options:
        capabilities = options[options.index("--capabilities") + 1].split(",")
    os.makedirs(scratch, exist_ok=True)
    files = [os.path.join(scratch, name) for name in os.listdir(scratch) if name.endswith(".safetensors")]
    for path in files:  # an older tool's trajectories must not be reused
        os.remove(path)
    try:
        results = {capability: run_worker(tool, scratch, capability) for capability in capabilities}
    finally:
        for name in os.listdir(scratch):
            if name.endswith(".safetensors"):
                os.remove(os.path.join(scratch, name))
    with open(os.path.join(scratch, "results.json"), "w") as f:
        json.dump(results, f)
    print_report(results, "--markdown" in options)
    failures, unavailable = check_claims(results)
    print()
    for line in unavailable:
        print("not checked, this torch lacks it:", line)
    for failure in failures:
        print("FAIL:", failure)
    claims = "; ".join(f"{o} {v} with ATEN_CPU_CAPABILITY={c}" for o, v, c in CLAIMS)
    print(f"claimed bit-identical to mpx in every case ({claims}): {'no' if failures else 'yes'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
