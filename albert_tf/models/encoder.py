"""AlbertModel: the ALBERT encoder (the original's `bert/` scope)."""

import keras
import tensorflow as tf

from albert_tf.core.config import AlbertConfig
from albert_tf.layers import AlbertEmbeddings, Dense, Pooler, SharedTransformer
from albert_tf.layers import attention_mask_adder
from albert_tf.layers.common import packed_attention_mask_adder
from albert_tf.models.base import ConfiguredModel, sequence_input_shapes

# The encoder's inputs, each int [B, T]; input_mask and segment_ids may be left out.
ENCODER_INPUTS = ("input_ids", "input_mask", "segment_ids")


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertModel(ConfiguredModel):
  """The ALBERT encoder: factorized embeddings, optional E -> H projection, shared transformer,
  pooler.

  Weights are made in the constructor, named as the original's `bert/...` variables
  (`original_variables()`), so that checkpoints load before any call. `summary()` shows each
  layer's output shape, and a call on `keras.Input`s returns symbolic outputs of the shapes below,
  so functional models can be built on the encoder. Registered with Keras as
  `albert_tf>AlbertModel`: `model.save("m.keras")`, then `keras.models.load_model("m.keras")` in
  any process that has run `import albert_tf` (albert_tf.registry puts a stand-in for each of our
  classes in Keras's registry, which imports the class's module the first time Keras reads one).

  Args:
    config: an `AlbertConfig`, or its dict. E = embedding_size, H = hidden_size; there is no
      projection (and no `embedding_hidden_mapping_in` variables) when E == H, as the original.
    **kwargs: passed to `keras.Model` (name, default "albert").

  Call arguments:
    inputs: a dict: `input_ids` int [B, T], T <= max_position_embeddings; optional
      `input_mask` (1 for real tokens, 0 for padding; default all ones) and `segment_ids`
      (default all zeros), int [B, T]. Packed rows (albert_tf.data.packing) add
      `position_ids` int [B, T] (positions restarting for each sequence), `sequence_ids` int
      [B, T] (k on the k-th sequence, 0 on padding: each token attends to its own sequence
      alone, instead of input_mask's rule) and `sequence_starts` int [B, K] (each sequence's
      first token, the one pooled). Other keys are ignored.
    training: bool. Applies dropout when True.

  Returns:
    A dict: `embedding_output` float [B, T, E]; `encoder_outputs`, a list of
    num_hidden_layers x inner_group_num float tensors [B, T, H] (every block's output);
    `sequence_output` float [B, T, H] (the last of them); `pooled_output` float [B, H]
    ([B, K, H] with `sequence_starts`: one per packed sequence).

  Raises:
    ValueError: when T, known when the call is traced, exceeds max_position_embeddings
      (tf.errors.InvalidArgumentError when a dynamic T does at run time).

  Example:

  >>> import numpy as np
  >>> import albert_tf
  >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
  ...                                 num_hidden_layers=2, num_attention_heads=2,
  ...                                 intermediate_size=32)
  >>> model = albert_tf.AlbertModel(config)
  >>> ids = np.array([[2, 15, 27, 3, 0], [2, 31, 3, 0, 0]], np.int32)
  >>> outputs = model({"input_ids": ids, "input_mask": (ids > 0).astype(np.int32)})
  >>> tuple(outputs["sequence_output"].shape), tuple(outputs["pooled_output"].shape)
  ((2, 5, 16), (2, 16))
  >>> tuple(outputs["embedding_output"].shape), len(outputs["encoder_outputs"])
  ((2, 5, 8), 2)
  >>> sorted(model.original_variables())[:2]
  ['bert/embeddings/LayerNorm/beta', 'bert/embeddings/LayerNorm/gamma']
  """

  def __init__(self, config: AlbertConfig | dict, **kwargs):
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
        c.hidden_dropout_prob, c.attention_probs_dropout_prob, c.parameter_sharing,
        name="transformer")
    self.pooler = Pooler(c.hidden_size, c.initializer_range, name="pooler")
    self.build_weights()

  def build_weights(self):
    """Creates every variable now, so that checkpoints load before any call."""
    c = self.config
    hidden = (None, None, c.hidden_size)
    self.embeddings.build((None, None))
    if self.embedding_projection is not None:
      self.embedding_projection.build((None, None, c.embedding_size))
    self.transformer.build(hidden)
    self.pooler.build(hidden)
    self.build(sequence_input_shapes(ENCODER_INPUTS))

  def call(self, inputs, training=False):
    input_ids = inputs["input_ids"]
    input_mask = inputs.get("input_mask")
    segment_ids = inputs.get("segment_ids")
    if input_mask is None:
      input_mask = tf.ones_like(input_ids)
    if segment_ids is None:
      segment_ids = tf.zeros_like(input_ids)
    embedding_output = self.embeddings(input_ids, segment_ids, training=training,
                                       position_ids=inputs.get("position_ids"))
    hidden = embedding_output
    if self.embedding_projection is not None:
      hidden = self.embedding_projection(hidden)
    if "sequence_ids" in inputs:
      mask_adder = packed_attention_mask_adder(inputs["sequence_ids"], hidden.dtype)
    else:
      mask_adder = attention_mask_adder(input_mask, hidden.dtype)
    encoder_outputs = self.transformer(hidden, mask_adder, training=training)
    sequence_output = encoder_outputs[-1]
    return {
        "embedding_output": embedding_output,
        "encoder_outputs": encoder_outputs,
        "sequence_output": sequence_output,
        "pooled_output": self.pooler(sequence_output, inputs.get("sequence_starts")),
    }

  def compute_output_shape(self, input_shape: dict) -> dict:
    ids = tuple(input_shape["input_ids"])
    hidden = ids + (self.config.hidden_size,)
    return {
        "embedding_output": self.embeddings.compute_output_shape(ids),
        "encoder_outputs": self.transformer.compute_output_shape(hidden),
        "sequence_output": hidden,
        "pooled_output": self.pooler.compute_output_shape(hidden),
    }

  @property
  def embedding_table(self) -> tf.Variable:
    """The word-embedding table [vocab_size, E], shared with the MLM output layer."""
    return self.embeddings.word_embeddings

  def original_variables(self, scope: str = "bert") -> dict[str, tf.Variable]:
    """{original name: variable}: `bert/embeddings/...`, `bert/encoder/...`, `bert/pooler/...`.

    Args:
      scope: str. The original's top scope of the encoder.

    Returns:
      The encoder's variables by their names in the released checkpoints.
    """
    names = self.embeddings.original_variables(f"{scope}/embeddings")
    if self.embedding_projection is not None:
      names.update(self.embedding_projection.original_variables(
          f"{scope}/encoder/embedding_hidden_mapping_in"))
    names.update(self.transformer.original_variables(f"{scope}/encoder/transformer"))
    names.update(self.pooler.original_variables(f"{scope}/pooler"))
    return names

  def checkpoint_parts(self) -> dict:
    """`{"encoder": self}`: an encoder's weights in our checkpoints, as every task model's."""
    return {"encoder": self}
