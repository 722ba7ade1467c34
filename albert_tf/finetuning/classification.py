"""The classification job that run_classifier (GLUE, your own files) and run_race share: a
processor's examples to cached feature files, training with an evaluation after each
checkpoint, the original's eval results, prediction files from model.ckpt-best. A task gives its
processor, model and feature writer (make_processor, make_model, convert)."""

import logging
import os

from albert_tf.core.io import write_text_atomically
from albert_tf.finetuning import feature_cache
from albert_tf.finetuning.classification_metrics import eval_metrics
from albert_tf.finetuning.evaluation import batch_means
from albert_tf.finetuning.inputs import EXAMPLE_INDEX, classifier_features, feature_dataset
from albert_tf.finetuning.job import FineTuningJob
from albert_tf.finetuning.objectives import ClassificationObjective
from albert_tf.finetuning.text_data import PaddingInputExample
from albert_tf.models import classification_losses
from albert_tf.training.job import UsageError

logger = logging.getLogger("albert_tf")


class ClassificationJob(FineTuningJob):
  """A classification task: its processor, cached features, metrics and prediction files.

  Args:
    settings: a finetuning.settings.ClassificationSettings.

  Raises:
    UsageError: none of do_train, do_eval, do_predict and export_dir; a processor's ValueError.
  """

  def __init__(self, settings):
    if not (settings.do_train or settings.do_eval or settings.do_predict or settings.export_dir):
      raise UsageError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    super().__init__(settings)
    self.setup_task()
    logger.info(f"task {self.task_name}")

  def setup_task(self):
    """Sets the task's processor, label_list, regression and key_metric (the accuracy, or a
    regression's Pearson correlation)."""
    self.task_name = self.settings.task_name.lower()
    try:
      self.processor = self.make_processor()
    except ValueError as e:
      raise UsageError(str(e)) from None
    self.label_list = self.processor.get_labels()
    self.regression = self.processor.regression
    self.key_metric = "pearson" if self.regression else "eval_accuracy"

  def make_processor(self):
    """The task's processor (finetuning.text_data.TextProcessor): its examples and labels."""
    raise NotImplementedError

  def convert(self, examples, path):
    """Writes the feature records of `examples` to path."""
    raise NotImplementedError

  def scheduled_train_steps(self):
    return self.settings.train.num_train_steps

  def objective(self):
    return ClassificationObjective(self.regression)

  def features_file(self, path, split, examples, padded_batch=None, regenerate=False):
    """Writes the split's features to path unless cached for the same examples, labels and
    lengths (predict's are always regenerated, as the original): the chief writes, and every
    worker returns once the file is complete."""
    real = len(examples)
    if padded_batch:  # fixed TPU batches: pad with examples that carry no weight
      examples = examples + [PaddingInputExample() for _ in range(-real % padded_batch)]

    def write(target):
      self.convert(examples, target)
      logger.info(f"wrote {len(examples)} {split} features ({real} real) to {target}")
    return self.cached_features(path, write, self.record_length(), self.cache_inputs(examples),
                                named_by=self.feature_file_flag(split), regenerate=regenerate)

  def cache_inputs(self, examples):
    """What a split's features are made from, beside the tokenizer and max_seq_length (the
    stamp of its cache: finetuning.feature_cache): its examples, the labels and their type."""
    return {"task": self.task_name, "examples_sha256": feature_cache.examples_sha256(examples),
            "examples": len(examples), "labels": list(self.label_list),
            "regression": bool(self.regression)}

  def feature_file_flag(self, split):
    """The flag that names the split's feature file, when a flag does (RACE's), else None."""
    del split
    return None

  def record_length(self):
    """ids per feature record."""
    return self.settings.model.max_seq_length

  def cached_path(self, split):
    """The original's cached feature file of a split."""
    if split == "test":
      return os.path.join(self.settings.output_dir, "predict.tf_record")
    suffix = {"train": "train", "dev": "eval"}[split]
    return os.path.join(self.settings.cached_dir or self.settings.output_dir,
                        f"{self.task_name}_{suffix}.tf_record")

  def feature_spec(self):
    return classifier_features(self.settings.model.max_seq_length, self.regression), None

  def dataset(self, path, batch_size, is_training, seed=None, input_context=None):
    s = self.settings
    spec, shapes = self.feature_spec()
    return feature_dataset(path, spec, batch_size, is_training, s.model.max_seq_length,
                           drop_remainder=s.run.use_tpu, dynamic_length=s.dynamic_length,
                           seed=seed, input_context=input_context, shapes=shapes)

  def head_outputs(self, logits, label_ids):
    """The head's loss, probabilities and predictions (models.losses.classification_losses)."""
    return classification_losses(logits, label_ids, self.regression)

  def prediction_text(self, prediction):
    """A prediction as submit_results.tsv writes it: the label's name (regression: the score)."""
    return str(prediction) if self.regression else self.label_list[int(prediction)]

  def predict(self, path, batch_size):
    """Per-example probabilities, predictions, per_example_loss, label_ids, is_real_example,
    in file order."""
    if not hasattr(self, "_predict"):
      def fn(features):
        out = self.head_outputs(self.model(features, training=False)["logits"],
                                features["label_ids"])
        return {"probabilities": out["probabilities"], "predictions": out["predictions"],
                "per_example_loss": out["per_example_loss"],
                "label_ids": features["label_ids"],
                "is_real_example": features["is_real_example"],
                EXAMPLE_INDEX: features[EXAMPLE_INDEX]}
      self._predict = self.predictor(fn)
    return self._predict(self.dataset(path, batch_size, is_training=False))

  def metrics(self, out, batch_size):
    """The original's eval metrics of predict()'s outputs (batch_size: of the batches the
    Estimator would have averaged its loss over)."""
    return eval_metrics(out["label_ids"], out["predictions"], out["per_example_loss"],
                        out["is_real_example"], batch_means(out["per_example_loss"], batch_size),
                        self.regression)

  def evaluate(self, eval_file):
    return self.metrics(self.predict(eval_file, self.settings.eval_batch_size),
                        self.settings.eval_batch_size)

  def write_predictions(self, predict_file, examples):
    out = self.predict(predict_file, self.settings.predict_batch_size)
    test_lines, submit_lines = [], ["index\tprediction"]
    for i, example in enumerate(examples):
      test_lines.append("\t".join(str(p) for p in out["probabilities"][i]))
      submit_lines.append(f"{example.guid}\t{self.prediction_text(out['predictions'][i])}")
    if self.chief:
      for name, lines in (("test_results.tsv", test_lines),
                          ("submit_results.tsv", submit_lines)):
        write_text_atomically(os.path.join(self.settings.output_dir, name),
                              "\n".join(lines) + "\n")
      logger.info(f"wrote predictions of {len(test_lines)} examples to test_results.tsv and "
                  "submit_results.tsv")

  def export(self):
    """Writes the SavedModel of model.ckpt-best to export_dir (export_serving): the task's."""
    raise UsageError(f"{type(self).__name__} has no SavedModel export: drop export_dir")

  def flow(self, after_save):
    """The original binary's flow: (train, evaluating each checkpoint), evaluate the checkpoints
    not evaluated yet, predict with model.ckpt-best, and export it."""
    s = self.settings
    # Every split is read (and checked) before the model is built: a malformed or empty dev or
    # test set fails now, not once training is over.
    examples = {split: self.processor.get_examples(s.data_dir, split) for split, wanted in
                (("train", s.do_train), ("dev", s.do_eval), ("test", s.do_predict)) if wanted}
    self.claim_output_dir()
    self.build_with_steps(s.train.num_train_steps, s.train.num_warmup_steps)
    tracker = self.tracker(self.key_metric)
    padded = s.eval_batch_size if s.run.use_tpu else None
    eval_file = (self.features_file(self.cached_path("dev"), "dev", examples["dev"], padded)
                 if s.do_eval else None)
    if s.do_train:
      train_file = self.features_file(self.cached_path("train"), "train", examples["train"])
      logger.info(f"***** Running training *****\n  Num examples = {len(examples['train'])}\n"
                  f"  Batch size = {s.train.train_batch_size}\n"
                  f"  Num steps = {s.train.num_train_steps}")

      def evaluate_then(step, path):
        if eval_file:
          self.record(tracker, step, self.evaluate(eval_file))
        if after_save is not None:
          after_save(step, path)
      self.train_on(train_file, lambda seed, ctx: self.dataset(
          train_file, s.train.train_batch_size, True, seed, ctx), evaluate_then)
    if s.do_eval:
      self.evaluate_checkpoints(tracker, lambda: self.evaluate(eval_file))
      logger.info(f"best {tracker.key_name} = {tracker.best_value} at step {tracker.best_step}")
    if s.do_predict or s.export_dir:
      self.load_best("predicting" if s.do_predict else "exporting")
    if s.do_predict:
      padded = s.predict_batch_size if s.run.use_tpu else None
      self.write_predictions(self.features_file(self.cached_path("test"), "test",
                                                examples["test"], padded, regenerate=True),
                             examples["test"])
    if s.export_dir and self.chief:
      self.export()
