#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""The ResNet in mpx and in PyTorch, step for step: resnet_parity_tool trains mpx's ResNet-8
(mpx/experiment/resnet.hpp, fp32, width 8, BatchNorm in training mode) 50 steps of Nesterov SGD with
weight decay on synthetic batches and writes the batches, every step's loss and a checkpoint of the
training state after every step (weights, running statistics, momentum buffers, the model's
description). examples/rebuild_in_torch.py's builders rebuild the network in PyTorch (fp32, CPU) from
the description, and torch.optim.SGD with the same settings replays the run twice.

Step by step: before each step PyTorch takes mpx's state (the checkpoint of the step before), then the
step on the same batch, and
  the loss must be within 1e-5 of mpx's, |mpx - torch| / |torch|;
  each running statistic after it within 1e-5 of the next checkpoint's, max |mpx - torch| / max |torch|;
  the weights, and the momentum buffers, after it within 1e-2 of the next checkpoint's, norm-wise over
      the model, ||mpx - torch|| / ||torch||, and the median of that over the 50 steps within 1e-5.
A ReLU input within a rounding error of zero falls on the other side in one implementation now and
then (a few of a ReLU's up to 200,000 inputs lie within 1e-6 of zero): the loss and the running
statistics barely move, but that step's gradient of the layers below changes by up to ~1e-3
relative, and so do the weights and momentum buffers after it. The median over the steps is what a
difference in the optimizer's rule would move (without weight decay, for one: 5e-5 for the weights,
5e-3 for momentum).

Free-running: PyTorch trains its own copy from the initial state for the 50 steps. The first ReLU
that falls otherwise parts the two runs for good (PyTorch in fp32 leaves its own fp64 run by 3e-5 at
step 5, 3e-3 by step 50; mpx leaves that fp64 run by 9e-6 at step 8), so the losses need only agree
within 1e-2, "the same run"; the final weights and statistics are reported, not checked.

usage: resnet_parity.py <resnet_parity_tool> <scratch directory> <rebuild_in_torch.py>
Exits 77 (CTest SKIP) when torch or safetensors cannot be imported.
"""
import importlib.util
import json
import os
import statistics
import subprocess
import sys

try:
    import numpy  # noqa: F401  (safetensors' torch loader needs it)
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file
except Exception as error:  # an ImportError, or a broken install failing to load its libraries
    print(f"SKIP: PyTorch, numpy or safetensors cannot be imported by {sys.executable} ({error}); "
          "scripts/test.sh installs them into build/tools/python (MPX_INSTALL_TORCH=1 scripts/install-deps.sh)")
    sys.exit(77)

STEPS = 50
LOSS_TOLERANCE = 1e-5  # one step from the same state
RUNNING_TOLERANCE = 1e-5  # the running statistics after one step from the same state
STEP_TOLERANCE = 1e-2  # the weights and momentum buffers after one step from the same state, norm-wise
MEDIAN_TOLERANCE = 1e-5  # the same, the median over the steps
FREE_RUN_TOLERANCE = 1e-2  # the losses of 50 steps, each implementation from its own state
MOMENTUM = "optimizer."  # the checkpoint's momentum buffers: optimizer.<parameter>.momentum_buffer


def rebuild_builders(path):
    """examples/rebuild_in_torch.py's `build`: a torch module from one entry of mpx's model description."""
    spec = importlib.util.spec_from_file_location("rebuild_in_torch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build


class Replay:
    """The rebuilt model and its SGD, loaded from and compared with mpx's checkpoints."""

    def __init__(self, build, run, checkpoint):
        with safe_open(checkpoint, "pt") as f:
            description = json.loads(f.metadata()["model"])
        self.model = build(description).train()  # BatchNorm with the batch's statistics
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=run["lr"], momentum=run["momentum"],
                                         dampening=run["dampening"], weight_decay=run["weight_decay"],
                                         nesterov=run["nesterov"])

    def load(self, checkpoint, with_momentum):
        """mpx's state after some steps; the momentum buffers only when a step has made them (before
        the first, torch.optim.SGD has none and mpx holds zeros)."""
        state = load_file(checkpoint)
        weights = {k: v for k, v in state.items() if not k.startswith(MOMENTUM)}
        missing, unexpected = self.model.load_state_dict(weights, strict=False)  # no num_batches_tracked
        assert not unexpected and all(k.endswith("num_batches_tracked") for k in missing), (missing, unexpected)
        self.optimizer.state.clear()
        if with_momentum:
            for name, p in self.model.named_parameters():
                self.optimizer.state[p]["momentum_buffer"] = state[f"{MOMENTUM}{name}.momentum_buffer"].clone()

    def step(self, images, labels):
        self.optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(self.model(images), labels.long())
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def state(self):
        """Weights, running statistics and momentum buffers, under the checkpoint's names."""
        state = {k: v for k, v in self.model.state_dict().items() if not k.endswith("num_batches_tracked")}
        for name, p in self.model.named_parameters():
            state[f"{MOMENTUM}{name}.momentum_buffer"] = self.optimizer.state[p]["momentum_buffer"]
        return state


def kind(name):
    return "momentum" if name.startswith(MOMENTUM) else "running statistics" if "running_" in name else "weights"


