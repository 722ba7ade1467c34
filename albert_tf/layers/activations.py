"""Activations as the original computes them (one place for the GELU arithmetic)."""

import math
from collections.abc import Callable

import tensorflow as tf

from albert_tf.core import errors

def gelu(x: tf.Tensor) -> tf.Tensor:
  """GELU, tanh approximation, as the original: x * 0.5 * (1 + tanh(c * (x + 0.044715 x^3))),
  c = sqrt(2 / pi).

  Written as TensorFlow's own tanh-approximation GELU (the same formula, its products in another
  order): that subgraph is the one grappler's remapper fuses with the Dense's MatMul and BiasAdd
  into one oneDNN kernel, where the original's spelling runs as a dozen elementwise ops over the
  [B*T, I] intermediate: under mixed_bfloat16 on a CPU those ops dominated the forward pass
  (figures: docs/speed.md).

  Args:
    x: float tensor of any shape.

  Returns:
    Float tensor of x's shape and dtype.
  """
  return tf.nn.gelu(x, approximate=True)


# tanh-approximation GELU constants: sqrt(2 / pi) and the cubic term's coefficient.
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_CUBIC = 0.044715


# XLA fuses each of these into one pass over the tensor: on a CPU, where an elementwise op over
# [B*T, I] is bound by memory bandwidth, a dozen separate ops cost a dozen passes. Both recompute
# tanh from x, so the backward pass keeps only x. reduce_retracing: one trace for every [B*T, I]
# (XLA compiles each new shape once).
@tf.function(jit_compile=True, reduce_retracing=True)
def _gelu_float32_forward(x):
  x32 = tf.cast(x, tf.float32)
  t = tf.tanh(x32 * (_SQRT_2_OVER_PI + (_SQRT_2_OVER_PI * _CUBIC) * (x32 * x32)))
  return tf.cast(0.5 * x32 * (1.0 + t), x.dtype)


@tf.function(jit_compile=True, reduce_retracing=True)
def _gelu_float32_backward(x, dy):
  x32 = tf.cast(x, tf.float32)
  x_squared = x32 * x32
  t = tf.tanh(x32 * (_SQRT_2_OVER_PI + (_SQRT_2_OVER_PI * _CUBIC) * x_squared))
  # d/dx 0.5 x (1 + t) = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
  slope = 0.5 * (1.0 + t) + 0.5 * x32 * (1.0 - t * t) * (
      _SQRT_2_OVER_PI + (3.0 * _SQRT_2_OVER_PI * _CUBIC) * x_squared)
  return tf.cast(tf.cast(dy, tf.float32) * slope, x.dtype)


@tf.custom_gradient
def gelu_in_float32(x: tf.Tensor):
  """The same GELU for a half-precision training step: computed in float32, with its derivative
  written out and computed there too, each direction one XLA-fused pass over x.

  Why: TensorFlow's CPU kernels run bfloat16 elementwise ops slower than float32 ones (each
  element is widened and rounded back per op), and the GELU's autodiff gradient is a dozen such
  ops over [B*T, I] per layer, each a pass through memory: under mixed_bfloat16 a large share of
  the training step (figures: docs/speed.md). One pass each way is faster, its gradient closer
  to float64's (one rounding instead of one per op), and only x is kept for the backward pass.
  Inference keeps tf.nn.gelu, which grappler fuses into the MatMul; float32 keeps it too (the
  original's arithmetic).

  Args:
    x: bfloat16 or float16 tensor of any shape.

  Returns:
    GELU(x) in x's dtype, and its gradient function.
  """
  return _gelu_float32_forward(x), lambda dy: _gelu_float32_backward(x, dy)


def activate(activation: Callable, x: tf.Tensor, training: bool = False) -> tf.Tensor:
  """activation(x), where the GELU in a half-precision training step is gelu_in_float32.

  Args:
    activation: a function get_activation returned.
    x: float tensor.
    training: whether the call is a training step's.
  """
  if activation is gelu and training and x.dtype in (tf.bfloat16, tf.float16):
    return gelu_in_float32(x)
  return activation(x)


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
