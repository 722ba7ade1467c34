"""What the fine-tuning jobs (run_classifier, run_race, run_squad_v1, run_squad_v2) add to the job
skeleton (albert_tf.training.job): the tokenizer, training on a feature file, an evaluation after
each checkpoint with the original's best-checkpoint bookkeeping, prediction in file order, and
loading model.ckpt-best.
"""

import dataclasses
import logging
import os
import time

import tensorflow as tf

from albert_tf.core import errors, io
from albert_tf.checkpoints import companions, hf_heads, layout
from albert_tf.checkpoints import load_checkpoint, save_original_checkpoint
from albert_tf.checkpoints.companions import keep_tokenizer
from albert_tf.data import epochs
from albert_tf.finetuning.evaluation import BestCheckpointTracker, Predictor
from albert_tf.finetuning import feature_cache
from albert_tf.finetuning.inputs import check_cached_features, in_file_order
from albert_tf.tokenization import FullTokenizer, check_vocab_fits
from albert_tf.training import precision, preemption
from albert_tf.training import strategy as strategies
from albert_tf.training.checkpointing import checkpoint_steps
from albert_tf.training.job import Job, UsageError

logger = logging.getLogger("albert_tf")
# transformers classes without a task head: a checkpoint of one has no head to be another task's.
_HEADLESS_ARCHITECTURES = ("AlbertModel", "AlbertForPreTraining", "AlbertForMaskedLM")
# A classifier's (and a tagger's) output layer, [labels, H]: its shape gives the label count.
_CLASSIFIER_WEIGHTS = "output_weights"


def _with_kept_tokenizer(settings, init):
  """settings with the tokenizer of `init` (the opened --init_checkpoint) when none is given:
  an HF directory (its spiece.model), a keras-hub preset (its vocabulary.spm) or a fine-tuning
  output_dir (the spiece.model or vocab.txt it kept: checkpoints.companions) ships the tokenizer
  it was trained with. One that contradicts it is refused (UsageError, from
  OpenedCheckpoint.tokenizer)."""
  tokenizer = settings.tokenizer
  if init is None:
    return settings
  spm, vocab = init.tokenizer(tokenizer.spm_model_file, tokenizer.vocab_file)
  if spm == tokenizer.spm_model_file and vocab == tokenizer.vocab_file:
    return settings
  logger.info(f"tokenizer: {spm or vocab} (from --init_checkpoint)")
  return dataclasses.replace(settings, tokenizer=dataclasses.replace(
      tokenizer, spm_model_file=spm, vocab_file=vocab))


def _outputs(shape):
  """` (3 labels)` or ` (1 output: regression)` for a classifier head's output_weights shape
  [labels, H]; "" for None."""
  if not shape:
    return ""
  return " (1 output: regression)" if shape[0] == 1 else f" ({shape[0]} labels)"


