"""Feature caches keyed by what they hold.

A fine-tuning job writes its features once and reads them back on later runs (the original's
cached `<task>_train.tf_record`, SQuAD's train.tf_record, NER's ner_train.tf_record, ...). The
records alone cannot tell what they were written from, so beside each one lies a stamp,
`<file>.stamp.json`: the SHA-256 of the data (file contents or the examples read from them), the
label list and type, the column choices, the lengths (max_seq_length, doc_stride,
max_query_length where used) and the tokenizer (its file's contents and the casing). A cache is
reused only when its stamp equals the stamp of this run's inputs; otherwise it is written again,
and the log says which fields differed. A data file edited under the same name is so read again,
and the same file under another path (./dev.json, /abs/dev.json, a link to it) is the same input:
files are hashed by their contents alone (files_sha256).

A file written by the same conversion as the records (SQuAD's predict_feature_left_file, the
bookkeeping of its prediction features) is stamped alike and checked with them (checked_pair):
records are never read with another conversion's bookkeeping.

In a directory runs may share (--cached_dir) the file's name carries its stamp's hash
(cache_path): a run with other inputs writes a file of its own beside it, so that no run's
atomic rename lands on the file another run reads, on a local disk or on gs:// alike; runs with
the same inputs share one file. The run's own output_dir (one run at a time: training.lock) and
the files a user names keep their names.

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
import re

from albert_tf.core import errors, io

logger = logging.getLogger("albert_tf")

STAMP_SUFFIX = ".stamp.json"
# The states of a cache (freshness()).
MISSING, FRESH, STALE, UNSTAMPED = "missing", "fresh", "stale", "unstamped"
# Hex digits of the stamp's hash in the name of a cache in a shared directory (cache_path): 64
# bits, so that two runs' inputs never meet under one name.
KEY_DIGITS = 16
_SHA256 = re.compile(r"[0-9a-f]{64}")


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
  """The SHA-256s of data files' contents, in order (None entries skipped). The contents alone:
  how a path is spelt (./dev.json, /abs/dev.json, a link to it) changes no feature, so it must
  not make a cache stale, nor a file the user named refused."""
  return [io.sha256(p) for p in paths if p]


def make_stamp(tokenizer, **fields):
  """A cache stamp: the tokenizer's fingerprint and the task's fields (JSON values: the data's
  hashes, labels, lengths, columns)."""
  return json.loads(json.dumps({**tokenizer_fingerprint(tokenizer), **_plain(fields)},
                               sort_keys=True))


def _shown(value):
  text = json.dumps(value, ensure_ascii=False)
  return text if len(text) <= 40 else text[:37] + "..."


def _compared(value):
  """A stamp's value as stamps are compared: a {path: SHA-256} map, which files_sha256 gave
  before it left the paths out, as its hashes, so that a cache stamped then is still fresh
  (and a file the user named still accepted) under another spelling of the data's path."""
  if isinstance(value, dict) and value and all(
      isinstance(v, str) and _SHA256.fullmatch(v) for v in value.values()):
    return list(value.values())
  return value


def differences(written, expected):
  """The fields in which stamp `written` differs from `expected`, as 'field: old -> new'."""
  found = []
  for key in sorted(set(written) | set(expected)):
    old, new = _compared(written.get(key)), _compared(expected.get(key))
    if old != new:
      found.append(f"{key}: {_shown(old)} -> {_shown(new)}")
  return found


def stamp_key(expected):
  """The first KEY_DIGITS hex digits of the SHA-256 of stamp `expected` (its JSON, keys sorted):
  what a cache's name in a shared directory carries."""
  text = json.dumps(expected, sort_keys=True, ensure_ascii=False)
  return hashlib.sha256(text.encode()).hexdigest()[:KEY_DIGITS]


def _same_directory(a, b):
  """Whether directories a and b are one (local: after links and relative spellings)."""
  if io.is_remote(a) or io.is_remote(b):
    return io.abspath(a) == io.abspath(b)
  return os.path.realpath(a or ".") == os.path.realpath(b or ".")


def cache_path(path, expected, *, output_dir, named_by=None):
  """The file that holds the cache of stamp `expected` which a job keeps at `path`.

  A file the user named is `path`, and so is one in the run's own output_dir: one run at a time
  writes there (training.lock). In another directory (--cached_dir) runs may work at once, so the
  name carries the stamp's key (stamp_key): mrpc_train.tf_record becomes
  mrpc_train.<key>.tf_record. A run with other inputs then writes its own file beside it rather
  than renaming its records over the ones this run reads (with no lock, so on gs:// as well), and
  runs with the same inputs share one file, which each would write the same. A file at `path`
  itself (the original's, or an earlier albert_tf's) is left alone, with a log line.

  Args:
    path: the feature file's name as the task gives it (<cached_dir>/<task>_train.tf_record).
    expected: make_stamp() of this run's inputs.
    output_dir: the run's output_dir.
    named_by: the flag that named `path`, or None for a place the job chose.
  """
  path = os.fspath(path)
  directory, name = io.split(path)
  if named_by or not output_dir or _same_directory(directory, os.fspath(output_dir)):
    return path
  stem, extension = os.path.splitext(name)
  keyed = os.path.join(directory, f"{stem}.{stamp_key(expected)}{extension}")
  if io.exists(path):
    logger.info(f"{path} is not read: in a directory runs share, a cache is named after its "
                f"inputs (this run's: {keyed}); {name}, under the original's name, is the "
                "original's or an earlier albert_tf's, and may be deleted with its stamp")
  return keyed


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


