"""run_classifier on your own CSV/TSV/JSONL files: the GLUE job (features, training, evaluation
after each checkpoint, model.ckpt-best, prediction files, export) with the label names read from
the data or --label_list, kept beside the checkpoints (classifier_labels.json), and multi-label
classification (a sigmoid per label) besides single-label and regression."""

import logging
import math
import os

import tensorflow as tf

from albert_tf.checkpoints import labels
from albert_tf.core.errors import UsageError
from albert_tf.finetuning.evaluation import batch_means
from albert_tf.finetuning.inputs import classifier_features
from albert_tf.tasks.classifier.metrics import key_metric, multi_label_eval_metrics
from albert_tf.tasks.classifier.model import AlbertClassifier
from albert_tf.tasks.classifier import own_data
from albert_tf.tasks.classifier.features import file_based_convert_examples_to_features
from albert_tf.tasks.classifier.job import ClassifierJob
from albert_tf.tasks.classifier.settings import THRESHOLD_RULE, threshold_in_range
from albert_tf.tasks.classifier.multilabel import (AlbertMultiLabelClassifier,
                                                   MultiLabelObjective, multi_label_losses)

logger = logging.getLogger("albert_tf")


class OwnDataJob(ClassifierJob):
  """A classifier on an OwnDataSettings' files.

  Raises:
    errors.DataFormatError: a bad row (file and line named), or a training set of one class.
    errors.UsageError / CheckpointError / ResumeMismatchError: as own_data.resolve_labels and
      own_data.check_classes.
  """

  def setup_task(self):
    s = self.settings
    spec = own_data.OwnDataSpec(
        files=s.files(), text_column=s.text_column, text_b_column=s.text_b_column,
        label_column=s.label_column, data_format=s.data_format, label_type=s.label_type,
        label_separator=s.label_separator,
        label_list=tuple(own_data.parse_label_list(s.label_list)) if s.label_list else None)
    self.processor = own_data.OwnDataProcessor(
        spec, use_spm=bool(s.tokenizer.spm_model_file), do_lower_case=s.tokenizer.do_lower_case)
    names, self.problem_type, source = own_data.resolve_labels(
        self.processor, spec.label_list, s.output_dir, s.model.init_checkpoint, s.do_train)
    # Before any output: one class would train to loss 0 and accuracy 1 and predict only it.
    own_data.check_classes(self.processor, names, source, s.do_train)
    self.regression = spec.regression
    self.multi_label = self.processor.multi_label
    # GLUE's regression label list: one output without a name.
    self.label_list = [None] if self.regression else names
    self.task_name = ("regression" if self.regression else
                      "multi-label" if self.multi_label else "classification")
    self.key_metric = key_metric(self.task_name)
    if not self.regression:
      logger.info(f"{len(names)} labels from {source}: {' '.join(names)}")
    if self.multi_label and s.export_dir:
      self.export_threshold()  # refused now, not once training is over

  def claim_output_dir(self):
    super().claim_output_dir()
    if self.chief:  # beside every checkpoint of the run, for its reuse and its exports
      labels.write_classifier_labels(self.settings.output_dir,
                                     [] if self.regression else self.label_list,
                                     self.problem_type)

  def make_model(self):
    s = self.settings
    if self.regression:
      return AlbertClassifier(self.config, 1, dropout_rate=s.classifier_dropout)
    cls = AlbertMultiLabelClassifier if self.multi_label else AlbertClassifier
    return cls(self.config, len(self.label_list), dropout_rate=s.classifier_dropout,
               label_names=self.label_list)

  def objective(self):
    if self.multi_label:
      return MultiLabelObjective(self.settings.threshold)
    return super().objective()

  def convert(self, examples, path):
    file_based_convert_examples_to_features(
        examples, self.label_list, self.settings.model.max_seq_length, self.tokenizer, path,
        self.regression, self.multi_label)

  def cache_inputs(self, examples):
    """GLUE's, and how the rows were read: the columns, the format and the multi-label
    separator (the examples' hash holds the texts and labels they gave)."""
    spec = self.processor.spec
    return {**super().cache_inputs(examples), "multi_label": bool(self.multi_label),
            "columns": [spec.text_column, spec.text_b_column, spec.label_column],
            "data_format": spec.data_format, "label_separator": spec.label_separator}

  def cached_path(self, split):
    """<the split file's name>_<train|eval>.tf_record (predict.tf_record for test, as GLUE's)."""
    if split == "test":
      return super().cached_path(split)
    stem = os.path.splitext(os.path.basename(self.processor.spec.files[split]))[0]
    suffix = {"train": "train", "dev": "eval"}[split]
    return os.path.join(self.settings.cached_dir or self.settings.output_dir,
                        f"{stem}_{suffix}.tf_record")

  def feature_spec(self):
    spec = classifier_features(self.settings.model.max_seq_length, self.regression)
    if self.multi_label:
      spec["label_ids"] = tf.io.FixedLenFeature([len(self.label_list)], tf.int64)
    return spec, None

  def head_outputs(self, logits, label_ids):
    if self.multi_label:
      return multi_label_losses(logits, label_ids, self.settings.threshold)
    return super().head_outputs(logits, label_ids)

  def metrics(self, out, batch_size):
    if not self.multi_label:
      return super().metrics(out, batch_size)
    return multi_label_eval_metrics(out["label_ids"], out["predictions"],
                                    out["per_example_loss"], out["is_real_example"],
                                    batch_means(out["per_example_loss"], batch_size))

  def prediction_text(self, prediction):
    """The predicted label's name; multi-label: the names over --threshold, joined by the label
    separator (or ","); regression: the score."""
    if not self.multi_label:
      return super().prediction_text(prediction)
    separator = self.settings.label_separator or ","
    return separator.join(name for name, on in zip(self.label_list, prediction) if on)

  def is_pair(self):
    return self.processor.spec.pair

  def export_threshold(self):
    """The multi-label export's threshold: --threshold_to_export when given (it must then be a
    probability too), else the run's --threshold."""
    given = self.settings.threshold_to_export
    if math.isnan(given):
      return self.settings.threshold
    if not threshold_in_range(given):
      raise UsageError(f"--threshold_to_export={given}: a multi-label model's threshold "
                       f"{THRESHOLD_RULE}")
    return given

  def export(self):
    if not self.multi_label:
      return super().export()
    # pylint: disable-next=import-outside-toplevel
    from albert_tf.tasks.classifier.export import ClassifierServingModule
    s = self.settings
    self.export_serving(ClassifierServingModule(
        self.serving_model(), s.tokenizer.spm_model_file, self.label_list, self.is_pair(),
        s.tokenizer.do_lower_case, s.model.max_seq_length, self.export_threshold(),
        vocab_file=s.tokenizer.vocab_file, multi_label=True,
        label_separator=s.label_separator or ","))
    return None
