"""run_race's flags (the original's) and the body of its main(). Imports no TensorFlow."""

from absl import flags

from albert_tf.core import bounds
from albert_tf.tasks.race import settings as race_settings
from albert_tf.training import flags as common_flags

# The flags defined below are the binary's own (absl files them under the module that calls
# define_flags), so that its --help lists them under its name.
flags.disclaim_key_flags()


def define_flags():
  """Defines run_race's flags; their bounds (race_settings.FLAG_BOUNDS) join cli's check."""
  flags.DEFINE_string("data_dir", None,
                      "The input data dir. Should contain the RACE/ folder (train, dev, test).")
  flags.DEFINE_string("task_name", "race", "The name of the task to train.")
  flags.DEFINE_string("train_file", None,
                      "path to preprocessed tfrecord file. The file will be generated if not "
                      "exst.")
  flags.DEFINE_string("eval_file", None,
                      "path to preprocessed tfrecord file. The file will be generated if not "
                      "exst.")
  flags.DEFINE_string("predict_file", None,
                      "path to preprocessed tfrecord file. The file will be generated if not "
                      "exst.")
  flags.DEFINE_float("dropout_prob", 0.1, "dropout probability.")
  flags.DEFINE_integer("max_qa_length", 128,
                       "The maximum length of question + option (its last tokens are kept).")
  flags.DEFINE_bool("high_only", False, "Whether to only run the model on the high school set.")
  flags.DEFINE_bool("middle_only", False,
                    "Whether to only run the model on the middle school set.")
  flags.DEFINE_bool("do_train", True, "Whether to run training.")
  flags.DEFINE_bool("do_eval", True, "Whether to run eval on the dev set.")
  flags.DEFINE_bool("do_predict", False,
                    "Whether to run the model in inference mode on the test set.")
  flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
  flags.DEFINE_integer("train_step", 12000, "Total number of training steps to perform.")
  flags.DEFINE_integer("warmup_step", 1000,
                       "number of steps to perform linear learning rate warmup for.")
  common_flags.define_finetuning_flags(max_seq_length=512, learning_rate=1e-5,
                                       save_checkpoints_steps=100)
  bounds.register(race_settings.FLAG_BOUNDS)


def run_job():
  """What run_race's main() does once the flags parse: settings from the flags, then the RACE
  job (its TensorFlow imported only now, so that --help answers at once)."""
  job_settings = common_flags.classifier_settings(race_settings.RaceSettings, flags.FLAGS)
  job_settings.check_inputs()  # before the job loads TensorFlow
  with common_flags.running_job():
    from albert_tf.tasks.race.job import RaceJob
    RaceJob(job_settings).run()
