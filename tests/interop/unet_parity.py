#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""The diffusion UNet in mpx and in PyTorch: unet_parity_tool builds mpx's UNet (mpx/experiment/unet.hpp,
fp32, base width 16 as the example's: timestep features, the time MLP, residual blocks that add the time embedding,
concatenating skips, GroupNorm, SiLU, strided convolutions, upsampling and self-attention over the 7 x 7
pixels) and writes its prediction and every parameter's gradient of the MSE loss at the initial weights,
then trains it 20 steps as examples/diffusion.cpp does (AdamW with weight decay, the gradient norm
clipped to 1, the EMA of the weights with diffusers' warm-up) on synthetic images noised by the linear
DDPM schedule, writing the batches, every step's loss and the training state after every step.
examples/rebuild_in_torch.py's builders rebuild the network in PyTorch (fp32, CPU) from the checkpoint's
description and:

  forward and backward at the initial weights: the prediction within 1e-5 of mpx's (max |mpx - torch| /
      max |torch|), each parameter's gradient within 1e-4 of mpx's norm-wise (||mpx - torch|| / ||torch||),
      and all of them together within 1e-5;
  training, each implementation from its own state (torch.optim.AdamW, clip_grad_norm_, diffusers' EMA
      update): every step's loss within 1e-5 of mpx's, relative; the weights and the EMA after the last
      step within 2e-5 of mpx's, norm-wise over the model.
The network has no ReLU, so nothing parts the two runs but rounding (measured 2026-11-28: prediction
1.1e-6, gradients 5e-7 together and 3e-6 at worst, losses 2.4e-6, weights and EMA 2e-6). Not at width 8:
there each GroupNorm's 8 groups hold one channel each and remove every per-channel bias and time shift
added before them, so those parameters' true gradients are zero and both sides' are rounding noise,
which AdamW's normalised steps turn into full-size updates in unrelated directions.

