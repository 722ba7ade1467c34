"""Feature caches keyed by what they hold.

A fine-tuning job writes its features once and reads them back on later runs (the original's
cached `<task>_train.tf_record`, SQuAD's train.tf_record, NER's ner_train.tf_record, ...). The
records alone cannot tell what they were written from, so beside each one lies a stamp,
`<file>.stamp.json`: the SHA-256 of the data (file contents or the examples read from them), the
label list and type, the column choices, the lengths (max_seq_length, doc_stride,
max_query_length where used) and the tokenizer (its file's contents and the casing). A cache is
reused only when its stamp equals the stamp of this run's inputs; otherwise it is written again,
and the log says which fields differed. So two runs may share a --cached_dir, and a data file
edited under the same name is read again.

A cache with no stamp (written by the original code, or by an albert_tf before stamps) cannot be
checked: in a place the job chose (output_dir, cached_dir) it is rewritten; a feature file the
user named (RACE's --train_file, SQuAD's --train_feature_file, ...) is used as the original uses
it, with a log line, and one whose stamp differs is refused (CacheError): it is the user's file,
never overwritten.

No TensorFlow.
"""

import dataclasses
import hashlib
import json
import logging
import os

from albert_tf.core import errors, io

logger = logging.getLogger("albert_tf")

STAMP_SUFFIX = ".stamp.json"
# The states of a cache (freshness()).
MISSING, FRESH, STALE, UNSTAMPED = "missing", "fresh", "stale", "unstamped"


def stamp_path(path):
  """Where the stamp of feature file `path` lies."""
  return os.fspath(path) + STAMP_SUFFIX


def tokenizer_fingerprint(tokenizer):
  """What of TokenizerSettings `tokenizer` decides the ids: the SentencePiece model's or
  vocab.txt's name and the SHA-256 of its contents (two models of one file name give other
  ids), and the casing."""
  path = tokenizer.spm_model_file or tokenizer.vocab_file
  return {"tokenizer": os.path.basename(path) if path else None,
          "tokenizer_sha256": io.sha256(path) if path else None,
          "do_lower_case": bool(tokenizer.do_lower_case)}


def _plain(value):
  """value as JSON can hold it: dataclasses as their fields (with their class name, so that a
  padding example differs from a real one), other objects as their attributes."""
  if dataclasses.is_dataclass(value) and not isinstance(value, type):
    return {"class": type(value).__name__,
            **{f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}}
  if isinstance(value, (list, tuple)):
    return [_plain(v) for v in value]
  if isinstance(value, dict):
    return {str(k): _plain(v) for k, v in value.items()}
  if isinstance(value, (str, int, float, bool)) or value is None:
    return value
  if hasattr(value, "__dict__"):
    return {"class": type(value).__name__, **_plain(vars(value))}
  return repr(value)


def examples_sha256(examples):
  """The SHA-256 of a list of examples (InputExamples, RaceExamples, padding examples, ...):
  their texts, labels and ids, in order. What the feature writer reads, so it covers the data
  file's contents, the columns chosen and how labels were parsed."""
  digest = hashlib.sha256()
  for example in examples:
    digest.update(json.dumps(_plain(example), sort_keys=True, ensure_ascii=False).encode())
    digest.update(b"\n")
  return digest.hexdigest()


def files_sha256(paths):
  """{path: SHA-256 of its contents} of data files (None entries skipped)."""
  return {os.fspath(p): io.sha256(p) for p in paths if p}


def make_stamp(tokenizer, **fields):
  """A cache stamp: the tokenizer's fingerprint and the task's fields (JSON values: the data's
  hashes, labels, lengths, columns)."""
  return json.loads(json.dumps({**tokenizer_fingerprint(tokenizer), **_plain(fields)},
                               sort_keys=True))


def _shown(value):
  text = json.dumps(value, ensure_ascii=False)
  return text if len(text) <= 40 else text[:37] + "..."


def differences(written, expected):
  """The fields in which stamp `written` differs from `expected`, as 'field: old -> new'."""
  return [f"{key}: {_shown(written.get(key))} -> {_shown(expected.get(key))}"
          for key in sorted(set(written) | set(expected)) if written.get(key) != expected.get(key)]


def freshness(path, expected):
  """(state, why) of the cache at `path` for stamp `expected`: MISSING, FRESH, STALE (why: the
  differing fields) or UNSTAMPED."""
  if not io.exists(path):
    return MISSING, ""
  stamp_file = stamp_path(path)
  if not io.exists(stamp_file):
    return UNSTAMPED, f"no {os.path.basename(stamp_file)} beside it says what it was written from"
  try:
    written = json.loads(io.read_text(stamp_file))
  except ValueError:
    return STALE, f"its stamp {stamp_file} is not JSON"
  if not isinstance(written, dict):
    return STALE, f"its stamp {stamp_file} is not a JSON object"
  found = differences(written, expected)
  return (STALE, "; ".join(found)) if found else (FRESH, "")


def checked(path, expected, write, *, named_by=None, regenerate=False):
  """Whether the cache at `path` can be used for stamp `expected`, and the writer that makes it.

  Args:
    path: the feature file.
    expected: make_stamp() of this run's inputs.
    write: writes the feature file (atomically).
    named_by: the flag that named `path` (the user's file: never overwritten when stale), or
      None for a file in a place the job chose.
    regenerate: write it whatever it holds (prediction features, as the original).

  Returns:
    (cached, write_stamped): cached says to read the file as it is; otherwise write_stamped()
    writes it and then its stamp.

  Raises:
    errors.CacheError: a user-named file written for other inputs.
  """
  state, why = (MISSING, "") if regenerate else freshness(path, expected)
  if state == STALE and named_by:
    raise errors.CacheError(
        f"{named_by}={path} holds features written for other inputs ({why}): delete it to "
        f"write it again, or name another file with {named_by}")
  if state == UNSTAMPED and named_by:
    logger.info(f"using {path} ({named_by}) as it is: {why}, so it cannot be checked against "
                "this run's data, labels, lengths and tokenizer")
    return True, write
  if state in (STALE, UNSTAMPED):
    logger.info(f"{path} is stale ({why}): writing it again")

  def write_stamped():
    stamp_file = stamp_path(path)
    # The old stamp goes first: a run stopped after the records and before the stamp leaves an
    # unstamped file (rewritten next time), never new records under an old stamp.
    if io.exists(stamp_file):
      io.remove(stamp_file)
    write()
    io.write_text_atomically(stamp_file, json.dumps(expected, sort_keys=True))
  return state == FRESH, write_stamped
