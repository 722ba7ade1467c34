"""Run masked LM / sentence order pretraining for ALBERT (the original's flags).

  python -m albert_tf.run_pretraining --input_file=train.tfrecord --output_dir=out \
      --albert_config_file=albert_config.json --train_batch_size=4096 --optimizer=lamb \
      --learning_rate=0.00176 --num_train_steps=125000 --num_warmup_steps=3125

Resumes from the latest checkpoint in --output_dir; --init_checkpoint takes a released TF1
checkpoint or one of ours.
"""

import os
import shutil
import sys

from absl import app, flags

from albert_tf import common_flags

FLAGS = flags.FLAGS

flags.DEFINE_string("albert_config_file", None,
                    "The config json file corresponding to the pre-trained ALBERT model. This "
                    "specifies the model architecture.")
flags.DEFINE_string("input_file", None, "Input TF example files (can be a glob or comma separated).")
flags.DEFINE_string("output_dir", None,
                    "The output directory where the model checkpoints will be written.")
flags.DEFINE_string("init_checkpoint", None,
                    "Initial checkpoint (usually from a pre-trained ALBERT model).")
flags.DEFINE_integer("max_seq_length", 512,
                     "The maximum total input sequence length after WordPiece tokenization. "
                     "Sequences longer than this will be truncated, and sequences shorter than "
                     "this will be padded. Must match data generation.")
flags.DEFINE_integer("max_predictions_per_seq", 20,
                     "Maximum number of masked LM predictions per sequence. Must match data "
                     "generation.")
flags.DEFINE_bool("do_train", True, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 4096, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 64, "Total batch size for eval.")
flags.DEFINE_enum("optimizer", "lamb", ["adamw", "lamb"], "The optimizer for training.")
flags.DEFINE_float("learning_rate", 0.00176, "The initial learning rate.")
flags.DEFINE_float("poly_power", 1.0, "The power of poly decay.")
flags.DEFINE_integer("num_train_steps", 125000, "Number of training steps.")
flags.DEFINE_integer("num_warmup_steps", 3125, "Number of warmup steps.")
flags.DEFINE_integer("start_warmup_step", 0, "The starting step of warmup.")
flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
flags.DEFINE_bool("init_from_group0", False,
                  "Whether to initialize parameters of other groups from group 0")
flags.DEFINE_float("masked_lm_budget", 0,
                   "If >0, the ratio of masked ngrams to unmasked ngrams. Default 0, for offline "
                   "masking. Here: masks are drawn afresh every epoch from token_boundary with "
                   "this masking probability.")
flags.DEFINE_string("spm_model_file", None,
                    "With --masked_lm_budget: the SentencePiece model, for the ids of [CLS], "
                    "[SEP], [MASK] (default 2, 3, 4 as ALBERT's).")
common_flags.define_run_flags()


def _log(message):
  print(message, file=sys.stderr, flush=True)


def _dynamic_masking(config):
  from albert_tf.data.pipeline import DynamicMasking  # pylint: disable=import-outside-toplevel
  if not FLAGS.masked_lm_budget:
    return None
  ids = (2, 3, 4)
  if FLAGS.spm_model_file:
    from albert_tf.tokenization import FullTokenizer  # pylint: disable=import-outside-toplevel
    ids = FullTokenizer(spm_model_file=FLAGS.spm_model_file).convert_tokens_to_ids(
        ["[CLS]", "[SEP]", "[MASK]"])
  return DynamicMasking(cls_id=ids[0], sep_id=ids[1], mask_id=ids[2],
                        vocab_size=config.vocab_size, masked_lm_prob=FLAGS.masked_lm_budget)


