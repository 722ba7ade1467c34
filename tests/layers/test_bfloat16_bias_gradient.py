"""A Dense's bias gradient in a bfloat16 training step (layers.common.bias_add_bfloat16) is the
upstream gradient summed over the rows in float32 and rounded once, where TensorFlow's CPU
BiasAddGrad summed in bfloat16 (off by a median 2.8% over 1,024 rows)."""

import numpy as np
import tensorflow as tf

from albert_tf.layers.common import Dense
from albert_tf.training.precision import policy_scope

ROWS, UNITS = 4096, 64


def _bias_gradient(training):
  with policy_scope("mixed_bfloat16"):
    dense = Dense(UNITS, name="dense")
    dense.build((None, 8))
  rng = np.random.default_rng(0)
  x = tf.constant(rng.normal(size=(ROWS, 8)), tf.bfloat16)
  # Unit normals upstream: the bias gradient is their column sums, |sum| ~ sqrt(ROWS) = 64.
  upstream = tf.constant(rng.normal(size=(ROWS, UNITS)), tf.bfloat16)
  with tf.GradientTape() as tape:
    y = dense(x, training=training)
    loss = tf.reduce_sum(tf.cast(y * upstream, tf.float32))
  gradient = tape.gradient(loss, dense.bias)
  expected = upstream.numpy().astype(np.float64).sum(axis=0)
  return gradient.numpy(), expected


def test_training_sums_the_bias_gradient_in_float32():
  gradient, expected = _bias_gradient(training=True)
  assert gradient.dtype == np.float32  # the float32 variable's gradient
  # One bfloat16 rounding of each sum (8 significant bits): within 2^-8 of it. A sum in
  # bfloat16 drifts by far more (over 4,096 rows, a median of several percent).
  np.testing.assert_allclose(gradient, expected, rtol=2.0 ** -8, atol=1e-6)
