"""Checkpoints of a training run's output_dir: listing them, saving without overwriting another
run's, cleaning up after an interrupted save, and resuming from the newest readable one (or
starting from --init_checkpoint).

A job (training/job.py) resumes through restore_or_initialize and hands the training loop
(training/runner.py) a checkpoint_manager to save with; fine-tuning's evaluation bookkeeping
(finetuning/evaluation.py) finds the steps to evaluate through checkpoint_steps.
"""

import logging
import math
import os
import re
import time

import tensorflow as tf

from albert_tf.core import errors, io
from albert_tf.checkpoints import load_checkpoint
from albert_tf.checkpoints.opened import UnreadableCheckpointError, open_checkpoint

logger = logging.getLogger("albert_tf")


def checkpoint_steps(directory):
  """{step: prefix} of the model.ckpt-<step> checkpoints in a directory."""
  found = {}
  if io.isdir(directory):
    for name in io.listdir(directory):
      m = re.fullmatch(r"model\.ckpt-(\d+)\.index", name)
      if m:
        found[int(m.group(1))] = os.path.join(directory, name[:-len(".index")])
  return dict(sorted(found.items()))


def remove_partial_checkpoints(directory):
  """Deletes the temporary folders a run killed while saving a checkpoint leaves behind (the
  shards are written there, then moved under the final name). Call only while
  holding the output_dir's lock: a live run's save looks the same."""
  # model.ckpt-<step>_temp: tf.train.Checkpoint's shards; .tmp_ckpt_*: save_original_checkpoint's
  # (model.ckpt-best).
  for pattern in ("model.ckpt-*_temp", ".tmp_ckpt_*"):
    for path in io.glob_files(os.path.join(directory, pattern)):
      if io.isdir(path):
        logger.info(f"removing {path}, a checkpoint left unfinished by an interrupted run")
        io.rmtree(path)


class NoClobberCheckpointManager(tf.train.CheckpointManager):
  """A CheckpointManager that refuses to save over a readable model.ckpt-<step> it finds in its
  directory: a run saves each step once, so such a file is another run's (or an earlier start's)
  work, which the run would otherwise replace with other weights without a word."""

  def save(self, checkpoint_number=None, check_interval=True, options=None):
    if checkpoint_number is not None:
      prefix = f"{self._prefix}-{int(checkpoint_number)}"
      if io.exists(prefix + ".index") and _readable(prefix):
        raise errors.CheckpointError(
            f"not saving step {int(checkpoint_number)}: {prefix} exists and this run did not "
            f"write it (it resumed from an earlier step); saving would overwrite it with other "
            f"weights. Move {prefix}.* out of {self.directory}, or use a new --output_dir")
    return super().save(checkpoint_number=checkpoint_number, check_interval=check_interval,
                        options=options)


def _readable(prefix):
  """Whether every tensor of checkpoint `prefix` can be read (an unreadable one holds nothing
  worth keeping: resuming already passed over it, with a log line)."""
  try:
    reader = tf.train.load_checkpoint(prefix)
    for name in reader.get_variable_to_shape_map():
      reader.get_tensor(name)
  except (tf.errors.OpError, IndexError):  # the reader raises IndexError for a truncated file
    return False
  return True


def _list_missing_checkpoints(directory):
  """Writes the checkpoint state file anew when model.ckpt-<step> files in `directory` are
  missing from it (the file was deleted, or a run was killed between a save and its state
  update): the manager then counts them against keep_checkpoint_max, and
  tf.train.latest_checkpoint names the newest."""
  found = checkpoint_steps(directory)
  if not found:
    return
  state = tf.train.get_checkpoint_state(directory)
  listed = {os.path.basename(p) for p in state.all_model_checkpoint_paths} if state else set()
  if state:
    listed.add(os.path.basename(state.model_checkpoint_path))
  names = [os.path.basename(p) for p in found.values()]
  if set(names) <= listed:
    return
  # Relative names: TensorFlow resolves them in `directory`, whatever --output_dir looks like.
  # Dated now, they are removed oldest first as the run saves (keep_checkpoint_max).
  now = time.time()
  tf.compat.v1.train.update_checkpoint_state(directory, names[-1], names,
                                             all_model_checkpoint_timestamps=[now] * len(names),
                                             last_preserved_timestamp=now - 1)
  logger.info(f"{'wrote' if state is None else 'rewrote'} the checkpoint state file "
              f"{os.path.join(directory, 'checkpoint')}, listing {', '.join(names)}")


def checkpoint_manager(checkpoint, directory, keep_checkpoint_max):
  """Saves as <directory>/model.ckpt-<step>, the original's names, never over a checkpoint it
  did not write (NoClobberCheckpointManager). keep_checkpoint_max 0 or None keeps every
  checkpoint (as the original's fine-tuning binaries do). First removes what an interrupted save
  left in `directory` (see remove_partial_checkpoints), logging it, and lists every
  model.ckpt-<step> there in the checkpoint state file. Call only while holding the output_dir's
  lock."""
  if io.isdir(directory):
    remove_partial_checkpoints(directory)
    _list_missing_checkpoints(directory)
  return NoClobberCheckpointManager(checkpoint, directory,
                                    max_to_keep=keep_checkpoint_max or None,
                                    checkpoint_name="model.ckpt", step_counter=None)


