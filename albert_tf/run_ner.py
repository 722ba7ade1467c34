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

from absl import flags

from albert_tf.core import cli
from albert_tf.training import flags as common_flags
from albert_tf.tasks.ner.settings import NerSettings

FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", None,
                    "The input data dir: train.txt, dev.txt, test.txt (or eng.train, eng.testa, "
                    "eng.testb) in CoNLL format.")
flags.DEFINE_string("cached_dir", None,
                    "Where the cached training and dev feature files are kept (default: "
                    "output_dir). Regenerated when missing or stale.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False, "Whether to tag the test set.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("train_step", 1000, "Total number of training steps to perform.")
flags.DEFINE_integer("warmup_step", 0,
                     "number of steps to perform linear learning rate warmup for.")
flags.DEFINE_integer("doc_stride", 128,
                     "A sentence longer than max_seq_length - 2 pieces is cut into windows "
                     "starting this many pieces apart; each word is predicted from the window "
                     "where it has the most context.")
flags.DEFINE_string("label_list", None,
                    "Comma-separated tags in id order (default: the checkpoint's label names, "
                    "else the training set's tags, O first).")
flags.DEFINE_float("dropout_prob", 0.1, "Dropout on the sequence output before the tagger.")
flags.DEFINE_bool("char_level", False,
                  "Character-level tagging (Chinese): split each word's CJK characters into "
                  "words of their own, its tag spread over them (B-X then I-X; O stays O; "
                  "BIOES: E-X on the last, S-X as B-X ... E-X), each run of other characters "
                  "kept as one word. Files of one character a line read the same either way. "
                  "Predictions and metrics are per character, and the SavedModel splits raw "
                  "text into characters too.")
flags.DEFINE_string("export_dir", None,
                    "The directory where the exported SavedModel will be stored.")
common_flags.define_serving_precision_flag()
common_flags.define_finetuning_flags(max_seq_length=128, learning_rate=5e-5)


def main(argv):
  del argv
  job_settings = common_flags.classifier_settings(NerSettings, FLAGS)
  job_settings.check_inputs()  # before the job loads TensorFlow
  with common_flags.running_job():
    # pylint: disable-next=import-outside-toplevel
    from albert_tf.tasks.ner.job import NerJob
    NerJob(job_settings).run()


def run():
  """The entry point (`python -m albert_tf.run_ner`, `albert-run-ner`)."""
  cli.run(main, required_flags=("data_dir", "output_dir"))


if __name__ == "__main__":
  run()
