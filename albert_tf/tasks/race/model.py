"""AlbertMultipleChoice: RACE's model, one score per (context, choice) pair."""

import keras
import tensorflow as tf

from albert_tf.core.config import AlbertConfig
from albert_tf.models.base import sequence_input_shapes
from albert_tf.tasks.classifier.model import AlbertClassifier
from albert_tf.models.encoder import ENCODER_INPUTS, AlbertModel


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMultipleChoice(AlbertClassifier):
  """The original's RACE model (race_utils.create_model): each choice is a
  [CLS] context [SEP] question+option [SEP] sequence scored by one logit (output_weights [1, H],
  output_bias [1] on the pooled output, after dropout), the scores of an example's choices
  compared by softmax. Registered with Keras as `albert_tf>AlbertMultipleChoice` (see
  `AlbertModel`).

  Args:
    config: an `AlbertConfig`, its dict, or None to take `encoder.config`.
    num_choices: int. C, the number of choices of every example.
    dropout_rate: float. Dropout on the pooled output (training only).
    encoder: an `AlbertModel` whose variables to share, or None to make one from `config`.
    **kwargs: passed to `keras.Model` (name, default "albert_multiple_choice").

  Call arguments:
    inputs: a dict: `input_ids`, and optionally `input_mask` and `segment_ids`, int [B, C, T].
    training: bool. Applies dropout when True.

  Returns:
    The encoder's dict over the B * C sequences (see `AlbertModel`) plus `logits` float [B, C].

  Raises:
    ValueError: as `AlbertTask` for `config` and `encoder`.
  """

  def __init__(self, config: AlbertConfig | dict | None = None, num_choices: int = 4,
               dropout_rate: float = 0.1, encoder: AlbertModel | None = None, **kwargs):
    kwargs.setdefault("name", "albert_multiple_choice")
    super().__init__(config, 1, dropout_rate=dropout_rate, encoder=encoder, **kwargs)
    self.num_choices = num_choices
    # Over the classifier's [B, T]: this model's inputs are [B, C, T].
    self.build(sequence_input_shapes(ENCODER_INPUTS, (None, num_choices, None)))

  @property
  def is_regression(self) -> bool:
    """False: the single logit is a choice's score, compared across choices."""
    return False

  def call(self, inputs, training=False):
    length = tf.shape(inputs["input_ids"])[-1]
    flat = {k: tf.reshape(inputs[k], [-1, length])
            for k in ("input_ids", "input_mask", "segment_ids") if k in inputs}
    outputs = super().call(flat, training=training)
    outputs["logits"] = tf.reshape(outputs["logits"], [-1, self.num_choices])
    return outputs

  def compute_output_shape(self, input_shape: dict) -> dict:
    batch, choices, length = tuple(input_shape["input_ids"])
    flat = batch * choices if batch is not None and choices is not None else None
    shapes = super().compute_output_shape({"input_ids": (flat, length)})
    shapes["logits"] = (batch, self.num_choices)
    return shapes

  @classmethod
  def for_export(cls, config, checkpoint, num_labels):
    del checkpoint, num_labels
    return cls(config)

  def get_config(self) -> dict:
    config = super().get_config()
    config.pop("num_labels")
    return dict(config, num_choices=self.num_choices)
