"""run_classifier's flags (the original's, and those of your own data files), and the body of its
main(). Imports no TensorFlow."""

import math

from absl import flags

from albert_tf.core import bounds, errors
from albert_tf.tasks.classifier import settings as task_settings
from albert_tf.training import flags as common_flags

# The flags defined below are the binary's own (absl files them under the module that calls
# define_flags), so that its --help lists them under its name.
flags.disclaim_key_flags()

_OWN_DATA_FILES = ("train_file", "dev_file", "test_file")


def define_flags():
  """Defines run_classifier's flags and their checks: absl validators for the rules between
  flags, task_settings.FLAG_BOUNDS (registered with core.bounds) for the values' bounds."""
  flags.DEFINE_string("data_dir", None,
                      "The input data dir. Should contain the .tsv files (or other data files) "
                      "for the task.")
  flags.DEFINE_string("task_name", None, "The name of the task to train.")
  flags.DEFINE_string("cached_dir", None,
                      "Path to cached training and dev tfrecord file. The file will be generated "
                      "if not exist.")
  flags.DEFINE_bool("do_train", False, "Whether to run training.")
  flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
  flags.DEFINE_bool("do_predict", False,
                    "Whether to run the model in inference mode on the test set.")
  flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
  flags.DEFINE_integer("train_step", 1000, "Total number of training steps to perform. The "
                       "global step training ends at: a run resumed at or past it trains no "
                       "further step.")
  flags.DEFINE_integer("warmup_step", 0,
                       "number of steps to perform linear learning rate warmup for. At most "
                       "--train_step.")
  flags.DEFINE_string("export_dir", None,
                      "The directory where the exported SavedModel will be stored.")
  common_flags.define_serving_precision_flag()
  flags.DEFINE_float("threshold_to_export", float("nan"),
                     "The threshold value that should be used with the exported classifier. When "
                     "specified, the threshold will be attached to the exported SavedModel, and "
                     "served along with the predictions. A finite number (nan: not given).")
  flags.DEFINE_float("classifier_dropout", 0.1,
                     "Dropout on the pooled output before the classification layer (the "
                     "original's fixed value is 0.1).")
  common_flags.define_finetuning_flags(max_seq_length=512, learning_rate=5e-5)
  # Your own data (instead of --task_name and --data_dir).
  flags.DEFINE_string("train_file", None, "Your own training data: a .csv, .tsv or .jsonl file "
                      "(used instead of --task_name and --data_dir).")
  flags.DEFINE_string("dev_file", None, "Your own dev data (--do_eval), as --train_file.")
  flags.DEFINE_string("test_file", None, "Your own test data (--do_predict), as --train_file; "
                      "it may have no label column.")
  flags.DEFINE_enum("data_format", None, ["csv", "tsv", "jsonl"],
                    "The format of --train_file, --dev_file and --test_file; default: each "
                    "file's extension (.csv, .tsv, .jsonl).")
  flags.DEFINE_string("text_column", "text", "The column (header name or JSON key; a 0-based "
                      "index for a headerless CSV/TSV) holding the text.")
  flags.DEFINE_string("text_b_column", None, "The column of the second text of sentence-pair "
                      "data, or none.")
  flags.DEFINE_string("label_column", "label", "The column holding the label (a JSON list of "
                      "labels, or labels joined by --label_separator, for multi-label data).")
  flags.DEFINE_enum("label_type", "str", ["str", "float"],
                    "str: classes; float: a score (regression, as STS-B).")
  flags.DEFINE_string("label_separator", None, "Joins a row's labels in the label column: the "
                      "data is then multi-label.")
  flags.DEFINE_string("label_list", None, "Comma-separated label names in id order (default: "
                      "the checkpoint's, else the training file's, sorted).")
  flags.DEFINE_float("threshold", 0.5, "Multi-label: a label is predicted when its probability "
                     "is above this. Above 0 and below 1.")
  _register_checks()


def _register_checks():
  # Values that would run and be silently wrong (a threshold of 1.5 predicts no label, -1 every
  # one; a warmup past the last step never reaches the learning rate) end as flag errors: one
  # line, exit 2. The bounds of the flags every binary shares (--eval_batch_size, --train_step,
  # --warmup_step) are core.bounds.FLAG_BOUNDS'; --classifier_dropout's is this task's.
  bounds.register(task_settings.FLAG_BOUNDS)
  flags.register_validator("threshold", task_settings.threshold_in_range,
                           message=task_settings.THRESHOLD_RULE)
  # A negative --train_step or --warmup_step is left to its own bound, which names it.
  flags.register_multi_flags_validator(
      ["warmup_step", "train_step"],
      lambda values: min(values.values()) < 0 or values["warmup_step"] <= values["train_step"],
      message="--warmup_step is more than --train_step: the learning rate would never reach "
              "--learning_rate; give a warmup of at most --train_step")
  flags.register_validator("threshold_to_export",
                           lambda value: math.isnan(value) or math.isfinite(value),
                           message="must be a finite number (nan, the default: no threshold)")


def run_job():
  """What run_classifier's main() does once the flags parse: the data flags checked together,
  settings from the flags (a GLUE task's, or your own files'), then the job (its TensorFlow
  imported only now, so that --help answers at once).

  Raises:
    errors.UsageError: --task_name with your own files, neither, or --task_name without
      --data_dir.
  """
  values = flags.FLAGS
  own_data = [name for name in _OWN_DATA_FILES if values[name].value]
  if values.task_name and own_data:
    raise errors.UsageError(
        f"--task_name={values.task_name} and --{own_data[0]}: give a GLUE task (--task_name, "
        "--data_dir) or your own files (--train_file, --dev_file, --test_file), not both")
  if not values.task_name and not own_data:
    raise errors.UsageError(
        "no data: give --task_name and --data_dir (a GLUE task), or --train_file / --dev_file "
        "/ --test_file (your own CSV, TSV or JSONL files)")
  if values.task_name and not values.data_dir:
    raise errors.UsageError(f"--task_name={values.task_name} needs --data_dir (the GLUE data)")
  settings_class = task_settings.OwnDataSettings if own_data else task_settings.ClassifierSettings
  job_settings = common_flags.classifier_settings(settings_class, values)
  job_settings.check_inputs()  # before the job loads TensorFlow
  with common_flags.running_job():
    if own_data:
      from albert_tf.tasks.classifier.own_job import OwnDataJob as Job
    else:
      from albert_tf.tasks.classifier.job import ClassifierJob as Job
    Job(job_settings).run()