def _refused(named_by, path, why):
  return errors.CacheError(
      f"{named_by}={path} holds features written for other inputs ({why}): delete it to write "
      f"it again, or name another file with {named_by}")


def stamped(path, expected, write):
  """write(), which writes `path` (atomically), as a writer that leaves `path` stamped
  `expected`."""
  def write_stamped():
    stamp_file = stamp_path(path)
    # The old stamp goes first: a run stopped after the records and before the stamp leaves an
    # unstamped file (rewritten next time), never new records under an old stamp.
    if io.exists(stamp_file):
      io.remove(stamp_file)
    write()
    io.write_text_atomically(stamp_file, json.dumps(expected, sort_keys=True))
  return write_stamped


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
    raise _refused(named_by, path, why)
  if state == UNSTAMPED and named_by:
    logger.info(f"using {path} ({named_by}) as it is: {why}, so it cannot be checked against "
                "this run's data, labels, lengths and tokenizer")
    return True, write
  if state in (STALE, UNSTAMPED):
    logger.info(f"{path} is stale ({why}): writing it again")
  return state == FRESH, stamped(path, expected, write)


def checked_pair(path, companion, expected, *, named_by=None, companion_named_by=None,
                 companion_flag=None):
  """Which of a feature file and its companion to write for stamp `expected`. The companion is
  written by the same conversion as the records and describes them record by record (SQuAD's
  predict_feature_left_file), so it is stamped alike and read only with records of the same
  inputs: never with records written for other data, nor beside records that cannot be checked.

  The records are decided as checked() decides them. A companion written for other inputs, or
  missing, is written again (from this run's conversion, stamped: stamped()) when it lies in a
  place the job chose; without a stamp, one the user named is used as it is beside records that
  are read, with a log line. Rewriting records leaves a fresh companion as it is: the same
  inputs convert to the same features.

  Args:
    path: the feature file (the records).
    companion: the file written with them.
    expected: make_stamp() of this run's inputs.
    named_by: the flag that named `path`, or None for a place the job chose.
    companion_named_by: the flag that named `companion`, or None for a place the job chose.
    companion_flag: the flag that names a companion, for the errors.

  Returns:
    (records, companion_needed): write the records (checked(..., regenerate=True)); otherwise
    they are read as checked() decides. companion_needed: write the companion, from the
    conversion that wrote the records, or from a conversion of the same inputs when the records
    are read.

  Raises:
    errors.CacheError: a file the user named would be overwritten (records or companion written
      for other inputs, a companion with no stamp beside records to be written), or a companion
      is to be made for user-named records that have no stamp to show they are this run's.
  """
  state, why = freshness(path, expected)
  if state == STALE and named_by:
    raise _refused(named_by, path, why)
  records = state == MISSING or (state in (STALE, UNSTAMPED) and not named_by)
  side, side_why = freshness(companion, expected)
  flag = companion_named_by or companion_flag or "its companion"
  if side == FRESH:
    return records, False
  if side == UNSTAMPED and companion_named_by and not records:
    logger.info(f"using {companion} ({companion_named_by}) as it is: {side_why}, so it cannot be "
                f"checked against {path}")
    return records, False
  if companion_named_by and side != MISSING:
    why_not = (f"it was written for other inputs ({side_why})" if side == STALE else
               f"{path} is to be written and {side_why}, so it cannot be checked to match")
    raise errors.CacheError(
        f"{companion_named_by}={companion} cannot be read with {path}: {why_not}; delete it to "
        f"write it again, or name another file with {companion_named_by}")
  if not records and state != FRESH:
    # The records are the user's, used as they are: bookkeeping made now from this run's inputs
    # might describe other records, and writing the records again would overwrite them.
    missing = "is missing" if side == MISSING else f"must be written again ({side_why})"
    raise errors.CacheError(
        f"{named_by}={path} has no stamp to show it was written from this run's inputs, and "
        f"{flag} {companion} {missing}: name the {flag} written with it, or delete {path} to "
        "write both again")
  if side != MISSING:
    logger.info(f"{companion} is stale ({side_why}): writing it again")
  return records, True
