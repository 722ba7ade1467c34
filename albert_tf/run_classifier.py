"""ALBERT fine-tuning on GLUE classification tasks (the original's run_classifier flags), or on
your own CSV, TSV or JSONL files (single-label, multi-label or regression).

  python -m albert_tf.run_classifier --task_name=MNLI --data_dir=glue_data \
      --spm_model_file=30k-clean.model --albert_config_file=albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best --output_dir=out --do_train --do_eval \
      --do_predict --max_seq_length=128 --train_batch_size=128 --learning_rate=3e-5 \
      --train_step=10000 --warmup_step=1000 --save_checkpoints_steps=500

Outputs, as the original: cached features `<cached_dir or output_dir>/<task>_train.tf_record`,
`<task>_eval.tf_record` and `<output_dir>/predict.tf_record`; checkpoints model.ckpt-<step>, each
evaluated (eval_results.txt, best_trial.txt) with the best kept as model.ckpt-best (the original
TF1 layout); test_results.tsv and submit_results.tsv; with --export_dir a SavedModel
(<export_dir>/<timestamp>/) that takes raw text. Batches are cut to their longest real sequence
(--dynamic_length), training batches grouped by length.

Your own data, instead of --task_name and --data_dir:

  python -m albert_tf.run_classifier --train_file=train.csv --dev_file=dev.csv \
      --test_file=test.csv --text_column=sentence --label_column=label ...

CSV, TSV or JSONL by extension (or --data_format); columns by header name or JSON key, or by
0-based index for a headerless CSV/TSV (every column given as a number). Labels from
--label_list or the training file (sorted), saved as classifier_labels.json in output_dir;
--label_type=float is regression (Pearson and MSE, as STS-B); a JSON list of labels, or
--label_separator, is multi-label (sigmoid, binary cross-entropy, --threshold; micro and macro
F1; the best checkpoint by micro_f1). Cached features are <file name>_train.tf_record and
<file name>_eval.tf_record.
"""


import math

from absl import flags

from albert_tf.core import cli, errors
from albert_tf.training import flags as common_flags
from albert_tf.tasks.classifier import settings as task_settings

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", None,
                    "The input data dir. Should contain the .tsv files (or other data files) for "
                    "the task.")
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

# Values that would run and be silently wrong (a threshold of 1.5 predicts no label, -1 every
# one; a warmup past the last step never reaches the learning rate) end as flag errors: one line,
# exit 2. The bounds that flags of these names have in every binary (--eval_batch_size,
# --train_step, --warmup_step, --classifier_dropout) are cli.FLAG_BOUNDS'.
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

_OWN_DATA_FILES = ("train_file", "dev_file", "test_file")


def main(argv):
  del argv
  own_data = [name for name in _OWN_DATA_FILES if FLAGS[name].value]
  if FLAGS.task_name and own_data:
    raise errors.UsageError(
        f"--task_name={FLAGS.task_name} and --{own_data[0]}: give a GLUE task (--task_name, "
        "--data_dir) or your own files (--train_file, --dev_file, --test_file), not both")
  if not FLAGS.task_name and not own_data:
    raise errors.UsageError(
        "no data: give --task_name and --data_dir (a GLUE task), or --train_file / --dev_file "
        "/ --test_file (your own CSV, TSV or JSONL files)")
  if FLAGS.task_name and not FLAGS.data_dir:
    raise errors.UsageError(f"--task_name={FLAGS.task_name} needs --data_dir (the GLUE data)")
  if own_data:
    job_settings = common_flags.classifier_settings(task_settings.OwnDataSettings, FLAGS)
  else:
    job_settings = common_flags.classifier_settings(task_settings.ClassifierSettings, FLAGS)
  job_settings.check_inputs()  # before the job loads TensorFlow
  with common_flags.running_job():
    # pylint: disable=import-outside-toplevel
    if own_data:
      from albert_tf.tasks.classifier.own_job import OwnDataJob as Job
    else:
      from albert_tf.tasks.classifier.job import ClassifierJob as Job
    # pylint: enable=import-outside-toplevel
    Job(job_settings).run()


def run():
  """The entry point (`python -m albert_tf.run_classifier`, `albert-run-classifier`)."""
  cli.run(main, required_flags=("output_dir",))


if __name__ == "__main__":
  run()
