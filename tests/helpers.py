"""Shared test helpers: fixture paths and an independent TF1-checkpoint writer."""

import os
import subprocess
import sys

import numpy as np
import tensorflow as tf

TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
ORIGINAL_MODEL = os.path.join(TESTDATA, "original_model")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_tf1_checkpoint(prefix, tensors):
  """Writes {name: array} as a name-based TF1 checkpoint with the raw SaveV2 op (no albert_tf)."""
  names = sorted(tensors)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                    tensors=[tf.constant(np.asarray(tensors[n])) for n in names])
  return prefix


def read_tf1_checkpoint(prefix):
  reader = tf.train.load_checkpoint(prefix)
  return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


def reference_batch():
  return dict(np.load(os.path.join(ORIGINAL_MODEL, "reference.npz")))


def run_binary(module, flags, check=True, env=None, timeout=600):
  """Runs `python -m albert_tf.<module> <flags>` from the repository root; with check, asserts
  it succeeded (showing the end of its stderr)."""
  result = subprocess.run([sys.executable, "-m", f"albert_tf.{module}"] + list(flags),
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
  if check:
    assert result.returncode == 0, result.stderr[-3000:]
  return result
