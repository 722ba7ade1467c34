"""create_pretraining_data under faults: colliding outputs, missing output directories, failures
while writing (no temporary or partial output left, the first error reported), invalid flags."""

import dataclasses
import errno
import gc
import glob
import os
import subprocess
import sys

import pytest

import original_pretraining_reference as reference
from albert_tf.core import io as files
from albert_tf.core.settings import TokenizerSettings
from albert_tf.data import tfrecords
from albert_tf.core.io import expand_input_patterns, write_text_atomically
from albert_tf.data.instances import InstanceOptions
from albert_tf.data.pretraining_data import (GenerationSettings, check_settings,
                                             default_output_files, generate, generate_per_file)
from albert_tf.tokenization import FullTokenizer
from helpers import REPO_ROOT, TESTDATA, run_binary
from tfrecord_utils import read_examples

DATA = os.path.join(TESTDATA, "original_pretraining_data")
SPM = os.path.join(DATA, "30k-clean-tiny.model")
CORPUS = os.path.join(DATA, "corpus.txt")
SMALL_FLAGS = [f"--spm_model_file={SPM}", "--vocab_file=unused", "--max_seq_length=64",
               "--max_predictions_per_seq=10", "--dupe_factor=1"]


def _settings(**instance):
  return GenerationSettings(tokenizer=TokenizerSettings(spm_model_file=SPM), dupe_factor=1,
                            instance=InstanceOptions(**dict(
                                dict(max_seq_length=64, max_predictions_per_seq=10), **instance)))


def _corpus(path, start=0, lines=300):
  with open(CORPUS, encoding="utf-8") as f:
    text = f.read().split("\n")[start:start + lines]
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(text) + "\n")
  return str(path)


def _tree(root):
  """Every file under root, relative, sorted (dot files included)."""
  return sorted(os.path.relpath(os.path.join(d, f), root)
                for d, _, names in os.walk(root) for f in names)


# ITEM 5 (a): inputs with the same base name into one output directory.

@pytest.mark.parametrize("num_workers", [0, 1, 2])
def test_same_basename_inputs_are_refused_before_any_work(tmp_path, num_workers):
  a = _corpus(tmp_path / "a" / "x.txt")
  b = _corpus(tmp_path / "b" / "x.txt", start=300)
  out = tmp_path / "out"
  out.mkdir()
  result = run_binary("create_pretraining_data", [
      f"--input_file={a},{b}", f"--output_file={out}/", f"--num_workers={num_workers}"]
                      + SMALL_FLAGS, check=False)
  assert result.returncode != 0
  assert (f"inputs {a} and {b} would both be written to {out}/x.txt.tfrecord"
          in result.stderr), result.stderr[-2000:]
  assert "separate output directories" in result.stderr
  assert "read file" not in result.stderr  # refused before reading anything
  assert _tree(out) == []


def test_colliding_outputs_are_refused_by_the_library(tmp_path):
  a = _corpus(tmp_path / "a" / "x.txt")
  b = _corpus(tmp_path / "b" / "x.txt", start=300)
  outputs = default_output_files([a, b], str(tmp_path / "out") + "/")
  assert outputs == [str(tmp_path / "out" / "x.txt.tfrecord")] * 2
  with pytest.raises(ValueError, match="would both be written to"):
    generate_per_file([a, b], outputs, _settings(), num_workers=2)
  with pytest.raises(ValueError, match="would both be written to"):
    generate([a, b], outputs, _settings())
  single = str(tmp_path / "o.tfrecord")
  with pytest.raises(ValueError, match=r"--output_file names .*o.tfrecord twice"):
    generate([a], [single, single], _settings())
  with pytest.raises(ValueError, match=r"is also the input file .*a/x.txt"):
    generate([a], [a], _settings())
  with pytest.raises(ValueError, match=r"output file .*a is a directory"):
    generate([a], [str(tmp_path / "a")], _settings())
  assert _tree(tmp_path) == ["a/x.txt", "b/x.txt"]


# ITEM 5 (b): a missing output directory.

