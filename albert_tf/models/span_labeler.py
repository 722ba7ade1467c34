"""ALBERT for SQuAD: the v1 span labeler and the v2 model with its answerability head."""

from albert_tf.layers.span_heads import SpanLogits, SquadV2Head
from albert_tf.models.base import ConfiguredModel
from albert_tf.models.encoder import AlbertModel


class AlbertSpanLabeler(ConfiguredModel):
  """SQuAD v1.1: start and end logits over the sequence (the original's cls/squad/output_weights
  [2, H] and output_bias [2]).

  Call with the AlbertModel inputs; returns the encoder's dict plus start_logits and end_logits
  [B, T] (the original's predictions call them start_log_prob / end_log_prob).
  """

  def __init__(self, config, **kwargs):
    kwargs.setdefault("name", "albert_span_labeler")
    super().__init__(config, **kwargs)
    self.encoder = AlbertModel(self.config, name="encoder")
    self.span_logits = SpanLogits(self.config.hidden_size, self.config.initializer_range,
                                  name="span_logits")
    self.span_logits.build()
    self.built = True

  def call(self, inputs, training=False):
    outputs = dict(self.encoder(inputs, training=training))
    outputs["start_logits"], outputs["end_logits"] = self.span_logits(outputs["sequence_output"])
    return outputs


class AlbertSquadV2(ConfiguredModel):
  """SQuAD 2.0 as the original's create_v2_model (see layers.span_heads.SquadV2Head).

  Call with the AlbertModel inputs plus p_mask [B, T], and start_positions [B] when training.
  Returns the encoder's dict plus the head's outputs (training: start_log_probs, end_log_probs;
  inference: start_top_log_probs, start_top_index, end_top_log_probs, end_top_index; both:
  cls_logits).
  """

  def __init__(self, config, start_n_top=5, end_n_top=5, dropout_rate=0.1, **kwargs):
    kwargs.setdefault("name", "albert_squad_v2")
    super().__init__(config, **kwargs)
    self.start_n_top = start_n_top
    self.end_n_top = end_n_top
    self.dropout_rate = dropout_rate
    self.encoder = AlbertModel(self.config, name="encoder")
    self.head = SquadV2Head(self.config.hidden_size, start_n_top, end_n_top, dropout_rate,
                            self.config.initializer_range, name="squad_v2_head")
    self.head.build()
    self.built = True

  def call(self, inputs, training=False):
    outputs = dict(self.encoder(inputs, training=training))
    outputs.update(self.head(outputs["sequence_output"], inputs["p_mask"],
                             inputs.get("start_positions"), training=training))
    return outputs

  def get_config(self):
    return dict(super().get_config(), start_n_top=self.start_n_top, end_n_top=self.end_n_top,
                dropout_rate=self.dropout_rate)
