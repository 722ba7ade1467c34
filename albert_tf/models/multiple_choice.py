"""AlbertMultipleChoice: RACE's model, one score per (context, choice) pair."""

import tensorflow as tf

from albert_tf.models.classifier import AlbertClassifier


class AlbertMultipleChoice(AlbertClassifier):
  """The original's RACE model: each choice is a [CLS] context [SEP] question+option [SEP]
  sequence scored by one logit (output_weights [1, H], output_bias [1] on the pooled output,
  after dropout), the scores of an example's choices compared by softmax.

  Call with input_ids, input_mask, segment_ids int [B, num_choices, T]; returns the encoder's dict
  (over B * num_choices sequences) plus logits [B, num_choices].
  """

  def __init__(self, config, num_choices=4, dropout_rate=0.1, **kwargs):
    kwargs.setdefault("name", "albert_multiple_choice")
    super().__init__(config, 1, dropout_rate=dropout_rate, **kwargs)
    self.num_choices = num_choices

  @property
  def is_regression(self):
    return False

  def call(self, inputs, training=False):
    length = tf.shape(inputs["input_ids"])[-1]
    flat = {k: tf.reshape(inputs[k], [-1, length])
            for k in ("input_ids", "input_mask", "segment_ids") if k in inputs}
    outputs = super().call(flat, training=training)
    outputs["logits"] = tf.reshape(outputs["logits"], [-1, self.num_choices])
    return outputs

  def get_config(self):
    config = super().get_config()
    config.pop("num_labels")
    return dict(config, num_choices=self.num_choices)
