"""AlbertClassifier: the encoder plus the original's classification layer on the pooled output."""

import keras

from albert_tf.layers import PooledLogits
from albert_tf.models.base import ConfiguredModel
from albert_tf.models.encoder import AlbertModel


class AlbertClassifier(ConfiguredModel):
  """ALBERT for sentence(-pair) classification and regression (GLUE).

  The classification layer is the original's `output_weights` [num_labels, H] and `output_bias`
  [num_labels] (top-level names in its fine-tuned checkpoints), applied to the pooled output after
  dropout (`dropout_rate`, the original's fixed 0.1, only with training=True). num_labels 1 is
  regression (STS-B). Call with the AlbertModel inputs; returns the encoder's dict plus `logits`
  [B, num_labels]. Losses: `albert_tf.models.losses.classification_losses`.
  """

  def __init__(self, config, num_labels, dropout_rate=0.1, **kwargs):
    kwargs.setdefault("name", "albert_classifier")
    super().__init__(config, **kwargs)
    if num_labels < 1:
      raise ValueError(f"num_labels must be >= 1, got {num_labels}")
    self.num_labels = num_labels
    self.dropout_rate = dropout_rate
    self.encoder = AlbertModel(self.config, name="encoder")
    self.dropout = keras.layers.Dropout(dropout_rate)
    self.classifier = PooledLogits(num_labels, self.config.hidden_size,
                                   self.config.initializer_range, name="classifier")
    self.classifier.build()
    self.built = True

  @property
  def is_regression(self):
    return self.num_labels == 1

  def call(self, inputs, training=False):
    outputs = dict(self.encoder(inputs, training=training))
    pooled = self.dropout(outputs["pooled_output"], training=training)
    outputs["logits"] = self.classifier(pooled)
    return outputs

  def get_config(self):
    return dict(super().get_config(), num_labels=self.num_labels,
                dropout_rate=self.dropout_rate)