def main(argv):
  del argv
  # Heavy imports after flag parsing, so that --help is quick.
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  from albert_tf.config import AlbertConfig  # pylint: disable=import-outside-toplevel
  from albert_tf.io import expand_input_patterns, write_text_atomically  # pylint: disable=import-outside-toplevel
  from albert_tf.data.pipeline import check_record_lengths, pretraining_dataset  # pylint: disable=import-outside-toplevel
  from albert_tf.models import AlbertPretrainer  # pylint: disable=import-outside-toplevel
  from albert_tf.optimization import create_optimizer  # pylint: disable=import-outside-toplevel
  from albert_tf.training import pretraining, strategy as strategies  # pylint: disable=import-outside-toplevel
  from albert_tf.training.lock import OutputDirLock  # pylint: disable=import-outside-toplevel

  if not FLAGS.do_train and not FLAGS.do_eval:
    raise app.UsageError("At least one of `do_train` or `do_eval` must be True.")
  config = AlbertConfig.from_json_file(FLAGS.albert_config_file)
  if FLAGS.max_seq_length > config.max_position_embeddings:
    raise app.UsageError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the config's "
                         f"max_position_embeddings ({config.max_position_embeddings})")
  input_files = expand_input_patterns(FLAGS.input_file)
  strategy = common_flags.strategy_from_flags(FLAGS.train_batch_size)
  # After the strategy: reading a record initialises TF's devices.
  try:
    check_record_lengths(input_files[0], FLAGS.max_seq_length, FLAGS.max_predictions_per_seq)
  except ValueError as e:
    raise app.UsageError(str(e)) from None
  replicas = strategy.num_replicas_in_sync
  accumulation = FLAGS.gradient_accumulation_steps
  chief = strategies.is_chief(strategy)
  os.makedirs(FLAGS.output_dir, exist_ok=True)
  if chief:
    OutputDirLock(FLAGS.output_dir, _log).acquire()
  model_dir = strategies.worker_dir(strategy, FLAGS.output_dir)
  _log(f"strategy {strategies.describe(strategy)} with {replicas} replicas; input files "
       f"{input_files}")

  settings = pretraining.TrainSettings(
      learning_rate=FLAGS.learning_rate, num_train_steps=FLAGS.num_train_steps,
      num_warmup_steps=FLAGS.num_warmup_steps, start_warmup_step=FLAGS.start_warmup_step,
      poly_power=FLAGS.poly_power, gradient_accumulation_steps=accumulation,
      iterations_per_loop=FLAGS.iterations_per_loop,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps,
      keep_checkpoint_max=FLAGS.keep_checkpoint_max, jit_compile=FLAGS.jit_compile)
  with strategy.scope():
    model = AlbertPretrainer(config)
    optimizer = create_optimizer(FLAGS.optimizer)
    loss_scale = common_flags.loss_scale_from_flags()
  runner = pretraining.PretrainingRunner(strategy, model, optimizer, settings, loss_scale)
  dynamic = _dynamic_masking(config)

  def iterator(is_training, batch_size, seed=None, start_step=0):
    return iter(strategy.distribute_datasets_from_function(
        lambda ctx: pretraining_dataset(input_files, FLAGS.max_seq_length,
                                        FLAGS.max_predictions_per_seq, batch_size, is_training,
                                        input_context=ctx, dynamic=dynamic, seed=seed,
                                        start_step=start_step)))

  def train_iterator(step):
    return iterator(True, FLAGS.train_batch_size, FLAGS.data_seed, step)

  checkpoint = runner.checkpoint()
  manager = pretraining.checkpoint_manager(checkpoint, model_dir, FLAGS.keep_checkpoint_max,
                                           _log)
  pretraining.restore_or_initialize(checkpoint, model, FLAGS.output_dir, FLAGS.init_checkpoint,
                                    _log, FLAGS.init_from_group0)

  if FLAGS.do_train:
    writer = tf.summary.create_file_writer(os.path.join(model_dir, "train")) if chief else None
    pretraining.install_sigterm_handler(_log)
    try:
      pretraining.run_training(runner, train_iterator, manager, settings, _log, writer,
                               examples_per_step=FLAGS.train_batch_size)
    except tf.errors.DataLossError as e:
      raise RuntimeError(
          f"corrupt TFRecord data in {input_files} ({e.message}); regenerate the file with "
          f"create_pretraining_data. The last checkpoint is {manager.latest_checkpoint}") from e

  if FLAGS.do_eval:
    result = runner.evaluate(iterator(False, FLAGS.eval_batch_size), FLAGS.max_eval_steps)
    _log("***** Eval results *****")
    if chief:
      write_text_atomically(os.path.join(FLAGS.output_dir, "eval_results.txt"),
                            "".join(f"{key} = {result[key]}\n" for key in sorted(result)))
    for key in sorted(result):
      _log(f"  {key} = {result[key]}")
  if not chief:
    shutil.rmtree(model_dir, ignore_errors=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("input_file")
  flags.mark_flag_as_required("albert_config_file")
  flags.mark_flag_as_required("output_dir")
  app.run(main)
