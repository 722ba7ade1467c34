"""ALBERT fine-tuning on GLUE classification tasks (the original's run_classifier flags).

  python -m albert_tf.run_classifier --task_name=MNLI --data_dir=glue_data \
      --spm_model_file=30k-clean.model --albert_config_file=albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best --output_dir=out --do_train --do_eval \
      --do_predict --max_seq_length=128 --train_batch_size=128 --learning_rate=3e-5 \
      --train_step=10000 --warmup_step=1000 --save_checkpoints_steps=500

Outputs, as the original: cached features `<cached_dir or output_dir>/<task>_train.tf_record`,
`<task>_eval.tf_record` and `<output_dir>/predict.tf_record`; checkpoints model.ckpt-<step>, each
evaluated (eval_results.txt, best_trial.txt) with the best kept as model.ckpt-best (the original
TF1 layout); test_results.tsv and submit_results.tsv; with --export_dir a SavedModel
(<export_dir>/<timestamp>/) that takes raw text. Batches are cut to their longest real sequence
(--dynamic_length), training batches grouped by length.
"""

import os
import sys
import time

from absl import app, flags

from albert_tf import common_flags

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", None,
                    "The input data dir. Should contain the .tsv files (or other data files) for "
                    "the task.")
flags.DEFINE_string("albert_config_file", None,
                    "The config json file corresponding to the pre-trained ALBERT model. This "
                    "specifies the model architecture.")
flags.DEFINE_string("task_name", None, "The name of the task to train.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the ALBERT model was trained on.")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("output_dir", None,
                    "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("cached_dir", None,
                    "Path to cached training and dev tfrecord file. The file will be generated "
                    "if not exist.")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. Should be True for uncased models and "
                  "False for cased models.")
