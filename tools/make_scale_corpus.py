"""Writes a corpus of a given size by resampling the documents of a seed corpus, for measuring
create_pretraining_data's memory and speed at scale (docs/data-at-scale.md).

  python tools/make_scale_corpus.py --size_mb=10 --output=/tmp/corpus_10mb.txt
  /usr/bin/time -v python -m albert_tf.create_pretraining_data --input_file=/tmp/corpus_10mb.txt \
      --output_file=/tmp/out.tfrecord \
      --spm_model_file=tests/testdata/original_pretraining_data/30k-clean-tiny.model \
      --vocab_file=unused --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5

Documents (blank-line separated) are drawn with replacement, seeded, until the output reaches
--size_mb; no TensorFlow needed. A mistake is one `error:` line, as the binaries'
(albert_tf.core.cli): exit status 2 for a flag, 1 for a file.
"""

import math
import os
import random

from absl import flags

from albert_tf.core import cli, errors, io
from albert_tf.data.corpus import read_corpus_documents

DEFAULT_SEED_CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   "tests", "testdata", "original_pretraining_data", "corpus.txt")


def write_corpus(documents, size_bytes, output, seed):
  rng = random.Random(seed)
  written = 0
  tmp = output + ".tmp"
  with open(tmp, "w", encoding="utf-8") as f:
    while written < size_bytes:
      text = rng.choice(documents) + "\n\n"
      f.write(text)
      written += len(text.encode("utf-8"))
  os.replace(tmp, output)
  return written


FLAGS = flags.FLAGS
flags.DEFINE_float("size_mb", None, "Output size in MB (10^6 bytes).")
flags.DEFINE_string("output", None, "Corpus file to write.")
flags.DEFINE_string("seed_corpus", DEFAULT_SEED_CORPUS,
                    "Corpus whose documents are resampled (default: the fixture corpus).")
flags.DEFINE_integer("seed", 0, "Sampling seed.")


def check_flags():
  """Raises errors.UsageError, FileNotFoundError or errors.DataFormatError, naming the flag and
  the fix, before anything is written."""
  if not (FLAGS.size_mb > 0 and math.isfinite(FLAGS.size_mb)):
    raise errors.UsageError(f"--size_mb={FLAGS.size_mb}: give a size above 0 (in MB)")
  if not FLAGS.output.strip():
    raise errors.UsageError("--output is empty: give the path of the corpus file to write")
  if os.path.isdir(FLAGS.output):
    raise errors.UsageError(f"--output={FLAGS.output} is a directory: give a file's path")


def main(argv):
  if len(argv) > 1:
    raise errors.UsageError(f"unexpected arguments {argv[1:]}: every setting is a --flag")
  check_flags()
  documents = ["\n".join(lines) for lines in read_corpus_documents(FLAGS.seed_corpus,
                                                                  "--seed_corpus")]
  io.makedirs(os.path.dirname(FLAGS.output))
  written = write_corpus(documents, int(FLAGS.size_mb * 1e6), FLAGS.output, FLAGS.seed)
  print(f"wrote {written} bytes ({len(documents)} distinct documents) to {FLAGS.output}")


if __name__ == "__main__":
  cli.run(main, required_flags=("size_mb", "output"))
