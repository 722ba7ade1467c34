"""Multi-head self-attention with the original's variables and arithmetic."""

import math

import keras
import tensorflow as tf

from albert_tf.layers.common import Dense
from albert_tf.layers.softmax import scaled_masked_softmax_in_float32


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertAttention(keras.layers.Layer):
  """Self-attention: query/key/value projections, scaled dot product, masked softmax, output dense.

  Variables as the original's `attention_1/self/{query,key,value}` and `attention_1/output/dense`
  (each a kernel [H, H] and bias [H]).

  Args:
    hidden_size: int. H, the width of the input and output.
    num_attention_heads: int. N; H must be a multiple of N (head size H / N).
    initializer_range: float. Standard deviation of the kernels' truncated-normal initializer.
    attention_dropout_rate: float. Dropout on the attention probabilities (training only).
    **kwargs: passed to `keras.layers.Layer`.

  Call arguments:
    x: float tensor [B, T, H].
    mask_adder: float tensor [B, 1, 1, T], added to the attention logits (see
      `attention_mask_adder`).
    training: bool. Applies dropout when True.

  Returns:
    Float tensor [B, T, H]: after the output projection, before the residual.
  """

  def __init__(self, hidden_size: int, num_attention_heads: int, initializer_range: float = 0.02,
               attention_dropout_rate: float = 0.0, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.num_attention_heads = num_attention_heads
    self.head_size = hidden_size // num_attention_heads
    self.initializer_range = initializer_range
    self.attention_dropout_rate = attention_dropout_rate
    dense = lambda name: Dense(hidden_size, initializer_range=initializer_range, name=name)
    self.query = dense("query")
    self.key = dense("key")
    self.value = dense("value")
    self.output_dense = dense("output_dense")
    self.dropout = keras.layers.Dropout(attention_dropout_rate)

  def build(self, input_shape=None):
    for layer in (self.query, self.key, self.value, self.output_dense):
      layer.build((None, None, self.hidden_size))
    self.built = True

  def compute_output_shape(self, input_shape):
    return tuple(input_shape)[:-1] + (self.hidden_size,)

  def original_variables(self, prefix: str) -> dict:
    """{original name: variable} under `prefix` (a block's `.../attention_1`)."""
    names = {}
    for part in ("query", "key", "value"):
      names.update(getattr(self, part).original_variables(f"{prefix}/self/{part}"))
    names.update(self.output_dense.original_variables(f"{prefix}/output/dense"))
    return names

  def call(self, x, mask_adder, training=False):
    # The projections run on [B*T, H] (one MatMul + BiasAdd each, see Dense), and the heads are
    # split with one reshape of the batch's own [B, T, N, D]: the same products as per-[B, T]
    # dense layers, with a handful of shape ops per layer instead of dozens (a short request's
    # fixed cost).
    shape = tf.shape(x)  # [B, T, H]
    flat = tf.reshape(x, [-1, self.hidden_size])  # [B*T, H]
    heads = tf.concat([shape[:2], [self.num_attention_heads, self.head_size]], 0)
    split = lambda t: tf.transpose(tf.reshape(t, heads), [0, 2, 1, 3])  # [B, N, T, D]
    q, k, v = split(self.query(flat)), split(self.key(flat)), split(self.value(flat))
    logits = tf.matmul(q, k, transpose_b=True)
    scale = 1.0 / math.sqrt(float(self.head_size))
    if training and logits.dtype in (tf.bfloat16, tf.float16):
      probs = scaled_masked_softmax_in_float32(logits, mask_adder, scale)
    else:
      logits = logits * scale
      logits += tf.cast(mask_adder, logits.dtype)
      # Softmax in float32 so that half-precision policies stay stable.
      probs = tf.cast(tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1), v.dtype)
    probs = self.dropout(probs, training=training)
    context = tf.matmul(probs, v)  # [B, N, T, D]
    context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, self.hidden_size])
    return tf.reshape(self.output_dense(context), shape)

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                  initializer_range=self.initializer_range,
                  attention_dropout_rate=self.attention_dropout_rate)
    return config
