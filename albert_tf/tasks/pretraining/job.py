"""run_pretraining's job: masked LM and sentence order (albert_tf.training.pretraining's
objective) on create_pretraining_data's TFRecords, through the shared job skeleton."""

import logging
import os

from albert_tf.core.io import expand_input_patterns, write_text_atomically
from albert_tf.data.pipeline import DynamicMasking, check_record_lengths, pretraining_dataset
from albert_tf.models import AlbertPretrainer
from albert_tf.tokenization import FullTokenizer
from albert_tf.training.job import Job, UsageError
from albert_tf.training.pretraining import PretrainingObjective

logger = logging.getLogger("albert_tf")


# Where a run keeps the record counts of its input files (read again only when one changes).
RECORD_COUNTS_FILE = "record_counts.json"


class PretrainingJob(Job):
  """run_pretraining: masked LM and sentence order on create_pretraining_data's TFRecords.

  Args:
    settings: a PretrainingSettings.

  Raises:
    UsageError: neither do_train nor do_eval; records of another sequence length or prediction
      count than the settings say; and Job's checks.
  """

  def __init__(self, settings):
    if not settings.do_train and not settings.do_eval:
      raise UsageError("At least one of `do_train` or `do_eval` must be True.")
    weight = settings.sentence_order_loss_weight
    if not weight >= 0:  # also NaN
      raise UsageError(f"--sentence_order_loss_weight must be >= 0 (0 trains the masked LM "
                       f"alone), got {weight}")
    super().__init__(settings)
    self.input_files = expand_input_patterns(settings.input_file)
    try:
      # After the strategy (in Job): reading a record initialises TensorFlow's devices.
      check_record_lengths(self.input_files[0], self.settings.model.max_seq_length,
                           settings.max_predictions_per_seq)
    except ValueError as e:
      raise UsageError(str(e)) from None
    logger.info(f"input files {self.input_files}")
    if settings.pack_sequences:
      logger.info(f"packing up to {settings.max_sequences_per_row} sequences into each row of "
                  f"{settings.model.max_seq_length} tokens: --train_batch_size counts rows")
    self.dynamic = self._dynamic_masking()

  def _dynamic_masking(self):
    s = self.settings
    if not s.masked_lm_budget:
      return None
    ids = (2, 3, 4)  # [CLS], [SEP], [MASK] in ALBERT's SentencePiece models
    if s.tokenizer.spm_model_file:
      ids = FullTokenizer(spm_model_file=s.tokenizer.spm_model_file).convert_tokens_to_ids(
          ["[CLS]", "[SEP]", "[MASK]"])
    return DynamicMasking(cls_id=ids[0], sep_id=ids[1], mask_id=ids[2],
                          vocab_size=self.config.vocab_size, masked_lm_prob=s.masked_lm_budget)

  def scheduled_train_steps(self):
    return self.settings.train.num_train_steps

  def make_model(self):
    return AlbertPretrainer(self.config)

  def objective(self):
    return PretrainingObjective(self.settings.sentence_order_loss_weight)

  def dataset(self, is_training, batch_size, input_context, start_step=0):
    s = self.settings
    return pretraining_dataset(self.input_files, s.model.max_seq_length,
                               s.max_predictions_per_seq, batch_size, is_training,
                               input_context=input_context, dynamic=self.dynamic,
                               seed=self.data_seed, start_step=start_step,
                               count_cache=(os.path.join(s.output_dir, RECORD_COUNTS_FILE),
                                            self.chief),
                               max_sequences_per_row=(s.max_sequences_per_row
                                                      if s.pack_sequences else None))

  def flow(self, after_save):
    """Trains (resuming from output_dir), then evaluates into eval_results.txt."""
    s = self.settings
    self.claim_output_dir()
    self.build()
    if s.do_train:
      self.train(lambda ctx, step: self.dataset(True, s.train.train_batch_size, ctx, step),
                 self.input_files, after_save)
    if s.do_eval:
      # SIGTERM here stops the evaluation (Preempted): the checkpoint is saved, the restarted
      # run resumes at the last step and evaluates.
      with self.preemptible("the evaluation"):
        # The newest checkpoint of output_dir (this run's last or the one resumed), else
        # init_checkpoint's, else the model as initialised.
        evaluated = (self.manager.latest_checkpoint or self.restored_from or
                     "the untrained model")
        logger.info(f"***** Running evaluation *****\n  Model = {evaluated}\n"
                    f"  Batch size = {s.eval_batch_size}\n  Steps = {s.max_eval_steps}")
        data = iter(self.strategy.distribute_datasets_from_function(
            lambda ctx: self.dataset(False, s.eval_batch_size, ctx)))
        result = self.runner.evaluate(data, s.max_eval_steps)
      logger.info("***** Eval results *****")
      if self.chief:
        write_text_atomically(os.path.join(s.output_dir, "eval_results.txt"),
                              "".join(f"{key} = {result[key]}\n" for key in sorted(result)))
      for key in sorted(result):
        logger.info(f"  {key} = {result[key]}")
