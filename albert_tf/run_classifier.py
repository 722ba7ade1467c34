"""ALBERT fine-tuning on GLUE classification tasks (the original's run_classifier flags).

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
"""


from absl import flags

from albert_tf import cli, common_flags, settings

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
flags.DEFINE_integer("train_step", 1000, "Total number of training steps to perform.")
flags.DEFINE_integer("warmup_step", 0,
                     "number of steps to perform linear learning rate warmup for.")
flags.DEFINE_string("export_dir", None,
                    "The directory where the exported SavedModel will be stored.")
common_flags.define_serving_precision_flag()
flags.DEFINE_float("threshold_to_export", float("nan"),
                   "The threshold value that should be used with the exported classifier. When "
                   "specified, the threshold will be attached to the exported SavedModel, and "
                   "served along with the predictions.")
flags.DEFINE_float("classifier_dropout", 0.1,
                   "Dropout on the pooled output before the classification layer (the "
                   "original's fixed value is 0.1).")
common_flags.define_finetuning_flags(max_seq_length=512, learning_rate=5e-5)


def main(argv):
  del argv
  job_settings = common_flags.classifier_settings(settings.ClassifierSettings, FLAGS)
  with common_flags.running_job():
    # pylint: disable-next=import-outside-toplevel
    from albert_tf.tasks.classifier.job import ClassifierJob
    ClassifierJob(job_settings).run()


def run():
  """The entry point (`python -m albert_tf.run_classifier`, `albert-run-classifier`)."""
  cli.run(main, required_flags=("data_dir", "task_name", "output_dir"))


if __name__ == "__main__":
  run()