@pytest.mark.parametrize("num_workers", [0, 2])
def test_missing_output_directory_is_created(tmp_path, num_workers):
  inputs = [_corpus(tmp_path / f"p{i}.txt", start=300 * i) for i in range(2)]
  out = tmp_path / "new" / "deeper"
  run_binary("create_pretraining_data", [
      f"--input_file={tmp_path}/p*.txt", f"--output_file={out}/", f"--num_workers={num_workers}",
      "--random_seed=3"] + SMALL_FLAGS)
  assert _tree(out) == ["p0.txt.tfrecord", "p1.txt.tfrecord"]
  if num_workers:  # file i alone, seeded with random_seed + i
    for i, path in enumerate(inputs):
      expected = str(tmp_path / f"expected{i}.tfrecord")
      generate([path], [expected], dataclasses.replace(_settings(), random_seed=3 + i))
      assert read_examples(str(out / f"p{i}.txt.tfrecord")) == read_examples(expected)
  else:  # round-robin over the outputs, as with a list of files
    expected = [str(tmp_path / f"expected{i}.tfrecord") for i in range(2)]
    generate(inputs, expected, dataclasses.replace(_settings(), random_seed=3))
    for i in range(2):
      assert read_examples(str(out / f"p{i}.txt.tfrecord")) == read_examples(expected[i])
      assert len(read_examples(expected[i])) > 20


# ITEM 5 (c): failures while writing leave neither a temporary nor an output.

def test_failure_while_encoding_removes_hidden_temporaries(tmp_path, monkeypatch):
  corpus = _corpus(tmp_path / "in" / "corpus.txt")
  out = tmp_path / "out"
  outputs = [str(out / "x0.tfrecord"), str(out / "x1.tfrecord")]
  real_encode = tfrecords.encode_example
  calls = []
  seen = {}

  def encode_then_fail(features):
    if len(calls) == 5:
      seen["listing"] = sorted(os.listdir(out))
      seen["globs"] = glob.glob(f"{out}/x*") + glob.glob(f"{out}/*.tfrecord")
      raise RuntimeError("injected encoder failure")
    calls.append(features)
    return real_encode(features)

  monkeypatch.setattr(tfrecords, "encode_example", encode_then_fail)
  with pytest.raises(RuntimeError, match="injected encoder failure"):
    generate([corpus], outputs, _settings())
  pid = os.getpid()
  # Mid-write, the temporaries are hidden: `out/x*` and `out/*.tfrecord` match none of them.
  assert seen["listing"] == [f".x0.tfrecord.tmp-{pid}", f".x1.tfrecord.tmp-{pid}"]
  assert seen["globs"] == []
  assert os.listdir(out) == []


class _FullDiskFile:
  """A file on a full disk: a write fails after the first, and so does flushing at close (as
  a buffered file's close does), after really closing."""

  def __init__(self, path, mode):
    self._file = open(path, mode)
    self.writes = 0

  def write(self, data):
    self.writes += 1
    if self.writes > 1:
      raise OSError(errno.ENOSPC, "No space left on device (write)")
    return self._file.write(data)

  def flush(self):
    raise OSError(errno.ENOSPC, "No space left on device (flush)")

  def fileno(self):
    return self._file.fileno()

  def close(self):
    self._file.close()
    raise OSError(errno.ENOSPC, "No space left on device (close)")


def test_full_disk_while_writing_reports_the_write_error(tmp_path, monkeypatch):
  corpus = _corpus(tmp_path / "in" / "corpus.txt")
  out = tmp_path / "out"
  real_open = files.open_binary
  monkeypatch.setattr(files, "open_binary", lambda path, mode="rb": (
      _FullDiskFile(path, mode) if "w" in mode else real_open(path, mode)))
  with pytest.raises(OSError, match=r"\(write\)"):  # not the close's error in abort()
    generate([corpus], [str(out / "x0.tfrecord"), str(out / "x1.tfrecord")], _settings())
  assert os.listdir(out) == []


