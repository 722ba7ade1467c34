"""What the fine-tuning binaries (run_classifier, run_race, run_squad_v1, run_squad_v2) share:
config and tokenizer from the flags, the strategy, the model with its runner and checkpoints,
training with an evaluation after each checkpoint, the original's best-checkpoint bookkeeping,
prediction, and loading model.ckpt-best.

Flag names are the original's: albert_config_file, spm_model_file, vocab_file, do_lower_case,
max_seq_length, output_dir, init_checkpoint, train_batch_size, learning_rate, optimizer, plus the
run flags of common_flags.
"""

import os
import sys

import tensorflow as tf

from albert_tf import common_flags
from albert_tf.checkpoints import checkpoint_global_step, load_checkpoint
from albert_tf.checkpoints import save_original_checkpoint
from albert_tf.config import AlbertConfig
from albert_tf.data import epochs
from albert_tf.finetuning.evaluation import BestCheckpointTracker, Predictor, checkpoint_steps
from albert_tf.finetuning.inputs import in_file_order
from albert_tf.optimization import create_optimizer
from albert_tf.tokenization import FullTokenizer, check_vocab_fits
from albert_tf.training import runner as runners
from albert_tf.training.lock import OutputDirLock
from albert_tf.training import strategy as strategies


class UsageError(ValueError):
  """A flag combination that cannot work (the binaries turn it into absl's UsageError)."""


def log(message):
  print(message, file=sys.stderr, flush=True)


