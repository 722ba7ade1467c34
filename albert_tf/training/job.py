"""The one job skeleton behind every training binary (run_pretraining, run_classifier, run_race,
run_squad_v1, run_squad_v2): settings -> config and strategy -> claim of output_dir (lock, no
results without a model) -> model, optimizer, Runner and checkpoints (resume, or init) ->
training input built once -> training with summaries and an after-save hook -> finish.

Subclasses give the model (make_model), what is trained (objective) and the flow (run); each check
of the settings is here once: max_seq_length against max_position_embeddings, the batch split over
replicas, corrupt TFRecords, the output_dir lock.
"""

import dataclasses
import logging
import os

import tensorflow as tf

from albert_tf.core import errors, io
from albert_tf.checkpoints import companions, formats
from albert_tf.checkpoints.opened import open_checkpoint
from albert_tf.core.config import AlbertConfig, check_max_seq_length
from albert_tf.data import epochs
from albert_tf.optimization import create_optimizer
from albert_tf.training import checkpointing, memory, precision, preemption
from albert_tf.training import runner as runners
from albert_tf.training import strategy as strategies
from albert_tf.training.lock import OutputDirLock

logger = logging.getLogger("albert_tf")


# Where an unseeded run keeps the data seed it drew, in output_dir.
DATA_SEED_FILE = "data_seed.txt"
# Where a run keeps its model config, in output_dir (the released models' name): a resume is
# checked against it, and --init_checkpoint=<output_dir> reads it (checkpoints.companions).
CONFIG_FILE = companions.CONFIG_NAME


# Settings that cannot work together (the binaries report it as a flag error).
UsageError = errors.UsageError


def create_strategy(run, train):
  """The precision policy, the seed and the tf.distribute strategy of RunSettings `run`; checks
  that train.train_batch_size splits over replicas x accumulation steps."""
  precision.set_policy(run.mixed_precision)
  if run.random_seed is not None:
    import keras
    keras.utils.set_random_seed(run.random_seed)
  strategy = strategies.create_strategy(run.strategy, run.use_tpu, run.tpu_name, run.tpu_zone,
                                        run.gcp_project, run.master, run.cpu_devices)
  split = strategy.num_replicas_in_sync * train.gradient_accumulation_steps
  if train.train_batch_size % split:
    raise UsageError(
        f"--train_batch_size={train.train_batch_size} must be divisible by replicas "
        f"({strategy.num_replicas_in_sync}) x --gradient_accumulation_steps "
        f"({train.gradient_accumulation_steps})")
  return strategy


def config_differences(saved, given):
  """`field value (was saved value)` for each field or extra key in which two AlbertConfigs
  differ, in field order."""
  saved_values, given_values = saved.to_dict(), given.to_dict()

  def value(config, values, key):
    # A field left out of to_dict (parameter_sharing at its default) has its default.
    return values[key] if key in values else getattr(config, key, None)
  keys = list(given_values) + [k for k in saved_values if k not in given_values]
  return [f"{key} {value(given, given_values, key)!r} (was "
          f"{value(saved, saved_values, key)!r})" for key in keys
          if value(given, given_values, key) != value(saved, saved_values, key)]


