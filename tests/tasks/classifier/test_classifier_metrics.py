"""The GLUE eval metrics against hand-computed values (padding examples weigh nothing)."""

import math

import numpy as np
import pytest

from albert_tf.tasks.classifier import metrics


def test_accuracy_excludes_padding():
  labels = [1, 0, 1, 1, 0]
  predictions = [1, 1, 1, 0, 1]
  assert metrics.accuracy(labels, predictions) == pytest.approx(2 / 5)
  assert metrics.accuracy(labels, predictions, [1, 1, 1, 0, 0]) == pytest.approx(2 / 3)
  assert metrics.accuracy([], [], []) == 0.0


def test_matthews():
  # tp=2 (rows 0, 2), tn=1 (row 5), fp=1 (row 1), fn=1 (row 3); row 4 is padding.
  labels = [1, 0, 1, 1, 0, 0]
  predictions = [1, 1, 1, 0, 1, 0]
  weights = [1, 1, 1, 1, 0, 1]
  expected = (2 * 1 - 1 * 1) / math.sqrt(3 * 3 * 2 * 2)
  assert metrics.matthews_corrcoef(labels, predictions, weights) == pytest.approx(expected)
  assert metrics.matthews_corrcoef([1, 1, 0], [1, 1, 1]) == 0.0  # no negatives predicted
  assert metrics.matthews_corrcoef([1, 0], [1, 0]) == pytest.approx(1.0)


def test_pearson_and_mse():
  x = [1.0, 2.0, 3.0, 4.0, 100.0]
  y = [2.0, 4.0, 5.0, 4.0, -50.0]
  w = [1, 1, 1, 1, 0]
  xs, ys = np.array(x[:4]), np.array(y[:4])
  expected = ((xs - xs.mean()) * (ys - ys.mean())).sum() / math.sqrt(
      ((xs - xs.mean()) ** 2).sum() * ((ys - ys.mean()) ** 2).sum())
  assert metrics.pearson_correlation(x, y, w) == pytest.approx(expected)
  assert expected == pytest.approx(0.7181848464596079)  # numpy.corrcoef of the real rows
  assert metrics.mean_squared_error(y, x, w) == pytest.approx((1 + 4 + 4 + 0) / 4)
  assert metrics.pearson_correlation([1, 1, 1], [1, 2, 3]) == 0.0


def test_eval_results_per_task():
  labels, predictions = [0, 1, 1], [0, 1, 0]
  loss = [0.5, 1.0, 3.0]
  common = metrics.classifier_eval_metrics("mrpc", labels, predictions, loss, [1, 1, 0],
                                           [0.75, 3.0])
  assert common == {"eval_accuracy": 1.0, "eval_loss": 0.75, "loss": 1.875}
  assert "matthew_corr" in metrics.classifier_eval_metrics("cola", labels, predictions, loss,
                                                           None, [1.0])
  stsb = metrics.classifier_eval_metrics("sts-b", [1.0, 2.0], [1.5, 2.5], [0.25, 0.25], None,
                                         [0.25])
  assert set(stsb) == {"pearson", "MSE", "eval_loss", "loss"}
  assert stsb["MSE"] == pytest.approx(0.25) and stsb["pearson"] == pytest.approx(1.0)
  assert [metrics.key_metric(t) for t in ("sts-b", "cola", "mnli")] == [
      "pearson", "matthew_corr", "eval_accuracy"]
