"""AlbertTokenClassifier: the encoder plus a per-token classification layer (NER tagging), as
transformers' AlbertForTokenClassification."""

import keras

from albert_tf.checkpoints import labels
from albert_tf.core.config import AlbertConfig
from albert_tf.layers import PooledLogits
from albert_tf.models.base import sequence_input_shapes
from albert_tf.models.encoder import ENCODER_INPUTS, AlbertModel
from albert_tf.models.task import AlbertTask, TaskHead


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertTokenClassifier(AlbertTask):
  """ALBERT for token classification (named-entity recognition): one label per piece.

  Dropout on the encoder's sequence_output, then a dense layer [H -> num_labels] stored as the
  original classifier's head (`output_weights` [num_labels, H], `output_bias` [num_labels]; in
  Hugging Face's layout `classifier.weight`, `classifier.bias`). The pooler is kept (the released
  checkpoints have it) but unused. Registered with Keras as `albert_tf>AlbertTokenClassifier`.

  Args:
    config: an `AlbertConfig`, its dict, or None to take `encoder.config`.
    num_labels: int >= 1. The number of tags.
    dropout_rate: float. Dropout on sequence_output (training only).
    label_names: the tag of each label id (num_labels strings), or None; kept in the model's
      config (`.keras` files) and written as id2label by the Hugging Face export.
    encoder: an `AlbertModel` whose variables to share, or None to make one from `config`.
    **kwargs: passed to `keras.Model` (name, default "albert_token_classifier").

  Call arguments:
    inputs: a dict of the `AlbertModel` inputs (input_ids, input_mask, segment_ids [B, T]).
    training: bool. Applies dropout when True.

  Returns:
    The encoder's dict (see `AlbertModel`) plus `logits` float [B, T, num_labels].

  Raises:
    ValueError: num_labels missing or < 1, or label_names of another length; as `AlbertTask`.

  Example:

  >>> import numpy as np
  >>> import albert_tf
  >>> from albert_tf.tasks.ner.model import AlbertTokenClassifier
  >>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
  ...                                 num_hidden_layers=2, num_attention_heads=2,
  ...                                 intermediate_size=32)
  >>> tagger = AlbertTokenClassifier(config, num_labels=5)
  >>> ids = np.array([[2, 15, 27, 3], [2, 31, 3, 0]], np.int32)
  >>> tuple(tagger({"input_ids": ids})["logits"].shape)
  (2, 4, 5)
  """

  # Its head keeps the original classifier's top-level names (`output_weights`, `output_bias`)
  # and is the `classifier` part of our checkpoints.
  HEADS = (TaskHead("classifier", reads="sequence_output", writes="logits"),)

  def __init__(self, config: AlbertConfig | dict | None = None, num_labels: int | None = None,
               dropout_rate: float = 0.1, label_names=None, encoder: AlbertModel | None = None,
               **kwargs):
    kwargs.setdefault("name", "albert_token_classifier")
    num_labels = self.checked_num_labels(num_labels, label_names)
    super().__init__(config, encoder, **kwargs)
    self.num_labels = num_labels
    self.dropout_rate = dropout_rate
    self.label_names = list(label_names) if label_names is not None else None
    hidden_size = self.config.hidden_size
    self.dropout = keras.layers.Dropout(dropout_rate)
    self.classifier = PooledLogits(num_labels, hidden_size, self.config.initializer_range,
                                   name="classifier")
    self.dropout.build((None, None, hidden_size))
    self.classifier.build((None, None, hidden_size))
    self.build(sequence_input_shapes(ENCODER_INPUTS))

  @classmethod
  def for_export(cls, config, checkpoint, num_labels):
    """The tagger with the tag names saved beside `checkpoint` when they name its outputs."""
    names = labels.checkpoint_label_names(checkpoint)
    return cls(config, num_labels=num_labels,
               label_names=names if names and len(names) == num_labels else None)

  def call(self, inputs, training=False):
    outputs = dict(self.encoder(inputs, training=training))
    sequence = self.dropout(outputs["sequence_output"], training=training)
    outputs["logits"] = self.classifier(sequence)
    return outputs

  def get_config(self) -> dict:
    return dict(super().get_config(), num_labels=self.num_labels,
                dropout_rate=self.dropout_rate, label_names=self.label_names)
