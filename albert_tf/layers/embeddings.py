"""ALBERT's factorized embeddings: word + token type + position, then LayerNorm and dropout."""

import keras
import tensorflow as tf

from albert_tf.core import errors
from albert_tf.layers.common import layer_norm, layer_norm_variables, truncated_normal


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertEmbeddings(keras.layers.Layer):
  """Sums word, token-type and position embeddings of width `embedding_size` (E), then applies
  LayerNorm and dropout.

  Variables as the original's `embeddings/`: word_embeddings [vocab_size, E] (also the MLM output
  matrix), token_type_embeddings [type_vocab_size, E], position_embeddings
  [max_position_embeddings, E], LayerNorm gamma and beta [E].

  Args:
    vocab_size: int. V, the number of token ids.
    embedding_size: int. E, the embedding width.
    type_vocab_size: int. The number of segment ids.
    max_position_embeddings: int. The longest sequence the layer accepts.
    initializer_range: float. Standard deviation of the tables' truncated-normal initializer.
    dropout_rate: float. Dropout on the output (training only).
    **kwargs: passed to `keras.layers.Layer`.

  Call arguments:
    input_ids: int tensor [B, T], T <= max_position_embeddings.
    segment_ids: int tensor [B, T].
    training: bool. Applies dropout when True.
    position_ids: optional int tensor [B, T], each token's position (packed rows restart them
      for each sequence); default 0 .. T - 1 in every row.

  Returns:
    Float tensor [B, T, E].

  Raises:
    ValueError: when T is known when the call is traced and exceeds `max_position_embeddings`.
    tf.errors.InvalidArgumentError: when a dynamic T exceeds it at run time.
  """

  def __init__(self, vocab_size: int, embedding_size: int, type_vocab_size: int,
               max_position_embeddings: int, initializer_range: float = 0.02,
               dropout_rate: float = 0.0, **kwargs):
    super().__init__(**kwargs)
    self.vocab_size = vocab_size
    self.embedding_size = embedding_size
    self.type_vocab_size = type_vocab_size
    self.max_position_embeddings = max_position_embeddings
    self.initializer_range = initializer_range
    self.dropout_rate = dropout_rate
    self.layer_norm = layer_norm("LayerNorm")
    self.dropout = keras.layers.Dropout(dropout_rate)

  def build(self, input_shape=None):
    init = truncated_normal(self.initializer_range)
    self.word_embeddings = self.add_weight(
        name="word_embeddings", shape=(self.vocab_size, self.embedding_size), initializer=init)
    self.token_type_embeddings = self.add_weight(
        name="token_type_embeddings", shape=(self.type_vocab_size, self.embedding_size),
        initializer=init)
    self.position_embeddings = self.add_weight(
        name="position_embeddings", shape=(self.max_position_embeddings, self.embedding_size),
        initializer=init)
    self.layer_norm.build((None, None, self.embedding_size))
    self.built = True

  def _check_length(self, seq_length):
    if seq_length is not None and seq_length > self.max_position_embeddings:
      raise errors.ConfigError(
          f"sequence length {seq_length} exceeds max_position_embeddings "
          f"({self.max_position_embeddings}) of this model")

  def call(self, input_ids, segment_ids, training=False, position_ids=None):
    self._check_length(input_ids.shape[1])
    dynamic_length = tf.shape(input_ids)[1]
    if input_ids.shape[1] is None:
      # Only an unknown length needs checking when it runs; a known one was checked above (and
      # XLA, which drops Assert ops, warns about each one it meets).
      check = tf.debugging.assert_less_equal(
          dynamic_length, self.max_position_embeddings,
          message="sequence length exceeds max_position_embeddings")
      with tf.control_dependencies([check]):
        dynamic_length = tf.identity(dynamic_length)
    output = tf.gather(self.word_embeddings, input_ids)
    output += tf.gather(self.token_type_embeddings, segment_ids)
    if position_ids is None:
      output += self.position_embeddings[:dynamic_length][tf.newaxis]
    else:
      output += tf.gather(self.position_embeddings, position_ids)
    output = self.layer_norm(output)
    return self.dropout(output, training=training)

  def compute_output_shape(self, input_shape):
    input_shape = tuple(input_shape)
    self._check_length(input_shape[1])
    return input_shape + (self.embedding_size,)

  def original_variables(self, prefix: str) -> dict:
    """{original name: variable} under `prefix` (the original's `bert/embeddings`)."""
    names = {
        f"{prefix}/word_embeddings": self.word_embeddings,
        f"{prefix}/token_type_embeddings": self.token_type_embeddings,
        f"{prefix}/position_embeddings": self.position_embeddings,
    }
    names.update(layer_norm_variables(f"{prefix}/LayerNorm", self.layer_norm))
    return names

  def get_config(self):
    config = super().get_config()
    config.update(vocab_size=self.vocab_size, embedding_size=self.embedding_size,
                  type_vocab_size=self.type_vocab_size,
                  max_position_embeddings=self.max_position_embeddings,
                  initializer_range=self.initializer_range, dropout_rate=self.dropout_rate)
    return config
