"""create_pretraining_data as a library: corpus files -> shuffled masked instances -> TFRecords."""

from array import array
import concurrent.futures
import dataclasses
import multiprocessing
import os
import random
import sys
import time
from typing import Callable, Optional

import numpy as np

from albert_tf.core import deprecation, errors
from albert_tf.core import io as files
from albert_tf.core.settings import TokenizerSettings
from albert_tf.data import padding, tfrecords
from albert_tf.data.corpus import CorpusReader, TokenizedCorpus
from albert_tf.data.instances import (InstanceOptions, SpecialIds, instances_by_document,
                                      shuffled_order)
from albert_tf.data.masking import NgramSampler
from albert_tf.data.spill import RecordSpill
from albert_tf.tokenization import FullTokenizer, chinese_words


@dataclasses.dataclass(kw_only=True)
class GenerationSettings:
  """create_pretraining_data's settings (its flags of the same names).

  Args:
    tokenizer: the corpus's tokenization: SentencePiece (spm_model_file) or WordPiece
      (vocab_file), and do_lower_case; `FullTokenizer.from_settings(settings.tokenizer)` builds it.
    vocab_file, spm_model_file, do_lower_case: deprecated (removed in 0.4.0): the tokenizer's
      fields of those names, which they set.
    chinese_word_segmentation: None, or a segmenter of chinese_words.SEGMENTERS ("jieba"):
      whole-word masking then masks each Chinese word whole (WordPiece vocabularies only).
  """
  tokenizer: TokenizerSettings = dataclasses.field(default_factory=TokenizerSettings)
  ngram: int = 3
  favor_shorter_ngram: bool = True
  dupe_factor: int = 40
  random_seed: int = 12345
  instance: InstanceOptions = dataclasses.field(default_factory=InstanceOptions)
  chinese_word_segmentation: Optional[str] = None


deprecation.fields_moved_into(GenerationSettings, "tokenizer",
                              ("vocab_file", "spm_model_file", "do_lower_case"))


def special_ids(tokenizer):
  vocab = tokenizer.vocab
  missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
  if missing:
    raise errors.DataFormatError(f"the vocabulary lacks the special tokens {missing}")
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
  """Progress lines on stderr, at most one per `interval` seconds for a running step, with the
  step's rate and an estimate of the time it has left."""

  def __init__(self, stream=sys.stderr, label="", interval=10.0):
    self.stream = stream
    self.label = label
    self.interval = interval
    self.start = time.time()
    self._step_start = self.start
    self._last = 0.0

  def log(self, message):
    elapsed = time.time() - self.start
    print(f"[create_pretraining_data{self.label} {elapsed:7.1f}s] {message}", file=self.stream,
          flush=True)

  def begin(self):
    """Starts timing a step (reading, creating instances) for `update`'s estimates."""
    self._step_start = time.time()

  def update(self, done, total, message, force=False):
    """Logs `message` with done/total as a percentage and the step's ETA, throttled."""
    now = time.time()
    if not force and now - self._last < self.interval:
      return
    self._last = now
    fraction = done / total if total else 1.0
    eta = ""
    if 0 < fraction < 1:
      eta = f", ETA {format_seconds((now - self._step_start) * (1 - fraction) / fraction)}"
    self.log(f"{message} ({100 * fraction:.0f}%{eta})")


def format_seconds(seconds):
  seconds = int(round(seconds))
  if seconds < 60:
    return f"{seconds}s"
  if seconds < 3600:
    return f"{seconds // 60}m{seconds % 60:02d}s"
  return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


@dataclasses.dataclass(frozen=True)
class FileAccess:
  """How generation opens its files: `open_binary(path)` for the corpus, `atomic_file(path)` for
  each output (an object with write/commit/abort, as files.AtomicFile), `size(path)` in bytes for
  progress (None where unknown), `isdir(path)` for the output checks."""
  open_binary: Callable
  atomic_file: Callable
  size: Callable
  isdir: Callable


# os for local paths, tf.io.gfile (imported only then) for paths with a scheme.
DEFAULT_FILE_ACCESS = FileAccess(files.open_binary, files.AtomicFile, files.size_if_local,
                                 files.isdir)


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
  problems += _segmentation_problems(settings)
  if problems:
    raise errors.UsageError("; ".join(problems))


def _segmentation_problems(settings):
  """What is wrong with --chinese_word_segmentation in `settings` (a list of messages); raises
  MissingExtraError when its segmenter is not installed."""
  name = settings.chinese_word_segmentation
  if name is None:
    return []
  if name not in chinese_words.SEGMENTERS:
    return [f"--chinese_word_segmentation={name!r}: the choices are "
            f"{', '.join(chinese_words.SEGMENTERS)}"]
  problems = []
  if settings.tokenizer.spm_model_file:
    problems.append(f"--chinese_word_segmentation={name} marks the characters of WordPiece "
                    "vocabularies (one piece per CJK character): give the model's vocab.txt as "
                    "--vocab_file without --spm_model_file")
  if not settings.instance.do_whole_word_mask:
    problems.append(f"--chinese_word_segmentation={name} joins characters into words for "
                    "whole-word masking: drop --nowhole_word_mask (or --do_whole_word_mask=false)")
  errors.require_installed(name, "chinese", f"--chinese_word_segmentation={name}")
  return problems


