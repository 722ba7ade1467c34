"""Flags shared by the training binaries (defined once, as the original names them)."""

from absl import flags

from albert_tf.training.precision import POLICIES
from albert_tf.training.strategy import STRATEGIES


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
                       "Only used if `use_tpu` is True. Total number of TPU cores to use.")
  flags.DEFINE_enum("strategy", "auto", list(STRATEGIES),
                    "Distribution: auto (tpu with --use_tpu, mirrored with several GPUs, else one "
                    "device), one_device, mirrored, multi_worker_mirrored (reads TF_CONFIG), tpu.")
  flags.DEFINE_enum("mixed_precision", "float32", list(POLICIES),
                    "Compute precision; mixed_float16 uses dynamic loss scaling.")
  flags.DEFINE_bool("jit_compile", False, "Compile the forward and backward pass with XLA.")
  flags.DEFINE_integer("cpu_devices", 0,
                       "If > 1, split the CPU into this many logical devices (to try "
                       "--strategy=mirrored without accelerators).")
  flags.DEFINE_integer("data_seed", None,
                       "Seed of the training input order (default: unseeded, as the original). "
                       "Every record is read once per epoch either way; a seeded input resumes "
                       "where an interrupted run stopped, so it ends as if it had not stopped.")
  flags.DEFINE_integer("random_seed", None,
                       "Seed of the weight initialisation and dropout (default: unseeded).")
  flags.DEFINE_integer("gradient_accumulation_steps", 1,
                       "Split each replica's batch into this many micro-batches and accumulate "
                       "their gradients: the same update, less memory.")


def define_finetuning_flags(max_seq_length, learning_rate, train_batch_size=32,
                            predict_batch_size=8, save_checkpoints_steps=1000):
  """The model, tokenizer and training flags every fine-tuning binary of the original has (with
  its defaults), plus the run flags and --dynamic_length."""
  flags.DEFINE_string("albert_config_file", None,
                      "The config json file corresponding to the pre-trained ALBERT model. This "
                      "specifies the model architecture.")
  flags.DEFINE_string("vocab_file", None,
                      "The vocabulary file that the ALBERT model was trained on.")
  flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
  flags.DEFINE_string("output_dir", None,
                      "The output directory where the model checkpoints will be written.")
  flags.DEFINE_string("init_checkpoint", None,
                      "Initial checkpoint (usually from a pre-trained ALBERT model).")
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
  flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer to use")
  flags.DEFINE_bool("dynamic_length", True,
                    "Cut each batch to its longest real sequence (rounded up to a multiple of "
                    "8) and group batches by length. Results equal fixed padding.")
  define_run_flags()
  flags.FLAGS.set_default("save_checkpoints_steps", save_checkpoints_steps)


def strategy_from_flags(train_batch_size=None):
  """Precision policy, seed and distribution strategy from the run flags (call in main(), after
  flag parsing). Checks that train_batch_size splits over replicas x accumulation steps."""
  # pylint: disable=import-outside-toplevel
  from absl import app
  from albert_tf.training import precision, strategy as strategies
  # pylint: enable=import-outside-toplevel
  values = flags.FLAGS
  precision.set_policy(values.mixed_precision)
  if values.random_seed is not None:
    import keras  # pylint: disable=import-outside-toplevel
    keras.utils.set_random_seed(values.random_seed)
  strategy = strategies.create_strategy(values.strategy, values.use_tpu, values.tpu_name,
                                        values.tpu_zone, values.gcp_project, values.master,
                                        values.cpu_devices)
  replicas = strategy.num_replicas_in_sync
  accumulation = values.gradient_accumulation_steps
  if train_batch_size is not None and train_batch_size % (replicas * accumulation):
    raise app.UsageError(
        f"--train_batch_size={train_batch_size} must be divisible by replicas ({replicas}) "
        f"x --gradient_accumulation_steps ({accumulation})")
  return strategy


def loss_scale_from_flags():
  """A DynamicLossScale for mixed_float16, else None (create inside strategy.scope())."""
  from albert_tf.training import precision  # pylint: disable=import-outside-toplevel
  if flags.FLAGS.mixed_precision == "mixed_float16":
    return precision.DynamicLossScale()
  return None
