"""Trains a SentencePiece model with the settings ALBERT's README gives for spm_train.

  python tools/train_sentencepiece.py --input=corpus.txt --model_prefix=30k-clean --vocab_size=30000

pad 0, unk 1, no bos/eos, control symbols [CLS] [SEP] [MASK], the original's user-defined
symbols, unigram model. Blank lines (document separators) are skipped by SentencePiece itself.
"""

from absl import app, flags
import sentencepiece as spm

FLAGS = flags.FLAGS
flags.DEFINE_string("input", None, "Text file(s), comma-separated.")
flags.DEFINE_string("model_prefix", None, "Writes <prefix>.model and <prefix>.vocab.")
flags.DEFINE_integer("vocab_size", 30000, "Number of pieces.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the training text first, as "
                  "create_pretraining_data does before tokenizing (writes <prefix>.input.txt).")
flags.DEFINE_integer("num_threads", 16, "Training threads (SentencePiece's default 16). With "
                     "more than one the pieces may differ run to run: 1 reproduces a model.")
flags.DEFINE_integer("random_seed", None, "Seed of SentencePiece's random generator (default: "
                     "unseeded, as spm_train).")


def main(argv):
  del argv
  inputs = FLAGS.input
  if FLAGS.random_seed is not None:
    spm.set_random_generator_seed(FLAGS.random_seed)
  if FLAGS.do_lower_case:
    # Imported here so that the tool stays light for --help.
    from albert_tf.tokenization import preprocess_text  # pylint: disable=import-outside-toplevel
    lowered = FLAGS.model_prefix + ".input.txt"
    with open(lowered, "w", encoding="utf-8") as out:
      for path in inputs.split(","):
        with open(path, encoding="utf-8") as f:
          for line in f:
            out.write(preprocess_text(line, lower=True) + "\n")
    inputs = lowered
  spm.SentencePieceTrainer.train(
      input=inputs, model_prefix=FLAGS.model_prefix, vocab_size=FLAGS.vocab_size,
      input_sentence_size=10000000, shuffle_input_sentence=True, pad_id=0, unk_id=1, eos_id=-1,
      bos_id=-1, control_symbols="[CLS],[SEP],[MASK]",
      user_defined_symbols='(,),",-,.,–,£,€', character_coverage=0.99995, model_type="unigram",
      num_threads=FLAGS.num_threads, minloglevel=2)
  print(f"wrote {FLAGS.model_prefix}.model and {FLAGS.model_prefix}.vocab")


if __name__ == "__main__":
  flags.mark_flag_as_required("input")
  flags.mark_flag_as_required("model_prefix")
  app.run(main)
