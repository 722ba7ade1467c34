"""The RACE fine-tuning job behind run_race: the shared classification job
(albert_tf.finetuning.classification, run_classifier's too) with RACE's processor, 4-choice
features and multiple-choice model."""

import logging
import os

from albert_tf.checkpoints import checkpoint_global_step
from albert_tf.core.io import write_text_atomically
from albert_tf.finetuning.classification import ClassificationJob
from albert_tf.finetuning.inputs import classifier_features
from albert_tf.tasks.race import data as race
from albert_tf.training.job import UsageError
from albert_tf.tasks.race.model import AlbertMultipleChoice

logger = logging.getLogger("albert_tf")


class RaceJob(ClassificationJob):
  """Multiple choice over RACE/{split}/{middle,high}/*.txt."""

  def __init__(self, settings):
    s = settings
    if s.max_qa_length > s.model.max_seq_length - 3:
      raise UsageError(f"--max_qa_length ({s.max_qa_length}) must leave room for the article: "
                       f"at most --max_seq_length - 3 ({s.model.max_seq_length - 3})")
    super().__init__(settings)

  def make_processor(self):
    s = self.settings
    processor = race.RaceProcessor(bool(s.tokenizer.spm_model_file), s.tokenizer.do_lower_case,
                                   s.high_only, s.middle_only)
    logger.info("RACE levels: " + ", ".join(processor.levels))
    return processor

  def make_model(self):
    return AlbertMultipleChoice(self.config, len(self.label_list),
                                dropout_rate=self.settings.dropout_prob)

  def convert(self, examples, path):
    race.file_based_convert_examples_to_features(examples, self.label_list,
                                                 self.settings.model.max_seq_length,
                                                 self.tokenizer, path, self.settings.max_qa_length)

  def cached_path(self, split):
    """--train_file / --eval_file / --predict_file, else race_<split>.tf_record in output_dir."""
    given = {"train": self.settings.train_file, "dev": self.settings.eval_file,
             "test": self.settings.predict_file}[split]
    return given or os.path.join(self.settings.output_dir, f"race_{split}.tf_record")

  def feature_file_flag(self, split):
    """--train_file / --eval_file / --predict_file when given: the user's file, never
    overwritten (see feature_cache.checked)."""
    flag = {"train": "train_file", "dev": "eval_file", "test": "predict_file"}[split]
    return f"--{flag}" if getattr(self.settings, flag) else None

  def cache_inputs(self, examples):
    return {**super().cache_inputs(examples), "max_qa_length": self.settings.max_qa_length}

  def record_length(self):
    return len(self.label_list) * self.settings.model.max_seq_length

  def feature_spec(self):
    n, t = len(self.label_list), self.settings.model.max_seq_length
    shapes = {k: [n, t] for k in ("input_ids", "input_mask", "segment_ids")}
    return classifier_features(t, num_choices=n), shapes

  def write_predictions(self, predict_file, examples):
    """As the original: the test set evaluated into predict_results.txt (with the best dev
    accuracy); plus test_results.tsv, each question's choice probabilities."""
    batch_size = self.settings.predict_batch_size
    out = self.predict(predict_file, batch_size)
    result = self.metrics(out, batch_size)
    result["global_step"] = (checkpoint_global_step(self.loaded_from) if self.loaded_from
                             else 0)
    lines = ["***** Predict results *****"] + [f"{k} = {result[k]}" for k in sorted(result)]
    lines.append(f"best = {self.tracker(self.key_metric).best_value}")
    if self.chief:
      write_text_atomically(os.path.join(self.settings.output_dir, "predict_results.txt"),
                            "\n".join(lines) + "\n")
      write_text_atomically(os.path.join(self.settings.output_dir, "test_results.tsv"),
                            "".join("\t".join(str(p) for p in row) + "\n"
                                    for row in out["probabilities"][:len(examples)]))
    logger.info("\n".join(lines))
