"""ALBERT fine-tuning on SQuAD 2.0 (the original's run_squad_v2 flags).

  python -m albert_tf.run_squad_v2 --train_file=train-v2.0.json --predict_file=dev-v2.0.json \
      --spm_model_file=30k-clean.model --albert_config_file=albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best --output_dir=out --do_train --do_predict \
      --max_seq_length=384 --doc_stride=128 --train_batch_size=48 --learning_rate=3e-5

Every checkpoint is evaluated on --predict_file with the original's null-threshold search
(eval_results.txt: exact, f1, total, null_score_diff_threshold; the best by f1 kept as
model.ckpt-best); predictions.json, nbest_predictions.json and null_odds.json come from
model.ckpt-best; --export_dir writes a SavedModel that answers raw question/context text, the
dev set's null threshold baked in.
"""

from albert_tf.core import cli
from albert_tf.tasks.squad import flags as squad_flags

squad_flags.define_flags(v2=True)


def main(argv):
  del argv
  squad_flags.run_job(v2=True)


def run():
  """The entry point (`python -m albert_tf.run_squad_v2`, `albert-run-squad-v2`)."""
  cli.run(main, required_flags=("output_dir",))


if __name__ == "__main__":
  run()
