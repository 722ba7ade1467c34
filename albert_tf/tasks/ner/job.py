"""The NER fine-tuning job behind run_ner: CoNLL data, cached window features, training with an
evaluation of every checkpoint (the best kept as model.ckpt-best), per-word predictions, entity
metrics and the SavedModel export."""

import logging
import os

import numpy as np
import tensorflow as tf

from albert_tf.core import errors, io
from albert_tf.checkpoints import labels as label_files
from albert_tf.checkpoints import checkpoint_global_step
from albert_tf.checkpoints.opened import HF
from albert_tf.finetuning.inputs import EXAMPLE_INDEX, feature_dataset
from albert_tf.training.checkpointing import checkpoint_steps
from albert_tf.finetuning.job import FineTuningJob
from albert_tf.tasks.ner import data, features, labels
from albert_tf.tasks.ner.metrics import entity_metrics
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from albert_tf.tasks.ner.objective import TokenClassificationObjective, token_losses
from albert_tf.training.job import UsageError

KEY_METRIC = "f1"
logger = logging.getLogger("albert_tf")
_CACHED = {"train": "ner_train.tf_record", "dev": "ner_eval.tf_record"}


def _feature_spec(max_seq_length):
  spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
          for name in features.SEQUENCE_FEATURES}
  spec["sentence_index"] = tf.io.FixedLenFeature([], tf.int64)
  return spec


def _pad_to(x, length, value):
  """Pads [B, t] to [B, length] (trimmed batches come in several lengths)."""
  return tf.pad(x, [[0, 0], [0, length - tf.shape(x)[1]]], constant_values=value)


# A tagger's (or classifier's) head bias [L], in the original's layout and in ours.
_HEAD_BIAS = ("output_bias", "classifier/output_bias/.ATTRIBUTES/VARIABLE_VALUE")


def checkpoint_num_labels(init):
  """The label count of the head `init` (the opened --init_checkpoint) holds (its output_bias
  [L]; an HF tagger's id2label), or None: no checkpoint, or no head."""
  if init is None:
    return None
  if init.kind == HF:
    names = label_files.hf_id2label(init.path if io.isdir(init.path) else
                                    os.path.dirname(init.path))
    return len(names) if names else None
  shapes = init.variable_shapes
  return next((int(shapes[key][0]) for key in _HEAD_BIAS if key in shapes), None)


def words_tags(out, sentences, label_names):
  """The predicted tag of every word of every sentence, from predict()'s per-record outputs.

  Raises:
    RuntimeError: a word with no prediction, or with two (the windowing went wrong).
  """
  tags = [[None] * len(s.words) for s in sentences]
  rows, columns = np.nonzero(out["word_index"] >= 0)
  for r, c in zip(rows, columns):
    sentence, word = int(out["sentence_index"][r]), int(out["word_index"][r, c])
    if tags[sentence][word] is not None:
      raise RuntimeError(f"sentence {sentence} word {word} is predicted twice")
    tags[sentence][word] = label_names[int(out["predictions"][r, c])]
  for index, sentence_tags in enumerate(tags):
    if None in sentence_tags:
      raise RuntimeError(f"sentence {index} word {sentence_tags.index(None)} has no prediction")
  return tags


def prediction_lines(sentences, predicted):
  """`<split>_predictions.txt`: `word gold predicted` (`word predicted` without gold tags) a
  line, a blank line after each sentence."""
  lines = []
  for sentence, tags in zip(sentences, predicted):
    gold = sentence.tags or [None] * len(tags)
    lines += [" ".join(x for x in row if x is not None)
              for row in zip(sentence.words, gold, tags)]
    lines.append("")
  return "\n".join(lines) + "\n"


def results_text(result):
  """`key = value` lines, sorted, as eval_results.txt holds them."""
  return "".join(f"{key} = {result[key]}\n" for key in sorted(result))


