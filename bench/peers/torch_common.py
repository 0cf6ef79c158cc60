# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""What the PyTorch peers of mpx's CUDA benchmarks share: the four precisions as PyTorch users run
them (strict fp32, TF32, autocast fp16 + GradScaler, autocast bf16), the MLP with mpx's
initialisation, CUDA-event timing of groups of steps, peak memory, and a JSON document with the
torch, CUDA, cuDNN, cuBLASLt and driver versions and the device. Needs only torch (and the standard
library); numpy is not required."""

import contextlib
import ctypes
import datetime
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import tempfile

NO_DEVICE_EXIT = 77

# Precision name (as mpx prints it) -> how a PyTorch user gets it.
PRECISIONS = ("fp32", "tf32", "fp16_mixed", "bf16_mixed")

# Normwise/relative tolerance of a result computed in the precision against an fp32 one: a wrong
# model is off by O(1), rounding by far less (the same values as bench/cuda_report.hpp, loosened
# for fp32 vs fp32 with different kernels).
CHECK_TOLERANCE = {"fp32": 1e-4, "tf32": 2e-3, "fp16_mixed": 5e-3, "bf16_mixed": 2e-2}


def import_torch():
    """torch, or None (after saying why) when it or a CUDA device is missing."""
    try:
        import torch  # noqa: PLC0415 - imported late so that a missing torch gives exit 77, not a trace
    except ImportError as error:
        print(f"no PyTorch ({error}); nothing to measure (exit code 77)")
        return None
    if not torch.cuda.is_available():
        print("PyTorch sees no CUDA device; nothing to measure (exit code 77)")
        return None
    return torch


def set_matmul_precision(torch, precision):
    """fp32 is strict (no TF32 anywhere); every other precision allows TF32 for fp32 matmuls, as
    torch.set_float32_matmul_precision('high') does (it only matters for 'tf32': the mixed ones run
    their matmuls in fp16/bf16)."""
    strict = precision == "fp32"
    torch.backends.cuda.matmul.allow_tf32 = not strict
    torch.backends.cudnn.allow_tf32 = not strict
    torch.set_float32_matmul_precision("highest" if strict else "high")


def autocast_dtype(torch, precision):
    return {"fp16_mixed": torch.float16, "bf16_mixed": torch.bfloat16}.get(precision)


def autocast(torch, precision):
    dtype = autocast_dtype(torch, precision)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast("cuda", dtype=dtype)


def make_scaler(torch, precision):
    """GradScaler with PyTorch's defaults for fp16 (mpx's DynamicLossScaling has the same), None
    otherwise."""
    if precision != "fp16_mixed":
        return None
    return torch.amp.GradScaler("cuda")


def mlp(torch, widths, seed):
    """Linear + ReLU for every layer but the last, initialised as mpx's nn::Linear: Kaiming-uniform
    weights U(+-sqrt(6 / fan_in)) before a ReLU, Xavier-uniform U(+-sqrt(6 / (fan_in + fan_out)))
    for the last layer, zero biases. fp32 parameters on the GPU."""
    torch.manual_seed(seed)
    layers = []
    for i in range(len(widths) - 1):
        linear = torch.nn.Linear(widths[i], widths[i + 1])
        last = i == len(widths) - 2
        with torch.no_grad():
            if last:
                torch.nn.init.xavier_uniform_(linear.weight)
            else:
                torch.nn.init.kaiming_uniform_(linear.weight, nonlinearity="relu")
            torch.nn.init.zeros_(linear.bias)
        layers.append(linear)
        if not last:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).cuda()


def random_batch(torch, rows, features, classes, generator):
    """fp32 inputs uniform in [-1, -1/64] U [1/64, 1] (never zero) and int64 labels, on the GPU."""
    magnitude = torch.rand(rows, features, generator=generator) * (1 - 1 / 64) + 1 / 64
    sign = torch.where(torch.rand(rows, features, generator=generator) < 0.5, -1.0, 1.0)
    labels = torch.randint(0, classes, (rows,), generator=generator)
    return (magnitude * sign).cuda(), labels.cuda()


def make_step(torch, model, optimizer, scaler, precision, compiled, compile_mode=None):
    """One training step as a user writes it: zero_grad, forward + loss under autocast, backward
    (scaled for fp16), optimizer step (through the scaler for fp16), scaler update. With `compiled`
    the forward and loss go through torch.compile (backward through AOTAutograd), the optimizer stays
    eager. Returns step(x, y) -> loss tensor (no host synchronisation except GradScaler's own)."""
    loss_fn = torch.nn.CrossEntropyLoss()

    def forward_loss(x, y):
        with autocast(torch, precision):
            return loss_fn(model(x), y)

    if compiled:
        forward_loss = torch.compile(forward_loss, mode=compile_mode, dynamic=False)

    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = forward_loss(x, y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        return loss

    return step


def check_first_loss(torch, model, precision, x, y):
    """The model's loss on (x, y) in `precision` against strict fp32, before any step: the peer must
    compute the same function as mpx (mpx checks its own against its CPU backend)."""
    loss_fn = torch.nn.CrossEntropyLoss()
    with torch.no_grad():
        set_matmul_precision(torch, "fp32")
        reference = float(loss_fn(model(x), y))
        set_matmul_precision(torch, precision)
        with autocast(torch, precision):
            value = float(loss_fn(model(x), y))
    error = abs(value - reference) / abs(reference)
    tolerance = CHECK_TOLERANCE[precision]
    if not (error <= tolerance):
        raise RuntimeError(
            f"{precision}: first loss {value:.7g} differs from strict fp32's {reference:.7g} by {error:.3g} "
            f"(tolerance {tolerance:g})"
        )
    return {"loss": value, "fp32_loss": reference, "relative_difference": error, "tolerance": tolerance}


def time_steps(torch, run_group, steps_per_sample, repetitions, warmup_groups=1):
    """Median milliseconds per step: `run_group()` queues `steps_per_sample` steps; each group is
    timed with CUDA events on the current stream after `warmup_groups` untimed groups."""
    for _ in range(warmup_groups):
        run_group()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repetitions):
        start.record()
        run_group()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) / steps_per_sample)
    return statistics.median_high(samples), samples