def _same_file_key(path):
  return path if files.is_remote(path) else os.path.realpath(path)


def check_output_files(input_files, output_files, isdir=files.isdir):
  """Raises ValueError, before any work, where two outputs are one file (the later writer would
  replace the earlier's records, or both would write one temporary) or an output is an input."""
  if not output_files:
    raise errors.UsageError("--output_file names no output file")
  inputs = {_same_file_key(p): p for p in input_files}
  seen = {}
  for k, path in enumerate(output_files):
    key = _same_file_key(path)
    if isdir(path):
      raise errors.UsageError(
          f"output file {path} is a directory: give a file, or that directory alone "
          "as --output_file for one output per input")
    if key in inputs:
      raise errors.UsageError(
          f"output file {path} is also the input file {inputs[key]}: writing it "
          "would replace the input; give another --output_file")
    if key in seen:
      j = seen[key]
      if len(output_files) == len(input_files):
        raise errors.UsageError(
            f"inputs {input_files[j]} and {input_files[k]} would both be written to {path}: "
            "an --output_file directory names each output <input base name>.tfrecord, so give "
            "the inputs distinct base names or run them into separate output directories (or "
            "list distinct output files in --output_file)")
      raise errors.UsageError(f"--output_file names {path} twice: give distinct output files")
    seen[key] = k


def read_corpus(input_files, tokenizer, progress, access=DEFAULT_FILE_ACCESS, allow_empty=False,
                segment=None):
  """The TokenizedCorpus of `input_files` (documents may span files, as the original). A corpus
  without text is a ValueError unless allow_empty. `segment`: CorpusReader's Chinese word
  segmenter, or None."""
  reader = CorpusReader(tokenizer, access.open_binary, segment)
  corpus = TokenizedCorpus()
  sizes = [access.size(p) for p in input_files]
  total = None if None in sizes else max(sum(sizes), 1)
  progress.begin()
  for k, path in enumerate(input_files, start=1):
    where = f"reading file {k}/{len(input_files)} {path}"
    def report(bytes_read, where=where):
      if total is not None:
        progress.update(bytes_read, total, f"{where}: {bytes_read / 1e6:.0f} MB read")
    reader.read_file(path, corpus, report)
    progress.update(reader.bytes_read, total or reader.bytes_read,
                    f"{where}: done, {reader.lines} lines so far", force=True)
  corpus.finish()
  if not corpus.sentence_ends:
    if not allow_empty:
      raise errors.DataFormatError(f"no usable text in {', '.join(input_files)} (empty corpus?)")
    progress.log(f"warning: no usable text in {', '.join(input_files)}: writing no instances")
  return corpus


def open_writers(output_files, atomic_file=files.AtomicFile):
  """Opens every output's temporary, aborting those opened if one fails."""
  writers = []
  try:
    for path in output_files:
      writers.append(tfrecords.AtomicTFRecordWriter(path, atomic_file))
  except BaseException:
    for w in writers:
      w.abort()
    raise
  return writers


