"""run_classifier on your own CSV/TSV/JSONL files: the GLUE job (features, training, evaluation
after each checkpoint, model.ckpt-best, prediction files, export) with the label names read from
the data or --label_list, kept beside the checkpoints (classifier_labels.json), and multi-label
classification (a sigmoid per label) besides single-label and regression: the run's label scheme
(label_schemes), chosen once, holds what differs between them."""

import logging
import os

from albert_tf.checkpoints import labels
from albert_tf.tasks.classifier import label_schemes, own_data
from albert_tf.tasks.classifier.features import file_based_convert_examples_to_features
from albert_tf.tasks.classifier.job import ClassifierJob
from albert_tf.tasks.classifier.metrics import key_metric

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
    # Chosen once: what differs between single-label, multi-label and regression runs.
    self.scheme = label_schemes.scheme_for(spec.regression, self.processor.multi_label)
    self.regression, self.multi_label = self.scheme.regression, self.scheme.multi_label
    self.label_list = self.scheme.label_list(names)
    self.task_name = self.scheme.task_name
    self.key_metric = key_metric(self.task_name)
    if not self.regression:
      logger.info(f"{len(names)} labels from {source}: {' '.join(names)}")
    if s.export_dir:
      self.scheme.serving_options(s)  # a threshold it refuses: now, not once training is over

  def claim_output_dir(self):
    super().claim_output_dir()
    if self.chief:  # beside every checkpoint of the run, for its reuse and its exports
      labels.write_classifier_labels(self.settings.output_dir,
                                     self.scheme.label_names(self.label_list), self.problem_type)

  def make_model(self):
    return self.scheme.make_model(self.config, self.label_list, self.settings.classifier_dropout)

  def objective(self):
    return self.scheme.objective(self.settings.threshold)

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
    spec = self.scheme.feature_spec(self.settings.model.max_seq_length, len(self.label_list))
    return spec, None

  def head_outputs(self, logits, label_ids):
    return self.scheme.head_outputs(logits, label_ids, self.settings.threshold)

  def metrics(self, out, batch_size):
    return self.scheme.metrics(out, batch_size)

  def prediction_text(self, prediction):
    """The predicted label's name; multi-label: the names over --threshold, joined by the label
    separator (or ","); regression: the score."""
    return self.scheme.prediction_text(prediction, self.label_list,
                                       self.settings.label_separator)

  def is_pair(self):
    return self.processor.spec.pair

  def export_threshold(self):
    """The multi-label export's threshold: --threshold_to_export when given (it must then be a
    probability too), else the run's --threshold."""
    return label_schemes.export_threshold(self.settings)

  def export(self):
    from albert_tf.tasks.classifier.export import ClassifierServingModule
    s = self.settings
    threshold, options = self.scheme.serving_options(s)
    self.export_serving(ClassifierServingModule(
        self.serving_model(), s.tokenizer, self.label_list, self.is_pair(),
        s.model.max_seq_length, threshold, **options))
