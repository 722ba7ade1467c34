"""SQuAD's cached features and the bookkeeping beside them (albert_tf.finetuning.feature_cache,
albert_tf.tasks.squad.job): the bookkeeping (--predict_feature_left_file) is stamped as the
records are and never read beside records of other data; a feature file the user named is never
written over; one data file under another spelling of its path is the same input; and runs that
share a directory of caches each read the features of their own inputs."""

import json
import logging
import os
import shutil

import pytest

from albert_tf.core import errors, io, settings
from albert_tf.finetuning import feature_cache
from albert_tf.tasks.squad import settings as squad_settings
from helpers import ORIGINAL_MODEL, TESTDATA, run_binary

SQUAD = os.path.join(TESTDATA, "original_finetuning", "squad")
DEV, OTHER_DEV = os.path.join(SQUAD, "v1", "dev.json"), os.path.join(SQUAD, "v2", "dev.json")
TRAIN = os.path.join(SQUAD, "v1", "train.json")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
TOKENIZER = settings.TokenizerSettings(spm_model_file=SPM)


def _job(out, **fields):
  """A run_squad_v1 job on the fixture model (64 positions), its files in `out`."""
  from albert_tf.tasks.squad.job import SquadJob
  fields.setdefault("do_predict", "predict_file" in fields)
  return SquadJob(squad_settings.SquadSettings(
      output_dir=str(out), tokenizer=TOKENIZER, doc_stride=24, max_query_length=16,
      model=settings.ModelSettings(albert_config_file=CONFIG, max_seq_length=64), **fields))


def _predicted(out, predict_file=DEV, **fields):
  """The prediction features' bookkeeping a job in `out` reads or writes, as plain values."""
  _, features, _ = _job(out, predict_file=str(predict_file), **fields).predict_features()
  return [(f.unique_id, f.example_index, f.tokens, f.tok_start_to_orig_index) for f in features]


def _identity(path):
  """What tells a file written again (a new inode, by the atomic rename) from one left alone."""
  info = os.stat(path)
  return info.st_ino, info.st_mtime_ns, open(path, "rb").read()


@pytest.fixture(name="reference", scope="module")
def _reference(tmp_path_factory):
  """The bookkeeping of DEV, written by a run in a directory of its own."""
  return _predicted(tmp_path_factory.mktemp("reference"))


# ---- the bookkeeping is stamped ---------------------------------------------------------------
def test_bookkeeping_of_other_data_is_written_again_beside_this_datas_records(tmp_path,
                                                                              reference):
  out = tmp_path / "out"
  assert _predicted(out) == reference
  records = out / "predict.tf_record"
  before = _identity(records)
  # A run on other data that names its own feature file but keeps its bookkeeping in the same
  # output_dir: predict_left.jsonl is then the other data's, beside this data's records.
  other = _predicted(out, OTHER_DEV, predict_feature_file=str(tmp_path / "other.tf_record"))
  assert other != reference
  # The records are this data's (their stamp), the bookkeeping is not: it is written again, and
  # the answers are cut from this data's windows, not from the other file's.
  assert _predicted(out) == reference
  assert _identity(records) == before
  left = out / "predict_left.jsonl"
  assert (json.load(open(feature_cache.stamp_path(left)))
          == json.load(open(feature_cache.stamp_path(records))))
  assert _predicted(out) == reference  # and now read as it is


def test_bookkeeping_the_user_named_for_other_data_is_refused(tmp_path, reference):
  left = tmp_path / "shared" / "dev_left.jsonl"
  _predicted(tmp_path / "other", OTHER_DEV, predict_feature_left_file=str(left))
  before = _identity(left)
  with pytest.raises(errors.CacheError, match=(
      rf"--predict_feature_left_file={left} cannot be read with .*predict.tf_record: it was "
      r"written for other inputs \(data: .*\); delete it to write it again, or name another "
      r"file with --predict_feature_left_file")):
    _predicted(tmp_path / "out", predict_feature_left_file=str(left))
  assert _identity(left) == before
  # Bookkeeping the user named and that this data wrote is read, beside records of this data.
  left.unlink()
  assert _predicted(tmp_path / "out", predict_feature_left_file=str(left)) == reference
  assert _predicted(tmp_path / "again", predict_feature_left_file=str(left)) == reference


