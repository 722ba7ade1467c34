"""Writes a corpus of a given size by resampling the documents of a seed corpus, for measuring
create_pretraining_data's memory and speed at scale (see README, "Corpus scale").

  python tools/make_scale_corpus.py --size_mb=10 --output=/tmp/corpus_10mb.txt
  /usr/bin/time -v python -m albert_tf.create_pretraining_data --input_file=/tmp/corpus_10mb.txt \
      --output_file=/tmp/out.tfrecord --spm_model_file=tests/testdata/original_pretraining_data/30k-clean-tiny.model \
      --vocab_file=unused --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=5

Documents (blank-line separated) are drawn with replacement, seeded, until the output reaches
--size_mb; no TensorFlow needed.
"""

import argparse
import os
import random

DEFAULT_SEED_CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   "tests", "testdata", "original_pretraining_data", "corpus.txt")


def read_documents(path):
  with open(path, encoding="utf-8") as f:
    blocks = f.read().split("\n\n")
  return [b.strip("\n") for b in blocks if b.strip()]


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


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--size_mb", type=float, required=True, help="Output size in MB (10^6 bytes).")
  parser.add_argument("--output", required=True, help="Corpus file to write.")
  parser.add_argument("--seed_corpus", default=DEFAULT_SEED_CORPUS,
                      help="Corpus whose documents are resampled (default: the fixture corpus).")
  parser.add_argument("--seed", type=int, default=0, help="Sampling seed.")
  args = parser.parse_args()
  documents = read_documents(args.seed_corpus)
  if not documents:
    raise SystemExit(f"no documents in {args.seed_corpus}")
  written = write_corpus(documents, int(args.size_mb * 1e6), args.output, args.seed)
  print(f"wrote {written} bytes ({len(documents)} distinct documents) to {args.output}")


if __name__ == "__main__":
  main()
