"""The original's GLUE eval metrics (tf.metrics / contrib streaming metrics), as NumPy on the
collected outputs. Every metric is weighted by is_real_example, so the padding examples added for
fixed TPU batches count for nothing.
"""

import numpy as np


def _weights(weights, n):
  return np.ones(n, np.float64) if weights is None else np.asarray(weights, np.float64)


def accuracy(labels, predictions, weights=None):
  """sum(w * [label == prediction]) / sum(w) (0 when no weight)."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  w = _weights(weights, len(labels))
  total = w.sum()
  return float((w * (labels == predictions)).sum() / total) if total else 0.0


def weighted_mean(values, weights=None):
  values = np.asarray(values, np.float64)
  w = _weights(weights, len(values))
  total = w.sum()
  return float((w * values).sum() / total) if total else 0.0


def matthews_corrcoef(labels, predictions, weights=None):
  """(tp*tn - fp*fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)), 0 when the denominator is 0 (the
  original's div_no_nan); labels and predictions read as booleans (non-zero is positive)."""
  y = np.asarray(labels) != 0
  p = np.asarray(predictions) != 0
  w = _weights(weights, len(y))
  tp = (w * (y & p)).sum()
  tn = (w * (~y & ~p)).sum()
  fp = (w * (~y & p)).sum()
  fn = (w * (y & ~p)).sum()
  denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
  return float((tp * tn - fp * fn) / denominator) if denominator else 0.0


def pearson_correlation(predictions, labels, weights=None):
  """Weighted Pearson correlation (streaming_pearson_correlation): the weighted co-moment over
  the square root of the product of the weighted second moments; 0 for a constant series."""
  x = np.asarray(predictions, np.float64)
  y = np.asarray(labels, np.float64)
  w = _weights(weights, len(x))
  total = w.sum()
  if not total:
    return 0.0
  dx = x - (w * x).sum() / total
  dy = y - (w * y).sum() / total
  denominator = np.sqrt((w * dx * dx).sum() * (w * dy * dy).sum())
  return float((w * dx * dy).sum() / denominator) if denominator else 0.0


def mean_squared_error(labels, predictions, weights=None):
  diff = np.asarray(labels, np.float64) - np.asarray(predictions, np.float64)
  return weighted_mean(diff * diff, weights)


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
  result = {"eval_loss": weighted_mean(per_example_loss, weights),
            "loss": float(np.mean(batch_losses)) if len(batch_losses) else 0.0}
  if task_name in ("sts-b", "regression"):
    result["pearson"] = pearson_correlation(predictions, labels, weights)
    result["MSE"] = mean_squared_error(labels, predictions, weights)
    return result
  result["eval_accuracy"] = accuracy(labels, predictions, weights)
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
  w = _weights(weights, len(y))[:, None]
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
