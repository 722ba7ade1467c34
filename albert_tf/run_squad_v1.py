"""ALBERT fine-tuning on SQuAD v1.1 (the original's run_squad_v1 flags).

  python -m albert_tf.run_squad_v1 --train_file=train-v1.1.json --predict_file=dev-v1.1.json \
      --spm_model_file=30k-clean.model --albert_config_file=albert_config.json \
      --init_checkpoint=albert_base/model.ckpt-best --output_dir=out --do_train --do_predict \
      --max_seq_length=384 --doc_stride=128 --train_batch_size=48 --learning_rate=5e-5

Every checkpoint is evaluated on --predict_file (eval_results.txt, exact_match and f1; the best
by f1 kept as model.ckpt-best); predictions.json and nbest_predictions.json come from
model.ckpt-best; --export_dir writes a SavedModel that answers raw question/context text.

With --vocab_file (WordPiece, e.g. Chinese ALBERT) instead of --spm_model_file, the features are
the official CMRC 2018 BERT baseline's; --metric=cmrc2018 scores with the official CMRC 2018
evaluator (docs/chinese.md).
"""

from albert_tf.core import cli
from albert_tf.tasks.squad import flags as squad_flags

squad_flags.define_flags(v2=False)


def main(argv):
  del argv
  squad_flags.run_job(v2=False)


def run():
  """The entry point (`python -m albert_tf.run_squad_v1`, `albert-run-squad-v1`)."""
  cli.run(main, required_flags=("output_dir",))


if __name__ == "__main__":
  run()
