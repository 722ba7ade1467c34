"""create_pretraining_data: the original's records for the fixture, other flags and corpora
against a string-token re-statement of the original, parallel files, bad input."""

import dataclasses
import os
import subprocess
import sys

import pytest

import original_pretraining_reference as reference
from albert_tf.core.settings import TokenizerSettings
from albert_tf.data.instances import InstanceOptions
from albert_tf.data.pretraining_data import GenerationSettings, generate, generate_per_file
from albert_tf.tokenization import FullTokenizer
from helpers import REPO_ROOT, TESTDATA
from tfrecord_utils import read_examples

DATA = os.path.join(TESTDATA, "original_pretraining_data")
SPM = os.path.join(DATA, "30k-clean-tiny.model")
CORPUS = os.path.join(DATA, "corpus.txt")


def _settings(**kw):
  inst = {k: kw.pop(k) for k in list(kw) if k in InstanceOptions.__dataclass_fields__}
  tokenizer = {k: kw.pop(k) for k in list(kw) if k in TokenizerSettings.__dataclass_fields__}
  base = dict(tokenizer=TokenizerSettings(**dict(dict(spm_model_file=SPM), **tokenizer)),
              dupe_factor=2, random_seed=12345)
  base.update(kw)
  return GenerationSettings(instance=InstanceOptions(**dict(
      dict(max_seq_length=64, max_predictions_per_seq=10), **inst)), **base)


def test_fixture_flags_reproduce_expected_records(tmp_path):
  cmd = [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={CORPUS}",
         f"--output_file={tmp_path / 'out.tfrecord'}", f"--spm_model_file={SPM}",
         "--vocab_file=unused", "--max_seq_length=64", "--max_predictions_per_seq=10",
         "--dupe_factor=2", "--random_seed=12345"]
  result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr
  assert "instances" in result.stderr  # progress lines
  ours = read_examples(str(tmp_path / "out.tfrecord"))
  expected = read_examples(os.path.join(DATA, "expected.tfrecord"))
  assert len(ours) == len(expected) == 1799
  for i, (a, b) in enumerate(zip(ours, expected)):
    assert a == b, f"record {i} differs"
  assert os.listdir(tmp_path) == ["out.tfrecord"]  # no temporary left behind


def _small_corpus(tmp_path, name="small.txt", start=0, lines=700):
  with open(CORPUS, encoding="utf-8") as f:
    text = f.read().split("\n")[start:start + lines]
  path = tmp_path / name
  path.write_text("\n".join(text) + "\n", encoding="utf-8")
  return str(path)


VARIANTS = {
    "longer_ngrams_favoured": dict(favor_shorter_ngram=False),
    "no_whole_word_mask": dict(do_whole_word_mask=False),
    "random_next_sentence": dict(random_next_sentence=True),
    "ngram_5_short_seqs": dict(ngram=5, short_seq_prob=0.5, masked_lm_prob=0.2,
                               max_predictions_per_seq=12),
    "cased_seed_7": dict(do_lower_case=False, random_seed=7, max_seq_length=40),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_flags_against_reference(variant, tmp_path):
  corpus = _small_corpus(tmp_path)
  settings = _settings(**VARIANTS[variant])
  outputs = [str(tmp_path / f"out{i}.tfrecord") for i in range(2)]
  generate([corpus], outputs, settings)
  tokenizer = FullTokenizer.from_settings(settings.tokenizer)
  flags = dict(dataclasses.asdict(settings.instance), ngram=settings.ngram,
               favor_shorter_ngram=settings.favor_shorter_ngram, dupe_factor=settings.dupe_factor,
               random_seed=settings.random_seed, do_lower_case=settings.tokenizer.do_lower_case)
  expected = reference.generate_examples([corpus], tokenizer, flags)
  ours = read_examples(outputs[0]), read_examples(outputs[1])
  # Round-robin over the two output files.
  assert ours[0] == expected[0::2] and ours[1] == expected[1::2]
  assert len(expected) > 50


def test_wordpiece_path_against_reference(tmp_path):
  corpus = tmp_path / "wp.txt"
  words = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", "un", "##able"]
  lines = []
  for d in range(12):
    for s in range(4 + d % 3):
      lines.append(" ".join(words[(d * 7 + s * 3 + k) % 9] for k in range(3 + (s + d) % 6))
                   + " unable.")
    lines.append("")
  corpus.write_text("\n".join(lines), encoding="utf-8")
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + words),
                   encoding="utf-8")
  settings = _settings(spm_model_file=None, vocab_file=str(vocab), max_seq_length=24,
                       max_predictions_per_seq=4, dupe_factor=3)
  out = str(tmp_path / "wp.tfrecord")
  generate([str(corpus)], [out], settings)
  flags = dict(dataclasses.asdict(settings.instance), ngram=3, favor_shorter_ngram=True,
               dupe_factor=3, random_seed=12345, do_lower_case=True)
  expected = reference.generate_examples([str(corpus)], FullTokenizer(str(vocab), True), flags)
  assert read_examples(out) == expected and len(expected) > 20


