"""The attention softmax of a half-precision training step: scale, mask and softmax computed in
float32 with the gradient written out, each direction one XLA-fused pass over the [B, N, T, T]
logits (as activations.gelu_in_float32 does for the GELU)."""

import tensorflow as tf


# reduce_retracing: one trace for every [B, N, T, T] (XLA compiles each new shape once).
@tf.function(jit_compile=True, reduce_retracing=True)
def _probabilities(logits, mask_adder, scale):
  x = tf.cast(logits, tf.float32) * scale + tf.cast(mask_adder, tf.float32)
  return tf.nn.softmax(x, axis=-1)


@tf.function(jit_compile=True, reduce_retracing=True)
def _forward(logits, mask_adder, scale):
  return tf.cast(_probabilities(logits, mask_adder, scale), logits.dtype)


@tf.function(jit_compile=True, reduce_retracing=True)
def _backward(logits, mask_adder, dy, scale):
  # The probabilities recomputed in float32 (one fused pass), so the forward keeps only logits.
  p = _probabilities(logits, mask_adder, scale)
  dy32 = tf.cast(dy, tf.float32)
  dx = p * (dy32 - tf.reduce_sum(dy32 * p, axis=-1, keepdims=True))
  return tf.cast(dx * scale, logits.dtype)


def scaled_masked_softmax_in_float32(logits: tf.Tensor, mask_adder: tf.Tensor,
                                     scale: float) -> tf.Tensor:
  """softmax(logits * scale + mask_adder) over the last axis, in float32, returned in logits'
  dtype; its gradient with respect to logits written out (none for the mask).

  Args:
    logits: bfloat16 or float16 [B, N, T, T].
    mask_adder: the additive mask, broadcastable to logits (layers.common.attention_mask_adder).
    scale: float, 1 / sqrt(head size).

  Returns:
    Probabilities [B, N, T, T] in logits' dtype.
  """

  @tf.custom_gradient
  def softmax(logits, mask_adder):
    def gradient(dy):
      return _backward(logits, mask_adder, dy, scale), None
    return _forward(logits, mask_adder, scale), gradient

  return softmax(logits, tf.cast(mask_adder, logits.dtype))
