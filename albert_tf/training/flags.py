"""Flags shared by the training binaries (defined once, as the original names them).

Imports no TensorFlow, so that a binary's --help answers at once. Each binary turns its flags into
settings once (albert_tf.core.settings.from_values) and hands them to its job.
"""

import contextlib
import logging
import sys

from absl import app, flags

from albert_tf.core import optimizer_table, settings
from albert_tf.core.settings import PRECISION_POLICIES, SERVING_POLICIES, STRATEGIES


def define_run_flags():
  """Checkpointing, TPU and device flags of the original binaries, plus strategy / precision."""
  flags.DEFINE_integer("save_checkpoints_steps", 5000, "How often to save the model checkpoint.")
  flags.DEFINE_integer("keep_checkpoint_max", 5, "How many checkpoints to keep.")
  flags.DEFINE_integer("iterations_per_loop", 1000,
                       "How many steps to make in each estimator call.")
  flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
  flags.DEFINE_string(
      "tpu_name", None,
      "The Cloud TPU to use for training. This should be either the name used when creating the "
      "Cloud TPU, or a grpc://ip.address.of.tpu:8470 url.")
  flags.DEFINE_string(
      "tpu_zone", None,
      "[Optional] GCE zone where the Cloud TPU is located in. If not specified, we will attempt "
      "to automatically detect the GCE project from metadata.")
  flags.DEFINE_string(
      "gcp_project", None,
      "[Optional] Project name for the Cloud TPU-enabled project. If not specified, we will "
      "attempt to automatically detect the GCE project from metadata.")
  flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL.")
  flags.DEFINE_integer("num_tpu_cores", 8,
                       "Only used if `use_tpu` is True. Total number of TPU cores to use. Kept "
                       "for compatibility with the original's command lines: TPUStrategy uses "
                       "every core of the TPU it connects to.")
  flags.DEFINE_enum("strategy", "auto", list(STRATEGIES),
                    "Distribution: auto (tpu with --use_tpu, mirrored with several GPUs, else one "
                    "device), one_device, mirrored, multi_worker_mirrored (reads TF_CONFIG), tpu.")
  flags.DEFINE_enum("mixed_precision", "float32", list(PRECISION_POLICIES),
                    "Compute precision; mixed_float16 uses dynamic loss scaling.")
  flags.DEFINE_bool("jit_compile", settings.TrainSettings.jit_compile,
                    "Compile the forward and backward pass with XLA (see --jit_compile_fast_path "
                    "for where it does not).")
  flags.DEFINE_bool("jit_compile_fast_path", settings.TrainSettings.jit_compile_fast_path,
                    "With --jit_compile, compile without XLA where it is the slower path: "
                    "mixed_bfloat16 on CPUs only, with AMX or AVX512-BF16 (XLA's CPU backend "
                    "does not reach oneDNN's bfloat16 kernels, about 2x slower steps), logged. "
                    "--nojit_compile_fast_path keeps XLA as asked.")
  flags.DEFINE_integer("cpu_devices", 0,
                       "If > 1, split the CPU into this many logical devices (to try "
                       "--strategy=mirrored without accelerators).")
  flags.DEFINE_integer("data_seed", None,
                       "Seed of the training input order and of --masked_lm_budget's masks "
                       "(default: unseeded, as the original: a seed drawn at the first start, "
                       "kept in output_dir/data_seed.txt). Every record is read once per epoch "
                       "either way; a resumed run goes on where the interrupted one stopped, so "
                       "it ends as if it had not stopped. 0 to 2**32 - 1.")
  flags.DEFINE_integer("random_seed", None,
                       "Seed of the weight initialisation and dropout (default: unseeded), 0 to "
                       "2**32 - 1.")
  flags.DEFINE_integer("gradient_accumulation_steps", 1,
                       "Split each replica's batch into this many micro-batches and accumulate "
                       "their gradients: the same update, less memory.")
  flags.DEFINE_bool("recompute_activations", False,
                    "Keep only each transformer layer's input in the forward pass and recompute "
                    "the layer's activations in the backward pass: the same gradients with much "
                    "less memory (a larger batch or sequence fits), for about a third more "
                    "compute per step.")
  flags.DEFINE_bool("memory_check", True,
                    "Before building the model, estimate the run's peak memory (training, "
                    "evaluation, prediction or export, whichever is largest) and refuse a run "
                    "that would exceed the memory the process has (the cgroup limit or "
                    "MemAvailable; host memory only, skipped on GPUs/TPUs). --nomemory_check "
                    "skips it.")


