"""The GLUE fine-tuning job behind run_classifier (and, with its multiple-choice variant,
run_race): processor, cached features, evaluation, prediction files, export."""

import os
import time

from albert_tf.io import write_text_atomically
from albert_tf.finetuning import glue
from albert_tf.finetuning.classifier_data import file_based_convert_examples_to_features
from albert_tf.finetuning.evaluation import batch_means
from albert_tf.finetuning.inputs import (EXAMPLE_INDEX, check_cached_features,
                                        classifier_features, feature_dataset)
from albert_tf.finetuning.job import FineTuningJob, UsageError, log
from albert_tf.finetuning.metrics import classifier_eval_metrics, key_metric
from albert_tf.finetuning.objectives import ClassificationObjective
from albert_tf.models import AlbertClassifier, classification_losses
from albert_tf.training import strategy as strategies


class ClassifierJob(FineTuningJob):
  """A GLUE task: its processor, cached features, metrics and prediction files."""

  def __init__(self, flag_values):
    super().__init__(flag_values)
    self.task_name = flag_values.task_name.lower()
    try:
      self.processor = self.make_processor()
    except ValueError as e:
      raise UsageError(str(e)) from None
    self.label_list = self.processor.get_labels()
    self.regression = self.processor.regression
    self.key_metric = key_metric(self.task_name)
    log(f"task {self.task_name}")

  def make_processor(self):
    f = self.flags
    return glue.processor(self.task_name, use_spm=bool(f.spm_model_file),
                          do_lower_case=f.do_lower_case)

  def make_model(self):
    return AlbertClassifier(self.config, len(self.label_list),
                            dropout_rate=self.flags.classifier_dropout)

  def objective(self):
    return ClassificationObjective(self.regression)

  def convert(self, examples, path):
    file_based_convert_examples_to_features(examples, self.label_list, self.flags.max_seq_length,
                                            self.tokenizer, path, self.regression, log)

  def features_file(self, path, split, examples, padded_batch=None, regenerate=False):
    """Writes the split's features to path unless cached (predict's are always regenerated, as
    the original): the chief writes, and every worker returns once the file is complete."""
    real = len(examples)
    if padded_batch:  # fixed TPU batches: pad with examples that carry no weight
      examples = examples + [glue.PaddingInputExample() for _ in range(-real % padded_batch)]
    cached = not regenerate and os.path.exists(path)

    def write():
      if not cached:
        self.convert(examples, path)
        log(f"wrote {len(examples)} {split} features ({real} real) to {path}")
    strategies.run_on_chief(self.strategy, write, path)
    if cached:
      check_cached_features(path, self.record_length())
      log(f"using cached features {path}")
    return path

  def record_length(self):
    """ids per feature record."""
    return self.flags.max_seq_length

  def cached_path(self, split):
    """The original's cached feature file of a split."""
    if split == "test":
      return os.path.join(self.flags.output_dir, "predict.tf_record")
    suffix = {"train": "train", "dev": "eval"}[split]
    return os.path.join(self.flags.cached_dir or self.flags.output_dir,
                        f"{self.task_name}_{suffix}.tf_record")

  def feature_spec(self):
    return classifier_features(self.flags.max_seq_length, self.regression), None

  def dataset(self, path, batch_size, is_training, seed=None, input_context=None):
    f = self.flags
    spec, shapes = self.feature_spec()
    return feature_dataset(path, spec, batch_size, is_training, f.max_seq_length,
                           drop_remainder=f.use_tpu, dynamic_length=f.dynamic_length,
                           seed=seed, input_context=input_context, shapes=shapes)

  def predict(self, path, batch_size):
    """Per-example probabilities, predictions, per_example_loss, label_ids, is_real_example,
    in file order."""
    if not hasattr(self, "_predict"):
      def fn(features):
        out = classification_losses(self.model(features, training=False)["logits"],
                                    features["label_ids"], self.regression)
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
    return classifier_eval_metrics(
        self.task_name, out["label_ids"], out["predictions"], out["per_example_loss"],
        out["is_real_example"], batch_means(out["per_example_loss"], batch_size))

  def evaluate(self, eval_file):
    return self.metrics(self.predict(eval_file, self.flags.eval_batch_size),
                        self.flags.eval_batch_size)

  def write_predictions(self, predict_file, examples):
    out = self.predict(predict_file, self.flags.predict_batch_size)
    test_lines, submit_lines = [], ["index\tprediction"]
    for i, example in enumerate(examples):
      test_lines.append("\t".join(str(p) for p in out["probabilities"][i]))
      prediction = out["predictions"][i]
      label = str(prediction) if self.regression else self.label_list[int(prediction)]
      submit_lines.append(f"{example.guid}\t{label}")
    if self.chief:
      for name, lines in (("test_results.tsv", test_lines),
                          ("submit_results.tsv", submit_lines)):
        write_text_atomically(os.path.join(self.flags.output_dir, name),
                              "\n".join(lines) + "\n")
      log(f"wrote predictions of {len(test_lines)} examples to test_results.tsv and "
          "submit_results.tsv")

  def export(self):
    # pylint: disable=import-outside-toplevel
    from albert_tf.export.classifier import ClassifierServingModule
    from albert_tf.export.saved_model import export_saved_model
    # pylint: enable=import-outside-toplevel
    f = self.flags
    if not f.spm_model_file:
      raise UsageError("--export_dir needs --spm_model_file (the SavedModel tokenizes text "
                       "with SentencePiece in the graph)")
    pair = self.processor.spec.columns_for("test").text_b is not None
    module = ClassifierServingModule(self.model, f.spm_model_file, self.label_list, pair,
                                     f.do_lower_case, f.max_seq_length,
                                     f.threshold_to_export)
    log(f"Model exported to {export_saved_model(module, f.export_dir, int(time.time()))}.")

  def run(self, export=False):
    """The original binary's flow: (train, evaluating each checkpoint), evaluate the checkpoints
    not evaluated yet, predict with model.ckpt-best, and export it."""
    f = self.flags
    # Every split is read (and checked) before the model is built: a malformed or empty dev or
    # test set fails now, not once training is over.
    examples = {split: self.processor.get_examples(f.data_dir, split) for split, wanted in
                (("train", f.do_train), ("dev", f.do_eval), ("test", f.do_predict)) if wanted}
    self.claim_output_dir()
    self.build(f.train_step, f.warmup_step)
    tracker = self.tracker(self.key_metric)
    padded = f.eval_batch_size if f.use_tpu else None
    eval_file = (self.features_file(self.cached_path("dev"), "dev", examples["dev"], padded)
                 if f.do_eval else None)
    if f.do_train:
      train_file = self.features_file(self.cached_path("train"), "train", examples["train"])
      log(f"***** Running training *****\n  Num examples = {len(examples['train'])}\n  Batch "
          f"size = {f.train_batch_size}\n  Num steps = {f.train_step}")
      self.train(
          lambda seed, ctx: self.dataset(train_file, f.train_batch_size, True, seed, ctx),
          after_save=(lambda step, path: self.record(tracker, step, self.evaluate(eval_file)))
          if eval_file else None)
    if f.do_eval:
      self.evaluate_checkpoints(tracker, lambda: self.evaluate(eval_file))
      log(f"best {tracker.key_name} = {tracker.best_value} at step {tracker.best_step}")
    if f.do_predict or export:
      self.load_best()
    if f.do_predict:
      padded = f.predict_batch_size if f.use_tpu else None
      self.write_predictions(self.features_file(self.cached_path("test"), "test",
                                                examples["test"], padded, regenerate=True),
                             examples["test"])
    if export and self.chief:
      self.export()
