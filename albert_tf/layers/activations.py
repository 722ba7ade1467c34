"""Activations as the original computes them (one place for the GELU arithmetic)."""

import math
from collections.abc import Callable

import tensorflow as tf

from albert_tf.core import errors

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu(x: tf.Tensor) -> tf.Tensor:
  """GELU, tanh approximation, as the original: x * 0.5 * (1 + tanh(c * (x + 0.044715 x^3))).

  Args:
    x: float tensor of any shape.

  Returns:
    Float tensor of x's shape and dtype.
  """
  cdf = 0.5 * (1.0 + tf.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * tf.pow(x, 3))))
  return x * cdf


def get_activation(name: str | Callable | None) -> Callable | None:
  """Maps a config's `hidden_act` to a function.

  Args:
    name: "gelu", "relu", "tanh" or "linear" (any case), None or "" (no activation), or a
      function (returned as it is).

  Returns:
    The function, or None for "linear", None or "".

  Raises:
    ValueError: for any other name.
  """
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
  raise errors.ConfigError(
      f"Unsupported activation: {name!r} (hidden_act must be one of gelu, relu, "
      "tanh, linear)")
