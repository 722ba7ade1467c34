"""The RACE fine-tuning job behind run_race: the GLUE job with RACE's processor, 4-choice
features and multiple-choice model."""

import os

from albert_tf.checkpoints import checkpoint_global_step
from albert_tf.io import write_text_atomically
from albert_tf.finetuning import race
from albert_tf.finetuning.classifier_job import ClassifierJob
from albert_tf.finetuning.inputs import classifier_features
from albert_tf.finetuning.job import UsageError, log
from albert_tf.models import AlbertMultipleChoice


class RaceJob(ClassifierJob):
  """Multiple choice over RACE/{split}/{middle,high}/*.txt."""

  def __init__(self, flag_values):
    f = flag_values
    if f.max_qa_length > f.max_seq_length - 3:
      raise UsageError(f"--max_qa_length ({f.max_qa_length}) must leave room for the article: "
                       f"at most --max_seq_length - 3 ({f.max_seq_length - 3})")
    super().__init__(flag_values)

  def make_processor(self):
    f = self.flags
    processor = race.RaceProcessor(bool(f.spm_model_file), f.do_lower_case, f.high_only,
                                   f.middle_only)
    log("RACE levels: " + ", ".join(processor.levels))
    return processor

  def make_model(self):
    return AlbertMultipleChoice(self.config, len(self.label_list),
                                dropout_rate=self.flags.dropout_prob)

  def convert(self, examples, path):
    race.file_based_convert_examples_to_features(examples, self.label_list,
                                                 self.flags.max_seq_length, self.tokenizer, path,
                                                 self.flags.max_qa_length, log)

  def cached_path(self, split):
    """--train_file / --eval_file / --predict_file, else race_<split>.tf_record in output_dir."""
    given = {"train": self.flags.train_file, "dev": self.flags.eval_file,
             "test": self.flags.predict_file}[split]
    return given or os.path.join(self.flags.output_dir, f"race_{split}.tf_record")

  def record_length(self):
    return len(self.label_list) * self.flags.max_seq_length

  def feature_spec(self):
    n, t = len(self.label_list), self.flags.max_seq_length
    shapes = {k: [n, t] for k in ("input_ids", "input_mask", "segment_ids")}
    return classifier_features(t, num_choices=n), shapes

  def write_predictions(self, predict_file, examples):
    """As the original: the test set evaluated into predict_results.txt (with the best dev
    accuracy); plus test_results.tsv, each question's choice probabilities."""
    batch_size = self.flags.predict_batch_size
    out = self.predict(predict_file, batch_size)
    result = self.metrics(out, batch_size)
    result["global_step"] = (checkpoint_global_step(self.loaded_from) if self.loaded_from
                             else 0)
    lines = ["***** Predict results *****"] + [f"{k} = {result[k]}" for k in sorted(result)]
    lines.append(f"best = {self.tracker(self.key_metric).best_value}")
    if self.chief:
      write_text_atomically(os.path.join(self.flags.output_dir, "predict_results.txt"),
                            "\n".join(lines) + "\n")
      write_text_atomically(os.path.join(self.flags.output_dir, "test_results.tsv"),
                            "".join("\t".join(str(p) for p in row) + "\n"
                                    for row in out["probabilities"][:len(examples)]))
    log("\n".join(lines))
