"""Counts the corpus lines whose training ids and served ids differ.

  python tools/check_tokenization.py --input_file=corpus.txt \
      --spm_model_file=30k-clean.model [--do_lower_case] [--max_lines=0] [--examples=10]

Training data is tokenized in Python (FullTokenizer, the `sentencepiece` package, as
create_pretraining_data does); an exported SavedModel tokenizes in its graph (InGraphTokenizer,
tensorflow-text's SentencePiece kernel). The two can split a run of one repeated character
("=====") differently: SentencePiece 0.2.x (the Python package) breaks ties between equal-score
segmentations otherwise than 0.1.x, and tensorflow-text's kernel agrees with sentencepiece 0.1.99
(on every line of the fixture corpus). This tool runs both public paths end to end on each raw
non-blank line and reports how many lines differ, with examples, then one JSON line for scripts:

  {"lines": N, "differing": K, "repeated_run_ties": T, "files": [{"file": ..., "lines": ...,
   "differing": ...}, ...]}

`repeated_run_ties` counts the differing lines where only the split of a run of one repeated
character differs (the known cause); K - T > 0 means some other disagreement, worth reporting.
Exit status 0 whatever the counts (it is a report); 2 for bad input (missing file or model),
told in one `error:` line as the binaries' (albert_tf.core.cli).
"""

import importlib.metadata
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import flags

from albert_tf.core import cli, errors, io
from albert_tf.data.corpus import corpus_lines

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None,
                    "Corpus text file(s): comma-separated files or globs, read as "
                    "create_pretraining_data reads them (one sentence a line).")
flags.DEFINE_string("spm_model_file", None,
                    "The SentencePiece model of the training data and of the export.")
flags.DEFINE_bool("do_lower_case", True,
                  "As create_pretraining_data's and export_saved_model's flag.")
flags.DEFINE_integer("max_lines", 0, "Stop after this many non-blank lines (0: all).")
flags.DEFINE_integer("examples", 10, "How many differing lines to print.")
flags.DEFINE_integer("batch_size", 512, "Lines per call of the in-graph tokenizer.")
flags.DEFINE_float("progress_seconds", 5.0, "Seconds between progress lines on stderr.")

_TEXT_WIDTH = 100  # characters of a differing line shown
_CONTEXT = 2  # equal pieces shown either side of a difference
_WINDOW = 12  # at most this many pieces of a difference shown


class BadInput(errors.UsageError):
  """A problem with the flags or files that the user must fix (exit status 2)."""


def _check_flags():
  """The input files, or BadInput. Runs before TensorFlow is imported, so that a mistake costs
  no start-up time."""
  if not FLAGS.input_file:
    raise BadInput("--input_file is required: pass the corpus text file(s) that "
                   "create_pretraining_data reads (comma-separated files or globs)")
  if not FLAGS.spm_model_file:
    raise BadInput("--spm_model_file is required: pass the SentencePiece .model file of the "
                   "training data (create_pretraining_data's --spm_model_file)")
  for name in ("max_lines", "examples"):
    if getattr(FLAGS, name) < 0:
      raise BadInput(f"--{name}={getattr(FLAGS, name)}: must be 0 or more")
  if FLAGS.batch_size < 1:
    raise BadInput(f"--batch_size={FLAGS.batch_size}: must be at least 1")
  if not io.exists(FLAGS.spm_model_file):
    raise BadInput(f"--spm_model_file: SentencePiece model not found: {FLAGS.spm_model_file} "
                   "(pass the .model file that create_pretraining_data used; the .vocab file "
                   "beside it is not enough)")
  try:
    return io.expand_input_patterns(FLAGS.input_file)
  except FileNotFoundError as e:
    raise BadInput(f"--input_file: {e} (pass existing text files or globs that match some, "
                   "comma-separated)") from None


def read_lines(path, preprocess):
  """(line number, raw text, bytes of `path` read so far) of each non-blank line of `path`.

  Lines as create_pretraining_data reads them (corpus.corpus_lines), blank when nothing is left
  after preprocessing (a document separator, never tokenized)."""
  with io.open_binary(path) as f:
    try:
      for number, text, bytes_read in corpus_lines(f, path):
        if preprocess(text):
          yield number, text, bytes_read
    except ValueError as e:  # not UTF-8
      raise BadInput(f"--input_file: {e}; create_pretraining_data refuses it too: re-encode the "
                     "file as UTF-8 (e.g. iconv)") from None


