"""Output heads: pooler, masked-LM head (tied to the word embeddings), pooled-vector logits."""

import keras
import tensorflow as tf

from albert_tf.layers.common import Dense, layer_norm, truncated_normal


class Pooler(keras.layers.Layer):
  """tanh(dense(first token)): [B, T, H] -> [B, H]. Variables as the original's pooler/dense."""

  def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.initializer_range = initializer_range
    self.dense = Dense(hidden_size, activation="tanh", initializer_range=initializer_range,
                       name="dense")

  def build(self, input_shape=None):
    self.dense.build((None, self.hidden_size))
    self.built = True

  def call(self, sequence_output):
    return self.dense(sequence_output[:, 0])

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
    return config


class MaskedLMHead(keras.layers.Layer):
  """The original's cls/predictions: transform (dense to E, activation, LayerNorm), then logits
  against the word-embedding table plus an output bias.

  Call with `sequence_output` [B, T, H], `positions` int [B, P] and the embedding table [V, E];
  returns logits [B, P, V].
  """

  def __init__(self, hidden_size, embedding_size, vocab_size, hidden_act="gelu",
               initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.embedding_size = embedding_size
    self.vocab_size = vocab_size
    self.hidden_act = hidden_act
    self.initializer_range = initializer_range
    self.transform = Dense(embedding_size, activation=hidden_act,
                           initializer_range=initializer_range, name="transform_dense")
    self.transform_layer_norm = layer_norm("transform_LayerNorm")

  def build(self, input_shape=None):
    self.transform.build((None, None, self.hidden_size))
    self.transform_layer_norm.build((None, None, self.embedding_size))
    self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,),
                                       initializer="zeros")
    self.built = True

  def call(self, sequence_output, positions, embedding_table):
    x = tf.gather(sequence_output, positions, batch_dims=1)  # [B, P, H]
    x = self.transform_layer_norm(self.transform(x))
    logits = tf.matmul(x, tf.cast(embedding_table, x.dtype), transpose_b=True)
    return logits + self.output_bias

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, embedding_size=self.embedding_size,
                  vocab_size=self.vocab_size, hidden_act=self.hidden_act,
                  initializer_range=self.initializer_range)
    return config


class PooledLogits(keras.layers.Layer):
  """logits = x @ output_weights^T + output_bias, with output_weights [num_classes, H].

  The layout of the original's sentence-order head (cls/seq_relationship) and of its classifier
  (output_weights, output_bias). [B, H] -> [B, num_classes].
  """

  def __init__(self, num_classes, hidden_size, initializer_range=0.02, **kwargs):
    super().__init__(**kwargs)
    self.num_classes = num_classes
    self.hidden_size = hidden_size
    self.initializer_range = initializer_range

  def build(self, input_shape=None):
    self.output_weights = self.add_weight(
        name="output_weights", shape=(self.num_classes, self.hidden_size),
        initializer=truncated_normal(self.initializer_range))
    self.output_bias = self.add_weight(name="output_bias", shape=(self.num_classes,),
                                       initializer="zeros")
    self.built = True

  def call(self, x):
    return tf.matmul(x, self.output_weights, transpose_b=True) + self.output_bias

  def get_config(self):
    config = super().get_config()
    config.update(num_classes=self.num_classes, hidden_size=self.hidden_size,
                  initializer_range=self.initializer_range)
    return config
