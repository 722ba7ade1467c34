"""create_pretraining_data at corpus scale: the Beam pipeline writes what --num_workers writes,
the corpus is held compactly (peak memory well below the records' size), documents are read as
the original reads them, progress reports an ETA."""

import io
import os
import subprocess
import sys

import pytest

from albert_tf.core.settings import TokenizerSettings
from albert_tf.data.corpus import CorpusReader, TokenizedCorpus
from albert_tf.data.pretraining_data import GenerationSettings, Progress, generate
from albert_tf.data.instances import InstanceOptions
from albert_tf.data.spill import RecordSpill
from albert_tf.tokenization import FullTokenizer
from helpers import REPO_ROOT, TESTDATA

DATA = os.path.join(TESTDATA, "original_pretraining_data")
SPM = os.path.join(DATA, "30k-clean-tiny.model")
CORPUS = os.path.join(DATA, "corpus.txt")
FLAGS = [f"--spm_model_file={SPM}", "--vocab_file=unused", "--max_seq_length=64",
         "--max_predictions_per_seq=10", "--dupe_factor=2", "--random_seed=12345"]


def _settings(dupe_factor):
  """The fixture's generation flags (seq 64, 10 predictions) at `dupe_factor`."""
  return GenerationSettings(
      tokenizer=TokenizerSettings(spm_model_file=SPM), dupe_factor=dupe_factor,
      instance=InstanceOptions(max_seq_length=64, max_predictions_per_seq=10))