usage: unet_parity.py <unet_parity_tool> <scratch directory> <rebuild_in_torch.py>
Exits 77 (CTest SKIP) when torch or safetensors cannot be imported.
"""
import importlib.util
import json
import os
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

STEPS = 20
OUTPUT_TOLERANCE = 1e-5  # the prediction at the initial weights, max-wise
GRADIENT_TOLERANCE = 1e-4  # each parameter's gradient at the initial weights, norm-wise
ALL_GRADIENTS_TOLERANCE = 1e-5  # all the gradients together, norm-wise
LOSS_TOLERANCE = 1e-5  # every training step's loss, relative
STATE_TOLERANCE = 2e-5  # the weights, and the EMA, after the last step, norm-wise over the model
OPTIMIZER, EMA = "optimizer.", "ema."  # the checkpoint's AdamW moments and weight average


def rebuild_builders(path):
    """examples/rebuild_in_torch.py's `build`: a torch module from one entry of mpx's model description."""
    spec = importlib.util.spec_from_file_location("rebuild_in_torch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build


def rebuilt_model(build, checkpoint):
    """The model the checkpoint describes, with its weights."""
    with safe_open(checkpoint, "pt") as f:
        model = build(json.loads(f.metadata()["model"]))
    state = load_file(checkpoint)
    weights = {k: v for k, v in state.items() if not k.startswith((OPTIMIZER, EMA))}
    model.load_state_dict(weights, strict=True)  # raises on a missing or an unexpected name
    return model, {k[len(EMA):]: v for k, v in state.items() if k.startswith(EMA)}


def norm_wise(mpx, ours, names):
    """||mpx - torch|| / ||torch|| over the tensors `names` of both dictionaries."""
    difference = torch.cat([(mpx[name] - ours[name]).flatten() for name in names]).norm()
    return (difference / torch.cat([ours[name].flatten() for name in names]).norm()).item()


def check_gradients(build, checkpoint, gradients, batches, failures):
    model, _ = rebuilt_model(build, checkpoint)
    output = model(batches["noisy"][0], batches["timesteps"][0])
    error = ((gradients["output"] - output).abs().max() / output.abs().max()).item()
    print(f"prediction at the initial weights: max |mpx - torch| / max |torch| {error:.2e} "
          f"(tolerance {OUTPUT_TOLERANCE:g})")
    if error > OUTPUT_TOLERANCE:
        failures.append(f"the prediction at the initial weights: {error:.2e} > {OUTPUT_TOLERANCE:g}")
    torch.nn.functional.mse_loss(output, batches["noise"][0]).backward()
    ours = {name: p.grad for name, p in model.named_parameters()}
    missing = sorted(set(ours) ^ (set(gradients) - {"output"}))
    if missing:
        failures.append(f"gradients on one side only: {missing}")
    worst = (0.0, "")
    for name in sorted(set(ours) & set(gradients)):
        relative = norm_wise(gradients, ours, [name])
        worst = max(worst, (relative, name))
        if relative > GRADIENT_TOLERANCE:
            failures.append(f"gradient of {name}: ||mpx - torch|| / ||torch|| = {relative:.2e} > "
                            f"{GRADIENT_TOLERANCE:g}")
    together = norm_wise(gradients, ours, sorted(set(ours) & set(gradients)))
    print(f"gradients at the initial weights: all together {together:.2e} (tolerance {ALL_GRADIENTS_TOLERANCE:g}), "
          f"the worst parameter {worst[0]:.2e} ({worst[1]}; tolerance {GRADIENT_TOLERANCE:g})")
    if together > ALL_GRADIENTS_TOLERANCE:
        failures.append(f"the gradients together: {together:.2e} > {ALL_GRADIENTS_TOLERANCE:g}")


def train(build, run, checkpoints, batches, failures):
    """Trains the rebuilt model from mpx's initial state, as mpx trained it, and compares each step."""
    model, _ = rebuilt_model(build, checkpoints[0])
    optimizer = torch.optim.AdamW(model.parameters(), lr=run["lr"], betas=(run["beta1"], run["beta2"]),
                                  eps=run["eps"], weight_decay=run["weight_decay"])
    average = {name: p.detach().clone() for name, p in model.named_parameters()}
    worst = (0.0, 0)
    for step in range(STEPS):
        optimizer.zero_grad()
        output = model(batches["noisy"][step], batches["timesteps"][step])
        loss = torch.nn.functional.mse_loss(output, batches["noise"][step])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), run["max_grad_norm"])
        optimizer.step()
        # diffusers' EMAModel.step: decay min(d, (1 + s) / (10 + s)) after s updates (0 for the first),
        # average -= (1 - decay) * (average - weight), 1 - decay rounded once to fp32.
        if run["ema_warmup"]:
            decay = 0.0 if step == 0 else min(run["ema_decay"], (1 + step) / (10 + step))
        else:
            decay = run["ema_decay"]
        one_minus = torch.tensor(1.0 - decay, dtype=torch.float32)
        with torch.no_grad():
            for name, p in model.named_parameters():
                average[name].sub_(one_minus * (average[name] - p))
        mpx_loss = run["losses"][step]
        relative = abs(mpx_loss - loss.item()) / abs(loss.item())
        worst = max(worst, (relative, step + 1))
        print(f"step {step + 1:3d}  mpx {mpx_loss:.9f}  torch {loss.item():.9f}  relative {relative:.2e}")
        if relative > LOSS_TOLERANCE:
            failures.append(f"step {step + 1}: loss mpx {mpx_loss:.9g}, torch {loss.item():.9g}, relative "
                            f"difference {relative:.2e} > {LOSS_TOLERANCE:g}")
    print(f"{STEPS} steps, largest relative loss difference {worst[0]:.2e} at step {worst[1]} "
          f"(tolerance {LOSS_TOLERANCE:g})")
    _, mpx_average = rebuilt_model(build, checkpoints[STEPS])
    mpx_weights = {k: v for k, v in load_file(checkpoints[STEPS]).items() if not k.startswith((OPTIMIZER, EMA))}
    names = sorted(average)
    ours = {name: p.detach() for name, p in model.named_parameters()}
    for what, mpx_side, torch_side in (("weights", mpx_weights, ours), ("EMA", mpx_average, average)):
        if sorted(mpx_side) != names:
            failures.append(f"{what} after the last step: names differ: {sorted(set(mpx_side) ^ set(names))}")
            continue
        relative = norm_wise(mpx_side, torch_side, names)
        print(f"  {what} after step {STEPS}: ||mpx - torch|| / ||torch|| {relative:.2e} (tolerance {STATE_TOLERANCE:g})")
        if relative > STATE_TOLERANCE:
            failures.append(f"{what} after step {STEPS}: {relative:.2e} > {STATE_TOLERANCE:g}")


def main():
    tool, scratch, rebuild = sys.argv[1], sys.argv[2], sys.argv[3]
    subprocess.run([tool, scratch, str(STEPS)], check=True)
    with open(os.path.join(scratch, "run.json")) as f:
        run = json.load(f)
    batches = load_file(os.path.join(scratch, "batches.safetensors"))
    gradients = load_file(os.path.join(scratch, "gradients.safetensors"))
    checkpoints = [os.path.join(scratch, f"step_{k}.safetensors") for k in range(STEPS + 1)]
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    build = rebuild_builders(rebuild)
    failures = []
    check_gradients(build, checkpoints[0], gradients, batches, failures)
    train(build, run, checkpoints, batches, failures)
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
