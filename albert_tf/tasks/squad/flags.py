"""The flags of run_squad_v1 and run_squad_v2 (the original's), and the body of their main().
Imports no TensorFlow."""

from absl import flags

from albert_tf.core import bounds, settings
from albert_tf.tasks.squad import settings as squad_settings
from albert_tf.training import flags as common_flags


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
  flags.DEFINE_enum("metric", "squad", ["squad", "cmrc2018"],
                    "The evaluation of --predict_file: the official SQuAD script's, or "
                    "cmrc2018 (the official CMRC 2018 evaluator's exact_match and f1; run_squad_v1 "
                    "only). With --vocab_file (WordPiece), features follow the CMRC 2018 BERT "
                    "baseline either way.")
  flags.DEFINE_string("export_dir", None,
                      "The directory where the exported SavedModel will be stored.")
  common_flags.define_serving_precision_flag()
  if v2:
    flags.DEFINE_integer("start_n_top", 5, "beam size for the start positions.")
    flags.DEFINE_integer("end_n_top", 5, "beam size for the end positions.")
    flags.DEFINE_float("dropout_prob", 0.1, "dropout probability.")
  common_flags.define_finetuning_flags(max_seq_length=384, learning_rate=5e-5)
  # The sizes' bounds (a doc_stride of 0 would never advance its windows) are the task's: cli
  # checks them once the flags parse, SquadSettings as it is made.
  bounds.register(squad_settings.FLAG_BOUNDS)


def run_job(v2):
  """What run_squad_v1's and run_squad_v2's main() do once the flags parse: settings from the
  flags, then the SQuAD job (its TensorFlow imported only now, so that --help answers at once).

  Args:
    v2: whether the binary is run_squad_v2 (SQuAD 2.0 head and null threshold).
  """
  job_settings = settings.from_values(squad_settings.SquadSettings, flags.FLAGS, v2=v2)
  job_settings.check_inputs()  # before the job loads TensorFlow
  with common_flags.running_job():
    from albert_tf.tasks.squad.job import SquadJob
    SquadJob(job_settings).run()