def test_num_workers_equals_single_file_runs_with_offset_seeds(tmp_path):
  inputs = [_small_corpus(tmp_path, f"part{i}.txt", start=i * 600, lines=600) for i in range(3)]
  outputs = [str(tmp_path / f"part{i}.tfrecord") for i in range(3)]
  settings = _settings(dupe_factor=1)
  generate_per_file(inputs, outputs, settings, num_workers=2)
  for i in range(3):
    single = str(tmp_path / f"single{i}.tfrecord")
    generate([inputs[i]], [single], dataclasses.replace(settings, random_seed=12345 + i))
    assert read_examples(outputs[i]) == read_examples(single), f"file {i}"
  with pytest.raises(ValueError, match="one output file per input file"):
    generate_per_file(inputs, outputs[:2], settings, num_workers=2)


def test_bad_corpus_errors(tmp_path):
  bad = tmp_path / "bad.txt"
  bad.write_bytes(b"fine line\nanother\nbroken \xff\xfe here\n")
  out = tmp_path / "out.tfrecord"
  with pytest.raises(ValueError, match=r"bad.txt:3: not valid UTF-8"):
    generate([str(bad)], [str(out)], _settings())
  empty = tmp_path / "empty.txt"
  empty.write_text("\n\n   \n", encoding="utf-8")
  with pytest.raises(ValueError, match="empty corpus"):
    generate([str(empty)], [str(out)], _settings())
  assert sorted(os.listdir(tmp_path)) == ["bad.txt", "empty.txt"]  # nothing half-written


def test_writer_is_atomic(tmp_path):
  from albert_tf.data.tfrecords import AtomicTFRecordWriter
  path = str(tmp_path / "x.tfrecord")
  with pytest.raises(RuntimeError):
    with AtomicTFRecordWriter(path) as writer:
      writer.write(b"record")
      raise RuntimeError("crash mid-write")
  assert os.listdir(tmp_path) == []
  with AtomicTFRecordWriter(path) as writer:
    writer.write(b"record")
  assert os.listdir(tmp_path) == ["x.tfrecord"]


def test_missing_input_file_errors(tmp_path):
  cmd = [sys.executable, "-m", "albert_tf.create_pretraining_data",
         f"--input_file={tmp_path / 'nope*.txt'}", f"--output_file={tmp_path / 'o.tfrecord'}",
         f"--spm_model_file={SPM}"]
  result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
  assert result.returncode != 0 and "input file not found" in result.stderr


def test_wordpiece_fixture_reproduces_expected_records(tmp_path):
  """The original create_pretraining_data with --vocab_file (its fixture: vocab_file,
  do_lower_case, seq 64, 10 predictions, dupe 2, seed 12345), record for record."""
  wordpiece = os.path.join(TESTDATA, "original_wordpiece")
  settings = _settings(spm_model_file=None, vocab_file=os.path.join(wordpiece, "vocab.txt"))
  out = tmp_path / "wp.tfrecord"
  stats = generate([os.path.join(wordpiece, "corpus.txt")], [str(out)], settings)
  assert stats["instances"] == 1998
  ours = read_examples(str(out))
  expected = read_examples(os.path.join(wordpiece, "expected.tfrecord"))
  assert len(ours) == len(expected) == 1998
  for i, (a, b) in enumerate(zip(ours, expected)):
    assert a == b, f"record {i} differs"
