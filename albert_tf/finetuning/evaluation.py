"""Running a model over a dataset to collect per-example outputs, and the original's
best-checkpoint bookkeeping (eval_results.txt, best_trial.txt, model.ckpt-best)."""

import collections
import logging
import math
import os
import time

import numpy as np
import tensorflow as tf

from albert_tf.core import io
from albert_tf.core.io import write_text_atomically
from albert_tf.training.checkpointing import checkpoint_steps

logger = logging.getLogger("albert_tf")
# A pass over a large dev set takes minutes on a CPU: a line this often says it is going on.
PROGRESS_SECONDS = 30


class Predictor:
  """Collects `fn(features)` (a dict of per-example tensors, batch-major) over a dataset, in
  dataset order, under a distribution strategy; a pass longer than PROGRESS_SECONDS logs how
  far it got every PROGRESS_SECONDS."""

  def __init__(self, strategy, fn):
    self.strategy = strategy
    # autograph=False: fn's control flow is Python's (no conversion cost at its first call).
    self._step = tf.function(lambda features: strategy.run(fn, args=(features,)),
                             reduce_retracing=True, autograph=False)

  def run(self, dataset):
    options = tf.data.Options()
    # Every worker of a multi-worker run sees the whole set (its chief writes the results).
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    dist = self.strategy.experimental_distribute_dataset(dataset.with_options(options))
    chunks = collections.defaultdict(list)
    start = last_line = time.monotonic()
    for batches, batch in enumerate(dist, 1):
      for name, value in self._step(batch).items():
        chunks[name].extend(t.numpy() for t in self.strategy.experimental_local_results(value))
      if time.monotonic() - last_line >= PROGRESS_SECONDS:
        last_line = time.monotonic()
        examples = sum(len(part) for part in next(iter(chunks.values()), []))
        logger.info(f"ran the model over {batches} batches ({examples} examples) in "
                    f"{last_line - start:.0f} s")
    return {name: np.concatenate(parts) for name, parts in chunks.items()}


def batch_means(values, batch_size):
  """Mean of each consecutive batch_size slice (the Estimator averages its eval loss so)."""
  values = np.asarray(values, np.float64)
  return [values[i:i + batch_size].mean() for i in range(0, len(values), batch_size)]


def _is_loss(key):
  """Whether an eval result's key is a loss ("loss", "eval_loss", ...)."""
  return key == "loss" or key.endswith("_loss")


def non_finite_values(result, key_name):
  """{key: value} of the NaN or infinite values among result[key_name] and the losses of an
  evaluation's result: a model whose loss overflowed still gets a finite accuracy (its
  predictions are an argmax of its logits, NaN or not), which must not make it the best
  checkpoint.

  Args:
    result: an evaluation's metrics (numbers; other values are not looked at).
    key_name: the metric that picks the best checkpoint.
  """
  found = {}
  for key, value in result.items():
    if key != key_name and not _is_loss(key):
      continue
    try:
      number = float(value)
    except (TypeError, ValueError):
      continue
    if not math.isfinite(number):
      found[key] = value
  return found


class BestCheckpointTracker:
  """The original's eval bookkeeping, resumable.

  Each evaluation appends its metrics (sorted `key = value` lines, the original's keys),
  `best = <best so far, this evaluation included>` and a ruler to eval_results.txt. The
  evaluation of the model the run started from (--init_checkpoint, or the model as initialised),
  made while output_dir holds no model.ckpt-<step>, also says `checkpoint = <init>`: its
  global_step is the starting checkpoint's (0 for most), not a step of this run. best_trial.txt
  holds `<last evaluated step>:<best step>:<best
  value>`, so a resumed run evaluates only newer checkpoints. A new best is saved through
  `save_best()` (model.ckpt-best). In a multi-worker run every worker keeps the bookkeeping (they
  decide together what to evaluate and load next) and calls save_best(); only the one with
  `writes` (the chief) writes the files.

  Every key metric is higher-is-better (classifier.metrics.key_metric: accuracy, Pearson,
  Matthews, F1). An evaluation whose key metric or loss is NaN or infinite
  (non_finite_values) is recorded but is never a best, not even the first one: a diverged
  model must not become model.ckpt-best, nor its +inf outrank every later evaluation.
  """

  def __init__(self, output_dir, key_name, writes=True):
    self.output_dir = output_dir
    self.key_name = key_name
    self.writes = writes
    self.results_file = os.path.join(output_dir, "eval_results.txt")
    self.trial_file = os.path.join(output_dir, "best_trial.txt")
    self.last_step, self.best_step, self.best_value = -1, -1, -1.0
    # The steps whose evaluation loss was NaN or infinite, in this process (a diverged model).
    self.diverged_steps = []
    if io.exists(self.trial_file):
      last, best_step, best_value = io.read_text(self.trial_file).strip().split(":")
      self.last_step, self.best_step, self.best_value = int(last), int(best_step), float(best_value)
      if not math.isfinite(self.best_value):
        # Written before non-finite results were refused: an inf would stay best for good.
        logger.info(f"{self.trial_file}: the best {key_name} ({best_value}, step {best_step}) is "
                    "not finite: no evaluation so far counts as the best")
        self.best_step, self.best_value = -1, -1.0

  def improves(self, result):
    """Whether result[key_name] beats the best so far: never for a result with a NaN or
    infinite key metric or loss (non_finite_values)."""
    if non_finite_values(result, self.key_name):
      return False
    return float(result[self.key_name]) > self.best_value

  def record(self, step, result, save_best, improved=None):
    """Writes one evaluation; calls save_best() when it is a new best: `improved` when given
    (a multi-worker run's shared decision), else improves(result). Returns whether it was.
    An evaluation that is not finite is logged as no candidate for best."""
    value = result[self.key_name]
    improved = self.improves(result) if improved is None else improved
    bad = non_finite_values(result, self.key_name)
    if bad:
      values = ", ".join(f"{key} = {bad[key]}" for key in sorted(bad))
      logger.warning(f"the evaluation at step {step} is not finite ({values}): it is not a "
                     "candidate for best")
      if any(_is_loss(key) for key in bad):
        self.diverged_steps.append(step)
    if self.writes:
      result = dict(result, global_step=step)
      # Every other evaluation is of a model.ckpt-<step> of output_dir, saved before it.
      if not checkpoint_steps(self.output_dir):
        result["checkpoint"] = "<init>"
      lines = [f"{key} = {result[key]}" for key in sorted(result)]
      # The original wrote the best before this evaluation (-1.0 in the first block).
      lines += [f"best = {float(value) if improved else self.best_value}", "=" * 50]
      self._append_results("\n".join(lines) + "\n")
    if improved:
      save_best()
      self.best_value, self.best_step = float(value), step
    self.last_step = step
    if self.writes:
      write_text_atomically(self.trial_file, f"{step}:{self.best_step}:{self.best_value}")
    return improved

  def _append_results(self, text):
    """Appends to eval_results.txt by rewriting it whole, atomically: object stores (gs://) have
    no append, and a crash then leaves the old file, not half a block."""
    old = b""
    if io.exists(self.results_file):
      with io.open_binary(self.results_file) as f:
        old = f.read()
    with io.AtomicFile(self.results_file) as f:
      f.write(old + text.encode("utf-8"))
