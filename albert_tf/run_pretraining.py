"""Run masked LM / sentence order pretraining for ALBERT (the original's flags).

  python -m albert_tf.run_pretraining --input_file=train.tfrecord --output_dir=out \
      --albert_config_file=albert_config.json --train_batch_size=4096 --optimizer=lamb \
      --learning_rate=0.00176 --num_train_steps=125000 --num_warmup_steps=3125

Resumes from the latest checkpoint in --output_dir; --init_checkpoint takes a released TF1
checkpoint, one of ours or a Hugging Face directory (whose config.json is the model config when
--albert_config_file is not given).
"""

from absl import flags

from albert_tf.core import cli
from albert_tf.tasks.pretraining import flags as pretraining_flags

FLAGS = flags.FLAGS

pretraining_flags.define_flags()


def main(argv):
  del argv
  pretraining_flags.run_job()


def run():
  """The entry point (`python -m albert_tf.run_pretraining`, `albert-run-pretraining`)."""
  cli.run(main, required_flags=("input_file", "output_dir"))


if __name__ == "__main__":
  run()