def _split_corpus(directory):
  """The fixture corpus as two files, cut at the blank line nearest its middle."""
  with open(CORPUS, encoding="utf-8") as f:
    text = f.read()
  cut = text.index("\n\n", len(text) // 2) + 2
  directory.mkdir()
  paths = []
  for name, part in (("first.txt", text[:cut]), ("second.txt", text[cut:])):
    (directory / name).write_text(part, encoding="utf-8")
    paths.append(str(directory / name))
  return paths


def _run(flags):
  cmd = [sys.executable, "-m", "albert_tf.create_pretraining_data"] + flags
  result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stderr


def _python(code):
  """Runs `python -c code` from the repository root, asserts it succeeded; its stdout."""
  result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  return result.stdout


@pytest.mark.slow  # Beam's runner and two workers
def test_beam_direct_runner_writes_what_num_workers_writes(tmp_path):
  _split_corpus(tmp_path / "corpus")
  inputs = f"--input_file={tmp_path / 'corpus' / '*.txt'}"
  _run([inputs, f"--output_file={tmp_path / 'workers'}/", "--num_workers=2"] + FLAGS)
  # A killed run's temporary (its writer gone): the next run removes it.
  dead = subprocess.Popen([sys.executable, "-c", "pass"])
  dead.wait()
  (tmp_path / "beam").mkdir()
  (tmp_path / "beam" / f".first.txt.tfrecord.tmp-{dead.pid}").write_bytes(b"")
  log = _run([inputs, f"--output_file={tmp_path / 'beam'}/", "--beam_pipeline_options="
              "--runner=DirectRunner,--direct_num_workers=2,"
              "--direct_running_mode=multi_processing"] + FLAGS)
  names = ["first.txt.tfrecord", "second.txt.tfrecord"]
  assert sorted(os.listdir(tmp_path / "beam")) == sorted(os.listdir(tmp_path / "workers")) == names
  total = 0
  for name in names:
    beam_bytes = (tmp_path / "beam" / name).read_bytes()
    assert beam_bytes == (tmp_path / "workers" / name).read_bytes(), name
    total += len(beam_bytes)
  assert total > 500_000  # both files hold records
  # The Beam counters, summed over the two files: the fixture corpus's 40 documents, and the
  # empty one after first.txt's final blank line (the original counts it the same way).
  done = [line for line in log.splitlines() if "done:" in line][-1]
  assert "'files': 2, 'documents': 40," in done and "'skipped_documents': 1" in done


def test_beam_and_num_workers_are_exclusive(tmp_path):
  cmd = [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={CORPUS}",
         f"--output_file={tmp_path}/", "--num_workers=2",
         "--beam_pipeline_options=--runner=DirectRunner"] + FLAGS
  result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
  assert result.returncode != 0 and "give one of them" in result.stderr
  assert os.listdir(tmp_path) == []


def test_beam_pipeline_names_a_missing_tokenizer_file(tmp_path):
  from albert_tf.data.beam_generation import GenerateFileFn
  missing = str(tmp_path / "nope.model")
  with pytest.raises(FileNotFoundError, match=f"--spm_model_file={missing}: cannot be read"):
    GenerateFileFn(GenerationSettings(tokenizer=TokenizerSettings(spm_model_file=missing)))


def test_beam_file_access_leaves_nothing_on_failure(tmp_path):
  from albert_tf.data.beam_generation import BEAM_FILE_ACCESS
  bad = tmp_path / "bad.txt"
  bad.write_bytes(b"fine line\n\nbroken \xff here\n")
  settings = _settings(dupe_factor=1)
  with pytest.raises(ValueError, match=r"bad.txt:3: not valid UTF-8"):
    generate([str(bad)], [str(tmp_path / "out" / "bad.tfrecord")], settings,
             Progress(io.StringIO()), BEAM_FILE_ACCESS)
  assert sorted(os.listdir(tmp_path)) == ["bad.txt", "out"]
  assert os.listdir(tmp_path / "out") == []  # the temporary is gone


def _documents_as_lists(corpus):
  return [[list(s.ids) for s in (doc[j] for j in range(len(doc)))] for doc in corpus.documents()]


def test_documents_are_read_as_the_original_reads_them(tmp_path):
  """Blank-line runs end documents (empty ones skipped and counted), documents continue across
  files, a last line without a newline is read, lines are stripped."""
  tokenizer = FullTokenizer(None, True, SPM)
  ids = lambda text: tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
  a = tmp_path / "a.txt"
  a.write_bytes(b"\n\nhello world\n  the cat  \n\n\n\nsat on\n")
  b = tmp_path / "b.txt"
  # TensorFlow's line reader (the original's tf.gfile readline) drops every "\r".
  b.write_bytes(b"the m\rat\r\n\nlast line")
  reader = CorpusReader(tokenizer)
  corpus = TokenizedCorpus()
  reader.read_file(str(a), corpus)
  reader.read_file(str(b), corpus)
  corpus.finish()
  assert _documents_as_lists(corpus) == [
      [ids("hello world"), ids("the cat")],
      [ids("sat on"), ids("the mat")],  # one document across the two files
      [ids("last line")]]
  # [] before the first blank line, after it, and the two between the blank-line run.
  assert corpus.skipped_documents == 4
  assert reader.lines == 11
  assert reader.bytes_read == a.stat().st_size + b.stat().st_size
  sentence = corpus.documents()[0][0]
  assert list(sentence.starts) == [int(tokenizer.tokenize("hello world")[k].startswith("\u2581"))
                                   for k in range(len(sentence.ids))]


def test_spill_returns_records_in_any_order(tmp_path):
  records = [bytes([k % 256]) * (k * 37 % 101) for k in range(300)]
  with RecordSpill(str(tmp_path)) as spill:
    for record in records:
      spill.append(record)
    assert len(spill) == 300 and spill.size_bytes == sum(map(len, records))
    order = [(k * 7919) % 300 for k in range(300)]
    assert list(spill.read_in_order(order)) == [records[k] for k in order]
  assert os.listdir(tmp_path) == []  # unnamed: nothing to remove


def test_progress_reports_each_step_with_an_eta(tmp_path):
  stream = io.StringIO()
  settings = _settings(dupe_factor=2)
  generate([CORPUS], [str(tmp_path / "o.tfrecord")], settings, Progress(stream, interval=0))
  log = stream.getvalue()
  assert f"reading file 1/1 {CORPUS}: done" in log
  assert "40 documents" in log
  assert "creating instances: pass 1/2" in log and "creating instances: pass 2/2" in log
  assert "ETA " in log and "(100%)" in log
  assert "wrote 1799 instances to 1 file(s)" in log


@pytest.mark.slow  # writes 20 MB of records
def test_peak_memory_stays_far_below_the_records(tmp_path):
  """A 3 MB corpus (dupe 3, seq 128) writes 19.6 MB of records. Holding the instances as Python
  objects peaked at 158 MB; compact documents and spilled records peak near 54 MB, of which about
  35 MB is the interpreter, sentencepiece and numpy."""
  corpus = str(tmp_path / "corpus.txt")
  subprocess.run([sys.executable, os.path.join(REPO_ROOT, "tools", "make_scale_corpus.py"),
                  "--size_mb=3", f"--output={corpus}"], check=True, capture_output=True)
  out = str(tmp_path / "out.tfrecord")
  argv = ["create_pretraining_data", f"--input_file={corpus}", f"--output_file={out}",
          f"--spm_model_file={SPM}", "--vocab_file=unused", "--max_seq_length=128",
          "--max_predictions_per_seq=20", "--dupe_factor=3"]
  # VmHWM, the peak RSS of this process's memory: ru_maxrss would count the forking pytest's
  # (Linux keeps it across execve), RUSAGE_CHILDREN any earlier child's.
  code = ("import runpy, sys\n"
          f"sys.argv = {argv!r}\n"
          "try:\n"
          "  runpy.run_module('albert_tf.create_pretraining_data', run_name='__main__')\n"
          "except SystemExit as e:\n"
          "  assert not e.code, e.code\n"
          "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])\n")
  peak_mb = int(_python(code).split()[-1]) / 1024
  records_mb = os.path.getsize(out) / 2**20
  assert records_mb > 15
  assert peak_mb < 100, f"peak RSS {peak_mb:.0f} MB for {records_mb:.0f} MB of records"


def test_beam_workers_check_outputs_without_tensorflow():
  """Workers have no TensorFlow (beam_worker/setup.py installs none): the output checks of the Beam
  path must not reach tf.io.gfile for gs:// outputs."""
  code = ("import sys\n"
          "from albert_tf.data.beam_generation import BEAM_FILE_ACCESS\n"
          "from albert_tf.data.pretraining_data import check_output_files\n"
          "check_output_files(['gs://b/in.txt'], ['gs://b/out/in.txt.tfrecord'], "
          "BEAM_FILE_ACCESS.isdir)\n"
          "assert 'tensorflow' not in sys.modules, 'TensorFlow imported'\n")
  _python(code)


def test_pipeline_options_keep_commas_inside_values():
  from albert_tf.data.beam_generation import parse_pipeline_options
  assert parse_pipeline_options(
      "--runner=DataflowRunner,--experiments=use_runner_v2,no_use_multiple_sdk_containers,"
      "region=europe-west4,--save_main_session") == [
          "--runner=DataflowRunner", "--experiments=use_runner_v2,no_use_multiple_sdk_containers",
          "--region=europe-west4", "--save_main_session"]


def test_an_empty_shard_gets_an_empty_output_in_per_file_runs(tmp_path):
  """One empty file among many: the original run on it alone writes no records; the per-file
  modes do the same instead of failing the whole run (a single run still refuses it)."""
  from albert_tf.data.pretraining_data import generate_per_file
  _split_corpus(tmp_path / "corpus")
  empty = tmp_path / "corpus" / "empty.txt"
  empty.write_text("\n  \n", encoding="utf-8")
  inputs = [str(tmp_path / "corpus" / n) for n in ("empty.txt", "first.txt")]
  outputs = [str(tmp_path / "out" / (os.path.basename(p) + ".tfrecord")) for p in inputs]
  settings = _settings(dupe_factor=1)
  stats = generate_per_file(inputs, outputs, settings, num_workers=2,
                            progress=Progress(io.StringIO()))
  assert os.path.getsize(outputs[0]) == 0 and os.path.getsize(outputs[1]) > 100_000
  assert stats["instances"] > 300