def generate(input_files, output_files, settings, progress=None, access=DEFAULT_FILE_ACCESS,
             allow_empty=False):
  """Writes the instances of `input_files` round-robin into `output_files` (the original's
  single-process behaviour). Returns {"documents", "instances", "skipped_documents",
  "real_tokens", "packed_rows"}: the last two, summed over the outputs, those of
  padding.PaddingCounter on each output's records in their order (for the end line).

  A corpus without text is an error, unless allow_empty (the per-file modes: one empty shard of
  thousands then gets an empty output, as the original run on it alone writes, instead of
  failing the whole job).

  Memory holds the tokenized corpus in flat arrays (about 5 bytes per token) and 8 bytes per
  instance; the serialized instances wait in a local temporary file (RecordSpill, as large as the
  outputs) until the original's shuffled order is known.

  Outputs are complete or absent: any failure removes every temporary and writes no output
  (except those already renamed into place when closing a later one fails).
  """
  check_settings(settings)
  check_output_files(input_files, output_files, access.isdir)
  progress = progress or Progress()
  tokenizer = FullTokenizer.from_settings(settings.tokenizer)
  special = special_ids(tokenizer)
  options = settings.instance
  # Opened before the work, so that an unwritable output fails in seconds, not after hours.
  writers = open_writers(output_files, access.atomic_file)
  try:
    corpus = read_corpus(input_files, tokenizer, progress, access, allow_empty,
                         chinese_words.segmenter(settings.chinese_word_segmentation))
    documents = corpus.documents()
    progress.log(f"{len(documents)} documents, {corpus.num_tokens} tokens "
                 f"({corpus.skipped_documents} empty documents skipped)")
    rng = random.Random(settings.random_seed)
    # The original draws n-gram lengths from numpy's global stream; we seed it as the fixtures do.
    sampler = NgramSampler(settings.ngram, settings.favor_shorter_ngram,
                           np.random.RandomState(settings.random_seed))
    total = settings.dupe_factor * len(documents)
    lengths = array("I")  # each instance's real tokens, for the padding counts
    with RecordSpill() as spill:
      progress.begin()
      for step, instances in instances_by_document(documents, options, special,
                                                   settings.dupe_factor, rng, sampler):
        for instance in instances:
          spill.append(serialize_instance(instance, options.max_seq_length,
                                          options.max_predictions_per_seq,
                                          options.do_permutation))
          lengths.append(len(instance.input_ids))
        progress.update(step, total, f"creating instances: pass {1 + (step - 1) // len(documents)}"
                        f"/{settings.dupe_factor}, {len(spill)} instances")
      rate = len(spill) / max(time.time() - progress.start, 1e-9)
      progress.log(f"{len(spill)} instances ({rate:.0f} instances/s); writing them in shuffled "
                   "order")
      order = shuffled_order(len(spill), rng)
      counters = [padding.PaddingCounter(options.max_seq_length) for _ in writers]
      for k, record in enumerate(spill.read_in_order(order)):
        writers[k % len(writers)].write(record)
        counters[k % len(writers)].add(lengths[order[k]])
      num_instances = len(spill)
    for w in writers:
      w.close()
  except BaseException:
    for w in writers:
      w.abort()
    raise
  progress.log(f"wrote {num_instances} instances to {len(output_files)} file(s)")
  written = padding.PaddingStats.combine(c.stats() for c in counters)
  return {"documents": len(documents), "instances": num_instances,
          "skipped_documents": corpus.skipped_documents, "real_tokens": written.real_tokens,
          "packed_rows": written.packed_rows}


def generate_file(index, input_file, output_file, settings, access=DEFAULT_FILE_ACCESS):
  """Input file `index` of a per-file run (--num_workers, Beam) alone into its own output,
  seeded random_seed + index: what the original writes when run on that file alone."""
  settings = dataclasses.replace(settings, random_seed=settings.random_seed + index)
  return generate([input_file], [output_file], settings, Progress(label=f" #{index}"), access,
                  allow_empty=True)


def _generate_one(args):
  return generate_file(*args)


def check_one_output_per_input(input_files, output_files, mode):
  """Raises ValueError unless the per-file `mode` has one output file per input file."""
  if len(input_files) != len(output_files):
    raise errors.UsageError(
        f"{len(input_files)} input files but {len(output_files)} output files: with "
        f"{mode}, give one output file per input file, or an output directory "
        "(ending in '/' for a remote one)")


def generate_per_file(input_files, output_files, settings, num_workers, progress=None):
  """One output per input file, file i generated alone with random_seed + i, in parallel.
  Each worker logs its file's progress; this process logs files done and the overall ETA (by
  input bytes)."""
  check_one_output_per_input(input_files, output_files, "--num_workers")
  check_settings(settings)
  check_output_files(input_files, output_files)
  progress = progress or Progress()
  sizes = {i: max(files.size_if_local(p) or 0, 1) for i, p in enumerate(input_files)}
  total = sum(sizes.values())
  jobs = [(i, inp, out, settings) for i, (inp, out) in enumerate(zip(input_files, output_files))]
  context = multiprocessing.get_context("spawn")
  results = []
  with concurrent.futures.ProcessPoolExecutor(max_workers=num_workers,
                                              mp_context=context) as pool:
    futures = {pool.submit(_generate_one, job): job[0] for job in jobs}
    progress.begin()
    done_bytes = 0
    for future in concurrent.futures.as_completed(futures):
      try:
        results.append(future.result())
      except BaseException:
        # Fail now: the files still queued would otherwise run (for hours) before the error.
        pool.shutdown(wait=True, cancel_futures=True)
        raise
      index = futures[future]
      done_bytes += sizes[index]
      progress.update(done_bytes, total, f"files done: {len(results)}/{len(jobs)} (last "
                      f"{input_files[index]})", force=True)
  return {key: sum(r[key] for r in results) for key in results[0]}


def default_output_files(input_files, output_file, isdir=files.isdir):
  """Comma-separated outputs; a single directory (an existing one, or any path ending in '/')
  means `<dir>/<input base name>.tfrecord` per input, the directory created by the writers."""
  if "," not in output_file and (output_file.endswith(("/", os.sep)) or isdir(output_file)):
    return [os.path.join(output_file, os.path.basename(p) + ".tfrecord") for p in input_files]
  return [p for p in output_file.split(",") if p]
