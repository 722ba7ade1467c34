"""ALBERT's factorized embeddings: word + token type + position, then LayerNorm and dropout."""

import keras
import tensorflow as tf

from albert_tf.layers.common import layer_norm, truncated_normal


class AlbertEmbeddings(keras.layers.Layer):
  """Sums word, token-type and position embeddings of width `embedding_size` (E).

  Call with `input_ids` and `segment_ids`, int [B, T], T <= max_position_embeddings;
  returns float [B, T, E]. The word table [vocab_size, E] is also the MLM output matrix.
  """

  def __init__(self, vocab_size, embedding_size, type_vocab_size, max_position_embeddings,
               initializer_range=0.02, dropout_rate=0.0, **kwargs):
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

  def call(self, input_ids, segment_ids, training=False):
    seq_length = input_ids.shape[1]
    if seq_length is not None and seq_length > self.max_position_embeddings:
      raise ValueError(
          f"sequence length {seq_length} exceeds max_position_embeddings "
          f"({self.max_position_embeddings}) of this model")
    dynamic_length = tf.shape(input_ids)[1]
    check = tf.debugging.assert_less_equal(
        dynamic_length, self.max_position_embeddings,
        message="sequence length exceeds max_position_embeddings")
    with tf.control_dependencies([check]):
      positions = self.position_embeddings[:dynamic_length]
    output = tf.gather(self.word_embeddings, input_ids)
    output += tf.gather(self.token_type_embeddings, segment_ids)
    output += positions[tf.newaxis]
    output = self.layer_norm(output)
    return self.dropout(output, training=training)

  def get_config(self):
    config = super().get_config()
    config.update(vocab_size=self.vocab_size, embedding_size=self.embedding_size,
                  type_vocab_size=self.type_vocab_size,
                  max_position_embeddings=self.max_position_embeddings,
                  initializer_range=self.initializer_range, dropout_rate=self.dropout_rate)
    return config