def differences(mpx, ours):
    """{"weights": ||mpx - torch|| / ||torch|| over all the weights, "momentum": the same over the
    momentum buffers, "running statistics": (the largest max |mpx - torch| / max |torch| of a
    running statistic, its name)}, and the names that only one side has."""
    common = sorted(set(mpx) & set(ours))
    result = {}
    for what in ("weights", "momentum"):
        names = [name for name in common if kind(name) == what]
        difference = torch.cat([(mpx[name] - ours[name]).flatten() for name in names]).norm()
        result[what] = (difference / torch.cat([ours[name].flatten() for name in names]).norm()).item()
    result["running statistics"] = max((((mpx[name] - ours[name]).abs().max() / ours[name].abs().max()).item(), name)
                                       for name in common if kind(name) == "running statistics")
    return result, sorted(set(mpx) ^ set(ours))


def main():
    tool, scratch, rebuild = sys.argv[1], sys.argv[2], sys.argv[3]
    subprocess.run([tool, scratch, str(STEPS)], check=True)
    with open(os.path.join(scratch, "run.json")) as f:
        run = json.load(f)
    batches = load_file(os.path.join(scratch, "batches.safetensors"))
    checkpoints = [os.path.join(scratch, f"step_{k}.safetensors") for k in range(STEPS + 1)]
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    build = rebuild_builders(rebuild)
    failures = []

    print("step by step, from mpx's state before each step:")
    replay = Replay(build, run, checkpoints[0])
    worst_loss, worst_running, norm_wise = (0.0, 0), (0.0, "", 0), {"weights": [], "momentum": []}
    for step in range(STEPS):
        replay.load(checkpoints[step], with_momentum=step > 0)
        loss, mpx_loss = replay.step(batches["images"][step], batches["labels"][step]), run["losses"][step]
        relative = abs(mpx_loss - loss) / abs(loss)
        worst_loss = max(worst_loss, (relative, step + 1))
        if relative > LOSS_TOLERANCE:
            failures.append(f"step {step + 1} from mpx's state: loss mpx {mpx_loss:.9g}, torch {loss:.9g}, "
                            f"relative difference {relative:.2e} > {LOSS_TOLERANCE:g}")
        after, unmatched = differences(load_file(checkpoints[step + 1]), replay.state())
        if unmatched:
            failures.append(f"step {step + 1}: tensors on one side only: {unmatched}")
        running, name = after["running statistics"]
        worst_running = max(worst_running, (running, name, step + 1))
        if running > RUNNING_TOLERANCE:
            failures.append(f"after step {step + 1} from mpx's state: {name}: max |mpx - torch| / max |torch| "
                            f"= {running:.2e} > {RUNNING_TOLERANCE:g}")
        for what, values in norm_wise.items():
            values.append(after[what])
            if after[what] > STEP_TOLERANCE:
                failures.append(f"after step {step + 1} from mpx's state: {what}: ||mpx - torch|| / ||torch|| "
                                f"= {after[what]:.2e} > {STEP_TOLERANCE:g}")
        print(f"step {step + 1:3d}  mpx {mpx_loss:.9f}  torch {loss:.9f}  relative {relative:.2e}  after it: "
              f"weights {after['weights']:.1e}, momentum {after['momentum']:.1e}, running statistics {running:.1e}")
    print(f"{STEPS} steps, largest relative loss difference {worst_loss[0]:.2e} at step {worst_loss[1]} "
          f"(tolerance {LOSS_TOLERANCE:g})")
    print(f"  running statistics: largest max |mpx - torch| / max |torch| {worst_running[0]:.2e} "
          f"({worst_running[1]}, step {worst_running[2]}; tolerance {RUNNING_TOLERANCE:g})")
    for what, values in norm_wise.items():
        median, (largest, step) = statistics.median(values), max((v, i + 1) for i, v in enumerate(values))
        print(f"  {what}: ||mpx - torch|| / ||torch|| median {median:.2e} (tolerance {MEDIAN_TOLERANCE:g}), "
              f"largest {largest:.2e} at step {step} (tolerance {STEP_TOLERANCE:g})")
        if median > MEDIAN_TOLERANCE:
            failures.append(f"{what} after a step from mpx's state: the median over the steps of "
                            f"||mpx - torch|| / ||torch|| = {median:.2e} > {MEDIAN_TOLERANCE:g}")

    print("free-running, each from its own state:")
    replay = Replay(build, run, checkpoints[0])
    replay.load(checkpoints[0], with_momentum=False)
    worst_loss = (0.0, 0)
    for step in range(STEPS):
        loss, mpx_loss = replay.step(batches["images"][step], batches["labels"][step]), run["losses"][step]
        relative = abs(mpx_loss - loss) / abs(loss)
        worst_loss = max(worst_loss, (relative, step + 1))
        if relative > FREE_RUN_TOLERANCE:
            failures.append(f"free-running step {step + 1}: loss mpx {mpx_loss:.9g}, torch {loss:.9g}, "
                            f"relative difference {relative:.2e} > {FREE_RUN_TOLERANCE:g}")
        print(f"step {step + 1:3d}  mpx {mpx_loss:.9f}  torch {loss:.9f}  relative {relative:.2e}")
    print(f"{STEPS} steps, largest relative loss difference {worst_loss[0]:.2e} at step {worst_loss[1]} "
          f"(tolerance {FREE_RUN_TOLERANCE:g})")
    after, _ = differences(load_file(checkpoints[STEPS]), replay.state())
    print(f"  after {STEPS} steps (not checked): ||mpx - torch|| / ||torch|| weights {after['weights']:.2e}, "
          f"momentum {after['momentum']:.2e}; running statistics: largest max |mpx - torch| / max |torch| "
          f"{after['running statistics'][0]:.2e} ({after['running statistics'][1]})")

    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
