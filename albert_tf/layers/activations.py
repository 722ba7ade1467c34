"""Activations as the original computes them (one place for the GELU arithmetic)."""

from collections.abc import Callable

import tensorflow as tf

from albert_tf.core import errors

def gelu(x: tf.Tensor) -> tf.Tensor:
  """GELU, tanh approximation, as the original: x * 0.5 * (1 + tanh(c * (x + 0.044715 x^3))),
  c = sqrt(2 / pi).

  Written as TensorFlow's own tanh-approximation GELU (the same formula, its products in another
  order): that subgraph is the one grappler's remapper fuses with the Dense's MatMul and BiasAdd
  into one oneDNN kernel, where the original's spelling runs as a dozen elementwise ops over the
  [B*T, I] intermediate. Under mixed_bfloat16 on a CPU those ops dominated the forward pass
  (ALBERT-base, batch 8 x 128, Xeon with AMX: 0.43 s -> 0.31 s a forward; issue 38).

  Args:
    x: float tensor of any shape.

  Returns:
    Float tensor of x's shape and dtype.
  """
  return tf.nn.gelu(x, approximate=True)


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
