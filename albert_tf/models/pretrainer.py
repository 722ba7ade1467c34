"""AlbertPretrainer: the encoder with the MLM and sentence-order heads (the original's `cls/`)."""

from albert_tf.layers import MaskedLMHead, PooledLogits
from albert_tf.models.base import ConfiguredModel
from albert_tf.models.encoder import AlbertModel


class AlbertPretrainer(ConfiguredModel):
  """ALBERT for pretraining.

  Call with the AlbertModel inputs plus `masked_lm_positions` int [B, P]. Returns the encoder's
  dict plus `masked_lm_logits` [B, P, V] and `sentence_order_logits` [B, 2]. Losses:
  `albert_tf.models.losses.pretraining_losses`.
  """

  def __init__(self, config, **kwargs):
    kwargs.setdefault("name", "albert_pretrainer")
    super().__init__(config, **kwargs)
    c = self.config
    self.encoder = AlbertModel(c, name="encoder")
    self.masked_lm = MaskedLMHead(c.hidden_size, c.embedding_size, c.vocab_size, c.hidden_act,
                                  c.initializer_range, name="masked_lm")
    self.sentence_order = PooledLogits(2, c.hidden_size, c.initializer_range,
                                       name="sentence_order")
    self.masked_lm.build()
    self.sentence_order.build()
    self.built = True

  def call(self, inputs, training=False):
    outputs = dict(self.encoder(inputs, training=training))
    outputs["masked_lm_logits"] = self.masked_lm(
        outputs["sequence_output"], inputs["masked_lm_positions"], self.encoder.embedding_table)
    outputs["sentence_order_logits"] = self.sentence_order(outputs["pooled_output"])
    return outputs
