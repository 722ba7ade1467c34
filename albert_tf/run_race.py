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

from albert_tf.core import cli
from albert_tf.tasks.race import flags as race_flags

race_flags.define_flags()


def main(argv):
  del argv
  race_flags.run_job()


def run():
  """The entry point (`python -m albert_tf.run_race`, `albert-run-race`)."""
  cli.run(main, required_flags=("data_dir", "output_dir"))


if __name__ == "__main__":
  run()
