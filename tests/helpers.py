"""Shared test helpers: fixture paths and an independent TF1-checkpoint writer."""

import os

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