flags.DEFINE_integer("max_seq_length", 512,
                     "The maximum total input sequence length after WordPiece tokenization. "
                     "Sequences longer than this will be truncated, and sequences shorter than "
                     "this will be padded.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False,
                  "Whether to run the model in inference mode on the test set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_integer("train_step", 1000, "Total number of training steps to perform.")
flags.DEFINE_integer("warmup_step", 0,
                     "number of steps to perform linear learning rate warmup for.")
flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer to use")
flags.DEFINE_string("export_dir", None,
                    "The directory where the exported SavedModel will be stored.")
flags.DEFINE_float("threshold_to_export", float("nan"),
                   "The threshold value that should be used with the exported classifier. When "
                   "specified, the threshold will be attached to the exported SavedModel, and "
                   "served along with the predictions.")
flags.DEFINE_float("classifier_dropout", 0.1,
                   "Dropout on the pooled output before the classification layer (the "
                   "original's fixed value is 0.1).")
flags.DEFINE_bool("dynamic_length", True,
                  "Cut each batch to its longest real sequence (rounded up to a multiple of 8) "
                  "and group training batches by length. Results equal fixed padding.")
flags.DEFINE_integer("data_seed", None,
                     "Seed of the training input order (default: unseeded, as the original).")
common_flags.define_run_flags()
flags.FLAGS.set_default("save_checkpoints_steps", 1000)


def _log(message):
  print(message, file=sys.stderr, flush=True)


class ClassifierJob:
  """The state one run_classifier invocation works with."""

  def __init__(self):
    # pylint: disable=import-outside-toplevel
    from albert_tf.config import AlbertConfig
    from albert_tf.finetuning import glue
    from albert_tf.tokenization import FullTokenizer
    from albert_tf.training import strategy as strategies
    # pylint: enable=import-outside-toplevel
    self.config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
    if FLAGS.max_seq_length > self.config.max_position_embeddings:
      raise app.UsageError(
          f"Cannot use sequence length {FLAGS.max_seq_length} because the ALBERT model was only "
          f"trained up to sequence length {self.config.max_position_embeddings}")
    self.task_name = FLAGS.task_name.lower()
    try:
      self.processor = glue.processor(self.task_name, use_spm=bool(FLAGS.spm_model_file),
                                      do_lower_case=FLAGS.do_lower_case)
    except ValueError as e:
      raise app.UsageError(str(e)) from None
    self.label_list = self.processor.get_labels()
    self.regression = self.processor.spec.regression
    self.tokenizer = FullTokenizer(vocab_file=FLAGS.vocab_file,
                                   do_lower_case=FLAGS.do_lower_case,
                                   spm_model_file=FLAGS.spm_model_file)
    self.strategy = common_flags.strategy_from_flags(FLAGS.train_batch_size)
    self.chief = strategies.is_chief(self.strategy)
    self.model_dir = strategies.worker_dir(self.strategy, FLAGS.output_dir)
    self.cached_dir = FLAGS.cached_dir or FLAGS.output_dir
    os.makedirs(FLAGS.output_dir, exist_ok=True)
    _log(f"task {self.task_name}; strategy {strategies.describe(self.strategy)} with "
         f"{self.strategy.num_replicas_in_sync} replicas")

  # -- data -------------------------------------------------------------------------------------
  def features_file(self, name, split, padded_batch=None, regenerate=False):
    """Writes the split's features unless cached (the original regenerates predict's always).
    Returns (path, number of real examples)."""
    # pylint: disable=import-outside-toplevel
    from albert_tf.finetuning.classifier_data import file_based_convert_examples_to_features
    from albert_tf.finetuning.glue import PaddingInputExample
    # pylint: enable=import-outside-toplevel
    examples = self.processor.get_examples(FLAGS.data_dir, split)
    real = len(examples)
    if padded_batch:  # fixed TPU batches: pad with examples that carry no weight
      examples += [PaddingInputExample() for _ in range(-real % padded_batch)]
    path = os.path.join(self.cached_dir if not regenerate else FLAGS.output_dir, name)
    if regenerate or not os.path.exists(path):
      if self.chief:
        file_based_convert_examples_to_features(examples, self.label_list, FLAGS.max_seq_length,
                                                self.tokenizer, path, self.regression, _log)
      _log(f"wrote {len(examples)} {split} features ({real} real) to {path}")
    else:
      _log(f"using cached features {path}")
    return path, real

  def dataset(self, path, batch_size, is_training, seed=None, input_context=None):
    # pylint: disable=import-outside-toplevel
    from albert_tf.finetuning.inputs import classifier_features, feature_dataset
    # pylint: enable=import-outside-toplevel
    return feature_dataset(path, classifier_features(FLAGS.max_seq_length, self.regression),
                           batch_size, is_training, FLAGS.max_seq_length,
                           drop_remainder=FLAGS.use_tpu, dynamic_length=FLAGS.dynamic_length,
                           seed=seed, input_context=input_context)

  # -- model ------------------------------------------------------------------------------------
  def build(self):
    # pylint: disable=import-outside-toplevel
    from albert_tf.finetuning.objectives import ClassificationObjective
    from albert_tf.models import AlbertClassifier
    from albert_tf.optimization import create_optimizer
    from albert_tf.training import runner as runners
    # pylint: enable=import-outside-toplevel
    settings = runners.TrainSettings(
        learning_rate=FLAGS.learning_rate, num_train_steps=FLAGS.train_step,
        num_warmup_steps=FLAGS.warmup_step,
        gradient_accumulation_steps=FLAGS.gradient_accumulation_steps,
        iterations_per_loop=min(FLAGS.iterations_per_loop, FLAGS.save_checkpoints_steps),
        save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        keep_checkpoint_max=FLAGS.keep_checkpoint_max, jit_compile=FLAGS.jit_compile)
    with self.strategy.scope():
      self.model = AlbertClassifier(self.config, len(self.label_list),
                                    dropout_rate=FLAGS.classifier_dropout)
      optimizer = create_optimizer(FLAGS.optimizer)
      loss_scale = common_flags.loss_scale_from_flags()
    self.settings = settings
    self.runner = runners.Runner(self.strategy, self.model, optimizer, settings,
                                 ClassificationObjective(self.regression), loss_scale)
    self.checkpoint = self.runner.checkpoint()
    self.manager = runners.checkpoint_manager(self.checkpoint, self.model_dir,
                                              FLAGS.keep_checkpoint_max)
    runners.restore_or_initialize(self.checkpoint, self.model, FLAGS.output_dir,
                                  FLAGS.init_checkpoint, _log)

  def predict(self, path, batch_size):
    """Per-example outputs on a feature file: probabilities, predictions, per_example_loss,
    label_ids, is_real_example."""
    # pylint: disable=import-outside-toplevel
    from albert_tf.finetuning.evaluation import Predictor
    from albert_tf.finetuning.inputs import EXAMPLE_INDEX, in_file_order
    from albert_tf.models import classification_losses
    # pylint: enable=import-outside-toplevel
    if not hasattr(self, "_predictor"):
      def fn(features):
        out = classification_losses(self.model(features, training=False)["logits"],
                                    features["label_ids"], self.regression)
        return {"probabilities": out["probabilities"], "predictions": out["predictions"],
                "per_example_loss": out["per_example_loss"], "label_ids": features["label_ids"],
                "is_real_example": features["is_real_example"],
                EXAMPLE_INDEX: features[EXAMPLE_INDEX]}
      self._predictor = Predictor(self.strategy, fn)
    return in_file_order(self._predictor.run(self.dataset(path, batch_size, is_training=False)))

  # -- evaluation -------------------------------------------------------------------------------
  def evaluate_current(self, eval_file, tracker, step):
    # pylint: disable=import-outside-toplevel
    from albert_tf.checkpoints import save_original_checkpoint
    from albert_tf.finetuning.evaluation import batch_means
    from albert_tf.finetuning.metrics import classifier_eval_metrics
    # pylint: enable=import-outside-toplevel
    out = self.predict(eval_file, FLAGS.eval_batch_size)
    result = classifier_eval_metrics(
        self.task_name, out["label_ids"], out["predictions"], out["per_example_loss"],
        out["is_real_example"], batch_means(out["per_example_loss"], FLAGS.eval_batch_size))
    _log(f"***** Eval results at step {step} *****")
    for key in sorted(result):
      _log(f"  {key} = {result[key]}")
    if self.chief:
      best = os.path.join(FLAGS.output_dir, "model.ckpt-best")
      if tracker.record(step, result, lambda: save_original_checkpoint(
          self.model, best, global_step=step, update_checkpoint_state=False)):
        _log(f"new best {tracker.key_name} = {result[tracker.key_name]}: saved {best}")
    return result

  def evaluate_checkpoints(self, eval_file, tracker):
    """Evaluates each model.ckpt-<step> of output_dir not evaluated yet, in step order (the
    original's eval loop); with none at all, the model as initialised."""
    # pylint: disable=import-outside-toplevel
    from albert_tf.checkpoints import checkpoint_global_step
    from albert_tf.finetuning.evaluation import checkpoint_steps
    # pylint: enable=import-outside-toplevel
    found = checkpoint_steps(FLAGS.output_dir)
    for step, path in found.items():
      if step > tracker.last_step:
        self.checkpoint.read(path).expect_partial()
        self.evaluate_current(eval_file, tracker, step)
    if not found and tracker.last_step < 0:
      step = checkpoint_global_step(FLAGS.init_checkpoint) if FLAGS.init_checkpoint else 0
      self.evaluate_current(eval_file, tracker, step)

  # -- prediction -------------------------------------------------------------------------------
  def load_best(self):
    """model.ckpt-best if there is one, else the latest checkpoint, else init_checkpoint."""
    # pylint: disable=import-outside-toplevel
    import tensorflow as tf
    from albert_tf.checkpoints import load_checkpoint
    # pylint: enable=import-outside-toplevel
    best = os.path.join(FLAGS.output_dir, "model.ckpt-best")
    path = best if os.path.exists(best + ".index") else (
        tf.train.latest_checkpoint(FLAGS.output_dir) or FLAGS.init_checkpoint)
    if path:
      load_checkpoint(self.model, path)
    _log(f"predicting with {path or 'the untrained model'}")

  def write_predictions(self, predict_file, num_real):
    # pylint: disable=import-outside-toplevel
    from albert_tf.data.files import write_text_atomically
    from albert_tf.finetuning.glue import PaddingInputExample
    # pylint: enable=import-outside-toplevel
    examples = [e for e in self.processor.get_test_examples(FLAGS.data_dir)
                if not isinstance(e, PaddingInputExample)]
    out = self.predict(predict_file, FLAGS.predict_batch_size)
    test_lines, submit_lines = [], ["index\tprediction"]
    for i, example in enumerate(examples[:num_real]):
      test_lines.append("\t".join(str(p) for p in out["probabilities"][i]))
      prediction = out["predictions"][i]
      label = str(prediction) if self.regression else self.label_list[int(prediction)]
      submit_lines.append(f"{example.guid}\t{label}")
    if self.chief:
      for name, lines in (("test_results.tsv", test_lines), ("submit_results.tsv", submit_lines)):
        write_text_atomically(os.path.join(FLAGS.output_dir, name), "\n".join(lines) + "\n")
    _log(f"wrote predictions of {len(test_lines)} examples to {FLAGS.output_dir}/test_results.tsv "
         "and submit_results.tsv")

  def export(self):
    # pylint: disable=import-outside-toplevel
    from albert_tf.export.classifier import ClassifierServingModule
    from albert_tf.export.saved_model import export_saved_model
    # pylint: enable=import-outside-toplevel
    if not FLAGS.spm_model_file:
      raise app.UsageError("--export_dir needs --spm_model_file (the SavedModel tokenizes text "
                           "with SentencePiece in the graph)")
    pair = self.processor.spec.columns_for("test").text_b is not None
    module = ClassifierServingModule(self.model, FLAGS.spm_model_file, self.label_list, pair,
                                     FLAGS.do_lower_case, FLAGS.max_seq_length,
                                     FLAGS.threshold_to_export)
    path = export_saved_model(module, FLAGS.export_dir, int(time.time()))
    _log(f"Model exported to {path}.")


def main(argv):
  del argv
  # pylint: disable=import-outside-toplevel
  import tensorflow as tf
  from albert_tf.finetuning.evaluation import BestCheckpointTracker
  from albert_tf.finetuning.metrics import key_metric
  from albert_tf.training import runner as runners
  # pylint: enable=import-outside-toplevel
  if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict or FLAGS.export_dir):
    raise app.UsageError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
  if not FLAGS.spm_model_file and not FLAGS.vocab_file:
    raise app.UsageError("give --spm_model_file (SentencePiece) or --vocab_file (WordPiece)")
  job = ClassifierJob()
  if job.task_name == "ax" and (FLAGS.do_train or FLAGS.do_eval):
    raise app.UsageError("the ax (diagnostic) set has test data only: use --do_predict with an "
                         "MNLI-trained checkpoint")
  job.build()
  tracker = BestCheckpointTracker(FLAGS.output_dir, key_metric(job.task_name))
  padded = FLAGS.eval_batch_size if FLAGS.use_tpu else None
  eval_file = (job.features_file(f"{job.task_name}_eval.tf_record", "dev", padded)[0]
               if FLAGS.do_eval else None)

  if FLAGS.do_train:
    train_file, num_train = job.features_file(f"{job.task_name}_train.tf_record", "train")
    _log(f"***** Running training *****\n  Num examples = {num_train}\n  Batch size = "
         f"{FLAGS.train_batch_size}\n  Num steps = {FLAGS.train_step}")

    def train_iterator(step):
      seed = None if FLAGS.data_seed is None else FLAGS.data_seed + step
      return iter(job.strategy.distribute_datasets_from_function(
          lambda ctx: job.dataset(train_file, FLAGS.train_batch_size, True, seed, ctx)))

    def after_save(step, path):
      del path
      if eval_file:
        job.evaluate_current(eval_file, tracker, step)

    writer = (tf.summary.create_file_writer(os.path.join(job.model_dir, "train"))
              if job.chief else None)
    runners.install_sigterm_handler(_log)
    try:
      runners.run_training(job.runner, train_iterator, job.manager, job.settings, _log, writer,
                           examples_per_step=FLAGS.train_batch_size, after_save=after_save)
    except tf.errors.DataLossError as e:
      raise RuntimeError(f"corrupt TFRecord data in {train_file} ({e.message}); delete it to "
                         "regenerate it from the TSVs") from e

  if FLAGS.do_eval:
    job.evaluate_checkpoints(eval_file, tracker)
    _log(f"best {tracker.key_name} = {tracker.best_value} at step {tracker.best_step}")

  if FLAGS.do_predict or FLAGS.export_dir:
    job.load_best()
  if FLAGS.do_predict:
    padded = FLAGS.predict_batch_size if FLAGS.use_tpu else None
    predict_file, num_real = job.features_file("predict.tf_record", "test", padded,
                                               regenerate=True)
    job.write_predictions(predict_file, num_real)
  if FLAGS.export_dir and job.chief:
    job.export()


if __name__ == "__main__":
  for name in ("data_dir", "task_name", "output_dir", "albert_config_file"):
    flags.mark_flag_as_required(name)
  app.run(main)
