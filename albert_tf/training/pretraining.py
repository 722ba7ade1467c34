"""Pretraining: the objective (MLM + sentence order) on the shared training runner, and the job
behind run_pretraining.

The sentence loss trains on whatever pairs the data holds: create_pretraining_data's default
pairs are sentence order (SOP: label 1 = the two segments swapped), with --random_next_sentence
next-sentence prediction (NSP: label 1 = segment B from another document). Its weight
(sentence_order_loss_weight) scales it; 0 leaves MLM alone (the paper's Table 5).

Losses are normalised over the whole global batch (every replica and micro-batch): the MLM loss is
sum(w * nll) / (sum(w) + 1e-5) and the SOP loss the mean over all examples, so an update equals
the original's single-device update on the same global batch, however it is split.
"""

import logging
import os

import tensorflow as tf

from albert_tf.data.packing import is_packed
from albert_tf.data.pipeline import DynamicMasking, check_record_lengths, pretraining_dataset
from albert_tf.core.io import expand_input_patterns, write_text_atomically
from albert_tf.models import AlbertPretrainer
from albert_tf.models.losses import masked_lm_loss, sentence_order_loss
from albert_tf.tokenization import FullTokenizer
from albert_tf.training.job import Job, UsageError
from albert_tf.training.runner import Objective, Runner

logger = logging.getLogger("albert_tf")


# Where a run keeps the record counts of its input files (read again only when one changes).
RECORD_COUNTS_FILE = "record_counts.json"


def metrics_from_sums(sums):
  """The original's eval metrics from summed quantities."""
  return {
      "masked_lm_accuracy": sums["mlm_correct"] / max(sums["mlm_weight"], 1e-12),
      "masked_lm_loss": sums["mlm_nll_sum"] / max(sums["mlm_weight"], 1e-12),
      "sentence_order_accuracy": sums["sop_correct"] / max(sums["examples"], 1e-12),
      "sentence_order_loss": sums["sop_nll_sum"] / max(sums["examples"], 1e-12),
  }


def _sequence_count(features):
  """The sequences of a batch: its rows, or the sequences packed into them."""
  if is_packed(features):
    return tf.reduce_sum(tf.cast(features["sequence_weights"], tf.float32))
  return tf.cast(tf.shape(features["input_ids"])[0], tf.float32)


# The sentence-order metrics: not trained (nor logged) at sentence_order_loss_weight 0.
_SOP_METRICS = ("sentence_order_accuracy", "sentence_order_loss")


class PretrainingObjective(Objective):
  """MLM + SOP with the original's per-example losses (models.losses), normalised globally.

  Args:
    sentence_order_loss_weight: float >= 0. The sentence loss's weight in the total (1.0, the
      original's). 0 trains the masked LM alone (the paper's Table 5 "None"): training logs and
      summaries then carry no sentence-order metrics; evaluation still reports them, as the
      paper's table does (an untrained head: chance accuracy).
  """

  def __init__(self, sentence_order_loss_weight: float = 1.0):
    self.sentence_order_loss_weight = sentence_order_loss_weight

  def totals(self, features):
    return {"mlm_weight": tf.reduce_sum(tf.cast(features["masked_lm_weights"], tf.float32)),
            "examples": _sequence_count(features)}

  def sums(self, outputs, features):
    _, mlm_nll, log_probs = masked_lm_loss(outputs["masked_lm_logits"], features["masked_lm_ids"],
                                           features["masked_lm_weights"])
    ids = tf.reshape(features["masked_lm_ids"], [-1])
    weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
    mlm_correct = tf.cast(tf.equal(tf.argmax(log_probs, -1, output_type=tf.int32), ids),
                          tf.float32)
    # Packed rows hold [B, K] sentence-order logits, one per sequence slot: their sums count the
    # slots that hold a sequence.
    _, sop_nll, sop_log_probs = sentence_order_loss(
        tf.reshape(outputs["sentence_order_logits"], [-1, 2]), features["next_sentence_labels"])
    labels = tf.reshape(features["next_sentence_labels"], [-1])
    sop_correct = tf.cast(tf.equal(tf.argmax(sop_log_probs, -1, output_type=tf.int32), labels),
                          tf.float32)
    if is_packed(features):
      sequences = tf.reshape(features["sequence_weights"], [-1])
      sop_nll, sop_correct = sequences * sop_nll, sequences * sop_correct
    return {
        "mlm_nll_sum": tf.reduce_sum(weights * mlm_nll),
        "mlm_correct": tf.reduce_sum(weights * mlm_correct),
        "mlm_weight": tf.reduce_sum(weights),
        "sop_nll_sum": tf.reduce_sum(sop_nll),
        "sop_correct": tf.reduce_sum(sop_correct),
        "examples": _sequence_count(features),
    }

  def loss(self, sums, totals):
    mlm = sums["mlm_nll_sum"] / (totals["mlm_weight"] + 1e-5)
    w = self.sentence_order_loss_weight
    if w == 0:
      return mlm  # not 0 * sop: a non-finite SOP loss would still poison the sum
    sop = sums["sop_nll_sum"] / totals["examples"]
    return mlm + (sop if w == 1 else w * sop)

  def metrics(self, sums):
    metrics = metrics_from_sums(sums)
    if self.sentence_order_loss_weight == 0:
      metrics = {k: v for k, v in metrics.items() if k not in _SOP_METRICS}
    return metrics

  def eval_metrics(self, sums):
    return metrics_from_sums(sums)


class PretrainingRunner(Runner):
  def __init__(self, strategy, model, optimizer, settings, loss_scale=None,
               sentence_order_loss_weight=1.0):
    super().__init__(strategy, model, optimizer, settings,
                     PretrainingObjective(sentence_order_loss_weight), loss_scale)


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