def define_export_model_flags():
  """The model and tokenizer flags of the binaries that export a checkpoint as a SavedModel
  (export_saved_model, export_tfhub): the checkpoint, its config and the tokenizer file shipped
  as an asset, each taken from a Hugging Face directory or keras-hub preset when not given."""
  flags.DEFINE_string("albert_config_file", None,
                      "The model's albert_config.json. Default: the config of a Hugging Face "
                      "directory or keras-hub preset --init_checkpoint.")
  flags.DEFINE_string("init_checkpoint", None,
                      "Checkpoint to export (prefix or directory; ours, the original layout, a "
                      "Hugging Face directory or a keras-hub preset).")
  flags.DEFINE_string("spm_model_file", None,
                      "The SentencePiece model (shipped as an asset). Default: the spiece.model "
                      "of a Hugging Face --init_checkpoint directory, or a keras-hub preset's "
                      "vocabulary.spm.")
  flags.DEFINE_string("vocab_file", None,
                      "A WordPiece vocab.txt (shipped as the asset) for models without a "
                      "SentencePiece model, such as Google's Chinese ALBERT releases; used when "
                      "--spm_model_file is not given.")
  flags.DEFINE_bool("do_lower_case", True, "Whether the text is lower-cased before tokenization.")


def export_tokenizer_files(spm_model_file, vocab_file, init_checkpoint):
  """The tokenizer an exporter ships, from its define_export_model_flags values: those given,
  else the one --init_checkpoint keeps (an HF directory's or keras-hub preset's SentencePiece
  model, the tokenizer a fine-tuning output_dir kept): OpenedCheckpoint.tokenizer, which refuses
  one other than it keeps.

  Args:
    spm_model_file, vocab_file: the flags' values, or None.
    init_checkpoint: --init_checkpoint (a path, or the checkpoint opened), or None.

  Returns:
    (spm_model_file, vocab_file), either possibly None but not both.

  Raises:
    app.UsageError: neither is given nor found beside --init_checkpoint.
    errors.UsageError: a tokenizer other than the one --init_checkpoint keeps.
  """
  # The checkpoint readers import TensorFlow: not before the binary runs (see the module
  # docstring).
  from albert_tf.checkpoints import open_checkpoint
  opened = open_checkpoint(init_checkpoint)
  spm_model, vocab = (opened.tokenizer(spm_model_file, vocab_file) if opened is not None
                      else (spm_model_file, vocab_file))
  if not spm_model and not vocab:
    raise app.UsageError("give --spm_model_file (or an --init_checkpoint that is a Hugging Face "
                         "directory with spiece.model, a keras-hub preset, or a fine-tuning "
                         "output_dir that kept its tokenizer), or --vocab_file for a WordPiece "
                         "model")
  return spm_model, vocab


def define_serving_precision_flag():
  """--serving_precision of the binaries that export SavedModels."""
  flags.DEFINE_enum("serving_precision", "float32", list(SERVING_POLICIES),
                    "Compute precision of the exported SavedModel: float32, or bfloat16 (float32 "
                    "weights and outputs; faster on CPUs with AVX512_BF16/AMX and on GPUs/TPUs).")