def _common_ends(a, b):
  """Lengths of the common prefix and (not overlapping it) common suffix of lists a and b."""
  shorter = min(len(a), len(b))
  prefix = 0
  while prefix < shorter and a[prefix] == b[prefix]:
    prefix += 1
  suffix = 0
  while suffix < shorter - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
    suffix += 1
  return prefix, suffix


def differing_window(a, b):
  """The differing middle of piece lists a and b with _CONTEXT equal pieces either side:
  (index of its first piece, a's window, b's window), "…" marking pieces left out."""
  prefix, suffix = _common_ends(a, b)
  start = max(0, prefix - _CONTEXT)

  def window(pieces):
    end = min(len(pieces), len(pieces) - suffix + _CONTEXT)
    shown = list(pieces[start:end])
    if len(shown) > _WINDOW:
      shown = shown[:_WINDOW] + ["…"]
    elif end < len(pieces):
      shown.append("…")
    return (["…"] if start > 0 else []) + shown

  return start, window(a), window(b)


def _boundaries(pieces):
  """The offsets in "".join(pieces) where one piece ends and the next begins."""
  offsets, end = set(), 0
  for piece in pieces[:-1]:
    end += len(piece)
    offsets.add(end)
  return offsets


def is_repeated_run_tie(a, b):
  """Whether pieces a and b spell the same text and differ only in how runs of one repeated
  character are split (the documented SentencePiece tie-break difference): every piece boundary
  that one has and the other lacks falls between two equal characters. The differing part may
  hold several runs and other pieces ("===|" in a "+===+===+" border)."""
  prefix, suffix = _common_ends(a, b)
  middle_a, middle_b = a[prefix:len(a) - suffix], b[prefix:len(b) - suffix]
  text = "".join(middle_a)
  if not middle_a or text != "".join(middle_b):
    return False
  moved = _boundaries(middle_a) ^ _boundaries(middle_b)
  return bool(moved) and all(text[i - 1] == text[i] for i in moved)


def _printable(text, width=_TEXT_WIDTH):
  text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
  return text if len(text) <= width else text[:width - 1] + "…"


class Checker:
  """Both tokenizers on batches of lines; counts per file and the first differing lines."""

  def __init__(self, spm_model_file, do_lower_case, max_examples):
    from albert_tf.tokenization import FullTokenizer
    try:
      self.full = FullTokenizer(do_lower_case=do_lower_case, spm_model_file=spm_model_file)
    except Exception as e:  # noqa: BLE001 -- re-raised naming the flag
      # SentencePiece's own message does not say which flag to fix.
      raise BadInput(f"--spm_model_file: could not load {spm_model_file} as a SentencePiece "
                     f"model ({type(e).__name__}: {str(e).strip()[:300]}); pass the .model file "
                     "create_pretraining_data used") from None
    self.spm_model_file = spm_model_file
    self.do_lower_case = do_lower_case
    self._graph_ids = self._graph_pieces = None
    self.max_examples = max_examples
    self.lines = 0
    self.differing = 0
    self.ties = 0
    self.examples = []
    self.per_file = {}

  def _load_graph(self):
    """TensorFlow on the first batch only: mistakes in the flags or the files' first lines are
    reported without its start-up (seconds)."""
    from albert_tf.core.startup import quiet_tensorflow_startup
    quiet_tensorflow_startup()
    import tensorflow as tf
    from albert_tf.tokenization.in_graph import InGraphTokenizer
    graph = InGraphTokenizer(self.spm_model_file, self.do_lower_case)
    spec = [tf.TensorSpec([None], tf.string)]
    # One trace for every batch size: the ragged ops are slow eagerly.
    self._graph_ids = tf.function(graph.ids, input_signature=spec)
    self._graph_pieces = tf.function(graph.pieces, input_signature=spec)

  def check(self, path, batch):
    """batch: [(line number, text)] of `path`."""
    if self._graph_ids is None:
      self._load_graph()
    texts = [text for _, text in batch]
    served = self._graph_ids(texts).to_list()
    differing = []
    for (number, text), ids in zip(batch, served):
      pieces = self.full.tokenize(text)
      if self.full.convert_tokens_to_ids(pieces) != ids:
        differing.append((number, text, pieces))
    counts = self.per_file.setdefault(path, {"file": path, "lines": 0, "differing": 0})
    counts["lines"] += len(batch)
    counts["differing"] += len(differing)
    self.lines += len(batch)
    self.differing += len(differing)
    if not differing:
      return
    served_pieces = self._graph_pieces([text for _, text, _ in differing]).to_list()
    for (number, text, pieces), graph_pieces in zip(differing, served_pieces):
      graph_pieces = [p.decode("utf-8") for p in graph_pieces]
      tie = is_repeated_run_tie(pieces, graph_pieces)
      self.ties += tie
      if len(self.examples) < self.max_examples:
        self.examples.append((f"{path}:{number}", text, pieces, graph_pieces, tie))


