"""The original's GLUE eval metrics (tf.metrics / contrib streaming metrics), as NumPy on the
collected outputs. Every metric is weighted by is_real_example, so the padding examples added for
fixed TPU batches count for nothing.
"""

import numpy as np

# What every classification task reports, shared with RACE (albert_tf.finetuning); the GLUE ones
# below build on them.
from albert_tf.finetuning.classification_metrics import (  # noqa: F401 -- re-exported, see above
    accuracy, eval_metrics, mean_squared_error, pearson_correlation, weighted_mean,
    weights_or_ones)


def matthews_corrcoef(labels, predictions, weights=None):
  """(tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)), 0 when the denominator is 0 (the
  original's div_no_nan); labels and predictions read as booleans (non-zero is positive)."""
  y = np.asarray(labels) != 0
  p = np.asarray(predictions) != 0
  w = weights_or_ones(weights, len(y))
  tp = (w * (y & p)).sum()
  tn = (w * (~y & ~p)).sum()
  fp = (w * (~y & p)).sum()
  fn = (w * (y & ~p)).sum()
  denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
  return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def key_metric(task_name):
  """The metric that picks the best checkpoint, as the original (own data: "regression" is
  scored as STS-B, by Pearson; "multi-label" by micro F1)."""
  return {"sts-b": "pearson", "regression": "pearson", "cola": "matthew_corr",
          "multi-label": "micro_f1"}.get(task_name, "eval_accuracy")


def classifier_eval_metrics(task_name, labels, predictions, per_example_loss, weights,
                            batch_losses):
  """The original's eval results for a task.

  labels, predictions, per_example_loss, weights: [N] over the whole eval set. batch_losses: the
  mean loss of each eval batch (the Estimator's `loss` is their mean).
  """
  regression = task_name in ("sts-b", "regression")
  result = eval_metrics(labels, predictions, per_example_loss, weights, batch_losses, regression)
  if task_name == "cola":
    result["matthew_corr"] = matthews_corrcoef(labels, predictions, weights)
  return result


def _f1(tp, fp, fn):
  """2tp / (2tp + fp + fn): precision and recall's harmonic mean, 0 when there is nothing."""
  denominator = 2 * tp + fp + fn
  return float(2 * tp / denominator) if denominator else 0.0


def multi_label_f1(labels, predictions, weights=None):
  """Micro and macro F1 of multi-label predictions.

  Args:
    labels, predictions: [N, L] 0/1 (an example's labels, those over the threshold).
    weights: [N] (is_real_example), or None.

  Returns:
    {"micro_f1": F1 of the true/false positive and false negative counts summed over every
    label; "macro_f1": the mean over labels of each label's F1 (a label neither present nor
    predicted counts 0, as scikit-learn's zero_division=0)}.
  """
  y = np.asarray(labels) != 0
  p = np.asarray(predictions) != 0
  w = weights_or_ones(weights, len(y))[:, None]
  tp, fp, fn = ((w * (y & p)).sum(0), (w * (~y & p)).sum(0), (w * (y & ~p)).sum(0))
  per_label = [_f1(a, b, c) for a, b, c in zip(tp, fp, fn)]
  return {"micro_f1": _f1(tp.sum(), fp.sum(), fn.sum()),
          "macro_f1": float(np.mean(per_label)) if per_label else 0.0}


def multi_label_eval_metrics(labels, predictions, per_example_loss, weights, batch_losses):
  """The eval results of a multi-label run: eval_loss, loss (as classifier_eval_metrics),
  micro_f1 and macro_f1 (multi_label_f1), and eval_accuracy (exact match: every label right)."""
  exact = np.all(np.asarray(labels) == np.asarray(predictions), axis=-1)
  return dict(multi_label_f1(labels, predictions, weights),
              eval_loss=weighted_mean(per_example_loss, weights),
              loss=float(np.mean(batch_losses)) if len(batch_losses) else 0.0,
              eval_accuracy=weighted_mean(exact, weights))