def release(torch):
    """Frees what earlier cases left and opens a new peak-memory window."""
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def reset_compiler(torch):
    """A fresh torch.compile cache per case, so that no case hits a recompile limit or reuses
    another shape's graph."""
    with contextlib.suppress(Exception):
        torch._dynamo.reset()


def driver_version():
    try:
        import pynvml  # noqa: PLC0415 - optional (nvidia-ml-py)

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else version
    except Exception:  # noqa: BLE001 - any failure: fall back to nvidia-smi
        pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        return out.stdout.strip().splitlines()[0]
    except Exception:  # noqa: BLE001 - unknown is a valid answer
        return None


def cublaslt_version():
    """cublasLtGetVersion() of the libcublasLt torch has loaded (found by its soname), or None."""
    for name in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try:
            library = ctypes.CDLL(name)
            library.cublasLtGetVersion.restype = ctypes.c_size_t
            return int(library.cublasLtGetVersion())
        except (OSError, AttributeError):
            continue
    return None


def environment(torch):
    """The "software" and "device" JSON objects."""
    properties = torch.cuda.get_device_properties(0)
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "software": {
            "torch_version": torch.__version__,
            "cuda_version": torch.version.cuda,
            "cudnn_version": cudnn,
            "cublaslt_version": cublaslt_version(),
            "python_version": platform.python_version(),
            "triton_version": _module_version("triton"),
        },
        "device": {
            "name": properties.name,
            "compute_capability": f"{properties.major}.{properties.minor}",
            "multiprocessors": properties.multi_processor_count,
            "memory_bytes": properties.total_memory,
            "driver_version": driver_version(),
        },
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }


def _module_version(name):
    try:
        module = __import__(name)
        return getattr(module, "__version__", None)
    except ImportError:
        return None


def write_json(path, document):
    """Writes atomically (temporary file in the same folder, then rename), as mpx's benchmarks do."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    with os.fdopen(handle, "w") as out:
        json.dump(_finite(document), out, indent=2, allow_nan=False)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    print(f"\nwrote {path}")


def _finite(value):
    """The document with every inf or NaN replaced by null (JSON has neither)."""
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
