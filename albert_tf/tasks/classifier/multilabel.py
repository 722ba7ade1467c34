"""Multi-label classification: AlbertMultiLabelClassifier (the classifier's weights, a sigmoid
per label), its losses and its training objective.

The head is the original classifier's (`output_weights` [L, H], `output_bias` [L] on the dropped
out pooled output): only the loss differs, binary cross-entropy per label, as transformers'
AlbertForSequenceClassification with problem_type `multi_label_classification`.
"""

import keras
import tensorflow as tf

from albert_tf.finetuning.objectives import MeanExampleLoss
from albert_tf.tasks.classifier.model import AlbertClassifier


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertMultiLabelClassifier(AlbertClassifier):
  """ALBERT for multi-label classification: each of num_labels labels on or off per example.

  Args, call arguments and outputs: as `AlbertClassifier` (logits float [B, num_labels]); a
  single label is a yes/no classifier, not regression. Losses: `multi_label_losses`. Exported to
  Hugging Face as AlbertForSequenceClassification with problem_type
  `multi_label_classification`.
  """

  def __init__(self, *args, **kwargs):
    kwargs.setdefault("name", "albert_multi_label_classifier")
    super().__init__(*args, **kwargs)

  @property
  def is_regression(self) -> bool:
    return False

  def probabilities(self, logits):
    """Each label's own probability [B, L] (the sigmoid), not a softmax across labels."""
    return tf.sigmoid(logits)


def multi_label_losses(logits: tf.Tensor, label_ids: tf.Tensor, threshold: float = 0.5) -> dict:
  """Sigmoid binary cross-entropy per label, the mean over labels per example (its mean over a
  batch is transformers' BCEWithLogitsLoss).

  Args:
    logits: float tensor [B, L].
    label_ids: int tensor [B, L], 1 for each label of the example.
    threshold: a label is predicted when its probability is above it.

  Returns:
    A dict of float32 tensors: `loss` (scalar), `per_example_loss` [B], `probabilities`
    (sigmoid) [B, L], `logits` [B, L]; `predictions` int32 [B, L] (1 above the threshold).
  """
  logits = tf.cast(logits, tf.float32)
  targets = tf.cast(tf.reshape(label_ids, tf.shape(logits)), tf.float32)
  per_label = tf.nn.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits)
  per_example = tf.reduce_mean(per_label, axis=-1)
  probabilities = tf.sigmoid(logits)
  return {"loss": tf.reduce_mean(per_example), "per_example_loss": per_example,
          "probabilities": probabilities, "logits": logits,
          "predictions": tf.cast(probabilities > threshold, tf.int32)}


class MultiLabelObjective(MeanExampleLoss):
  """multi_label_losses as the training loss; train_exact_match: examples whose every label is
  right."""

  def __init__(self, threshold=0.5):
    self.threshold = threshold

  def per_example(self, outputs, features):
    out = multi_label_losses(outputs["logits"], features["label_ids"], self.threshold)
    labels_ = tf.cast(tf.reshape(features["label_ids"], tf.shape(out["predictions"])), tf.int32)
    exact = tf.reduce_all(tf.equal(out["predictions"], labels_), axis=-1)
    return out["per_example_loss"], {"exact_match": tf.reduce_sum(tf.cast(exact, tf.float32))}
