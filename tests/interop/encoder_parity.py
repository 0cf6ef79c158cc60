#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: 2026 The mpx authors
"""The masked-LM encoder in mpx and in PyTorch: encoder_parity_tool builds mpx's masked_lm
(mpx/experiment/encoder.hpp, fp32, vocabulary 48, 16 positions, width 32, 2 blocks of 4 heads: token,
positional and token-type embeddings (type 1 from the middle of each sequence on, as a sentence pair's second
half), pre-LN blocks of PaddedSelfAttention and a GELU MLP, the final LayerNorm, GatherTokens
and the vocabulary's Linear), writes its logits and every parameter's gradient at the initial weights, then
trains it 50 steps as examples/encoder.cpp pretrains it: synthetic sentences of 1 to 16 tokens in padded
batches bucketed by length, corrupted by data::mask_tokens, the chosen tokens' cross-entropy, AdamW with
weight decay on every parameter (mpx's AdamW decays them all; so does torch.optim.AdamW over
model.parameters()). examples/rebuild_in_torch.py rebuilds the network from the weights file's description
(its PaddedSequences hands each batch's lengths to the attention's key-padding mask, the chosen rows to
GatherTokens and the token types to TokenTypeEmbedding), and:

  forward and backward at the initial weights, on the first batch with a sequence of length 0 added and the
      chosen tokens in reverse order (GatherTokens keeps the order it is given): the logits within 1e-5 of
      mpx's (max |mpx - torch| / max |torch|), each parameter's gradient within 1e-4 of mpx's norm-wise
      (||mpx - torch|| / ||torch||), all of them together within 1e-5;
  the control: the same logits with every key attended (no padding mask) must differ from mpx's by more
      than 1e-2, so that a rebuild that ignores the lengths is seen to fail;
  the sequence classifier of the same shape (FirstToken, the GELU pooler, 5 classes) at its initial weights:
      its logits on that batch within 1e-5 of mpx's; the empty sequence's row reads its attention's output
      (zeros in mpx, never NaN), so a rebuild that gives it anything else fails there;
  training, each implementation from the same initial weights on the same batches (torch.optim.AdamW, same
      lr, betas, eps and weight decay): every step's loss within 1e-5 of mpx's, relative, and the weights
      after the last step within 1e-5 of mpx's, norm-wise over the model, but for the keys' bias (see
      without_key_bias).
Nothing parts the two runs but rounding (measured 2026-11-28 with torch 2.15 on one thread: logits 4.7e-7,
gradients 5.9e-7 together and 8.7e-7 at worst, classifier logits 1.1e-6, losses 2.0e-7 at most over the 50
steps, the final weights 7.2e-8; the control 0.94). Each check fails a rebuild or a replay that differs in
one detail (measured): a key-padding mask one key too long (logits 0.37), GatherTokens ignoring the order of
the rows (1.3), the exact GELU for the tanh one (logits 2.9e-4), an empty sequence attending to every key
(classifier 0.32), FirstToken reading token 1 (0.78), torch's lr 1% higher (losses 1.2e-3), no weight decay
on biases and LayerNorms in torch (losses 5.1e-5, weights 2.0e-4).

usage: encoder_parity.py <encoder_parity_tool> <scratch directory> <rebuild_in_torch.py>
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

STEPS = 50
OUTPUT_TOLERANCE = 1e-5  # the logits at the initial weights, max-wise
GRADIENT_TOLERANCE = 1e-4  # each parameter's gradient at the initial weights, norm-wise
ALL_GRADIENTS_TOLERANCE = 1e-5  # all the gradients together, norm-wise
CONTROL_MINIMUM = 1e-2  # the logits without the padding mask must differ from mpx's by more than this
LOSS_TOLERANCE = 1e-5  # every training step's loss, relative
WEIGHTS_TOLERANCE = 1e-5  # the weights after the last step, norm-wise over the model


def rebuild_builders(path):
    """examples/rebuild_in_torch.py's `build`: a torch module from one entry of mpx's model description."""
    spec = importlib.util.spec_from_file_location("rebuild_in_torch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build


def rebuilt_model(build, weights):
    """The encoder the weights file describes ("PaddedSequences": forward(ids, lengths, rows)), with its weights."""
    with safe_open(weights, "pt") as f:
        model = build(json.loads(f.metadata()["model"]))
    model.load_state_dict(load_file(weights), strict=True)  # raises on a missing or an unexpected name
    return model


def batch_of(record):
    """ids [N, T], lengths [N], rows [M], targets [M] and token types [N, T] of one batch of run.json."""
    lengths = torch.tensor(record["lengths"], dtype=torch.long)
    ids = torch.tensor(record["ids"], dtype=torch.long).view(len(lengths), -1)
    types = torch.tensor(record["token_types"], dtype=torch.long).view(ids.shape)
    return ids, lengths, torch.tensor(record["rows"], dtype=torch.long), torch.tensor(record["targets"]), types


def norm_wise(mpx, ours, names):
    """||mpx - torch|| / ||torch|| over the tensors `names` of both dictionaries."""
    difference = torch.cat([(mpx[name] - ours[name]).flatten() for name in names]).norm()
    return (difference / torch.cat([ours[name].flatten() for name in names]).norm()).item()


def without_key_bias(weights):
    """The weights but the keys' third of each qkv.bias. It adds q.b to every score of a query's row, which the
    softmax removes: its gradient is zero but for rounding on either side, which AdamW's normalised steps turn
    into full-size updates in unrelated directions (measured: 0.26 apart, norm-wise, after 50 steps), harmless
    since the key bias never changes an output."""
    return {name: torch.cat([w[: len(w) // 3], w[2 * len(w) // 3:]]) if name.endswith("qkv.bias") else w
            for name, w in weights.items()}


def check_probe(build, weights, gradients, probe, failures):
    model = rebuilt_model(build, weights)
    ids, lengths, rows, targets, types = batch_of(probe)
    output = model(ids, lengths, rows, types)
    error = ((gradients["output"] - output).abs().max() / output.abs().max()).item()
    print(f"logits at the initial weights: max |mpx - torch| / max |torch| {error:.2e} "
          f"(tolerance {OUTPUT_TOLERANCE:g})")
    if not error <= OUTPUT_TOLERANCE:  # NaN fails too
        failures.append(f"the logits at the initial weights: {error:.2e} > {OUTPUT_TOLERANCE:g}")
    with torch.no_grad():
        unmasked = model(ids, torch.full_like(lengths, ids.shape[1]), rows, types)
    control = ((gradients["output"] - unmasked).abs().max() / unmasked.abs().max()).item()
    print(f"control, every key attended: {control:.2e} (must exceed {CONTROL_MINIMUM:g})")
    if not control > CONTROL_MINIMUM:
        failures.append(f"the control: logits without the padding mask differ by {control:.2e} only")
    torch.nn.functional.cross_entropy(output, targets).backward()
    ours = {name: p.grad for name, p in model.named_parameters()}
    missing = sorted(set(ours) ^ (set(gradients) - {"output"}))
    if missing:
        failures.append(f"gradients on one side only: {missing}")
    worst = (0.0, "")
    for name in sorted(set(ours) & set(gradients)):
        relative = norm_wise(gradients, ours, [name])
        worst = max(worst, (relative, name))
        if not relative <= GRADIENT_TOLERANCE:
            failures.append(f"gradient of {name}: ||mpx - torch|| / ||torch|| = {relative:.2e} > "
                            f"{GRADIENT_TOLERANCE:g}")
    together = norm_wise(gradients, ours, sorted(set(ours) & set(gradients)))
    print(f"gradients at the initial weights: all together {together:.2e} (tolerance {ALL_GRADIENTS_TOLERANCE:g}), "
          f"the worst parameter {worst[0]:.2e} ({worst[1]}; tolerance {GRADIENT_TOLERANCE:g})")
    if not together <= ALL_GRADIENTS_TOLERANCE:
        failures.append(f"the gradients together: {together:.2e} > {ALL_GRADIENTS_TOLERANCE:g}")


def check_classifier(build, scratch, probe, failures):
    model = rebuilt_model(build, os.path.join(scratch, "classifier.safetensors"))
    ids, lengths, _, _, types = batch_of(probe)
    with torch.no_grad():
        logits = model(ids, lengths, token_types=types)
    mpx_logits = load_file(os.path.join(scratch, "classifier_logits.safetensors"))["logits"]
    error = ((mpx_logits - logits).abs().max() / logits.abs().max()).item()
    print(f"classifier logits at its initial weights: max |mpx - torch| / max |torch| {error:.2e} "
          f"(tolerance {OUTPUT_TOLERANCE:g})")
    if not error <= OUTPUT_TOLERANCE:
        failures.append(f"the classifier's logits: {error:.2e} > {OUTPUT_TOLERANCE:g}")


def train(build, run, weights, final, failures):
    """Trains the rebuilt model from mpx's initial weights on mpx's batches and compares each step."""
    model = rebuilt_model(build, weights)
    optimizer = torch.optim.AdamW(model.parameters(), lr=run["lr"], betas=tuple(run["betas"]), eps=run["eps"],
                                  weight_decay=run["weight_decay"])
    worst = (0.0, 0)
    for step, record in enumerate(run["steps"]):
        ids, lengths, rows, targets, types = batch_of(record)
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(ids, lengths, rows, types), targets)
        loss.backward()
        optimizer.step()
        relative = abs(record["loss"] - loss.item()) / abs(loss.item())
        worst = max(worst, (relative, step + 1))
        marker = ""
        if not relative <= LOSS_TOLERANCE:
            marker = f"  <-- beyond {LOSS_TOLERANCE:g}"
            failures.append(f"step {step + 1}: loss mpx {record['loss']:.9g}, torch {loss.item():.9g}, relative "
                            f"difference {relative:.2e} > {LOSS_TOLERANCE:g}")
        print(f"step {step + 1:3d}  T {ids.shape[1]:2d}  lengths {min(lengths):2d}..{max(lengths):2d}  "
              f"mpx {record['loss']:.9f}  torch {loss.item():.9f}  relative {relative:.2e}{marker}")
    print(f"{len(run['steps'])} steps, largest relative loss difference {worst[0]:.2e} at step {worst[1]} "
          f"(tolerance {LOSS_TOLERANCE:g})")
    mpx_weights = load_file(final)
    ours = {name: p.detach() for name, p in model.named_parameters()}
    if sorted(mpx_weights) != sorted(ours):
        failures.append(f"weights after the last step: names differ: {sorted(set(mpx_weights) ^ set(ours))}")
        return
    relative = norm_wise(without_key_bias(mpx_weights), without_key_bias(ours), sorted(ours))
    print(f"weights after step {len(run['steps'])}, the key biases aside: ||mpx - torch|| / ||torch|| {relative:.2e} "
          f"(tolerance {WEIGHTS_TOLERANCE:g})")
    if not relative <= WEIGHTS_TOLERANCE:
        failures.append(f"weights after the last step: {relative:.2e} > {WEIGHTS_TOLERANCE:g}")


def main():
    tool, scratch, rebuild = sys.argv[1], sys.argv[2], sys.argv[3]
    subprocess.run([tool, scratch, str(STEPS)], check=True)
    with open(os.path.join(scratch, "run.json")) as f:
        run = json.load(f)
    torch.set_num_threads(1)  # a tiny model: 50 steps take 0.3 s on one thread, 2 to 5 s on two of a busy 2-core box
    build = rebuild_builders(rebuild)
    weights = os.path.join(scratch, "initial.safetensors")
    failures = []
    check_probe(build, weights, load_file(os.path.join(scratch, "gradients.safetensors")), run["probe"], failures)
    check_classifier(build, scratch, run["probe"], failures)
    train(build, run, weights, os.path.join(scratch, "final.safetensors"), failures)
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
