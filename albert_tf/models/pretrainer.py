"""AlbertPretrainer: the encoder with the MLM and sentence-order heads (the original's `cls/`)."""

import keras
import tensorflow as tf

from albert_tf.core.config import AlbertConfig
from albert_tf.layers import MaskedLMHead, PooledLogits
from albert_tf.models.base import sequence_input_shapes
from albert_tf.models.encoder import ENCODER_INPUTS, AlbertModel
from albert_tf.models.task import AlbertTask


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPretrainer(AlbertTask):
  """ALBERT for pretraining: the encoder, the masked-LM head (`cls/predictions`, its output
  matrix the word-embedding table) and the sentence-order head (`cls/seq_relationship`).

  Losses: `albert_tf.models.losses.pretraining_losses`. Registered with Keras as
  `albert_tf>AlbertPretrainer` (see `AlbertModel`).

  Args:
    config: an `AlbertConfig`, its dict, or None to take `encoder.config`.
    encoder: an `AlbertModel` whose variables to share, or None to make one from `config`.
    **kwargs: passed to `keras.Model` (name, default "albert_pretrainer").

  Call arguments:
    inputs: a dict: the `AlbertModel` inputs plus `masked_lm_positions` int [B, P]. Packed rows
      (albert_tf.data.packing) carry the packed inputs AlbertModel takes, and K * P positions
      (P per sequence slot).
    training: bool. Applies dropout when True.

  Returns:
    The encoder's dict (see `AlbertModel`) plus `masked_lm_logits` float [B, P, V] and
    `sentence_order_logits` float [B, 2] ([B, K, 2] for packed rows: one per sequence).

  Raises:
    ValueError: as `AlbertTask` for `config` and `encoder`.

  Example:

  A pretrainer on a given encoder (the two share its variables):

  >>> import numpy as np
  >>> import albert_tf
  >>> encoder = albert_tf.AlbertModel(albert_tf.AlbertConfig(
  ...     vocab_size=100, embedding_size=8, hidden_size=16, num_hidden_layers=2,
  ...     num_attention_heads=2, intermediate_size=32))
  >>> model = albert_tf.AlbertPretrainer(encoder=encoder)
  >>> model.encoder is encoder
  True
  >>> ids = np.array([[2, 15, 4, 3, 0], [2, 4, 3, 0, 0]], np.int32)
  >>> outputs = model({"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
  ...                  "masked_lm_positions": np.array([[2, 0], [1, 0]], np.int32)})
  >>> tuple(outputs["masked_lm_logits"].shape), tuple(outputs["sentence_order_logits"].shape)
  ((2, 2, 100), (2, 2))
  >>> from albert_tf.models import pretraining_losses
  >>> losses = pretraining_losses(outputs, {
  ...     "masked_lm_ids": np.array([[27, 0], [31, 0]], np.int32),
  ...     "masked_lm_weights": np.array([[1.0, 0.0], [1.0, 0.0]], np.float32),
  ...     "next_sentence_labels": np.array([0, 1], np.int32)})
  >>> float(losses["total_loss"]) > 0
  True
  """

  def __init__(self, config: AlbertConfig | dict | None = None,
               encoder: AlbertModel | None = None, **kwargs):
    kwargs.setdefault("name", "albert_pretrainer")
    super().__init__(config, encoder, **kwargs)
    c = self.config
    self.masked_lm = MaskedLMHead(c.hidden_size, c.embedding_size, c.vocab_size, c.hidden_act,
                                  c.initializer_range, name="masked_lm")
    self.sentence_order = PooledLogits(2, c.hidden_size, c.initializer_range,
                                       name="sentence_order")
    self.masked_lm.build((None, None, c.hidden_size), (None, None),
                         (c.vocab_size, c.embedding_size))
    self.sentence_order.build((None, c.hidden_size))
    self.build(sequence_input_shapes(ENCODER_INPUTS + ("masked_lm_positions",)))

  def call(self, inputs, training=False):
    outputs = dict(self.encoder(inputs, training=training))
    outputs["masked_lm_logits"] = self.masked_lm(
        outputs["sequence_output"], inputs["masked_lm_positions"], self.encoder.embedding_table)
    outputs["sentence_order_logits"] = self.sentence_order(outputs["pooled_output"])
    return outputs

  def compute_output_shape(self, input_shape: dict) -> dict:
    shapes = dict(self.encoder.compute_output_shape(input_shape))
    shapes["masked_lm_logits"] = self.masked_lm.compute_output_shape(
        shapes["sequence_output"], tuple(input_shape["masked_lm_positions"]))
    shapes["sentence_order_logits"] = self.sentence_order.compute_output_shape(
        shapes["pooled_output"])
    return shapes

  def original_variables(self) -> dict[str, tf.Variable]:
    """{original name: variable}: `bert/...`, `cls/predictions/...`, `cls/seq_relationship/...`."""
    names = self.encoder.original_variables()
    names.update(self.masked_lm.original_variables("cls/predictions"))
    names.update(self.sentence_order.original_variables("cls/seq_relationship"))
    return names

  def checkpoint_parts(self) -> dict:
    """`encoder`, `masked_lm` and `sentence_order`, as our checkpoints hold them."""
    return {"encoder": self.encoder, "masked_lm": self.masked_lm,
            "sentence_order": self.sentence_order}