def test_full_disk_while_closing_reports_the_close_error(tmp_path, monkeypatch):
  corpus = _corpus(tmp_path / "in" / "corpus.txt")
  out = tmp_path / "out"

  def fsync_fails(fd):
    raise OSError(errno.ENOSPC, f"No space left on device (fsync {fd})")

  monkeypatch.setattr(os, "fsync", fsync_fails)
  with pytest.raises(OSError, match=r"\(fsync \d+\)"):
    generate([corpus], [str(out / "x0.tfrecord"), str(out / "x1.tfrecord")], _settings())
  assert os.listdir(out) == []


def test_failing_rename_removes_the_temporary(tmp_path, monkeypatch):
  def replace_fails(src, dst):
    raise PermissionError(errno.EACCES, "injected rename failure", dst)

  monkeypatch.setattr(os, "replace", replace_fails)
  path = str(tmp_path / "x.tfrecord")
  with pytest.raises(PermissionError, match="injected rename failure"):
    with tfrecords.AtomicTFRecordWriter(path) as writer:
      writer.write(b"record")
  assert os.listdir(tmp_path) == []


def test_stale_temporaries_of_dead_writers_are_removed(tmp_path):
  dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                        capture_output=True, text=True, check=True).stdout.strip()
  alive = os.getppid()  # a running process: possibly a concurrent writer, left alone
  names = [f".x.tfrecord.tmp-{dead}", f".x.tfrecord.tmp-{os.getpid()}",
           f".x.tfrecord.tmp-{alive}", f".other.tfrecord.tmp-{dead}"]
  for name in names:
    (tmp_path / name).write_bytes(b"partial")
  with tfrecords.AtomicTFRecordWriter(str(tmp_path / "x.tfrecord")) as writer:
    writer.write(b"record")
  assert sorted(os.listdir(tmp_path)) == sorted(
      [f".x.tfrecord.tmp-{alive}", f".other.tfrecord.tmp-{dead}", "x.tfrecord"])
  assert (tmp_path / "x.tfrecord").read_bytes() == tfrecords.frame_record(b"record")


def test_same_path_twice_in_one_process_is_refused(tmp_path):
  path = str(tmp_path / "x.tfrecord")
  first = tfrecords.AtomicTFRecordWriter(path)
  with pytest.raises(ValueError, match="already being written by this process"):
    tfrecords.AtomicTFRecordWriter(path)
  first.write(b"record")
  first.close()
  first.abort()  # after close: a no-op, the output stays
  assert os.listdir(tmp_path) == ["x.tfrecord"]
  dropped = tfrecords.AtomicTFRecordWriter(path)  # neither closed nor aborted: blocks nothing
  del dropped
  gc.collect()
  with tfrecords.AtomicTFRecordWriter(path) as writer:
    writer.write(b"second")
  assert os.listdir(tmp_path) == ["x.tfrecord"]
  assert (tmp_path / "x.tfrecord").read_bytes() == tfrecords.frame_record(b"second")


def test_write_text_atomically_hides_and_removes_its_temporary(tmp_path, monkeypatch):
  renamed = []
  real_replace = os.replace

  def recording_replace(src, dst):
    renamed.append((os.path.basename(src), os.path.basename(dst)))
    real_replace(src, dst)

  monkeypatch.setattr(os, "replace", recording_replace)
  path = str(tmp_path / "eval_results.txt")
  write_text_atomically(path, "loss = 1.5\n")
  assert renamed == [(f".eval_results.txt.tmp-{os.getpid()}", "eval_results.txt")]
  with pytest.raises(UnicodeEncodeError):
    write_text_atomically(path, "half \ud800 written")
  assert os.listdir(tmp_path) == ["eval_results.txt"]
  assert (tmp_path / "eval_results.txt").read_text(encoding="utf-8") == "loss = 1.5\n"


