"""Cuts a corpus into short documents of a few sentences each, for measuring what packing
sequences gives (run_pretraining --pack_sequences; tools/padding_report.py).

  python tools/make_short_documents.py --output=/tmp/short.txt
  python -m albert_tf.create_pretraining_data --input_file=/tmp/short.txt \
      --output_file=/tmp/short.tfrecord --vocab_file=unused --max_seq_length=512 --dupe_factor=1 \
      --spm_model_file=tests/testdata/original_pretraining_data/30k-clean-tiny.model
  python tools/padding_report.py --input_file=/tmp/short.tfrecord

create_pretraining_data fills a record from one document (up to max_seq_length), so documents of
a few sentences make records well under max_seq_length, as paragraph-sized corpora do. Each
document of --input (one sentence a line, a blank line between documents, the original's format)
is cut, in order, into pieces of k consecutive sentences, k drawn uniformly from
[--min_sentences, --max_sentences] for each piece with --seed; a document's last piece holds what
is left (it may be shorter). Nothing is dropped or reordered; no TensorFlow needed. A mistake is
one `error:` line, as the binaries' (albert_tf.core.cli): exit status 2 for a flag, 1 for a file.
"""

import os
import random
import sys

from absl import flags

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)

from albert_tf.core import cli, errors, io  # noqa: E402 -- after the checkout is on sys.path
from albert_tf.data.corpus import read_corpus_documents, write_corpus_documents  # noqa: E402 -- after the checkout is on sys.path

DEFAULT_INPUT = os.path.join(REPO_ROOT, "data", "sample", "corpus.txt")

FLAGS = flags.FLAGS
flags.DEFINE_string("input", DEFAULT_INPUT,
                    "Corpus to cut: one sentence a line, a blank line between documents "
                    "(default: the bundled sample corpus).")
flags.DEFINE_string("output", None, "Corpus file to write, in the same format.")
flags.DEFINE_integer("min_sentences", 2,
                     "Fewest sentences of a piece (a document's last piece may hold fewer). "
                     "One-sentence documents get their second segment from another document "
                     "(the original's rule), so the default is 2.", lower_bound=1)
flags.DEFINE_integer("max_sentences", 4, "Most sentences of a piece.", lower_bound=1)
flags.DEFINE_integer("seed", 0, "Seed of the pieces' sizes.")


def cut_documents(documents, min_sentences, max_sentences, seed):
  """Each document cut, in order, into pieces of k consecutive sentences, k drawn uniformly from
  [min_sentences, max_sentences] for each piece; a document's last piece holds what is left.

  Args:
    documents: lists of sentences.
    min_sentences: fewest sentences of a piece (but a document's last).
    max_sentences: most sentences of a piece.
    seed: the seed of the sizes.

  Returns:
    The pieces, lists of sentences, in the order of the documents.
  """
  rng = random.Random(seed)
  pieces = []
  for document in documents:
    start = 0
    while start < len(document):
      size = rng.randint(min_sentences, max_sentences)
      pieces.append(document[start:start + size])
      start += size
  return pieces


def check_flags():
  """Raises errors.UsageError or FileNotFoundError, naming the flag and the fix, before anything
  is read or written."""
  if FLAGS.min_sentences > FLAGS.max_sentences:
    raise errors.UsageError(f"--min_sentences={FLAGS.min_sentences} is above --max_sentences="
                            f"{FLAGS.max_sentences}: give a range, e.g. --min_sentences=2 "
                            "--max_sentences=4")
  if not FLAGS.output.strip():
    raise errors.UsageError("--output is empty: give the path of the corpus file to write")
  if os.path.isdir(FLAGS.output):
    raise errors.UsageError(f"--output={FLAGS.output} is a directory: give a file's path")
  if os.path.realpath(FLAGS.input) == os.path.realpath(FLAGS.output):
    raise errors.UsageError(f"--output={FLAGS.output} is the --input file: give another path")


def main(argv):
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  check_flags()
  documents = read_corpus_documents(FLAGS.input, "--input")
  pieces = cut_documents(documents, FLAGS.min_sentences, FLAGS.max_sentences, FLAGS.seed)
  io.makedirs(os.path.dirname(FLAGS.output))
  write_corpus_documents(pieces, FLAGS.output)
  sentences = sum(map(len, pieces))
  print(f"wrote {len(pieces)} documents ({sentences} sentences, {sentences / len(pieces):.1f} "
        f"a document) from {len(documents)} to {FLAGS.output}")


if __name__ == "__main__":
  cli.run(main, required_flags=("output",))
