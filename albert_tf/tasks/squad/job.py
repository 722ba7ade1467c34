"""The SQuAD fine-tuning job behind run_squad_v1 and run_squad_v2: features, training,
evaluation of every checkpoint with the original's post-processing, prediction files."""

import json
import logging
import os
import random

import tensorflow as tf

from albert_tf.core import errors
from albert_tf.core import io
from albert_tf.core.io import write_text_atomically
from albert_tf.tasks.squad import data as squad_data
from albert_tf.tasks.squad.features import InputFeatures
from albert_tf.tasks.squad import cmrc_metric
from albert_tf.tasks.squad import postprocess as squad_postprocess
from albert_tf.tasks.squad import wordpiece_data
from albert_tf.tokenization.cmrc import CmrcTokenizer
from albert_tf.finetuning import feature_cache
from albert_tf.finetuning.inputs import EXAMPLE_INDEX, feature_dataset
from albert_tf.finetuning.job import FineTuningJob
from albert_tf.training import strategy as strategies
from albert_tf.training.job import UsageError
from albert_tf.tasks.squad.objective import SquadObjective
from albert_tf.tasks.squad.model import AlbertSpanLabeler, AlbertSquadV2

logger = logging.getLogger("albert_tf")

V1_OUTPUTS = ("start_log_prob", "end_log_prob")
V2_OUTPUTS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
              "cls_logits")


def squad_features(max_seq_length, is_training):
  spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
          for name in ("input_ids", "input_mask", "segment_ids", "p_mask")}
  spec["unique_ids"] = tf.io.FixedLenFeature([], tf.int64)
  if is_training:
    for name in ("start_positions", "end_positions", "is_impossible"):
      spec[name] = tf.io.FixedLenFeature([], tf.int64)
  return spec


def has_answers(dataset):
  return all("answers" in qa for article in dataset for p in article["paragraphs"]
             for qa in p["qas"])


def write_features_jsonl(path, features):
  """The prediction features' bookkeeping (the original pickles it to predict_feature_left_file;
  we write JSON lines, which are safe to read back)."""
  lines = []
  for f in features:
    lines.append(json.dumps({
        "unique_id": f.unique_id, "example_index": f.example_index,
        "doc_span_index": f.doc_span_index, "tokens": f.tokens,
        "tok_start_to_orig_index": f.tok_start_to_orig_index,
        "tok_end_to_orig_index": f.tok_end_to_orig_index,
        "token_is_max_context": {str(k): v for k, v in f.token_is_max_context.items()},
        "paragraph_len": f.paragraph_len}, ensure_ascii=False))
  write_text_atomically(path, "\n".join(lines) + "\n")


def read_features_jsonl(path):
  features = []
  with io.open_text(path) as f:
    for line in f:
      d = json.loads(line)
      features.append(InputFeatures(
          unique_id=d["unique_id"], example_index=d["example_index"],
          doc_span_index=d["doc_span_index"],
          tok_start_to_orig_index=d["tok_start_to_orig_index"],
          tok_end_to_orig_index=d["tok_end_to_orig_index"],
          token_is_max_context={int(k): v for k, v in d["token_is_max_context"].items()},
          tokens=d["tokens"], input_ids=[], input_mask=[], segment_ids=[],
          paragraph_len=d["paragraph_len"], p_mask=[]))
  return features