class Job:
  """Settings in, one run out.

  Args:
    settings: a JobSettings (PretrainingSettings, ClassifierSettings, ...).

  Raises:
    UsageError: settings that cannot work (e.g. max_seq_length above max_position_embeddings).
  """

  def __init__(self, settings):
    self.settings = settings
    model = settings.model
    # Opened once: every question of the run about it (config, tokenizer, task, step, weights)
    # is asked of this one object.
    self.init = open_checkpoint(model.init_checkpoint)
    self.init_report = None  # the LoadReport of init, once build() has loaded it
    try:
      self.config, self.config_file = formats.model_config(model.albert_config_file, self.init)
    except ValueError as e:
      if model.albert_config_file:
        raise
      raise UsageError(str(e)) from None
    if model.albert_dropout is not None:
      # Kept in output_dir with the rest of the config: a resume must give the same dropout.
      self.config = self.config.replace(hidden_dropout_prob=model.albert_dropout,
                                        attention_probs_dropout_prob=model.albert_dropout)
      logger.info(f"encoder dropout {model.albert_dropout} (--albert_dropout; "
                  f"{self.config_file} is not changed)")
    if (model.max_seq_length_is_default and
        model.max_seq_length > self.config.max_position_embeddings):
      # The original's default (512) cannot work on a smaller config: use what it can.
      model = dataclasses.replace(model, max_seq_length=self.config.max_position_embeddings)
      self.settings = settings = dataclasses.replace(settings, model=model)
      logger.info(f"max_seq_length {model.max_seq_length}: max_position_embeddings of "
                  f"{self.config_file} (the default is above it)")
    check_max_seq_length(model.max_seq_length, self.config, self.config_file)
    self.strategy = create_strategy(settings.run, settings.train)
    self.chief = strategies.is_chief(self.strategy)
    self.model_dir = strategies.worker_dir(self.strategy, settings.output_dir)
    self._lock = None
    self.data_seed = settings.run.data_seed  # unseeded: drawn or read by train()
    logger.info(f"strategy {strategies.describe(self.strategy)} with "
                f"{self.strategy.num_replicas_in_sync} replicas")

  # -- what subclasses give ---------------------------------------------------------------------
  def make_model(self):
    """The keras.Model to train (called inside the strategy's scope)."""
    raise NotImplementedError

  def objective(self):
    """The runner's Objective (see albert_tf.training.runner)."""
    raise NotImplementedError

  def scheduled_train_steps(self):
    """The step training ends at, when the settings alone give it (None where the data sets
    it, as SQuAD's epochs do): a run resuming there trains no step (training.memory.trains)."""
    return None

  def needs_trained_model(self):
    """True when the run only evaluates, predicts or exports: it then needs a checkpoint in
    output_dir or an init_checkpoint."""
    return False

  def flow(self, after_save):
    """The binary's flow (subclasses): claim_output_dir, build, train, evaluate..."""
    raise NotImplementedError

  def run(self, after_save=None):
    """Runs the binary's flow; after_save(step, path) runs after each checkpoint. Whatever
    happens, output_dir is released at the end (a failed job can be run again in-process)."""
    try:
      self.flow(after_save)
    finally:
      self.finish()

  # -- the skeleton -----------------------------------------------------------------------------
  def claim_output_dir(self):
    """Call once the inputs are checked, before anything is written: refuses to go on without
    a model when one is needed, or without the memory of the run's largest part (training,
    evaluation, prediction or export: training.memory), creates output_dir and takes its lock
    (chief), then checks the config against the one output_dir was trained with (see
    keep_config)."""
    output_dir = self.settings.output_dir
    if self.needs_trained_model() and not self.settings.model.init_checkpoint and not (
        self._holds_trained_model()):
      raise UsageError(
          f"nothing to evaluate, predict or export: --output_dir={output_dir} holds no "
          "checkpoint (model.ckpt-<step> or model.ckpt-best) and --init_checkpoint is not set. "
          "Train first (--do_train), or point --output_dir or --init_checkpoint at a "
          "fine-tuned model")
    # Before output_dir is written to (albert_config.json included): a run that cannot fit,
    # whether it trains or only evaluates, predicts or exports, stops now, not killed later.
    memory.check_job(self)
    io.makedirs(output_dir)

    def take_lock():
      self._lock = OutputDirLock(output_dir).acquire()
      self.keep_config()
    # Through the chief: a lock it cannot take stops every worker, not the chief alone.
    strategies.run_on_chief(self.strategy, take_lock, f"the lock of {output_dir}")

  def _holds_trained_model(self):
    output_dir = self.settings.output_dir
    return bool(checkpointing.resume_candidates(output_dir)) or io.exists(
        os.path.join(output_dir, "model.ckpt-best.index"))

  def keep_config(self):
    """Keeps the run's config in output_dir (CONFIG_FILE), written at the first start; a later
    start with a trained model there must give the same config. An output_dir trained before
    the config was kept gets it now.

    Raises:
      ResumeMismatchError: the config differs from the one output_dir was trained with, naming
        each field with both values.
    """
    output_dir = self.settings.output_dir
    path = os.path.join(output_dir, CONFIG_FILE)
    if io.exists(path) and self._holds_trained_model():
      differences = config_differences(AlbertConfig.from_json_file(path), self.config)
      if differences:
        raise errors.ResumeMismatchError(
            f"cannot resume from {output_dir}: it was trained with the config in {path}, and "
            f"{self.config_file} differs in {'; '.join(differences)}. Resume with the same "
            f"--albert_config_file (a copy is {path}), or use a new --output_dir")
      return
    if self._holds_trained_model():
      logger.info(f"{output_dir} holds checkpoints but no {CONFIG_FILE} (a run from before it "
                  f"was kept): writing {self.config_file}'s there")
    self.config.to_json_file(path)

  def _resolve_data_seed(self):
    """The seed of the training input's order and masks, kept in DATA_SEED_FILE so that a
    resumed run goes on with the same order, and the same masks: --data_seed, which the first
    start writes there; unseeded, the seed kept there, else a fresh draw (as the original's
    unseeded input) written there.

    Raises:
      ResumeMismatchError: --data_seed differs from the seed output_dir was trained with.
    """
    seed = self.settings.run.data_seed
    path = os.path.join(self.settings.output_dir, DATA_SEED_FILE)
    trained = self._holds_trained_model()

    def keep():
      kept = int(io.read_text(path)) if io.exists(path) else None
      if seed is None:
        if kept is None:
          io.write_text_atomically(path, f"{epochs.resolve_seed(None)}\n")
      elif kept != seed:
        if kept is not None and trained:
          raise errors.ResumeMismatchError(
              f"--data_seed={seed}: {self.settings.output_dir} was trained with data seed "
              f"{kept} (kept in {path}); another seed would resume with another order of the "
              f"data. Resume with --data_seed={kept} (or without the flag), or use a new "
              "--output_dir")
        io.write_text_atomically(path, f"{seed}\n")
    strategies.run_on_chief(self.strategy, keep, path)
    kept = int(io.read_text(path))
    if seed is None:
      logger.info(f"data seed {kept} (kept in {path} for resuming)")
    return kept

  def build(self, train=None):
    """The model, optimizer, Runner and checkpoint manager; resumes from output_dir, else loads
    init_checkpoint. `train` replaces settings.train (e.g. steps counted from the data)."""
    train = train or self.settings.train
    self.train_settings = train
    with self.strategy.scope():
      self.model = self.make_model()
      optimizer = create_optimizer(train.optimizer)
      loss_scale = precision.loss_scale_for(self.settings.run.mixed_precision)
    self.runner = runners.Runner(self.strategy, self.model, optimizer, train, self.objective(),
                                 loss_scale)
    self.checkpoint = self.runner.checkpoint()
    model = self.settings.model
    # Before the manager: it lists the checkpoints in the state file, which the resume
    # reports missing.
    self.restored_from = checkpointing.resume(self.checkpoint, self.model,
                                              self.settings.output_dir)
    if self.restored_from is None and self.init is not None:
      self.init_report = checkpointing.initialize(self.model, self.init, model.init_from_group0)
      self.restored_from = self.init.path
    if not self.chief and io.isdir(self.model_dir):
      io.rmtree(self.model_dir)  # a killed start's scratch saves, of the steps to come
    self.manager = checkpointing.checkpoint_manager(self.checkpoint, self.model_dir,
                                                    train.keep_checkpoint_max)

  def preemptible(self, phase=None):
    """A PreemptionWatcher of the runner: SIGTERM within stops training (or `phase`, an
    evaluation after the checkpoint is saved) at a step boundary with Preempted."""
    return preemption.PreemptionWatcher(self.runner.stop_requested, phase)

  def train(self, make_dataset, inputs, after_save=None):
    """Trains to num_train_steps.

    Args:
      make_dataset: (input_context, start_step) -> this input pipeline's dataset of per-replica
        batches from the step the run starts (or resumes) at; built once per run.
      inputs: the files it reads (named when one is corrupt).
      after_save: (step, checkpoint path) -> None, after each scheduled checkpoint (not after
        a save made because of preemption).

    Raises:
      Preempted: SIGTERM stopped the run, after saving the checkpoint of the step reached.
    """
    self.data_seed = self._resolve_data_seed()
    self._check_records_consumed()

    def iterator(step):
      return iter(self.strategy.distribute_datasets_from_function(
          lambda ctx: make_dataset(ctx, step)))

    actions = []
    if self.chief:
      writer = tf.summary.create_file_writer(os.path.join(self.model_dir, "train"))
      actions.append(runners.summary_action(writer, self.train_settings.train_batch_size))
    if after_save is not None:
      actions.append(runners.after_save_action(after_save))
    try:
      with self.preemptible():
        runners.run_training(self.runner, iterator, self.manager, self.train_settings, actions)
    except tf.errors.DataLossError as e:
      raise errors.DataFormatError(
          f"corrupt TFRecord data in {inputs} ({e.message}); regenerate the file (a cached "
          f"feature file: delete it). The last checkpoint is {self.manager.latest_checkpoint}"
      ) from e

  def _check_records_consumed(self):
    """The input resumes at step x train_batch_size records: refuses a resume whose checkpoint
    consumed another number (trained with another --train_batch_size), which would train on
    records again or skip some."""
    step = int(self.runner.global_step.numpy())
    consumed = int(self.runner.records_consumed.numpy())
    batch_size = self.train_settings.train_batch_size
    # 0 at a later step: a checkpoint from before records were counted.
    if consumed and consumed != step * batch_size:
      raise UsageError(
          f"--train_batch_size={batch_size}: the checkpoint in {self.settings.output_dir} was "
          f"trained on {consumed} records in {step} steps, not {step} x {batch_size}; resume "
          f"with the --train_batch_size it was trained with, or use a new --output_dir")

  def finish(self):
    """Releases output_dir; a non-chief worker removes its scratch checkpoints."""
    if not self.chief and io.isdir(self.model_dir):
      io.rmtree(self.model_dir)
    if self._lock is not None:
      self._lock.release()

