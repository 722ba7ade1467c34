"""The GLUE fine-tuning job behind run_classifier: the shared classification job
(albert_tf.finetuning.classification, run_race's too) with GLUE's processors, features, metrics
and export."""

import logging

from albert_tf.finetuning.classification import ClassificationJob
from albert_tf.finetuning.evaluation import batch_means
from albert_tf.training.job import UsageError
from albert_tf.tasks.classifier import data as glue
from albert_tf.tasks.classifier.features import file_based_convert_examples_to_features
from albert_tf.tasks.classifier.metrics import classifier_eval_metrics, key_metric
from albert_tf.tasks.classifier.model import AlbertClassifier

logger = logging.getLogger("albert_tf")


class ClassifierJob(ClassificationJob):
  """A GLUE task: its processor, cached features, metrics and prediction files."""

  def setup_task(self):
    """Sets the task's processor, label_list, regression and key_metric (a GLUE task's)."""
    settings = self.settings
    if settings.task_name.lower() == "ax" and (settings.do_train or settings.do_eval):
      raise UsageError("the ax (diagnostic) set has test data only: use --do_predict with an "
                       "MNLI-trained checkpoint")
    super().setup_task()
    self.key_metric = key_metric(self.task_name)

  def make_processor(self):
    s = self.settings
    return glue.processor(self.task_name, use_spm=bool(s.tokenizer.spm_model_file),
                          do_lower_case=s.tokenizer.do_lower_case)

  def make_model(self):
    return AlbertClassifier(self.config, len(self.label_list),
                            dropout_rate=self.settings.classifier_dropout)

  def convert(self, examples, path):
    file_based_convert_examples_to_features(examples, self.label_list,
                                            self.settings.model.max_seq_length, self.tokenizer,
                                            path, self.regression)

  def metrics(self, out, batch_size):
    """The original's eval metrics of predict()'s outputs (batch_size: of the batches the
    Estimator would have averaged its loss over): a GLUE task's (CoLA's Matthews correlation,
    STS-B's Pearson)."""
    return classifier_eval_metrics(
        self.task_name, out["label_ids"], out["predictions"], out["per_example_loss"],
        out["is_real_example"], batch_means(out["per_example_loss"], batch_size))

  def is_pair(self):
    """Whether the task's examples are sentence pairs (the export then takes text_b)."""
    return self.processor.spec.columns_for("test").text_b is not None

  def export(self):
    from albert_tf.tasks.classifier.export import ClassifierServingModule
    s = self.settings
    pair = self.is_pair()
    # The job's tokenizer: SentencePiece, or WordPiece when only --vocab_file is given.
    self.export_serving(ClassifierServingModule(
        self.serving_model(), s.tokenizer, self.label_list, pair, s.model.max_seq_length,
        s.threshold_to_export))
