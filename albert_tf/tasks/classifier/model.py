"""AlbertClassifier: the encoder plus the original's classification layer on the pooled output."""

import keras
import tensorflow as tf

from albert_tf.checkpoints import labels
from albert_tf.core.config import AlbertConfig
from albert_tf.layers import PooledLogits
from albert_tf.models.base import sequence_input_shapes
from albert_tf.models.encoder import ENCODER_INPUTS, AlbertModel
from albert_tf.models.task import AlbertTask, TaskHead


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertClassifier(AlbertTask):
  """ALBERT for sentence(-pair) classification and regression (GLUE), as the original's
  `classifier_utils.create_model`.

  The classification layer is the original's `output_weights` [num_labels, H] and `output_bias`
  [num_labels] (top-level names in its fine-tuned checkpoints), applied to the pooled output after
  dropout. num_labels 1 is regression (STS-B). Losses:
  `albert_tf.models.losses.classification_losses`. Registered with Keras as
  `albert_tf>AlbertClassifier` (`import albert_tf` is enough to load one: see `AlbertModel`).

  Args:
    config: an `AlbertConfig`, its dict, or None to take `encoder.config`.
    num_labels: int >= 1. The number of classes; 1 for regression.
    dropout_rate: float. Dropout on the pooled output (training only); the original's is 0.1.
    label_names: the name of each class (num_labels strings), or None; kept in the model's
      config and written as id2label by the Hugging Face export.
    encoder: an `AlbertModel` whose variables to share (e.g. a pretrainer's `encoder`), or None
      to make one from `config`.
    **kwargs: passed to `keras.Model` (name, default "albert_classifier").

  Call arguments:
    inputs: a dict of the `AlbertModel` inputs.
    training: bool. Applies dropout when True.

  Returns:
    The encoder's dict (see `AlbertModel`) plus `logits` float [B, num_labels].

  Raises:
    ValueError: when num_labels is missing or < 1, or label_names of another length; as
      `AlbertTask` for `config` and `encoder`.

  Example:

  >>> import numpy as np
  >>> import albert_tf
  >>> from albert_tf.models import classification_losses
  >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
  ...                                 num_hidden_layers=2, num_attention_heads=2,
  ...                                 intermediate_size=32)
  >>> pretrainer = albert_tf.AlbertPretrainer(config)
  >>> classifier = albert_tf.AlbertClassifier(num_labels=3, encoder=pretrainer.encoder)
  >>> classifier.encoder is pretrainer.encoder
  True
  >>> ids = np.array([[2, 15, 3, 27, 3], [2, 31, 3, 8, 3]], np.int32)
  >>> segments = np.array([[0, 0, 0, 1, 1], [0, 0, 0, 1, 1]], np.int32)
  >>> outputs = classifier({"input_ids": ids, "segment_ids": segments})
  >>> tuple(outputs["logits"].shape)
  (2, 3)
  >>> losses = classification_losses(outputs["logits"], np.array([0, 2], np.int32))
  >>> tuple(losses["probabilities"].shape), tuple(losses["predictions"].shape)
  ((2, 3), (2,))
  """

  HEADS = (TaskHead("classifier", reads="pooled_output", writes="logits"),)

  def __init__(self, config: AlbertConfig | dict | None = None, num_labels: int | None = None,
               dropout_rate: float = 0.1, encoder: AlbertModel | None = None,
               label_names=None, **kwargs):
    kwargs.setdefault("name", "albert_classifier")
    num_labels = self.checked_num_labels(num_labels, label_names, " (1 for regression)")
    super().__init__(config, encoder, **kwargs)
    self.num_labels = num_labels
    self.label_names = list(label_names) if label_names is not None else None
    self.dropout_rate = dropout_rate
    hidden_size = self.config.hidden_size
    self.dropout = keras.layers.Dropout(dropout_rate)
    self.classifier = PooledLogits(num_labels, hidden_size, self.config.initializer_range,
                                   name="classifier")
    self.dropout.build((None, hidden_size))
    self.classifier.build((None, hidden_size))
    self.build(sequence_input_shapes(ENCODER_INPUTS))

  @property
  def is_regression(self) -> bool:
    """True for num_labels 1 (a score, as STS-B)."""
    return self.num_labels == 1

  def probabilities(self, logits):
    """What the exports serve as `probabilities` [B, L] for logits [B, L]: the softmax, or a
    regression's score (the logit itself)."""
    return logits if self.is_regression else tf.nn.softmax(logits, axis=-1)

  def call(self, inputs, training=False):
    outputs = dict(self.encoder(inputs, training=training))
    pooled = self.dropout(outputs["pooled_output"], training=training)
    outputs["logits"] = self.classifier(pooled)
    return outputs

  @classmethod
  def for_export(cls, config, checkpoint, num_labels):
    """The classifier with the label names saved beside `checkpoint` when they fit its head."""
    saved = labels.checkpoint_classifier_labels(checkpoint) or {}
    names = saved.get("labels") or None
    return cls(config, num_labels=num_labels,
               label_names=names if names and len(names) == num_labels else None)

  def get_config(self) -> dict:
    config = dict(super().get_config(), num_labels=self.num_labels,
                  dropout_rate=self.dropout_rate)
    if self.label_names is not None:
      config["label_names"] = self.label_names
    return config