def define_finetuning_flags(max_seq_length, learning_rate, train_batch_size=32,
                            predict_batch_size=8, save_checkpoints_steps=1000):
  """The model, tokenizer and training flags every fine-tuning binary of the original has (with
  its defaults), plus the run flags and --dynamic_length."""
  flags.DEFINE_string("albert_config_file", None,
                      "The config json file corresponding to the pre-trained ALBERT model. This "
                      "specifies the model architecture. Default: the config of a Hugging Face "
                      "directory or keras-hub preset --init_checkpoint.")
  flags.DEFINE_string("vocab_file", None,
                      "The vocabulary file that the ALBERT model was trained on.")
  flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization. "
                      "Default: the spiece.model of a Hugging Face --init_checkpoint directory, "
                      "or a keras-hub preset's vocabulary.spm (when --vocab_file is not given "
                      "either).")
  flags.DEFINE_string("output_dir", None,
                      "The output directory where the model checkpoints will be written.")
  flags.DEFINE_string("init_checkpoint", None,
                      "Initial checkpoint (usually from a pre-trained ALBERT model): the released "
                      "layout, ours, a Hugging Face directory (model.safetensors), or a keras-hub "
                      "preset directory (model.weights.h5).")
  flags.DEFINE_bool("do_lower_case", True,
                    "Whether to lower case the input text. Should be True for uncased models "
                    "and False for cased models.")
  flags.DEFINE_integer("max_seq_length", max_seq_length,
                       "The maximum total input sequence length after WordPiece tokenization. "
                       "Sequences longer than this will be truncated, and sequences shorter "
                       "than this will be padded.")
  flags.DEFINE_integer("train_batch_size", train_batch_size, "Total batch size for training.")
  flags.DEFINE_integer("predict_batch_size", predict_batch_size,
                       "Total batch size for predict.")
  flags.DEFINE_float("learning_rate", learning_rate, "The initial learning rate for Adam.")
  flags.DEFINE_enum("optimizer", "adamw", optimizer_table.names(), "Optimizer to use")
  flags.DEFINE_bool("dynamic_length", True,
                    "Cut each batch to its longest real sequence (rounded up to a multiple of "
                    "8) and group batches by length. Results equal fixed padding.")
  flags.DEFINE_float("albert_dropout", None,
                     "The encoder's dropout probability in fine-tuning (the paper's ALBERT DR): "
                     "replaces hidden_dropout_prob and attention_probs_dropout_prob of "
                     "--albert_config_file. Default: the config's values (0 in the released "
                     "v2 configs).")
  flags.DEFINE_bool("allow_random_heads", False,
                    "Evaluate, predict or export without --do_train even when --init_checkpoint "
                    "lacks the task's head (it is then freshly initialised). By default such a "
                    "run is refused: its results would come from random weights.")
  define_run_flags()
  flags.FLAGS.set_default("save_checkpoints_steps", save_checkpoints_steps)


def classifier_settings(settings_class, values):
  """ClassifierSettings or RaceSettings from the flags `values`: their schedule is the original's
  --train_step and --warmup_step."""
  return settings.from_values(settings_class, values, train=settings.from_values(
      settings.TrainSettings, values, num_train_steps=values.train_step,
      num_warmup_steps=values.warmup_step))


@contextlib.contextmanager
def running_job():
  """Around what a training binary's main() does once its settings are made: importing its job
  class (inside the `with`, so that --help does not load TensorFlow) and running it.

  TensorFlow's start-up notices are quieted first and, where TensorFlow leaves them off, its
  oneDNN kernels turned on (albert_tf.core.onednn); settings that cannot work (UsageError) end as
  a flag error; a run preempted by SIGTERM exits with PREEMPTED_EXIT_CODE (42) once its
  checkpoint is saved, for a scheduler to restart it.

    with common_flags.running_job():
      from albert_tf.tasks.race.job import RaceJob
      RaceJob(job_settings).run()
  """
  from absl import app
  from albert_tf.core import onednn
  from albert_tf.core.startup import quiet_tensorflow_startup
  quiet_tensorflow_startup()
  turned_on = onednn.turn_on_for_training()  # before the job imports TensorFlow
  if turned_on:
    logging.getLogger("albert_tf").info(turned_on)
  try:
    yield
  except Exception as e:
    # Imported only now: the classes live with TensorFlow.
    from albert_tf.training.job import UsageError
    from albert_tf.training.preemption import PREEMPTED_EXIT_CODE, Preempted
    if isinstance(e, UsageError):
      raise app.UsageError(str(e)) from None
    if isinstance(e, Preempted):
      logging.getLogger("albert_tf").info(str(e))
      sys.exit(PREEMPTED_EXIT_CODE)
    raise
