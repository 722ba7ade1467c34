"""AlbertModel: the ALBERT encoder (the original's `bert/` scope)."""

import tensorflow as tf

from albert_tf.layers import AlbertEmbeddings, Dense, Pooler, SharedTransformer
from albert_tf.layers import attention_mask_adder
from albert_tf.models.base import ConfiguredModel


class AlbertModel(ConfiguredModel):
  """The ALBERT encoder: factorized embeddings, optional E -> H projection, shared transformer,
  pooler.

  Call with a dict: `input_ids` int [B, T]; optional `input_mask` (default all ones) and
  `segment_ids` (default all zeros), int [B, T]. T <= max_position_embeddings. Returns a dict:
    embedding_output [B, T, E], encoder_outputs (list of num_hidden_layers x inner_group_num
    tensors [B, T, H]), sequence_output [B, T, H], pooled_output [B, H].
  Dropout is applied only with training=True.
  """

  def __init__(self, config, **kwargs):
    kwargs.setdefault("name", "albert")
    super().__init__(config, **kwargs)
    c = self.config
    self.embeddings = AlbertEmbeddings(
        c.vocab_size, c.embedding_size, c.type_vocab_size, c.max_position_embeddings,
        c.initializer_range, c.hidden_dropout_prob, name="embeddings")
    # The original has no projection at all (no variables) when E == H.
    self.embedding_projection = (
        Dense(c.hidden_size, initializer_range=c.initializer_range,
              name="embedding_hidden_mapping_in")
        if c.embedding_size != c.hidden_size else None)
    self.transformer = SharedTransformer(
        c.num_hidden_layers, c.num_hidden_groups, c.inner_group_num, c.hidden_size,
        c.num_attention_heads, c.intermediate_size, c.hidden_act, c.initializer_range,
        c.hidden_dropout_prob, c.attention_probs_dropout_prob, name="transformer")
    self.pooler = Pooler(c.hidden_size, c.initializer_range, name="pooler")
    self.build_weights()

  def build_weights(self):
    """Creates every variable now, so that checkpoints load before any call."""
    c = self.config
    self.embeddings.build()
    if self.embedding_projection is not None:
      self.embedding_projection.build((None, None, c.embedding_size))
    self.transformer.build()
    self.pooler.build()
    self.built = True

  def call(self, inputs, training=False):
    input_ids = inputs["input_ids"]
    input_mask = inputs.get("input_mask")
    segment_ids = inputs.get("segment_ids")
    if input_mask is None:
      input_mask = tf.ones_like(input_ids)
    if segment_ids is None:
      segment_ids = tf.zeros_like(input_ids)
    embedding_output = self.embeddings(input_ids, segment_ids, training=training)
    hidden = embedding_output
    if self.embedding_projection is not None:
      hidden = self.embedding_projection(hidden)
    mask_adder = attention_mask_adder(input_mask, hidden.dtype)
    encoder_outputs = self.transformer(hidden, mask_adder, training=training)
    sequence_output = encoder_outputs[-1]
    return {
        "embedding_output": embedding_output,
        "encoder_outputs": encoder_outputs,
        "sequence_output": sequence_output,
        "pooled_output": self.pooler(sequence_output),
    }

  @property
  def embedding_table(self):
    """The word-embedding table [vocab_size, E], shared with the MLM output layer."""
    return self.embeddings.word_embeddings
