"""Flags and main() shared by run_squad_v1 and run_squad_v2 (the original's flags)."""

import os

from absl import app, flags

from albert_tf import common_flags

FLAGS = flags.FLAGS


def define_flags(v2):
  flags.DEFINE_string("train_file", None,
                      "SQuAD json for training. E.g., train-v1.1.json")
  flags.DEFINE_string("predict_file", None,
                      "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
  flags.DEFINE_string("train_feature_file", None,
                      "training feature file (default: train.tf_record in output_dir).")
  flags.DEFINE_string("predict_feature_file", None,
                      "Location of predict features. If it doesn't exist, it will be written. "
                      "If it does exist, it will be read (default: predict.tf_record in "
                      "output_dir).")
  flags.DEFINE_string("predict_feature_left_file", None,
                      "Location of predict features not passed to TPU. If it doesn't exist, it "
                      "will be written. If it does exist, it will be read (default: "
                      "predict_left.jsonl in output_dir; JSON lines, not the original's pickle).")
  flags.DEFINE_integer("doc_stride", 128,
                       "When splitting up a long document into chunks, how much stride to take "
                       "between chunks.")
  flags.DEFINE_integer("max_query_length", 64,
                       "The maximum number of tokens for the question. Questions longer than "
                       "this will be truncated to this length.")
  flags.DEFINE_bool("do_train", False, "Whether to run training.")
  flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
  flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
  flags.DEFINE_float("warmup_proportion", 0.1,
                     "Proportion of training to perform linear learning rate warmup for. E.g., "
                     "0.1 = 10% of training.")
  flags.DEFINE_integer("n_best_size", 20,
                       "The total number of n-best predictions to generate in the "
                       "nbest_predictions.json output file.")
  flags.DEFINE_integer("max_answer_length", 30,
                       "The maximum length of an answer that can be generated. This is needed "
                       "because the start and end predictions are not conditioned on one "
                       "another.")
  flags.DEFINE_string("export_dir", None,
                      "The directory where the exported SavedModel will be stored.")
  if v2:
    flags.DEFINE_integer("start_n_top", 5, "beam size for the start positions.")
    flags.DEFINE_integer("end_n_top", 5, "beam size for the end positions.")
    flags.DEFINE_float("dropout_prob", 0.1, "dropout probability.")
  common_flags.define_finetuning_flags(max_seq_length=384, learning_rate=5e-5)


def main(v2):
  # pylint: disable=import-outside-toplevel
  from albert_tf.finetuning.job import UsageError, log
  from albert_tf.finetuning.squad_data import load_squad_json
  from albert_tf.finetuning.squad_job import SquadJob, num_train_steps
  # pylint: enable=import-outside-toplevel
  if not (FLAGS.do_train or FLAGS.do_predict or FLAGS.export_dir):
    raise app.UsageError("At least one of `do_train` or `do_predict` or `export_dir` must be "
                         "True.")
  if FLAGS.do_train and not FLAGS.train_file:
    raise app.UsageError("If `do_train` is True, then `train_file` must be specified.")
  if FLAGS.do_predict and not FLAGS.predict_file:
    raise app.UsageError("If `do_predict` is True, then `predict_file` must be specified.")
  try:
    job = SquadJob(FLAGS, v2)
  except UsageError as e:
    raise app.UsageError(str(e)) from None

  # Both sets are read and checked (and the prediction features written) before the model is
  # built: a malformed or empty predict_file fails now, not once training is over.
  train_examples = job.train_examples() if FLAGS.do_train else None
  try:
    steps, warmup = (num_train_steps(len(train_examples), FLAGS) if train_examples is not None
                     else (0, 0))
  except UsageError as e:
    raise app.UsageError(str(e)) from None
  try:
    job.claim_output_dir()
  except UsageError as e:
    raise app.UsageError(str(e)) from None
  predict = None
  if FLAGS.do_predict:
    dataset = load_squad_json(FLAGS.predict_file)
    examples, features, predict_path = job.predict_features()
    log(f"***** Running predictions *****\n  Num orig examples = {len(examples)}\n  Num split "
        f"examples = {len(features)}\n  Batch size = {FLAGS.predict_batch_size}")

    def predict():
      return (job.predict_and_write(examples, features, predict_path, dataset)
              or {job.key_metric: float("nan")})

  job.build(steps, warmup)
  tracker = job.tracker(job.key_metric)
  if FLAGS.do_train:
    train_file = job.train_feature_file(train_examples)
    log(f"***** Running training *****\n  Num orig examples = {len(train_examples)}\n  Batch "
        f"size = {FLAGS.train_batch_size}\n  Num steps = {steps}")
    job.train(lambda seed, ctx: job.dataset(train_file, FLAGS.train_batch_size, True, seed, ctx),
              after_save=(lambda step, path: job.record(tracker, step, predict()))
              if predict else None)
  if predict:
    job.evaluate_checkpoints(tracker, predict)
  if predict or FLAGS.export_dir:
    job.load_best()
  # The prediction files are model.ckpt-best's, as the original leaves them: written again only
  # when the last evaluation was not of the best checkpoint.
  if predict and (tracker.best_step != tracker.last_step or not os.path.exists(
      os.path.join(FLAGS.output_dir, "predictions.json"))):
    result = predict()
    log("***** Final Eval results *****")
    for key in sorted(result):
      log(f"  {key} = {result[key]}")
  if FLAGS.export_dir and job.chief:
    from albert_tf.export.squad import export_squad  # pylint: disable=import-outside-toplevel
    log(f"Model exported to {export_squad(job)}.")


def run(v2):
  for name in ("spm_model_file", "albert_config_file", "output_dir"):
    flags.mark_flag_as_required(name)
  app.run(lambda argv: main(v2))