class FineTuningJob:
  """Subclasses define make_model() (called inside the strategy scope) and objective()."""

  def __init__(self, flag_values):
    self.flags = f = flag_values
    self.config = AlbertConfig.from_json_file(f.albert_config_file)
    if f.max_seq_length > self.config.max_position_embeddings:
      raise UsageError(
          f"Cannot use sequence length {f.max_seq_length} because the ALBERT model was only "
          f"trained up to sequence length {self.config.max_position_embeddings}")
    if not f.spm_model_file and not f.vocab_file:
      raise UsageError("give --spm_model_file (SentencePiece) or --vocab_file (WordPiece)")
    self.tokenizer = FullTokenizer(vocab_file=f.vocab_file, do_lower_case=f.do_lower_case,
                                   spm_model_file=f.spm_model_file)
    try:
      check_vocab_fits(max(self.tokenizer.vocab.values()) + 1, self.config.vocab_size,
                       f.spm_model_file or f.vocab_file, f.albert_config_file)
    except ValueError as e:
      raise UsageError(str(e)) from None
    self.strategy = common_flags.strategy_from_flags(f.train_batch_size)
    self.chief = strategies.is_chief(self.strategy)
    self.model_dir = strategies.worker_dir(self.strategy, f.output_dir)
    self.best_path = os.path.join(f.output_dir, "model.ckpt-best")
    log(f"strategy {strategies.describe(self.strategy)} with "
        f"{self.strategy.num_replicas_in_sync} replicas")

  def claim_output_dir(self):
    """Call once the inputs are checked, before anything is written: refuses to go on without a
    model to evaluate, predict or export, creates output_dir and takes its lock."""
    self._check_there_is_a_model()
    os.makedirs(self.flags.output_dir, exist_ok=True)
    if self.chief:
      OutputDirLock(self.flags.output_dir, log).acquire()

  def _check_there_is_a_model(self):
    """Evaluating, predicting or exporting without training needs trained weights: a checkpoint
    in output_dir or --init_checkpoint. Without them the binaries would write a randomly
    initialised model's results (and model.ckpt-best) as if it were trained."""
    f = self.flags
    if f.do_train or f.init_checkpoint:
      return
    if os.path.isdir(f.output_dir) and (tf.train.latest_checkpoint(f.output_dir)
                                        or os.path.exists(self.best_path + ".index")):
      return
    raise UsageError(
        f"nothing to evaluate, predict or export: --output_dir={f.output_dir} holds no "
        "checkpoint (model.ckpt-<step> or model.ckpt-best) and --init_checkpoint is not set. "
        "Train first (--do_train), or point --output_dir or --init_checkpoint at a fine-tuned "
        "model")

  def make_model(self):
    raise NotImplementedError

  def objective(self):
    raise NotImplementedError

  # -- model, runner, checkpoints ---------------------------------------------------------------
  def build(self, num_train_steps, num_warmup_steps):
    f = self.flags
    self.settings = runners.TrainSettings(
        learning_rate=f.learning_rate, num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        gradient_accumulation_steps=f.gradient_accumulation_steps,
        iterations_per_loop=min(f.iterations_per_loop, f.save_checkpoints_steps),
        save_checkpoints_steps=f.save_checkpoints_steps,
        keep_checkpoint_max=f.keep_checkpoint_max, jit_compile=f.jit_compile)
    with self.strategy.scope():
      self.model = self.make_model()
      optimizer = create_optimizer(f.optimizer)
      loss_scale = common_flags.loss_scale_from_flags()
    self.runner = runners.Runner(self.strategy, self.model, optimizer, self.settings,
                                 self.objective(), loss_scale)
    self.checkpoint = self.runner.checkpoint()
    self.manager = runners.checkpoint_manager(self.checkpoint, self.model_dir,
                                              f.keep_checkpoint_max, log)
    runners.restore_or_initialize(self.checkpoint, self.model, f.output_dir, f.init_checkpoint,
                                  log)

  def train(self, make_dataset, after_save=None):
    """Trains to num_train_steps; make_dataset(seed, input_context) gives the training input."""
    f = self.flags

    def train_iterator(step):
      # Length-grouped batches take a varying number of records each, so a seeded resume skips
      # whole batches of the seeded stream; unseeded, a resumed run starts a new order.
      skip = 0 if f.data_seed is None else step

      def dataset(ctx):
        d = make_dataset(f.data_seed, ctx)
        return d.skip(skip * epochs.batches_per_step(ctx)) if skip else d
      return iter(self.strategy.distribute_datasets_from_function(dataset))

    writer = (tf.summary.create_file_writer(os.path.join(self.model_dir, "train"))
              if self.chief else None)
    runners.install_sigterm_handler(log)
    try:
      runners.run_training(self.runner, train_iterator, self.manager, self.settings, log, writer,
                           examples_per_step=f.train_batch_size, after_save=after_save)
    except tf.errors.DataLossError as e:
      raise RuntimeError(f"corrupt TFRecord data ({e.message}); delete the cached feature file "
                         "to regenerate it") from e

  def predictor(self, fn):
    """A Predictor of fn(features) -> per-example outputs; its run() gives file order."""
    predictor = Predictor(self.strategy, fn)
    return lambda dataset: in_file_order(predictor.run(dataset))

  # -- best checkpoint --------------------------------------------------------------------------
  def tracker(self, key_name):
    return BestCheckpointTracker(self.flags.output_dir, key_name, writes=self.chief)

  def record(self, tracker, step, result):
    """Logs an evaluation, appends it to eval_results.txt and saves model.ckpt-best (the
    original's TF1 layout) when it is the best so far. Every worker of a multi-worker run calls
    it; the others wait until the chief has saved (they may load model.ckpt-best next)."""
    log(f"***** Eval results at step {step} *****")
    for key in sorted(result):
      log(f"  {key} = {result[key]}")

    def save_best():
      strategies.run_on_chief(self.strategy, lambda: save_original_checkpoint(
          self.model, self.best_path, global_step=step, update_checkpoint_state=False),
                              self.best_path)

    if tracker.record(step, result, save_best):
      log(f"new best {tracker.key_name} = {result[tracker.key_name]}: saved {self.best_path}")

  def evaluate_checkpoints(self, tracker, evaluate):
    """evaluate() -> metrics for each model.ckpt-<step> of output_dir not evaluated yet, in step
    order (the original's eval loop); with none at all, for the model as initialised."""
    f = self.flags
    found = checkpoint_steps(f.output_dir)
    for step, path in found.items():
      if step > tracker.last_step:
        self.checkpoint.read(path).expect_partial()
        self.record(tracker, step, evaluate())
    if not found and tracker.last_step < 0:
      step = checkpoint_global_step(f.init_checkpoint) if f.init_checkpoint else 0
      self.record(tracker, step, evaluate())

  def load_best(self):
    """model.ckpt-best if there is one, else the latest checkpoint, else init_checkpoint."""
    path = self.best_path if os.path.exists(self.best_path + ".index") else (
        tf.train.latest_checkpoint(self.flags.output_dir) or self.flags.init_checkpoint)
    if path:
      load_checkpoint(self.model, path)
    self.loaded_from = path
    log(f"predicting with {path or 'the untrained model'}")
    return path