# ---- a feature file the user named is never written over --------------------------------------
def test_a_named_feature_file_is_not_overwritten_when_its_bookkeeping_is_missing(tmp_path,
                                                                                 reference):
  records = tmp_path / "features" / "dev.tf_record"
  assert _predicted(tmp_path / "first", predict_feature_file=str(records)) == reference
  before = _identity(records)
  # Another output_dir: no predict_left.jsonl there. The records' stamp says they are this
  # data's, so only their bookkeeping is made again.
  assert _predicted(tmp_path / "second", predict_feature_file=str(records)) == reference
  assert _identity(records) == before
  assert (tmp_path / "second" / "predict_left.jsonl").exists()
  # Without a stamp (the original's file) nothing shows which data they hold: the run stops,
  # one line naming both files and what to do, and leaves the records as they are.
  os.remove(feature_cache.stamp_path(records))
  left = tmp_path / "third" / "predict_left.jsonl"
  with pytest.raises(errors.CacheError) as refused:
    _predicted(tmp_path / "third", predict_feature_file=str(records))
  message = str(refused.value)
  assert "\n" not in message and message == (
      f"--predict_feature_file={records} has no stamp to show it was written from this run's "
      f"inputs, and --predict_feature_left_file {left} is missing: name the "
      f"--predict_feature_left_file written with it, or delete {records} to write both again")
  assert _identity(records) == before and not left.exists()


# ---- one file, any spelling of its path -------------------------------------------------------
def test_the_same_data_file_under_another_path_is_the_same_input(tmp_path, monkeypatch,
                                                                 reference):
  data = tmp_path / "data"
  data.mkdir()
  shutil.copy(DEV, data / "dev.json")
  shutil.copy(TRAIN, data / "train.json")
  for name in ("dev", "train"):
    os.symlink(data / f"{name}.json", data / f"{name}-link.json")
  monkeypatch.chdir(data)
  records, left = tmp_path / "dev.tf_record", tmp_path / "dev_left.jsonl"
  train_records = tmp_path / "train.tf_record"
  named = {"predict_feature_file": str(records), "predict_feature_left_file": str(left)}
  written = {}
  for spelling in (str(data / "dev.json"), "./dev.json", "dev-link.json"):
    assert _predicted(tmp_path / "out", spelling, **named) == reference, spelling
    written.setdefault("predict", _identity(records))
    assert _identity(records) == written["predict"], spelling
  for spelling in (str(data / "train.json"), "./train.json", "train-link.json"):
    job = _job(tmp_path / "out", do_train=True, train_file=spelling,
               train_feature_file=str(train_records))
    job.train_feature_file(job.train_examples())
    written.setdefault("train", _identity(train_records))
    assert _identity(train_records) == written["train"], spelling


def test_stamps_that_keyed_a_files_hash_by_its_path_stay_fresh(tmp_path):
  # Stamps written before the paths were left out: {path as spelt: SHA-256}.
  path = str(tmp_path / "train.tf_record")
  open(path, "wb").write(b"records")
  digest = io.sha256(DEV)
  old = feature_cache.make_stamp(TOKENIZER, max_seq_length=64, data={"./dev.json": digest})
  open(feature_cache.stamp_path(path), "w").write(json.dumps(old))
  now = feature_cache.make_stamp(TOKENIZER, max_seq_length=64,
                                 data=feature_cache.files_sha256([os.path.abspath(DEV)]))
  assert feature_cache.freshness(path, now) == (feature_cache.FRESH, "")
  assert feature_cache.checked(path, now, None, named_by="--train_feature_file")[0]
  other = feature_cache.make_stamp(TOKENIZER, max_seq_length=64,
                                   data=feature_cache.files_sha256([OTHER_DEV]))
  state, why = feature_cache.freshness(path, other)
  assert state == feature_cache.STALE and why.startswith(f'data: ["{digest[:30]}')


# ---- runs sharing a directory of caches -------------------------------------------------------
def _writer(path, records, calls):
  def write():
    calls.append(path)
    with open(path, "wb") as f:
      f.write(records)
  return write