class SquadJob(FineTuningJob):
  """SQuAD v1.1 (v2=False) or 2.0."""

  def __init__(self, settings):
    if not (settings.do_train or settings.do_predict or settings.export_dir):
      raise UsageError("At least one of `do_train` or `do_predict` or `export_dir` must be True.")
    if settings.do_train and not settings.train_file:
      raise UsageError("If `do_train` is True, then `train_file` must be specified.")
    if settings.do_predict and not settings.predict_file:
      raise UsageError("If `do_predict` is True, then `predict_file` must be specified.")
    if settings.metric == "cmrc2018" and settings.v2:
      raise UsageError("--metric=cmrc2018 is run_squad_v1's: CMRC 2018 has no unanswerable "
                       "questions, and run_squad_v2 scores with SQuAD 2.0's null threshold")
    if settings.metric == "cmrc2018" and settings.do_predict:  # now, not once training is over
      errors.require_module("nltk", "chinese", "--metric=cmrc2018")
    super().__init__(settings)
    s = settings
    if s.model.max_seq_length <= s.max_query_length + 3:
      raise UsageError(f"The max_seq_length ({s.model.max_seq_length}) must be greater than "
                       f"max_query_length ({s.max_query_length}) + 3")
    # WordPiece (--vocab_file): the CMRC 2018 BERT baseline's words and features.
    self.wordpiece = None
    if self.tokenizer.sp_model is None:
      self.wordpiece = CmrcTokenizer(None, s.tokenizer.do_lower_case, vocab=self.tokenizer.vocab)
    self.v2 = settings.v2
    self.key_metric = "f1"

  def make_model(self):
    s = self.settings
    if self.v2:
      return AlbertSquadV2(self.config, s.start_n_top, s.end_n_top, s.dropout_prob)
    return AlbertSpanLabeler(self.config)

  def objective(self):
    return SquadObjective(self.v2)

  # -- data -------------------------------------------------------------------------------------
  def _convert(self, examples, is_training, path, source, keep=None):
    """Writes the examples' features to path (atomically; None: writes no records, only keeps
    the features); an error when there are none (every example of `source` failed to
    align)."""
    s = self.settings
    writer = squad_data.FeatureWriter(path, is_training)

    def output(feature):
      writer.process_feature(feature)
      if keep is not None:
        keep.append(feature)
    try:
      if self.wordpiece is not None:
        wordpiece_data.convert_examples_to_features(
            examples, self.wordpiece, s.model.max_seq_length, s.doc_stride, s.max_query_length,
            is_training, output)
      else:
        squad_data.convert_examples_to_features(
            examples, self.tokenizer, s.model.max_seq_length, s.doc_stride, s.max_query_length,
            is_training, output, s.tokenizer.do_lower_case)
      if not writer.num_features:
        raise errors.DataFormatError(
            f"no features from {source}: no paragraph of its {len(examples)} "
            "questions could be aligned to its SentencePiece pieces (see the "
            "MISMATCH DETECTED lines): check --spm_model_file and --do_lower_case")
    except BaseException:
      writer.abort()
      raise
    writer.close()
    return writer.num_features

  def read_examples(self, path, is_training):
    if self.wordpiece is not None:
      return wordpiece_data.read_examples(path, is_training, self.wordpiece.do_lower_case)
    return squad_data.read_squad_examples(path, is_training=is_training)

  def train_examples(self):
    examples = self.read_examples(self.settings.train_file, is_training=True)
    random.Random(12345).shuffle(examples)  # as the original, before writing features
    return examples

  def cache_inputs(self, source):
    """What SQuAD features are made from, beside the tokenizer and max_seq_length (the stamp of
    their cache: finetuning.feature_cache): the data file's contents, the windows and the
    question length, the version and the WordPiece (CMRC) or SentencePiece path."""
    s = self.settings
    return {"data": feature_cache.files_sha256([source]), "doc_stride": s.doc_stride,
            "max_query_length": s.max_query_length, "v2": bool(self.v2),
            "wordpiece": self.wordpiece is not None}

  def cache_stamp(self, inputs):
    """The stamp FineTuningJob.cached_features gives the records of `inputs` (cache_inputs):
    the tokenizer's fingerprint, max_seq_length and the inputs. The prediction features'
    bookkeeping is stamped with it too, and read only beside records of the same stamp."""
    s = self.settings
    return feature_cache.make_stamp(s.tokenizer, max_seq_length=s.model.max_seq_length,
                                    **inputs)

  def train_feature_file(self, examples):
    """The training features' file, written by the chief unless cached for the same inputs;
    every worker returns once it is complete."""
    s = self.settings
    path = s.train_feature_file or os.path.join(s.output_dir, "train.tf_record")

    # The target is path unless the cache's place names it after its stamp (see
    # feature_cache.cache_path).
    def write(target=path):
      count = self._convert(examples, True, target, s.train_file)
      logger.info(f"wrote {count} training features to {target}")
    return self.cached_features(path, write, s.model.max_seq_length,
                                self.cache_inputs(s.train_file), what="training features",
                                named_by="--train_feature_file" if s.train_feature_file else None)

  def predict_features(self):
    """(examples, features, feature file) of --predict_file, features cached as the original
    caches them (predict_feature_file + predict_feature_left_file), for the same inputs. The
    chief writes them; the other workers read them back once it has.

    The bookkeeping (predict_feature_left_file) describes the records one by one, so it is
    stamped as they are and read only beside records of this run's inputs
    (feature_cache.checked_pair): bookkeeping of other inputs is written again in a place the
    run chose, and refused where the user named it. A --predict_feature_file that exists is
    never written again: with a stamp that shows it is this run's, only its bookkeeping is made
    again when missing; without one it cannot be paired, and the run stops naming both files.

    Raises:
      errors.CacheError: a file the user named that cannot be used or would be overwritten.
    """
    s = self.settings
    examples = self.read_examples(s.predict_file, is_training=False)
    path = s.predict_feature_file or os.path.join(s.output_dir, "predict.tf_record")
    left = s.predict_feature_left_file or os.path.join(s.output_dir, "predict_left.jsonl")
    named_by = "--predict_feature_file" if s.predict_feature_file else None
    inputs = self.cache_inputs(s.predict_file)
    stamp = self.cache_stamp(inputs)
    records, bookkeeping = feature_cache.checked_pair(
        path, left, stamp, named_by=named_by,
        companion_named_by="--predict_feature_left_file" if s.predict_feature_left_file else None,
        companion_flag="--predict_feature_left_file")
    features = []
    write_left = feature_cache.stamped(left, stamp, lambda: write_features_jsonl(left, features))

    def write(target=path):
      self._convert(examples, False, target, s.predict_file, keep=features)
      if bookkeeping:
        write_left()
    path = self.cached_features(path, write, s.model.max_seq_length, inputs,
                                what="prediction features", named_by=named_by,
                                regenerate=records)
    # The records are read as they are (their stamp says they are this run's): the same inputs
    # convert to the same features, whose bookkeeping is written beside them. The chief's
    # decision, taken by every worker: a worker that looked at the files later could see it done.
    if strategies.chief_decides(self.strategy, bookkeeping and not records):
      def write_bookkeeping():
        self._convert(examples, False, None, s.predict_file, keep=features)
        write_left()
        logger.info(f"wrote the bookkeeping of {path} to {left}")
      strategies.run_on_chief(self.strategy, write_bookkeeping, left)
    if features:
      return examples, features, path
    logger.info(f"Loading eval features from {left}")
    return examples, read_features_jsonl(left), path

  def dataset(self, path, batch_size, is_training, seed=None, input_context=None):
    s = self.settings
    # v1's n-best start/end positions are taken over every position, padding included (as the
    # original), so its predictions run at full length; its training and v2 are trimmed.
    dynamic = s.dynamic_length and (is_training or self.v2)
    return feature_dataset(path, squad_features(s.model.max_seq_length, is_training), batch_size,
                           is_training, s.model.max_seq_length, drop_remainder=s.run.use_tpu,
                           dynamic_length=dynamic, seed=seed, input_context=input_context)

  # -- prediction and evaluation ----------------------------------------------------------------
  def raw_results(self, path):
    """{unique_id: {field: array}} with the original's output names."""
    if not hasattr(self, "_predict"):
      def fn(features):
        out = self.model(features, training=False)
        if self.v2:
          result = {k: out[k] for k in V2_OUTPUTS}
        else:
          result = {"start_log_prob": out["start_logits"], "end_log_prob": out["end_logits"]}
        result["unique_ids"] = features["unique_ids"]
        result[EXAMPLE_INDEX] = features[EXAMPLE_INDEX]
        return result
      self._predict = self.predictor(fn)
    out = self._predict(self.dataset(path, self.settings.predict_batch_size, is_training=False))
    fields = V2_OUTPUTS if self.v2 else V1_OUTPUTS
    return {int(uid): {k: out[k][i] for k in fields} for i, uid in enumerate(out["unique_ids"])}

  def postprocess(self, examples, features, results, dataset):
    """(predictions, nbest, null_odds or None, metrics or None) as the original."""
    s = self.settings
    if self.v2:
      return squad_postprocess.postprocess_v2(
          examples, features, results, s.n_best_size, s.max_answer_length, s.start_n_top,
          s.end_n_top, dataset if has_answers(dataset) else None)
    predictions, nbest = squad_postprocess.postprocess_v1(examples, features, results,
                                                          s.n_best_size, s.max_answer_length)
    evaluate = (cmrc_metric.evaluate if s.metric == "cmrc2018" else
                squad_postprocess.evaluate_v1)
    metrics = evaluate(dataset, predictions) if has_answers(dataset) else None
    return predictions, nbest, None, metrics

  def predict_and_write(self, examples, features, path, dataset):
    """Runs the model, writes predictions.json, nbest_predictions.json (and null_odds.json, and
    v2's null threshold for export); returns the metrics (None without answers)."""
    predictions, nbest, null_odds, metrics = self.postprocess(
        examples, features, self.raw_results(path), dataset)
    if self.chief:
      out = self.settings.output_dir
      # WordPiece (Chinese) answers are written readable, as the CMRC 2018 baseline does.
      readable = {"ensure_ascii": self.wordpiece is None}
      squad_postprocess.write_json(os.path.join(out, "predictions.json"), predictions,
                                   **readable)
      squad_postprocess.write_json(os.path.join(out, "nbest_predictions.json"), nbest,
                                   **readable)
      if null_odds is not None:
        squad_postprocess.write_json(os.path.join(out, "null_odds.json"), null_odds)
      if metrics is not None and self.v2:
        write_text_atomically(self.null_threshold_file,
                              str(metrics["null_score_diff_threshold"]))
    return metrics

  @property
  def null_threshold_file(self):
    return os.path.join(self.settings.output_dir, "null_score_diff_threshold.txt")

  def null_threshold(self):
    """The null-score threshold for export: the best_f1 threshold found on the dev set (0.0 when
    no evaluation ran)."""
    path = self.null_threshold_file
    return float(io.read_text(path)) if io.exists(path) else 0.0

  def num_train_steps(self, num_examples):
    """(training steps, warmup steps) as the original computes them; none at all is an error
    (the run would end at once, having trained nothing)."""
    s = self.settings
    steps = int(num_examples / s.train.train_batch_size * s.num_train_epochs)
    if steps < 1:
      raise UsageError(f"{num_examples} training questions at --train_batch_size="
                       f"{s.train.train_batch_size} for --num_train_epochs={s.num_train_epochs} "
                       "make no training step: lower the batch size or raise the epochs")
    return steps, int(steps * s.warmup_proportion)

  # -- the flow ---------------------------------------------------------------------------------
  def flow(self, after_save):
    """The original binary's flow: train (each checkpoint evaluated on predict_file), evaluate
    the checkpoints not evaluated yet, write model.ckpt-best's predictions, export it."""
    s = self.settings
    # Both sets are read and checked (and the prediction features written) before the model is
    # built: a malformed or empty predict_file fails now, not once training is over.
    train_examples = self.train_examples() if s.do_train else None
    steps, warmup = self.num_train_steps(len(train_examples)) if s.do_train else (0, 0)
    self.claim_output_dir()
    predict = None  # evaluates on predict_file, with do_predict
    if s.do_predict:
      dataset = squad_data.load_squad_json(s.predict_file)
      examples, features, predict_path = self.predict_features()
      logger.info(f"***** Running predictions *****\n  Num orig examples = {len(examples)}\n  Num "
                  f"split examples = {len(features)}\n  Batch size = {s.predict_batch_size}")

      def predict_and_score():
        return (self.predict_and_write(examples, features, predict_path, dataset)
                or {self.key_metric: float("nan")})
      predict = predict_and_score

    self.build_with_steps(steps, warmup)
    tracker = self.tracker(self.key_metric)
    if s.do_train:
      train_file = self.train_feature_file(train_examples)
      logger.info(f"***** Running training *****\n  Num orig examples = {len(train_examples)}\n  "
                  f"Batch size = {s.train.train_batch_size}\n  Num steps = {steps}")

      def evaluate_then(step, path):
        if predict:
          self.record(tracker, step, predict())
        if after_save is not None:
          after_save(step, path)
      self.train_on(train_file, lambda seed, ctx: self.dataset(
          train_file, s.train.train_batch_size, True, seed, ctx), evaluate_then)
    if predict:
      self.evaluate_checkpoints(tracker, predict)
    if predict or s.export_dir:
      self.load_best("predicting" if predict else "exporting")
    # The prediction files are model.ckpt-best's, as the original leaves them: written again only
    # when the last evaluation was not of the best checkpoint.
    if predict and (tracker.best_step != tracker.last_step or not io.exists(
        os.path.join(s.output_dir, "predictions.json"))):
      result = predict()
      logger.info("***** Final Eval results *****")
      for key in sorted(result):
        logger.info(f"  {key} = {result[key]}")
    if s.export_dir and self.chief:
      from albert_tf.tasks.squad.export import SquadServingModule
      path = self.export_serving(SquadServingModule(
          self.serving_model(), s.tokenizer, s.model.max_seq_length, s.doc_stride,
          s.max_query_length, s.max_answer_length, s.n_best_size, self.v2,
          self.null_threshold()))
      if not self.v2:  # as the original's run_squad_v1: the float32 model, for devices
        from albert_tf.export.tflite import export_beside_saved_model
        logger.info(f"wrote {export_beside_saved_model(self.model, path, s.model.max_seq_length)}")
