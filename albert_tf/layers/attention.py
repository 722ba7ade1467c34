"""Multi-head self-attention with the original's variables and arithmetic."""

import math

import keras
import tensorflow as tf

from albert_tf.layers.common import Dense


class AlbertAttention(keras.layers.Layer):
  """Self-attention: query/key/value projections, scaled dot product, masked softmax, output dense.

  Call with `x` float [B, T, H] and `mask_adder` float [B, 1, 1, T] (see
  `common.attention_mask_adder`); returns float [B, T, H] (after the output projection, before the
  residual). Variables as the original's attention_1/{self/{query,key,value},output/dense}.
  """

  def __init__(self, hidden_size, num_attention_heads, initializer_range=0.02,
               attention_dropout_rate=0.0, **kwargs):
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

  def _split_heads(self, x, batch, length):
    x = tf.reshape(x, [batch, length, self.num_attention_heads, self.head_size])
    return tf.transpose(x, [0, 2, 1, 3])  # [B, N, T, D]

  def call(self, x, mask_adder, training=False):
    shape = tf.shape(x)
    batch, length = shape[0], shape[1]
    q = self._split_heads(self.query(x), batch, length)
    k = self._split_heads(self.key(x), batch, length)
    v = self._split_heads(self.value(x), batch, length)
    logits = tf.matmul(q, k, transpose_b=True)
    logits = logits * (1.0 / math.sqrt(float(self.head_size)))
    logits += tf.cast(mask_adder, logits.dtype)
    # Softmax in float32 so that half-precision policies stay stable.
    probs = tf.cast(tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1), v.dtype)
    probs = self.dropout(probs, training=training)
    context = tf.matmul(probs, v)  # [B, N, T, D]
    context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [batch, length, self.hidden_size])
    return self.output_dense(context)

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                  initializer_range=self.initializer_range,
                  attention_dropout_rate=self.attention_dropout_rate)
    return config
