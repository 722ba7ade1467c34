"""Output heads: pooler, masked-LM head (tied to the word embeddings), pooled-vector logits."""

import keras
import tensorflow as tf

from albert_tf.layers.common import (Dense, join_name, layer_norm, layer_norm_variables,
                                     truncated_normal)


@keras.saving.register_keras_serializable(package="albert_tf")
class Pooler(keras.layers.Layer):
  """tanh(dense(first token)), the original's `pooler/dense` (kernel [H, H], bias [H]).

  Args:
    hidden_size: int. H.
    initializer_range: float. Standard deviation of the kernel's truncated-normal initializer.
    **kwargs: passed to `keras.layers.Layer`.

  Call arguments:
    sequence_output: float tensor [B, T, H].
    first_positions: optional int tensor [B, K]: pool the tokens at these positions instead of
      the first (the first token of each sequence of a packed row).

  Returns:
    Float tensor [B, H]; [B, K, H] with first_positions.
  """

  def __init__(self, hidden_size: int, initializer_range: float = 0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.initializer_range = initializer_range
    self.dense = Dense(hidden_size, activation="tanh", initializer_range=initializer_range,
                       name="dense")

  def build(self, input_shape=None):
    self.dense.build((None, self.hidden_size))
    self.built = True

  def call(self, sequence_output, first_positions=None):
    if first_positions is None:
      return self.dense(sequence_output[:, 0])
    return self.dense(tf.gather(sequence_output, first_positions, batch_dims=1))

  def compute_output_shape(self, input_shape):
    return (tuple(input_shape)[0], self.hidden_size)

  def original_variables(self, prefix: str) -> dict:
    """{original name: variable} under `prefix` (the original's `bert/pooler`)."""
    return self.dense.original_variables(f"{prefix}/dense")

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
    return config


@keras.saving.register_keras_serializable(package="albert_tf")
class MaskedLMHead(keras.layers.Layer):
  """The original's `cls/predictions`: transform (dense to E, activation, LayerNorm), then logits
  against the word-embedding table plus an output bias.

  Variables: transform/dense kernel [H, E] and bias [E], transform/LayerNorm gamma and beta [E],
  output_bias [V]. The output matrix is the encoder's word-embedding table, passed to each call.

  Args:
    hidden_size: int. H.
    embedding_size: int. E.
    vocab_size: int. V.
    hidden_act: str. The transform's activation ("gelu", "relu", "tanh" or "linear").
    initializer_range: float. Standard deviation of the kernel's truncated-normal initializer.
    **kwargs: passed to `keras.layers.Layer`.

  Call arguments:
    sequence_output: float tensor [B, T, H].
    positions: int tensor [B, P], the positions to predict.
    embedding_table: float [V, E], the word-embedding table (`AlbertModel.embedding_table`).

  Returns:
    Float tensor [B, P, V]: the logits at `positions`.
  """

  def __init__(self, hidden_size: int, embedding_size: int, vocab_size: int,
               hidden_act: str = "gelu", initializer_range: float = 0.02, **kwargs):
    super().__init__(**kwargs)
    self.hidden_size = hidden_size
    self.embedding_size = embedding_size
    self.vocab_size = vocab_size
    self.hidden_act = hidden_act
    self.initializer_range = initializer_range
    self.transform = Dense(embedding_size, activation=hidden_act,
                           initializer_range=initializer_range, name="transform_dense")
    self.transform_layer_norm = layer_norm("transform_LayerNorm")

  def build(self, sequence_output_shape=None, positions_shape=None, embedding_table_shape=None):
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

  def compute_output_shape(self, sequence_output_shape, positions_shape,
                           embedding_table_shape=None):
    return tuple(positions_shape) + (self.vocab_size,)

  def original_variables(self, prefix: str) -> dict:
    """{original name: variable} under `prefix` (the original's `cls/predictions`)."""
    names = self.transform.original_variables(f"{prefix}/transform/dense")
    names.update(layer_norm_variables(f"{prefix}/transform/LayerNorm", self.transform_layer_norm))
    names[f"{prefix}/output_bias"] = self.output_bias
    return names

  def get_config(self):
    config = super().get_config()
    config.update(hidden_size=self.hidden_size, embedding_size=self.embedding_size,
                  vocab_size=self.vocab_size, hidden_act=self.hidden_act,
                  initializer_range=self.initializer_range)
    return config


@keras.saving.register_keras_serializable(package="albert_tf")
class PooledLogits(keras.layers.Layer):
  """logits = x @ output_weights^T + output_bias, with output_weights [num_classes, H].

  The layout of the original's sentence-order head (`cls/seq_relationship`), of its classifier
  (top-level `output_weights`, `output_bias`) and of its SQuAD v1 head (`cls/squad`).

  Args:
    num_classes: int. C, the number of logits.
    hidden_size: int. H.
    initializer_range: float. Standard deviation of output_weights' truncated-normal initializer.
    **kwargs: passed to `keras.layers.Layer`.

  Call arguments:
    x: float tensor [B, H].

  Returns:
    Float tensor [B, C].
  """

  def __init__(self, num_classes: int, hidden_size: int, initializer_range: float = 0.02,
               **kwargs):
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

  def compute_output_shape(self, input_shape):
    return tuple(input_shape)[:-1] + (self.num_classes,)

  def original_variables(self, prefix: str = "") -> dict:
    """`{prefix/output_weights: ..., prefix/output_bias: ...}`; the bare names for an empty
    prefix (the original classifier's)."""
    return {join_name(prefix, "output_weights"): self.output_weights,
            join_name(prefix, "output_bias"): self.output_bias}

  def get_config(self):
    config = super().get_config()
    config.update(num_classes=self.num_classes, hidden_size=self.hidden_size,
                  initializer_range=self.initializer_range)
    return config
