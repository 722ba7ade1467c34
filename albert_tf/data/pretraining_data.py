"""create_pretraining_data as a library: corpus files -> shuffled masked instances -> TFRecords."""

import concurrent.futures
import dataclasses
import multiprocessing
import os
import random
import sys
import time

import numpy as np

from albert_tf import io as files
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


def check_settings(settings):
  """Raises ValueError, before any work, for settings that would fail late or silently write
  useless records (no masked positions: pretraining then reports masked_lm_loss 0.0)."""
  options = settings.instance
  problems = []
  if options.max_predictions_per_seq < 1:
    problems.append(f"--max_predictions_per_seq={options.max_predictions_per_seq}: must be at "
                    "least 1, or the records have no masked positions to train on")
  if not 0 < options.masked_lm_prob <= 1:
    problems.append(f"--masked_lm_prob={options.masked_lm_prob}: must be in (0, 1], or the "
                    "records have no masked positions to train on")
  if options.max_seq_length < 5:
    problems.append(f"--max_seq_length={options.max_seq_length}: must be at least 5 ([CLS], two "
                    "[SEP] and at least one token in each of the two segments)")
  if not 0 <= options.short_seq_prob <= 1:
    problems.append(f"--short_seq_prob={options.short_seq_prob}: must be in [0, 1]")
  if settings.dupe_factor < 1:
    problems.append(f"--dupe_factor={settings.dupe_factor}: must be at least 1, or no instances "
                    "are written")
  if settings.ngram < 1:
    problems.append(f"--ngram={settings.ngram}: must be at least 1")
  if problems:
    raise ValueError("; ".join(problems))


def _same_file_key(path):
  return path if files.is_remote(path) else os.path.realpath(path)


def check_output_files(input_files, output_files):
  """Raises ValueError, before any work, where two outputs are one file (the later writer would
  replace the earlier's records, or both would write one temporary) or an output is an input."""
  if not output_files:
    raise ValueError("--output_file names no output file")
  inputs = {_same_file_key(p): p for p in input_files}
  seen = {}
  for k, path in enumerate(output_files):
    key = _same_file_key(path)
    if files.isdir(path):
      raise ValueError(f"output file {path} is a directory: give a file, or that directory alone "
                       "as --output_file for one output per input")
    if key in inputs:
      raise ValueError(f"output file {path} is also the input file {inputs[key]}: writing it "
                       "would replace the input; give another --output_file")
    if key in seen:
      j = seen[key]
      if len(output_files) == len(input_files):
        raise ValueError(
            f"inputs {input_files[j]} and {input_files[k]} would both be written to {path}: "
            "an --output_file directory names each output <input base name>.tfrecord, so give "
            "the inputs distinct base names or run them into separate output directories (or "
            "list distinct output files in --output_file)")
      raise ValueError(f"--output_file names {path} twice: give distinct output files")
    seen[key] = k


def read_corpus(input_files, tokenizer, progress):
  """Documents of `input_files` (documents may span files, as the original), and the reader."""
  reader = CorpusReader(tokenizer)
  documents = [[]]
  for k, path in enumerate(input_files, start=1):
    reader.read_documents([path], documents)
    progress.log(f"read file {k}/{len(input_files)} {path} ({reader.lines} lines so far)")
  documents = reader.finish(documents)
  if not documents:
    raise ValueError(f"no usable text in {', '.join(input_files)} (empty corpus?)")
  progress.log(f"{len(documents)} documents ({reader.skipped_documents} empty skipped)")
  return documents, reader


def open_writers(output_files):
  """Opens every output's temporary, aborting those opened if one fails."""
  writers = []
  try:
    for path in output_files:
      writers.append(tfrecords.AtomicTFRecordWriter(path))
  except BaseException:
    for w in writers:
      w.abort()
    raise
  return writers


def generate(input_files, output_files, settings, progress=None):
  """Writes the instances of `input_files` round-robin into `output_files` (the original's
  single-process behaviour). Returns {"documents", "instances", "skipped_documents"}.

  Outputs are complete or absent: any failure removes every temporary and writes no output
  (except those already renamed into place when closing a later one fails).
  """
  check_settings(settings)
  check_output_files(input_files, output_files)
  progress = progress or Progress()
  tokenizer = settings.tokenizer()
  special = special_ids(tokenizer)
  # Opened before the work, so that an unwritable output fails in seconds, not after hours.
  writers = open_writers(output_files)
  try:
    documents, reader = read_corpus(input_files, tokenizer, progress)
    rng = random.Random(settings.random_seed)
    # The original draws n-gram lengths from numpy's global stream; we seed it as the fixtures do.
    sampler = NgramSampler(settings.ngram, settings.favor_shorter_ngram,
                           np.random.RandomState(settings.random_seed))
    instances = create_training_instances(documents, settings.instance, special,
                                          settings.dupe_factor, rng, sampler)
    elapsed = max(time.time() - progress.start, 1e-9)
    progress.log(f"{len(instances)} instances ({len(instances) / elapsed:.0f} instances/s)")
    options = settings.instance
    for k, instance in enumerate(instances):
      writers[k % len(writers)].write(serialize_instance(
          instance, options.max_seq_length, options.max_predictions_per_seq,
          options.do_permutation))
    for w in writers:
      w.close()
  except BaseException:
    for w in writers:
      w.abort()
    raise
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
  check_settings(settings)
  check_output_files(input_files, output_files)
  jobs = [(i, inp, out, settings) for i, (inp, out) in enumerate(zip(input_files, output_files))]
  context = multiprocessing.get_context("spawn")
  with concurrent.futures.ProcessPoolExecutor(max_workers=num_workers,
                                              mp_context=context) as pool:
    results = list(pool.map(_generate_one, jobs))
  return {key: sum(r[key] for r in results) for key in results[0]}


def default_output_files(input_files, output_file):
  """Comma-separated outputs; a single directory (an existing one, or any path ending in '/')
  means `<dir>/<input base name>.tfrecord` per input, the directory created by the writers."""
  if "," not in output_file and (output_file.endswith(("/", os.sep)) or files.isdir(output_file)):
    return [os.path.join(output_file, os.path.basename(p) + ".tfrecord") for p in input_files]
  return [p for p in output_file.split(",") if p]