def test_remote_paths_go_through_gfile(tmp_path):
  tf = pytest.importorskip("tensorflow")
  local = _corpus(tmp_path / "c.txt")
  remote_in = "ram://faults_test/in/c.txt"
  tf.io.gfile.makedirs("ram://faults_test/in")
  tf.io.gfile.copy(local, remote_in, overwrite=True)
  outputs = default_output_files([remote_in], "ram://faults_test/out/")
  assert outputs == ["ram://faults_test/out/c.txt.tfrecord"]
  generate(expand_input_patterns("ram://faults_test/in/*.txt"), outputs, _settings())
  generate([local], [str(tmp_path / "c.tfrecord")], _settings())
  with tf.io.gfile.GFile(outputs[0], "rb") as f:
    assert f.read() == (tmp_path / "c.tfrecord").read_bytes()
  assert tf.io.gfile.listdir("ram://faults_test/out") == ["c.txt.tfrecord"]
  # A remote glob matches dot files: a temporary left there is still never an input.
  with tf.io.gfile.GFile(f"ram://faults_test/out/.c.txt.tfrecord.tmp-{os.getpid()}", "wb") as f:
    f.write(b"partial")
  assert expand_input_patterns("ram://faults_test/out/*") == outputs


# ITEM 6: flags that would write useless records are refused before any work.

INVALID = {
    "max_predictions_per_seq": [0, -1],
    "masked_lm_prob": [0.0, -0.1, 1.5, float("nan")],
    "max_seq_length": [4, 0],
    "short_seq_prob": [-0.1, 1.5],
}


@pytest.mark.parametrize("flag,value", [(k, v) for k, vs in INVALID.items() for v in vs])
def test_invalid_instance_flags_are_refused(flag, value):
  with pytest.raises(ValueError, match=rf"--{flag}={value}: must be"):
    check_settings(_settings(**{flag: value}))


@pytest.mark.parametrize("flag,value", [("dupe_factor", 0), ("dupe_factor", -2), ("ngram", 0)])
def test_invalid_generation_flags_are_refused(flag, value):
  with pytest.raises(ValueError, match=rf"--{flag}={value}: must be at least 1"):
    check_settings(dataclasses.replace(_settings(), **{flag: value}))


def test_boundary_values_are_accepted_and_work(tmp_path):
  for instance in [dict(masked_lm_prob=1.0), dict(short_seq_prob=0.0), dict(short_seq_prob=1.0),
                   dict(max_predictions_per_seq=1)]:
    check_settings(_settings(**instance))
  corpus = _corpus(tmp_path / "c.txt", lines=100)
  out = str(tmp_path / "short.tfrecord")
  generate([corpus], [out], _settings(max_seq_length=5, max_predictions_per_seq=1))
  records = read_examples(out)
  assert len(records) > 10 and all(sum(r["input_mask"]) == 5 for r in records)
  settings = _settings(max_seq_length=5, max_predictions_per_seq=1)
  flags = dict(dataclasses.asdict(settings.instance), ngram=3, favor_shorter_ngram=True,
               dupe_factor=1, random_seed=settings.random_seed, do_lower_case=True)
  assert records == reference.generate_examples([corpus], FullTokenizer(None, True, SPM), flags)


def test_zero_max_predictions_is_refused_by_the_binary(tmp_path):
  corpus = _corpus(tmp_path / "c.txt")
  out = tmp_path / "out"
  result = run_binary("create_pretraining_data", [
      f"--input_file={corpus}", f"--output_file={out}/", f"--spm_model_file={SPM}",
      "--vocab_file=unused", "--max_predictions_per_seq=0", "--dupe_factor=0"], check=False)
  assert result.returncode != 0
  assert ("--max_predictions_per_seq=0: must be at least 1, or the records have no masked "
          "positions to train on; --dupe_factor=0: must be at least 1" in result.stderr)
  assert "read file" not in result.stderr
  assert not out.exists()


def test_local_run_does_not_import_tensorflow(tmp_path):
  corpus = _corpus(tmp_path / "c.txt", lines=100)
  code = ("import sys; from absl import app; import albert_tf.create_pretraining_data as m; "
          f"sys.argv = ['x', '--input_file={corpus}', '--output_file={tmp_path}/out/'] + "
          f"{SMALL_FLAGS!r}\n"
          "try:\n  app.run(m.main)\nexcept SystemExit as e:\n  assert not e.code, e.code\n"
          "print('tensorflow' in sys.modules)")
  result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.strip() == "False"
  assert _tree(tmp_path / "out") == ["c.txt.tfrecord"]
