"""The original's classifier eval metrics that every classification task reports (tf.metrics /
contrib streaming metrics), as NumPy on the collected outputs: loss, accuracy, or Pearson and MSE
for a regression. Every metric is weighted by is_real_example, so the padding examples added for
fixed TPU batches count for nothing. GLUE's own (CoLA's Matthews correlation) are the
classifier's (albert_tf.tasks.classifier.metrics).
"""

import numpy as np


def weights_or_ones(weights, n):
  """weights as float64 [n], or n ones for None."""
  return np.ones(n, np.float64) if weights is None else np.asarray(weights, np.float64)


def accuracy(labels, predictions, weights=None):
  """sum(w * [label == prediction]) / sum(w) (0 when no weight)."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  w = weights_or_ones(weights, len(labels))
  total = w.sum()
  return float((w * (labels == predictions)).sum() / total) if total else 0.0


def weighted_mean(values, weights=None):
  values = np.asarray(values, np.float64)
  w = weights_or_ones(weights, len(values))
  total = w.sum()
  return float((w * values).sum() / total) if total else 0.0


def pearson_correlation(predictions, labels, weights=None):
  """Weighted Pearson correlation (streaming_pearson_correlation): the weighted co-moment over
  the square root of the product of the weighted second moments; 0 for a constant series."""
  x = np.asarray(predictions, np.float64)
  y = np.asarray(labels, np.float64)
  w = weights_or_ones(weights, len(x))
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


def eval_metrics(labels, predictions, per_example_loss, weights, batch_losses, regression=False):
  """The original's eval results of a classifier: eval_loss, loss, then eval_accuracy (or, for a
  regression, pearson and MSE).

  Args:
    labels, predictions, per_example_loss, weights: [N] over the whole eval set.
    batch_losses: the mean loss of each eval batch (the Estimator's `loss` is their mean).
    regression: whether the predictions are scores.
  """
  result = {"eval_loss": weighted_mean(per_example_loss, weights),
            "loss": float(np.mean(batch_losses)) if len(batch_losses) else 0.0}
  if regression:
    result["pearson"] = pearson_correlation(predictions, labels, weights)
    result["MSE"] = mean_squared_error(labels, predictions, weights)
    return result
  result["eval_accuracy"] = accuracy(labels, predictions, weights)
  return result
