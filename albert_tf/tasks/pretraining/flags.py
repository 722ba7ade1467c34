"""run_pretraining's flags (the original's) and the body of its main(). Imports no TensorFlow."""

from absl import flags

from albert_tf.core import optimizer_table, path_checks, settings
from albert_tf.training import flags as common_flags

# The flags defined below are the binary's own (absl files them under the module that calls
# define_flags), so that its --help lists them under its name.
flags.disclaim_key_flags()


def define_flags():
  """Defines run_pretraining's flags. Their bounds are core's (albert_tf.core.bounds), with its
  settings (albert_tf.core.settings.PretrainingSettings), which the memory estimate reads too."""
  flags.DEFINE_string("albert_config_file", None,
                      "The config json file corresponding to the pre-trained ALBERT model. This "
                      "specifies the model architecture. Default: the config.json of a Hugging "
                      "Face --init_checkpoint directory.")
  flags.DEFINE_string("input_file", None,
                      "Input TF example files (can be a glob or comma separated).")
  flags.DEFINE_string("output_dir", None,
                      "The output directory where the model checkpoints will be written.")
  flags.DEFINE_string("init_checkpoint", None,
                      "Initial checkpoint (usually from a pre-trained ALBERT model): the released "
                      "layout, ours, or a Hugging Face directory (model.safetensors).")
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
  flags.DEFINE_enum("optimizer", "lamb", optimizer_table.names(), "The optimizer for training.")
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
  flags.DEFINE_float("sentence_order_loss_weight", 1.0,
                     "Weight of the sentence loss in the total (not in the original, which has "
                     "1). It trains on the pairs the data holds: sentence order by default, "
                     "next-sentence prediction on data made with create_pretraining_data's "
                     "--random_next_sentence. 0 trains the masked LM alone (the paper's Table 5 "
                     "ablation; no sentence-order metrics are logged in training, eval still "
                     "reports them).", lower_bound=0.0)
  flags.DEFINE_bool("pack_sequences", False,
                    "Pack several of the records' sequences into each row of --max_seq_length "
                    "(the records stay as create_pretraining_data wrote them). Each sequence "
                    "attends only to itself, with its own positions, masked tokens and "
                    "sentence-order label: the same losses per sequence as unpacked, with less "
                    "padding to compute. A step then trains on more sequences: "
                    "--train_batch_size counts rows. Pays when the records pad much (see "
                    "tools/padding_report.py).")
  flags.DEFINE_integer("max_sequences_per_row",
                       settings.PretrainingSettings.max_sequences_per_row,
                       "With --pack_sequences, the most sequences one row holds (a fixed number "
                       "keeps shapes static for XLA and TPUs).")
  common_flags.define_run_flags()


def run_job():
  """What run_pretraining's main() does once the flags parse: settings from the flags, the input
  files checked, then the pretraining job (its TensorFlow imported only now, so that --help
  answers at once)."""
  job_settings = settings.from_values(settings.PretrainingSettings, flags.FLAGS)
  # Before the job loads TensorFlow; a remote pattern is left to it.
  path_checks.check_input_patterns(
      "input_file", job_settings.input_file,
      "give TFRecord files of create_pretraining_data (files or globs, comma-separated)")
  with common_flags.running_job():
    from albert_tf.tasks.pretraining.job import PretrainingJob
    PretrainingJob(job_settings).run()
