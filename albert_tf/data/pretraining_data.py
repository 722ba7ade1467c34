"""create_pretraining_data as a library: corpus files -> shuffled masked instances -> TFRecords."""

import concurrent.futures
import dataclasses
import multiprocessing
import os
import random
import sys
import time

import numpy as np

from albert_tf.data import tfrecords
from albert_tf.data.corpus import CorpusReader
from albert_tf.data.instances import InstanceOptions, SpecialIds, create_training_instances
from albert_tf.data.masking import NgramSampler
from albert_tf.tokenization import FullTokenizer


@dataclasses.dataclass
class GenerationSettings:
  vocab_file: str = None
  spm_model_file: str = None
  do_lower_case: bool = True
  ngram: int = 3
  favor_shorter_ngram: bool = True
  dupe_factor: int = 40
  random_seed: int = 12345
  instance: InstanceOptions = dataclasses.field(default_factory=InstanceOptions)

  def tokenizer(self):
    return FullTokenizer(self.vocab_file, self.do_lower_case, self.spm_model_file)


def special_ids(tokenizer):
  vocab = tokenizer.vocab
  missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
  if missing:
    raise ValueError(f"the vocabulary lacks the special tokens {missing}")
  cls, sep, mask = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]", "[MASK]"])
  return SpecialIds(cls=cls, sep=sep, mask=mask, vocab_size=len(vocab))


def serialize_instance(instance, max_seq_length, max_predictions_per_seq, do_permutation=False):
  """The original's features, padded: ids/mask/segments/boundary to max_seq_length, predictions
  to max_predictions_per_seq (twice that with do_permutation)."""
  n = len(instance.input_ids)
  if n > max_seq_length:
    raise AssertionError(f"instance of {n} tokens exceeds max_seq_length {max_seq_length}")
  pad = [0] * (max_seq_length - n)
  num_predictions = max_predictions_per_seq * (1 + int(do_permutation))
  num_masked = len(instance.masked_lm_positions)
  pred_pad = [0] * (num_predictions - num_masked)
  i64 = tfrecords.int64_feature
  return tfrecords.encode_example({
      "input_ids": i64(instance.input_ids + pad),
      "input_mask": i64([1] * n + pad),
      "segment_ids": i64(instance.segment_ids + pad),
      "token_boundary": i64(instance.token_boundary + pad),
      "masked_lm_positions": i64(instance.masked_lm_positions + pred_pad),
      "masked_lm_ids": i64(instance.masked_lm_ids + pred_pad),
      "masked_lm_weights": tfrecords.float_feature([1.0] * num_masked + [0.0] * len(pred_pad)),
      "next_sentence_labels": i64([1 if instance.is_random_next else 0]),
  })


class Progress:
  """Progress lines on stderr: files, documents, instances, instances/s."""

  def __init__(self, stream=sys.stderr, label=""):
    self.stream = stream
    self.label = label
    self.start = time.time()

  def log(self, message):
    elapsed = time.time() - self.start
    print(f"[create_pretraining_data{self.label} {elapsed:7.1f}s] {message}", file=self.stream,
          flush=True)


def generate(input_files, output_files, settings, progress=None):
  """Writes the instances of `input_files` round-robin into `output_files` (the original's
  single-process behaviour). Returns {"documents", "instances", "skipped_documents"}."""
  progress = progress or Progress()
  tokenizer = settings.tokenizer()
  special = special_ids(tokenizer)
  reader = CorpusReader(tokenizer)
  documents = [[]]
  for k, path in enumerate(input_files, start=1):
    reader.read_documents([path], documents)
    progress.log(f"read file {k}/{len(input_files)} {path} ({reader.lines} lines so far)")
  documents = reader.finish(documents)
  if not documents:
    raise ValueError(f"no usable text in {', '.join(input_files)} (empty corpus?)")
  progress.log(f"{len(documents)} documents ({reader.skipped_documents} empty skipped)")

  rng = random.Random(settings.random_seed)
  # The original draws n-gram lengths from numpy's global stream; we seed it as the fixtures do.
  sampler = NgramSampler(settings.ngram, settings.favor_shorter_ngram,
                         np.random.RandomState(settings.random_seed))
  instances = create_training_instances(documents, settings.instance, special,
                                        settings.dupe_factor, rng, sampler)
  elapsed = max(time.time() - progress.start, 1e-9)
  progress.log(f"{len(instances)} instances ({len(instances) / elapsed:.0f} instances/s)")

  options = settings.instance
  writers = [tfrecords.AtomicTFRecordWriter(p) for p in output_files]
  try:
    for k, instance in enumerate(instances):
      writers[k % len(writers)].write(serialize_instance(
          instance, options.max_seq_length, options.max_predictions_per_seq,
          options.do_permutation))
  except BaseException:
    for w in writers:
      w.abort()
    raise
  for w in writers:
    w.close()
  progress.log(f"wrote {len(instances)} instances to {len(output_files)} file(s)")
  return {"documents": len(documents), "instances": len(instances),
          "skipped_documents": reader.skipped_documents}


def _generate_one(args):
  index, input_file, output_file, settings = args
  settings = dataclasses.replace(settings, random_seed=settings.random_seed + index)
  return generate([input_file], [output_file], settings, Progress(label=f" #{index}"))


def generate_per_file(input_files, output_files, settings, num_workers):
  """One output per input file, file i generated alone with random_seed + i, in parallel."""
  if len(input_files) != len(output_files):
    raise ValueError(f"{len(input_files)} input files but {len(output_files)} output files: with "
                     "--num_workers, give one output file per input file")
  jobs = [(i, inp, out, settings) for i, (inp, out) in enumerate(zip(input_files, output_files))]
  context = multiprocessing.get_context("spawn")
  with concurrent.futures.ProcessPoolExecutor(max_workers=num_workers,
                                              mp_context=context) as pool:
    results = list(pool.map(_generate_one, jobs))
  return {key: sum(r[key] for r in results) for key in results[0]}


def default_output_files(input_files, output_file):
  """Comma-separated outputs; a single existing directory means `<dir>/<input name>.tfrecord`."""
  if output_file and os.path.isdir(output_file):
    return [os.path.join(output_file, os.path.basename(p) + ".tfrecord") for p in input_files]
  return [p for p in output_file.split(",") if p]
