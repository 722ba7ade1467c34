"""ALBERT fine-tuning on RACE (the original's run_race flags).

  python -m albert_tf.run_race --data_dir=. --spm_model_file=30k-clean.model \
      --albert_config_file=albert_config.json --init_checkpoint=albert_base/model.ckpt-best \
      --output_dir=out --do_train --do_eval --max_seq_length=512 --max_qa_length=128 \
      --train_batch_size=32 --learning_rate=1e-5 --train_step=12000 --warmup_step=1000

Reads <data_dir>/RACE/{train,dev,test}/{middle,high}/*.txt. Features go to --train_file,
--eval_file, --predict_file (default: race_<split>.tf_record in output_dir); every checkpoint is
evaluated (eval_results.txt, model.ckpt-best); --do_predict evaluates model.ckpt-best on the test
set into predict_results.txt.
"""

from absl import flags

from albert_tf.core import cli
from albert_tf.tasks.race import settings as race_settings
from albert_tf.training import flags as common_flags

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", None,
                    "The input data dir. Should contain the RACE/ folder (train, dev, test).")
flags.DEFINE_string("task_name", "race", "The name of the task to train.")
flags.DEFINE_string("train_file", None,
                    "path to preprocessed tfrecord file. The file will be generated if not exst.")
flags.DEFINE_string("eval_file", None,
                    "path to preprocessed tfrecord file. The file will be generated if not exst.")
flags.DEFINE_string("predict_file", None,
                    "path to preprocessed tfrecord file. The file will be generated if not exst.")
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


def main(argv):
  del argv
  job_settings = common_flags.classifier_settings(race_settings.RaceSettings, FLAGS)
  job_settings.check_inputs()  # before the job loads TensorFlow
  with common_flags.running_job():
    # pylint: disable-next=import-outside-toplevel
    from albert_tf.tasks.race.job import RaceJob
    RaceJob(job_settings).run()


def run():
  """The entry point (`python -m albert_tf.run_race`, `albert-run-race`)."""
  cli.run(main, required_flags=("data_dir", "output_dir"))


if __name__ == "__main__":
  run()