def test_runs_sharing_a_cached_dir_each_read_their_own_features(tmp_path, caplog):
  cached = tmp_path / "cache"
  cached.mkdir()
  name = cached / "mrpc_train.tf_record"  # the task's name for the file in --cached_dir
  name.write_bytes(b"the original's records")  # under that name: read by no run, left alone
  ours = feature_cache.make_stamp(TOKENIZER, max_seq_length=48, examples_sha256="a" * 64)
  theirs = feature_cache.make_stamp(TOKENIZER, max_seq_length=64, examples_sha256="b" * 64)
  with caplog.at_level(logging.INFO, logger="albert_tf"):
    mine = feature_cache.cache_path(name, ours, output_dir=tmp_path / "ours")
  assert f"{name} is not read: in a directory runs share, a cache is named after its" in (
      caplog.text)
  caplog.clear()
  other = feature_cache.cache_path(name, theirs, output_dir=tmp_path / "theirs")
  assert mine != other and {os.path.dirname(mine), os.path.dirname(other)} == {str(cached)}
  assert os.path.basename(mine) == (
      f"mrpc_train.{feature_cache.stamp_key(ours)}.tf_record")
  calls = []
  # This run writes its features; the other run's write lands between this one's write and its
  # reads (each epoch opens the file again), and the other run's next start finds its own.
  cached_now, write = feature_cache.checked(mine, ours, _writer(mine, b"ours", calls))
  assert not cached_now
  write()
  _, write_theirs = feature_cache.checked(other, theirs, _writer(other, b"theirs", calls))
  write_theirs()
  assert open(mine, "rb").read() == b"ours" and open(other, "rb").read() == b"theirs"
  with caplog.at_level(logging.INFO, logger="albert_tf"):
    assert feature_cache.checked(mine, ours, _writer(mine, b"ours", calls))[0]
    assert feature_cache.checked(other, theirs, _writer(other, b"theirs", calls))[0]
  assert "stale" not in caplog.text and len(calls) == 2
  assert name.read_bytes() == b"the original's records"
  # A third run with this run's inputs shares this run's file (written the same either way).
  assert feature_cache.cache_path(str(name), dict(ours), output_dir=tmp_path / "third") == mine


def test_files_the_run_holds_alone_or_the_user_named_keep_their_names(tmp_path, monkeypatch):
  stamp = feature_cache.make_stamp(TOKENIZER, max_seq_length=48)
  out = tmp_path / "out"
  out.mkdir()
  os.symlink(out, tmp_path / "link")
  monkeypatch.chdir(tmp_path)
  # In output_dir, however spelt (one run at a time holds it: training.lock).
  for output_dir in (str(out), "out", "./out/", str(tmp_path / "link")):
    assert feature_cache.cache_path(str(out / "train.tf_record"), stamp,
                                    output_dir=output_dir) == str(out / "train.tf_record")
  # Named by the user: the user's file, wherever it lies.
  assert feature_cache.cache_path("cache/dev.tf_record", stamp, output_dir=str(out),
                                  named_by="--train_file") == "cache/dev.tf_record"
  # A remote directory (TensorFlow's in-memory file system standing for gs://) is keyed alike.
  keyed = feature_cache.cache_path("ram://bucket/cache/mrpc_train.tf_record", stamp,
                                   output_dir="ram://bucket/out")
  assert keyed == f"ram://bucket/cache/mrpc_train.{feature_cache.stamp_key(stamp)}.tf_record"
  own = "ram://bucket/out/train.tf_record"
  assert feature_cache.cache_path(own, stamp, output_dir="ram://bucket/out/") == own


# ---- the binary --------------------------------------------------------------------------------
@pytest.mark.slow
def test_run_squad_refuses_to_pair_an_unstamped_feature_file_in_one_line(tmp_path):
  # The original's records of the fixture's dev set, named with no bookkeeping beside them.
  records = tmp_path / "dev.tf_record"
  shutil.copy(os.path.join(SQUAD, "v1", "dev.tfrecord"), records)
  before = _identity(records)
  out = tmp_path / "out"
  result = run_binary("run_squad_v1", [
      f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}", f"--output_dir={out}",
      f"--init_checkpoint={os.path.join(ORIGINAL_MODEL, 'model.ckpt-0')}",
      f"--predict_file={DEV}", f"--predict_feature_file={records}", "--do_predict",
      "--max_seq_length=64", "--doc_stride=24", "--max_query_length=16"], check=False,
                      timeout=300)
  assert result.returncode == 1, result.stderr[-3000:]
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
  assert (f"--predict_feature_file={records} has no stamp" in lines[0]
          and str(out / "predict_left.jsonl") in lines[0]
          and f"delete {records} to write both again" in lines[0])
  assert _identity(records) == before
