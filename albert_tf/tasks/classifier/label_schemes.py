"""What a label is in your own data, chosen once per run (scheme_for): single-label (a softmax
over the classes), multi-label (a sigmoid per label, binary cross-entropy, --threshold) or
regression (one score, squared error, as STS-B). Each scheme holds what differs between them: the
model, the training objective, the feature spec of the labels, the eval head and metrics, how a
prediction is written and what the export serves; OwnDataJob asks its scheme."""

import math

import tensorflow as tf

from albert_tf.core.errors import UsageError
from albert_tf.finetuning.evaluation import batch_means
from albert_tf.finetuning.inputs import classifier_features
from albert_tf.finetuning.objectives import ClassificationObjective
from albert_tf.models import classification_losses
from albert_tf.tasks.classifier.metrics import classifier_eval_metrics, multi_label_eval_metrics
from albert_tf.tasks.classifier.model import AlbertClassifier
from albert_tf.tasks.classifier.multilabel import (AlbertMultiLabelClassifier,
                                                   MultiLabelObjective, multi_label_losses)
from albert_tf.tasks.classifier.settings import THRESHOLD_RULE, threshold_in_range


def export_threshold(settings):
  """The multi-label export's threshold: --threshold_to_export when given (it must then be a
  probability too), else the run's --threshold.

  Args:
    settings: the run's OwnDataSettings (threshold, threshold_to_export).

  Raises:
    UsageError: a --threshold_to_export that is no probability.
  """
  given = settings.threshold_to_export
  if math.isnan(given):
    return settings.threshold
  if not threshold_in_range(given):
    raise UsageError(f"--threshold_to_export={given}: a multi-label model's threshold "
                     f"{THRESHOLD_RULE}")
  return given


class SingleLabel:
  """One class per example: AlbertClassifier's softmax, cross-entropy, accuracy; a prediction is
  its label's name."""

  # The name the metrics and the best checkpoint's choice go by (metrics.key_metric).
  task_name = "classification"
  regression = False
  multi_label = False

  def label_list(self, names):
    """The job's label_list for the label names read."""
    return names

  def label_names(self, label_list):
    """The names kept beside the checkpoints (classifier_labels.json)."""
    return label_list

  def make_model(self, config, label_list, dropout_rate):
    return AlbertClassifier(config, len(label_list), dropout_rate=dropout_rate,
                            label_names=label_list)

  def objective(self, threshold):
    del threshold
    return ClassificationObjective(self.regression)

  def feature_spec(self, max_seq_length, num_labels):
    """The feature records' parse spec."""
    del num_labels
    return classifier_features(max_seq_length, self.regression)

  def head_outputs(self, logits, label_ids, threshold):
    """The head's loss, probabilities and predictions."""
    del threshold
    return classification_losses(logits, label_ids, self.regression)

  def metrics(self, out, batch_size):
    """The eval results of the job's predict() outputs."""
    return classifier_eval_metrics(
        self.task_name, out["label_ids"], out["predictions"], out["per_example_loss"],
        out["is_real_example"], batch_means(out["per_example_loss"], batch_size))

  def prediction_text(self, prediction, label_list, label_separator):
    """A prediction as submit_results.tsv writes it."""
    del label_separator
    return label_list[int(prediction)]

  def serving_options(self, settings):
    """(threshold, keyword arguments) of the export's ClassifierServingModule beside its
    model, tokenizer and labels."""
    return settings.threshold_to_export, {}


class Regression(SingleLabel):
  """One score per example: AlbertClassifier with one output, squared error, Pearson and MSE; a
  prediction is the score. Its label list is GLUE's for a regression: one output, no name."""

  task_name = "regression"
  regression = True

  def label_list(self, names):
    del names
    return [None]

  def label_names(self, label_list):
    del label_list
    return []

  def make_model(self, config, label_list, dropout_rate):
    del label_list
    return AlbertClassifier(config, 1, dropout_rate=dropout_rate)

  def prediction_text(self, prediction, label_list, label_separator):
    del label_list, label_separator
    return str(prediction)


class MultiLabel(SingleLabel):
  """Any labels per example: AlbertMultiLabelClassifier (a sigmoid per label), binary
  cross-entropy, micro and macro F1; a prediction is the names of the labels over --threshold,
  joined by --label_separator (or ",")."""

  task_name = "multi-label"
  multi_label = True

  def make_model(self, config, label_list, dropout_rate):
    return AlbertMultiLabelClassifier(config, len(label_list), dropout_rate=dropout_rate,
                                      label_names=label_list)

  def objective(self, threshold):
    return MultiLabelObjective(threshold)

  def feature_spec(self, max_seq_length, num_labels):
    spec = classifier_features(max_seq_length, self.regression)
    spec["label_ids"] = tf.io.FixedLenFeature([num_labels], tf.int64)
    return spec

  def head_outputs(self, logits, label_ids, threshold):
    return multi_label_losses(logits, label_ids, threshold)

  def metrics(self, out, batch_size):
    return multi_label_eval_metrics(out["label_ids"], out["predictions"],
                                    out["per_example_loss"], out["is_real_example"],
                                    batch_means(out["per_example_loss"], batch_size))

  def prediction_text(self, prediction, label_list, label_separator):
    separator = label_separator or ","
    return separator.join(name for name, on in zip(label_list, prediction) if on)

  def serving_options(self, settings):
    return export_threshold(settings), {"multi_label": True,
                                        "label_separator": settings.label_separator or ","}


def scheme_for(regression, multi_label):
  """The label scheme of a run: Regression, MultiLabel or SingleLabel.

  Args:
    regression: the labels are scores (--label_type=float).
    multi_label: the labels are lists (a JSON list, --label_separator, or a multi-label model).
  """
  if regression:
    return Regression()
  return MultiLabel() if multi_label else SingleLabel()