def resume_candidates(output_dir):
  """The checkpoints of output_dir to resume from, newest step first: every model.ckpt-<step>
  there, whether or not the checkpoint state file lists it, and what the state file lists.
  A missing state file (deleted by hand) or one that a kill left behind its newest save must
  not make a run start afresh over the work already saved."""
  if not io.isdir(output_dir):
    return []
  # Its paths are the checkpoint file's, relative ones already taken in output_dir.
  state = tf.train.get_checkpoint_state(output_dir)
  listed = ([state.model_checkpoint_path] + list(state.all_model_checkpoint_paths)
            if state else [])
  by_name = {os.path.basename(p): p for p in listed}
  for path in checkpoint_steps(output_dir).values():
    by_name.setdefault(os.path.basename(path), path)

  def step(name):
    m = re.fullmatch(r"model\.ckpt-(\d+)", name)
    return int(m.group(1)) if m else math.inf  # a name of its own: the state file's latest
  return [by_name[name] for name in sorted(by_name, key=step, reverse=True)]


def resume(checkpoint, model, output_dir):
  """Resumes from the newest readable checkpoint in output_dir (model, optimizer, step): the
  newest model.ckpt-<step> there, listed in the checkpoint state file or not (a missing state
  file is logged). One that cannot be read (a truncated data file, an unreadable index) falls
  back to the one before it, with a log line naming both. Returns the checkpoint path resumed
  from, or None when output_dir holds none.

  Raises:
    CheckpointError: checkpoints in output_dir, none of them readable; or one of another
      config, task or optimizer.
  """
  candidates = resume_candidates(output_dir)
  state_file = os.path.join(output_dir, "checkpoint")
  unreadable = []
  for path in candidates:
    try:
      _resume(checkpoint, model, path)
    # The reader raises IndexError for a truncated data file.
    except (tf.errors.OpError, IndexError, UnreadableCheckpointError) as e:
      unreadable.append(path)
      logger.info(f"cannot read checkpoint {path} ({_first_line(getattr(e, 'message', e))}): "
                  "falling back to the one before it")
      continue
    if unreadable:
      logger.info(f"resumed from {path} instead of the unreadable {unreadable[0]}")
    if not io.exists(state_file):
      logger.info(f"the checkpoint state file {state_file} is missing: resuming from the newest "
                  f"readable checkpoint in {output_dir}, {os.path.basename(path)}")
    logger.info(f"resumed from {path} at step {int(checkpoint.global_step.numpy())}")
    return path
  if unreadable:
    raise errors.CheckpointError(
        f"no readable checkpoint in {output_dir}: {', '.join(unreadable)} cannot be read. Remove "
        "them (and the checkpoint file) to start afresh, or use another --output_dir")
  return None


def restore_or_initialize(checkpoint, model, output_dir, init_checkpoint, init_from_group0=False):
  """Resumes from output_dir (resume), else loads the model weights of init_checkpoint (a path,
  or a checkpoint already opened: checkpoints.open_checkpoint), else keeps the fresh weights.
  Returns the checkpoint path used, or None.

  Raises:
    CheckpointError: as resume, or an init_checkpoint that cannot be read.
  """
  path = resume(checkpoint, model, output_dir)
  if path is not None or not init_checkpoint:
    return path
  initialize(model, init_checkpoint, init_from_group0)
  return os.fspath(init_checkpoint)


def initialize(model, init_checkpoint, init_from_group0=False):
  """Loads the model weights of init_checkpoint (a path, or a checkpoint already opened:
  checkpoints.open_checkpoint) into `model`, logs what was loaded and missing, and returns the
  LoadReport."""
  opened = open_checkpoint(init_checkpoint)
  report = opened.load_into(model, init_from_group0)
  logger.info(f"initialised from {opened.path}: {report}")
  return report


def _first_line(text):
  return str(text).strip().splitlines()[0] if str(text).strip() else ""


def _resume(checkpoint, model, path):
  """Restores the training state of `path`. Raises UnreadableCheckpointError (or the reader's
  tf.errors.OpError, IndexError) for an unreadable checkpoint; ResumeMismatchError for one of
  another config, task or optimizer."""
  try:
    # Checks the model's variables against the checkpoint's first: restoring the whole
    # training state would leave variables of a changed config or task at random values.
    report = load_checkpoint(model, path)
    if report.missing:
      raise ValueError(f"it lacks {', '.join(report.missing)}")
    checkpoint.read(path).expect_partial()
  except UnreadableCheckpointError:
    raise
  except (KeyError, ValueError) as e:
    reason = e.args[0] if e.args else e
    raise errors.ResumeMismatchError(
        f"cannot resume from {path}: {reason}. A checkpoint in output_dir is resumed with "
        "the albert_config, task and optimizer it was trained with: use those, or a new "
        "--output_dir") from None