class FineTuningJob(Job):
  """A fine-tuning task on the job skeleton.

  Args:
    settings: a FineTuningSettings (ClassifierSettings, RaceSettings, SquadSettings).

  Raises:
    UsageError: no tokenizer, or one with more pieces than the config's vocab_size; and Job's
      checks.
  """

  def __init__(self, settings):
    super().__init__(settings)
    self.settings = settings = _with_kept_tokenizer(self.settings, self.init)
    tokenizer = settings.tokenizer
    if not tokenizer.spm_model_file and not tokenizer.vocab_file:
      raise UsageError("give --spm_model_file (SentencePiece) or --vocab_file (WordPiece)")
    self.tokenizer = FullTokenizer.from_settings(tokenizer)
    try:
      check_vocab_fits(max(self.tokenizer.vocab.values()) + 1, self.config.vocab_size,
                       tokenizer.spm_model_file or tokenizer.vocab_file,
                       self.config_file)
    except ValueError as e:
      raise UsageError(str(e)) from None
    self.best_path = os.path.join(settings.output_dir, "model.ckpt-best")
    self._tracker = None
    if self.init is not None:
      self.init = self.init.with_head_choice(self._choose_init_head)

  def keep_config(self):
    """Job.keep_config, then the run's tokenizer beside it (companions.keep_tokenizer): the
    output_dir is then a checkpoint that brings its config and its tokenizer. After the config:
    a run refused for its config writes no tokenizer."""
    super().keep_config()
    keep_tokenizer(self.settings.output_dir, self.settings.tokenizer)

  def needs_trained_model(self):
    return not self.settings.do_train

  # -- model, runner, training ------------------------------------------------------------------
  def build_with_steps(self, num_train_steps, num_warmup_steps):
    """Job.build with the task's schedule; a call never runs past a checkpoint (each is
    evaluated)."""
    train = self.settings.train
    self.build(dataclasses.replace(
        train, num_train_steps=num_train_steps, num_warmup_steps=num_warmup_steps,
        iterations_per_loop=min(train.iterations_per_loop, train.save_checkpoints_steps)))
    self._check_head()

  # -- the task head ----------------------------------------------------------------------------
  def task_record(self):
    """What this run's head is trained for: {"model": its model class, "task": the task name
    (None for a job of one task)}, kept in output_dir (companions.keep_task)."""
    return {"model": type(self.model).__name__, "task": getattr(self, "task_name", None)}

  def _check_head(self):
    """Once the model is built and its weights restored: refuses output_dir trained for another
    task, and a run that evaluates, predicts or exports (no --do_train) a head that
    --init_checkpoint lacks or that was trained for another task; then keeps the run's task in
    output_dir.

    Raises:
      errors.ResumeMismatchError: output_dir holds a model of another task.
      errors.CheckpointError: the head --init_checkpoint gives an untrained run is random or
        another task's.
    """
    s = self.settings
    task = self.task_record()
    kept = companions.kept_task(s.output_dir)
    if kept is not None and kept != task and self._holds_trained_model():
      raise errors.ResumeMismatchError(
          f"--output_dir={s.output_dir} holds a model fine-tuned as "
          f"{companions.describe_task(kept)} (kept in "
          f"{os.path.join(s.output_dir, companions.TASK_NAME)}), not "
          f"{companions.describe_task(task)}: use a new --output_dir")
    if self.init_report is not None and not s.do_train:
      self._check_init_head(task)
    if self.chief:
      companions.keep_task(s.output_dir, task)

  def _check_init_head(self, task):
    """The checks of _check_head on the --init_checkpoint an untrained run uses."""
    init = self.init
    missing = [n for n in self.init_report.missing if not layout.is_encoder_name(n)]
    if missing and not self.settings.allow_random_heads:
      listing = ", ".join(missing[:4]) + (f" (+{len(missing) - 4} more)" if len(missing) > 4
                                          else "")
      raise errors.CheckpointError(
          f"--init_checkpoint={init.path} has no {task['model']} head (it lacks {listing}), and "
          "this run evaluates, predicts or exports without --do_train: its results would come "
          "from a randomly initialised head. Fine-tune it (--do_train), point --init_checkpoint "
          "at a model fine-tuned for this task, or give --allow_random_heads to run with a "
          "random head")
    kept = init.task
    if kept is None or missing:
      return
    if self._is_other_task(kept, task, self.model):
      raise errors.CheckpointError(
          f"--init_checkpoint={init.path} holds a head fine-tuned as "
          f"{companions.describe_task(kept)}, and this run evaluates, predicts or exports "
          f"{companions.describe_task(task)} without --do_train: its answers would be the other "
          "task's. Point --init_checkpoint at a model fine-tuned for this task, or fine-tune "
          "this one (--do_train)")

  @staticmethod
  def _is_other_task(kept, task, model):
    """Whether the head of a checkpoint whose task record is `kept` (not None) was trained for
    another task than `task`, this run's record for `model`."""
    if "architecture" in kept:
      head = hf_heads.for_model(model)
      ours = head.architecture if head is not None else None
      return ours is not None and kept["architecture"] != ours and (
          kept["architecture"] not in _HEADLESS_ARCHITECTURES)
    return kept["model"] != task["model"] or (
        kept.get("task") is not None and task["task"] is not None
        and kept["task"] != task["task"])

  def _choose_init_head(self, model, mismatch):
    """Whether a run from --init_checkpoint loads its task head (the head choice of
    OpenedCheckpoint.with_head_choice, asked as the checkpoint loads into `model`): a training
    run (--do_train) starts a new head where the checkpoint's was fine-tuned for another task
    (its kept task record) or has another shape (another label count; `mismatch`, the
    original.ShapeMismatchError of its first such variable), and keeps the encoder. A run
    without --do_train keeps the head: one of another shape is refused here, one of another
    task by _check_init_head.

    Returns:
      None to load the head, else the one log line saying why it is new.

    Raises:
      errors.CheckpointError: a head of another shape for a run without --do_train.
    """
    init, task = self.init, {"model": type(model).__name__,
                             "task": getattr(self, "task_name", None)}
    kept = init.task
    other = kept is not None and self._is_other_task(kept, task, model)
    if not self.settings.do_train:
      if mismatch is not None:
        raise errors.CheckpointError(
            f"--init_checkpoint={init.path} holds a head of another shape ({mismatch.name} "
            f"{mismatch.checkpoint_shape}, this run's is {mismatch.model_shape}: another label "
            f"count), and this run evaluates, predicts or exports "
            f"{companions.describe_task(task)} without --do_train, keeping the head. Point "
            "--init_checkpoint at a model fine-tuned for this task, or fine-tune this one "
            "(--do_train: the encoder is kept and a new head trained)")
      return None
    if not other and mismatch is None:
      return None
    # The label counts, where the head is a classifier's (its output_weights [labels, H]).
    weights = layout.original_variable_map(model).get(_CLASSIFIER_WEIGHTS)
    source = init.variable_shapes.get(_CLASSIFIER_WEIGHTS)
    if mismatch is not None and mismatch.name == _CLASSIFIER_WEIGHTS:
      source = mismatch.checkpoint_shape
    source, ours = _outputs(source), _outputs(None if weights is None else list(weights.shape))
    was = companions.describe_task(kept) if kept is not None else "another head"
    if mismatch is not None and not (source and ours):
      source = f" ({mismatch.name} {mismatch.checkpoint_shape})"
      ours = f" ({mismatch.name} {mismatch.model_shape})"
    return (f"starting a new task head: --init_checkpoint={init.path} was fine-tuned as "
            f"{was}{source}, this run is {companions.describe_task(task)}{ours}; the encoder is "
            "kept")

  def train_on(self, path, make_dataset, after_save=None):
    """Trains on feature file `path`; make_dataset(seed, input_context) gives its batches.

    Length-grouped batches take a varying number of records each, so a run resumes by skipping
    whole batches of its seeded stream (unseeded: seeded with the seed kept in output_dir).
    """
    def dataset(ctx, start_step):
      d = make_dataset(self.data_seed, ctx)  # set by train()
      skip = start_step * epochs.batches_per_step(ctx)
      return d.skip(skip) if skip else d
    if after_save is not None:
      self._catch_up(after_save)
    self.train(dataset, [path], after_save)

  def is_evaluation_point(self, step):
    """Whether training evaluates at `step` (a scheduled checkpoint: every save_checkpoints_steps
    and the last step; not a save made because of preemption)."""
    train = self.train_settings
    return step % train.save_checkpoints_steps == 0 or step == train.num_train_steps

  def _catch_up(self, after_save):
    """Calls after_save (the evaluation) for each scheduled checkpoint that an earlier start of
    this run saved but did not evaluate (preempted at it, or killed right after it), in step
    order, then restores the training state resumed from: the results are then an
    uninterrupted run's."""
    last = self._tracker.last_step if self._tracker is not None else -1
    pending = {step: path for step, path in checkpoint_steps(self.settings.output_dir).items()
               if step > last and self.is_evaluation_point(step)}
    for step, path in pending.items():
      logger.info(f"evaluating {path}, saved but not evaluated before the run stopped")
      self.checkpoint.read(path).expect_partial()
      after_save(step, path)
    if pending:
      self.checkpoint.read(self.restored_from).expect_partial()

  def cached_features(self, path, write, length, inputs, *, what="features", named_by=None,
                      regenerate=False):
    """A feature file every worker can read: the chief runs write(target) unless the file was
    written from the same inputs (its stamp: see feature_cache), the other workers wait until it
    has; a cached file is checked to hold `length` ids per record. Returns the file to read:
    `path`, or in a directory runs share (--cached_dir) the file named after its stamp
    (feature_cache.cache_path), so that no other run writes over it.

    Args:
      path: the feature file, as the task names it.
      write: write(target) writes the features to file `target` (atomically).
      length: ids per record.
      inputs: what the features were made from, beside the tokenizer and max_seq_length: the
        data's SHA-256 (feature_cache.examples_sha256 or files_sha256), the labels, the task's
        lengths and columns.
      what: the file's kind, for the log.
      named_by: the flag that named `path`, when the user did (see feature_cache.checked).
      regenerate: write it whatever it holds.
    """
    stamp = feature_cache.make_stamp(self.settings.tokenizer,
                                     max_seq_length=self.settings.model.max_seq_length, **inputs)
    target = feature_cache.cache_path(path, stamp, output_dir=self.settings.output_dir,
                                      named_by=named_by)
    cached, write_stamped = feature_cache.checked(target, stamp, lambda: write(target),
                                                  named_by=named_by, regenerate=regenerate)
    strategies.run_on_chief(self.strategy, (lambda: None) if cached else write_stamped, target)
    if cached:
      check_cached_features(target, length)
      logger.info(f"using cached {what} {target}")
    return target

  def predictor(self, fn):
    """A Predictor of fn(features) -> per-example outputs; its run() gives file order."""
    predictor = Predictor(self.strategy, fn)
    return lambda dataset: in_file_order(predictor.run(dataset))

  # -- best checkpoint --------------------------------------------------------------------------
  def tracker(self, key_name):
    """The run's BestCheckpointTracker (training catches up with its pending evaluations)."""
    self._tracker = BestCheckpointTracker(self.settings.output_dir, key_name, writes=self.chief)
    return self._tracker

  def record(self, tracker, step, result):
    """Logs an evaluation, appends it to eval_results.txt and saves model.ckpt-best (the
    original's TF1 layout) when it is the best so far. Every worker of a multi-worker run calls
    it; the others wait until the chief has saved (they may load model.ckpt-best next)."""
    logger.info(f"***** Eval results at step {step} *****")
    for key in sorted(result):
      logger.info(f"  {key} = {result[key]}")

    def save_best():
      strategies.run_on_chief(self.strategy, lambda: save_original_checkpoint(
          self.model, self.best_path, global_step=step, update_checkpoint_state=False),
                              self.best_path)

    # The chief's decision, taken by every worker: save_best is a collective.
    improved = strategies.chief_decides(self.strategy, tracker.improves(result))
    if tracker.record(step, result, save_best, improved):
      logger.info(f"new best {tracker.key_name} = {result[tracker.key_name]}: "
                  f"saved {self.best_path}")

  def evaluate_checkpoints(self, tracker, evaluate):
    """evaluate() -> metrics for each model.ckpt-<step> of output_dir not evaluated yet, in step
    order (the original's eval loop; after training, the scheduled ones only); with none at all,
    for the model as initialised."""
    found = checkpoint_steps(self.settings.output_dir)
    # SIGTERM stops this once the checkpoint being evaluated is recorded (Preempted): the
    # restarted run evaluates the others.
    with self.preemptible("the evaluation"):
      for step, path in found.items():
        # A checkpoint saved because of preemption is no evaluation point of a training run.
        if step > tracker.last_step and not (self.settings.do_train
                                             and not self.is_evaluation_point(step)):
          self.checkpoint.read(path).expect_partial()
          logger.info(f"evaluating {path} (step {step})")
          self.record(tracker, step, evaluate())
          self._stop_if_signalled(tracker)
      self._stop_if_signalled(tracker)
    if not found and tracker.last_step < 0:
      # The step of the checkpoint evaluated, as the original's estimator.evaluate reports it:
      # a fine-tuned --init_checkpoint's own, 0 for one that holds none (HF, keras-hub).
      step = self.init.global_step if self.init else 0
      what = f"--init_checkpoint={self.init.location}" if self.init else "the initialised model"
      logger.info(f"evaluating {what} (step {step})")
      self.record(tracker, step, evaluate())

  def _stop_if_signalled(self, tracker):
    """Raises Preempted when a worker got SIGTERM (every worker alike: all of them stop after
    the same evaluation)."""
    if strategies.barrier(self.strategy, failed=bool(self.runner.stop_requested.numpy())):
      raise preemption.Preempted(tracker.last_step, None, phase="the evaluation")

  def serving_model(self):
    """The model to export: self.model, or where --serving_precision asks for another compute
    precision than the job's, a copy built under that policy holding self.model's weights."""
    return precision.serving_model(self.settings.serving_precision, self.make_model, self.model)

  def export_serving(self, module):
    """Writes serving module `module` as a SavedModel under <export_dir>/<timestamp>/ and
    returns that directory."""
    # Only an exporting run loads the serving code (tensorflow_text's ops among it).
    from albert_tf.export.saved_model import export_saved_model
    path = export_saved_model(module, os.fspath(self.settings.export_dir), int(time.time()))
    logger.info(f"Model exported to {path}.")
    return path

  def load_best(self, purpose="predicting"):
    """Loads model.ckpt-best if there is one, else the latest checkpoint, else init_checkpoint.

    Args:
      purpose: what the weights are for, in the log line ("predicting", "exporting").
    """
    tracker = self._tracker
    if not io.exists(self.best_path + ".index") and tracker is not None and (
        tracker.diverged_steps and tracker.best_step < 0):
      steps = ", ".join(str(step) for step in tracker.diverged_steps)
      raise errors.CheckpointError(
          f"no model for {purpose}: every evaluation of {self.settings.output_dir} had a loss "
          f"that is not finite (at step {steps}: the model diverged), so none became "
          "model.ckpt-best. Train again with a lower --learning_rate (or more warmup) in a new "
          "--output_dir")
    path = self.best_path if io.exists(self.best_path + ".index") else (
        tf.train.latest_checkpoint(self.settings.output_dir))
    if path:
      load_checkpoint(self.model, path)
    elif self.init is not None:
      path = self.init.path
      self.init.load_into(self.model)
    self.loaded_from = path
    logger.info(f"{purpose} with {path or 'the untrained model'}")
    return path
