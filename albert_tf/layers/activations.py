"""Activations as the original computes them (one place for the GELU arithmetic)."""

import math

import tensorflow as tf

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x):
  """GELU, tanh approximation, as the original: x * 0.5 * (1 + tanh(c * (x + 0.044715 x^3)))."""
  cdf = 0.5 * (1.0 + tf.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * tf.pow(x, 3))))
  return x * cdf


def get_activation(name):
  """Maps a config's `hidden_act` to a function; None for "linear" or empty."""
  if callable(name):
    return name
  if not name:
    return None
  act = name.lower()
  if act == "linear":
    return None
  if act == "gelu":
    return gelu
  if act == "relu":
    return tf.nn.relu
  if act == "tanh":
    return tf.tanh
  raise ValueError(f"Unsupported activation: {name!r}")