class NerJob(FineTuningJob):
  """Named-entity recognition on CoNLL-2003-format files.

  Args:
    settings: a NerSettings.

  Raises:
    UsageError: nothing to do, or no label list.
    NerDataError: malformed data (naming file and line).
    ResumeMismatchError / CheckpointError: a label list that differs from the one output_dir
      was trained with, or from the checkpoint's.
  """

  def __init__(self, settings):
    s = settings
    if not (s.do_train or s.do_eval or s.do_predict or s.export_dir):
      raise UsageError("At least one of `do_train`, `do_eval`, `do_predict` or `export_dir` "
                       "must be set.")
    super().__init__(settings)
    wanted = [split for split, on in (("train", s.do_train), ("dev", s.do_eval),
                                      ("test", s.do_predict)) if on]
    # Every split is read and checked now: a malformed dev or test set fails before training
    # (data.NerDataError, a DataFormatError: one line, exit 1, as a file that is not UTF-8).
    self.paths = {split: data.split_file(s.data_dir, split) for split in wanted}
    self.sentences = {split: data.read_split(s.data_dir, split, s.char_level)
                      for split in wanted}
    self.label_names, source = labels.resolve_labels(
        s.label_list, s.output_dir, s.model.init_checkpoint, self.sentences.get("train"))
    if "train" in self.sentences:
      data.check_tags(self.sentences["train"], self.label_names, self.paths["train"])
    saved = label_files.read_label_file(s.output_dir)
    if saved is not None and saved != self.label_names:
      raise errors.ResumeMismatchError(
          f"--output_dir={s.output_dir} was trained with labels {saved}, not "
          f"{self.label_names}: use another --output_dir, or drop --label_list")
    if s.label_list:
      labels.check_checkpoint_labels(self.label_names, s.model.init_checkpoint, s.do_train)
    head = checkpoint_num_labels(self.init) if saved is None else None
    if head is not None and head != len(self.label_names):
      raise errors.CheckpointError(
          f"--init_checkpoint={s.model.init_checkpoint} has a head of {head} labels but the run "
          f"has {len(self.label_names)} ({source}: {' '.join(self.label_names)}): give "
          f"--label_list with the checkpoint's {head} tags, in its order")
    logger.info(f"{len(self.label_names)} labels from {source}: {' '.join(self.label_names)}")
    for split in ("dev", "test"):
      tags = {t for sentence in self.sentences.get(split, []) for t in sentence.tags or ()}
      unknown = sorted(tags - set(self.label_names))
      if unknown:  # the model cannot predict them: their entities count as missed
        logger.info(f"{self.paths[split]} has tags outside the label list: {' '.join(unknown)}")

  def scheduled_train_steps(self):
    return self.settings.train.num_train_steps

  def make_model(self):
    return AlbertTokenClassifier(self.config, len(self.label_names),
                                 dropout_rate=self.settings.dropout_prob,
                                 label_names=self.label_names)

  def objective(self):
    return TokenClassificationObjective()

  # -- features ---------------------------------------------------------------------------------
  def cached_path(self, split):
    if split == "test":  # regenerated every run, as the other tasks' predict features
      return os.path.join(self.settings.output_dir, "predict.tf_record")
    return os.path.join(self.settings.cached_dir or self.settings.output_dir, _CACHED[split])

  def features_file(self, split):
    """The split's feature file: cached for train and dev unless written from other data,
    labels, tokenizer, length or stride (finetuning.feature_cache). The chief writes; every
    worker returns once it is complete."""
    s = self.settings
    path = self.cached_path(split)

    def write(target):
      count = features.write_features(self.sentences[split], self.tokenizer, self.label_names,
                                      s.model.max_seq_length, s.doc_stride, target)
      logger.info(f"wrote {count} {split} features ({len(self.sentences[split])} sentences) "
                  f"to {target}")
    inputs = features.cache_inputs(self.paths[split], self.label_names, s.doc_stride,
                                   s.char_level)
    return self.cached_features(path, write, s.model.max_seq_length, inputs,
                                regenerate=split == "test")

  def dataset(self, path, batch_size, is_training, seed=None, input_context=None):
    s = self.settings
    return feature_dataset(path, _feature_spec(s.model.max_seq_length), batch_size, is_training,
                           s.model.max_seq_length,
                           # Eval and predict keep every record: each holds words to predict.
                           drop_remainder=s.run.use_tpu and is_training,
                           dynamic_length=s.dynamic_length, seed=seed,
                           input_context=input_context,
                           sequence_features=features.SEQUENCE_FEATURES)

  # -- prediction and metrics -------------------------------------------------------------------
  def predict(self, path, batch_size):
    """Per-record predictions [N, T], word_index [N, T], sentence_index [N] and the summed
    loss and labelled-position count of each record, in file order."""
    if not hasattr(self, "_predict"):
      length = self.settings.model.max_seq_length

      def fn(batch):
        nll, predictions, weights = token_losses(
            self.model(batch, training=False)["logits"], batch["label_ids"],
            batch["label_weights"])
        return {"predictions": _pad_to(predictions, length, 0),
                "word_index": _pad_to(batch["word_index"], length, -1),
                "sentence_index": batch["sentence_index"],
                "loss_sum": tf.reduce_sum(nll, axis=1), "tokens": tf.reduce_sum(weights, axis=1),
                EXAMPLE_INDEX: batch[EXAMPLE_INDEX]}
      self._predict = self.predictor(fn)
    return self._predict(self.dataset(path, batch_size, is_training=False))

  def score(self, split, batch_size):
    """(predicted tags per sentence, metrics or None for an untagged split)."""
    out = self.predict(self.features_file(split) if split == "test" else self._files[split],
                       batch_size)
    sentences = self.sentences[split]
    predicted = words_tags(out, sentences, self.label_names)
    if sentences[0].tags is None:
      return predicted, None
    result = entity_metrics([list(s.tags) for s in sentences], predicted)
    result["eval_loss"] = float(out["loss_sum"].sum() / max(out["tokens"].sum(), 1.0))
    return predicted, result

  def evaluate(self):
    return self.score("dev", self.settings.eval_batch_size)[1]

  def write_predictions(self, split, batch_size):
    """Writes <split>_predictions.txt and, for a tagged test set, test_results.txt."""
    predicted, result = self.score(split, batch_size)
    if not self.chief:
      return result
    output_dir = self.settings.output_dir
    io.write_text_atomically(os.path.join(output_dir, f"{split}_predictions.txt"),
                             prediction_lines(self.sentences[split], predicted))
    logger.info(f"wrote {split}_predictions.txt ({len(predicted)} sentences)")
    if result is not None and split == "test":
      step = checkpoint_global_step(self.loaded_from) if self.loaded_from else 0
      io.write_text_atomically(os.path.join(output_dir, "test_results.txt"),
                               results_text(dict(result, global_step=step)))
      logger.info(f"test f1 = {result['f1']} (test_results.txt)")
    return result

  def export(self):
    s = self.settings
    from albert_tf.tasks.ner.export import export_ner_saved_model  # TF Serving ops: only here
    path = export_ner_saved_model(self.model, self.label_names, s.tokenizer,
                                  s.model.max_seq_length, s.export_dir, s.serving_precision,
                                  doc_stride=s.doc_stride, char_level=s.char_level)
    logger.info(f"Model exported to {path}.")

  # -- flow -------------------------------------------------------------------------------------
  def flow(self, after_save):
    """Train (evaluating each checkpoint), evaluate the checkpoints not evaluated yet, then with
    model.ckpt-best write the dev and test predictions and export."""
    s = self.settings
    self.claim_output_dir()
    if self.chief:
      label_files.write_label_file(s.output_dir, self.label_names)
    self.build_with_steps(s.train.num_train_steps, s.train.num_warmup_steps)
    tracker = self.tracker(KEY_METRIC)
    self._files = {split: self.features_file(split) for split in ("train", "dev")
                   if split in self.sentences}
    if s.do_train and s.do_eval and tracker.last_step < 0 and not checkpoint_steps(s.output_dir):
      # The initialised model's scores first: what training is measured against.
      self.record(tracker, self.runner.global_step.numpy().item(), self.evaluate())
    if s.do_train:
      logger.info(f"***** Running training *****\n"
                  f"  Num sentences = {len(self.sentences['train'])}\n"
                  f"  Batch size = {s.train.train_batch_size}\n"
                  f"  Num steps = {s.train.num_train_steps}")

      def evaluate_then(step, path):
        if s.do_eval:
          self.record(tracker, step, self.evaluate())
        if after_save is not None:
          after_save(step, path)
      train_file = self._files["train"]
      self.train_on(train_file, lambda seed, ctx: self.dataset(
          train_file, s.train.train_batch_size, True, seed, ctx), evaluate_then)
    if s.do_eval:
      self.evaluate_checkpoints(tracker, self.evaluate)
      logger.info(f"best {tracker.key_name} = {tracker.best_value} at step {tracker.best_step}")
    if s.do_eval or s.do_predict or s.export_dir:
      self.load_best()
    if s.do_eval:
      self.write_predictions("dev", s.eval_batch_size)
    if s.do_predict:
      self.write_predictions("test", s.predict_batch_size)
    if s.export_dir and self.chief:
      self.export()
