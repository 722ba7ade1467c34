"""Trains a SentencePiece model with the settings ALBERT's README gives for spm_train.

  python tools/train_sentencepiece.py --input=corpus.txt --model_prefix=30k-clean --vocab_size=30000

pad 0, unk 1, no bos/eos, control symbols [CLS] [SEP] [MASK], the original's user-defined
symbols, unigram model. Blank lines (document separators) are skipped by SentencePiece itself.

A mistake is one `error:` line, as the binaries' (albert_tf.core.cli): exit status 2 for a flag
to change (a --vocab_size the corpus cannot fill: the line gives the largest it can), 1 for an
--input file that is missing or not text. Imports no TensorFlow, as the other data tools.
"""

import os
import re

from absl import flags
import sentencepiece as spm

from albert_tf.core import cli, errors, io

FLAGS = flags.FLAGS
flags.DEFINE_string("input", None, "Text file(s), comma-separated.")
flags.DEFINE_string("model_prefix", None, "Writes <prefix>.model and <prefix>.vocab.")
flags.DEFINE_integer("vocab_size", 30000, "Number of pieces.", lower_bound=1)
flags.DEFINE_bool("do_lower_case", True, "Lower-case the training text first, as "
                  "create_pretraining_data does before tokenizing (writes <prefix>.input.txt).")
flags.DEFINE_integer("num_threads", 16, "Training threads (SentencePiece's default 16). With "
                     "more than one the pieces may differ run to run: 1 reproduces a model.",
                     lower_bound=1, upper_bound=1024)
flags.DEFINE_integer("random_seed", None, "Seed of SentencePiece's random generator (default: "
                     "unseeded, as spm_train).")

# SentencePiece refuses a vocabulary its corpus cannot fill, or too small for the corpus's
# characters, in a RuntimeError whose message gives the bound.
_TOO_LARGE = re.compile(r"Vocabulary size too high \(\d+\)\. Please set it to a value <= (\d+)")
_TOO_SMALL = re.compile(r"Vocabulary size is smaller than required_chars\. \d+ vs (\d+)")
# Its check that some line had text.
_NO_TEXT = "[!sentences_.empty()]"


class CorpusError(errors.AlbertError, ValueError):
  """An --input file that cannot be read as a corpus (a directory, not UTF-8, no text)."""


def input_files(text):
  """The --input files, each checked to be a local file.

  Raises:
    FileNotFoundError: naming the flag and the missing file.
    CorpusError: for a directory.
    errors.UsageError: for a path on a remote file system, which SentencePiece cannot read.
  """
  paths = text.split(",")
  for path in paths:
    if io.is_remote(path):
      raise errors.UsageError(f"--input: {path}: SentencePiece reads local files only: copy it "
                              "here first")
    if os.path.isdir(path):
      raise CorpusError(f"--input: {path} is a directory: give the corpus's text file(s), "
                        "comma-separated")
    if not os.path.exists(path):
      raise FileNotFoundError(f"--input: no such file: {path}: give the corpus's text file(s), "
                              "comma-separated")
  return paths


def prepare_output(prefix):
  """Creates the directory of --model_prefix where missing."""
  if io.is_remote(prefix):
    raise errors.UsageError(f"--model_prefix={prefix}: SentencePiece writes local files only: "
                            "give a local path, and copy the .model file after")
  io.makedirs(os.path.dirname(prefix))


def write_lowered(paths, lowered):
  """Writes the lines of `paths` lower-cased as create_pretraining_data's (preprocess_text) to
  `lowered`.

  Raises:
    CorpusError: naming the file and line that is not UTF-8.
  """
  # Imported here so that the tool stays light for --help.
  from albert_tf.tokenization import preprocess_text
  with open(lowered, "w", encoding="utf-8") as out:
    for path in paths:
      try:
        with open(path, encoding="utf-8") as f:
          for line in f:
            out.write(preprocess_text(line, lower=True) + "\n")
      except UnicodeDecodeError:
        raise CorpusError(f"--input: {path}:{_first_line_not_utf8(path)}: not valid UTF-8: "
                          "re-encode the file as UTF-8 (e.g. iconv)") from None


def _first_line_not_utf8(path):
  """The number of the first line of `path` that is not UTF-8 (text mode decodes in blocks, so
  the error itself does not say)."""
  with open(path, "rb") as f:
    for number, line in enumerate(f, start=1):
      try:
        line.decode("utf-8")
      except UnicodeDecodeError:
        return number
  return "?"


def refusal(message, vocab_size, given_input):
  """The error a user fixes for SentencePiece's RuntimeError `message`, or None for any other."""
  too_large = _TOO_LARGE.search(message)
  if too_large:
    most = too_large.group(1)
    return errors.UsageError(
        f"--vocab_size={vocab_size}: the corpus (--input={given_input}) can fill at most {most} "
        f"pieces: pass --vocab_size={most} or less, or give a larger corpus")
  too_small = _TOO_SMALL.search(message)
  if too_small:
    least = too_small.group(1)
    return errors.UsageError(
        f"--vocab_size={vocab_size}: the corpus's characters and the special pieces need at "
        f"least {least} pieces: pass --vocab_size={least} or more")
  if _NO_TEXT in message:
    return CorpusError(f"--input={given_input}: no text to train on (every line is blank): give "
                       "the corpus, one sentence a line")
  return None


def train(inputs):
  """SentencePiece's trainer with ALBERT's settings on `inputs` (comma-separated files).

  Raises:
    errors.UsageError, CorpusError: for a refusal the user fixes (see refusal).
  """
  try:
    spm.SentencePieceTrainer.train(
        input=inputs, model_prefix=FLAGS.model_prefix, vocab_size=FLAGS.vocab_size,
        input_sentence_size=10000000, shuffle_input_sentence=True, pad_id=0, unk_id=1,
        eos_id=-1, bos_id=-1, control_symbols="[CLS],[SEP],[MASK]",
        user_defined_symbols='(,),",-,.,–,£,€', character_coverage=0.99995,
        model_type="unigram", num_threads=FLAGS.num_threads, minloglevel=2)
  except RuntimeError as e:
    error = refusal(str(e), FLAGS.vocab_size, FLAGS.input)
    if error is None:
      raise
    raise error from None


def main(argv):
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  paths = input_files(FLAGS.input)
  prepare_output(FLAGS.model_prefix)
  if FLAGS.random_seed is not None:
    spm.set_random_generator_seed(FLAGS.random_seed)
  lowered = FLAGS.model_prefix + ".input.txt" if FLAGS.do_lower_case else None
  try:
    if lowered:
      write_lowered(paths, lowered)
    train(lowered or FLAGS.input)
  except BaseException:
    if lowered:  # a failed run leaves no partial output
      io.remove_quietly(lowered)
    raise
  print(f"wrote {FLAGS.model_prefix}.model and {FLAGS.model_prefix}.vocab")


if __name__ == "__main__":
  cli.run(main, required_flags=("input", "model_prefix"))