def _percent(part, whole):
  return f"{100.0 * part / whole:.2f}%" if whole else "0.00%"


def _versions():
  """The installed sentencepiece and tensorflow-text, whose tie-breaking is what differs (read
  from the package metadata: importing tensorflow-text would start TensorFlow)."""
  def version(name):
    try:
      return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      return "?"
  return version("sentencepiece"), version("tensorflow-text")


def report(checker, files, elapsed, stopped):
  out = sys.stdout
  versions = _versions()
  if not checker.lines:
    print(f"check_tokenization: warning: no non-blank line in {', '.join(files)}: nothing to "
          "compare (is --input_file the corpus?)", file=sys.stderr, flush=True)
  print(f"checked {checker.lines} non-blank lines of {len(files)} file(s) in {elapsed:.1f}s"
        + (f" (--max_lines={FLAGS.max_lines} reached)" if stopped else ""), file=out)
  print(f"  training ids: FullTokenizer (sentencepiece {versions[0]}); served ids: "
        f"InGraphTokenizer (tensorflow-text {versions[1]})", file=out)
  print(f"lines whose ids differ: {checker.differing} of {checker.lines} "
        f"({_percent(checker.differing, checker.lines)})", file=out)
  if checker.differing:
    other = checker.differing - checker.ties
    print(f"  {checker.ties} differ only in the split of a run of one repeated character "
          "(SentencePiece 0.2.x vs 0.1.x tie-breaking between equal-score splits); "
          f"{other} differ otherwise" + (" (please report them)" if other else ""), file=out)
  if len(files) > 1:
    for counts in checker.per_file.values():
      print(f"  {counts['file']}: {counts['differing']} of {counts['lines']} "
            f"({_percent(counts['differing'], counts['lines'])})", file=out)
  if checker.examples:
    print(f"first {len(checker.examples)} differing line(s):", file=out)
  for where, text, train, served, tie in checker.examples:
    start, a, b = differing_window(train, served)
    print(f"{where}: {_printable(text)}", file=out)
    note = "" if tie else "  [not a repeated-character tie]"
    print(f"  pieces from #{start}  training: {' '.join(a)}{note}", file=out)
    print(f"  pieces from #{start}  served:   {' '.join(b)}", file=out)
  summary = {"lines": checker.lines, "differing": checker.differing,
             "repeated_run_ties": checker.ties, "files": list(checker.per_file.values())}
  print(json.dumps(summary, ensure_ascii=False), file=out, flush=True)
  return summary


def run(files):
  checker = Checker(FLAGS.spm_model_file, FLAGS.do_lower_case, FLAGS.examples)
  sizes = [io.size_if_local(p) for p in files]
  total = None if None in sizes else sum(sizes)
  start = last = time.time()
  done_bytes = 0
  limit = FLAGS.max_lines
  stopped = False
  for k, path in enumerate(files, start=1):
    checker.per_file.setdefault(path, {"file": path, "lines": 0, "differing": 0})
    batch = []
    file_bytes = 0
    for number, text, file_bytes in read_lines(path, checker.full.preprocess):
      batch.append((number, text))
      stopped = bool(limit) and checker.lines + len(batch) >= limit
      if stopped:
        break
      if len(batch) == FLAGS.batch_size:
        checker.check(path, batch)
        batch = []
        now = time.time()
        if now - last >= FLAGS.progress_seconds:
          last = now
          read = done_bytes + file_bytes
          share = f" of {total / 1e6:.1f} MB ({100.0 * read / max(total, 1):.0f}%)" if total else ""
          print(f"[check_tokenization {now - start:6.1f}s] file {k}/{len(files)} {path}: "
                f"{checker.lines} lines checked, {checker.differing} differing, "
                f"{read / 1e6:.1f} MB read{share}", file=sys.stderr, flush=True)
    if batch:
      checker.check(path, batch)
    done_bytes += sizes[k - 1] or file_bytes
    if stopped:
      break
  return report(checker, files, time.time() - start, stopped)


def main(argv):
  if len(argv) > 1:
    raise BadInput(f"unexpected arguments {argv[1:]}: pass the corpus with --input_file")
  run(_check_flags())


if __name__ == "__main__":
  cli.run(main)
