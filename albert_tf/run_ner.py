"""ALBERT fine-tuning for named-entity recognition on CoNLL-2003-format data (run_classifier's
flags where they mean the same).

  python -m albert_tf.run_ner --data_dir=conll2003 --spm_model_file=30k-clean.model \
      --albert_config_file=albert_config.json --init_checkpoint=albert_base/model.ckpt-best \
      --output_dir=out --do_train --do_eval --do_predict --max_seq_length=128 \
      --train_batch_size=32 --learning_rate=5e-5 --train_step=5000 --warmup_step=500 \
      --save_checkpoints_steps=500

data_dir holds train.txt, dev.txt, test.txt (or eng.train, eng.testa, eng.testb): a word a line,
its tag (IOB1, IOB2 or IOBES) in the last column, a blank line between sentences. Outputs:
label_list.txt; cached features ner_train.tf_record, ner_eval.tf_record (in cached_dir or
output_dir) and predict.tf_record; checkpoints model.ckpt-<step>, each evaluated on dev
(eval_results.txt: entity precision, recall, f1, token accuracy, per type) with the best kept as
model.ckpt-best; dev_predictions.txt and test_predictions.txt (`word gold predicted` a line);
test_results.txt; with --export_dir a SavedModel that tags raw text. Chinese data (one character
a line, MSRA or People's Daily style) trains with a WordPiece --vocab_file; --char_level splits a
word-a-line file's Chinese words into characters.
"""

from albert_tf.core import cli
from albert_tf.tasks.ner import flags as ner_flags

ner_flags.define_flags()


def main(argv):
  del argv
  ner_flags.run_job()


def run():
  """The entry point (`python -m albert_tf.run_ner`, `albert-run-ner`)."""
  cli.run(main, required_flags=("data_dir", "output_dir"))


if __name__ == "__main__":
  run()
