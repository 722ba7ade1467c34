"""How much records pad: albert_tf.data.padding against TensorFlow's own reading of the records
and packings worked out by hand, create_pretraining_data's end line (all three ways of running
it), tools/padding_report.py (without TensorFlow) and tools/make_short_documents.py."""

import doctest
import gzip
import json
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

from albert_tf.core import errors
from albert_tf.data import padding
from helpers import REPO_ROOT, TESTDATA
from tfrecord_utils import read_examples
from tool_runs import error_line, run_tool

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
SAMPLE_CORPUS = os.path.join(REPO_ROOT, "data", "sample", "corpus.txt")



# --- First-fit decreasing, worked out by hand.

# Rows of 10 tokens. Longest first: 6 opens row A, 5 row B, 4 fills A, 3 goes to B (room 5),
# then 2 fills B (its third sequence); the next 2 fits neither A (full) nor B (full), opening C,
# which takes both 1s.
LENGTHS = [2, 6, 1, 4, 5, 2, 3, 1]
BY_HAND = {
    3: [[6, 4], [5, 3, 2], [2, 1, 1]],
    # At most 2 a row: A takes 6, 4; B 5, 3; C 2, 2; D 1, 1.
    2: [[6, 4], [5, 3], [2, 2], [1, 1]],
    1: [[6], [5], [4], [3], [2], [2], [1], [1]],
    # Without a binding cap: 6+4, 5+3+2, and the rest into C.
    8: [[6, 4], [5, 3, 2], [2, 1, 1]],
}


@pytest.mark.parametrize("most", sorted(BY_HAND))
def test_first_fit_decreasing_packs_as_by_hand(most):
  assert padding.first_fit_decreasing(LENGTHS, 10, most) == BY_HAND[most]


def test_first_fit_prefers_the_earliest_row_with_room():
  # 7 opens A (room 3), 6 opens B (room 4); 3 fits A first, although B has more room; 4 then B.
  assert padding.first_fit_decreasing([3, 6, 4, 7], 10, 4) == [[7, 3], [6, 4]]


def test_counter_packs_each_window_on_its_own():
  # Windows of 4 in order: [2, 6, 1, 4] -> [6, 4], [2, 1] (2 rows); [5, 2, 3, 1] -> [5, 3, 2],
  # [1] (2 rows): 4 rows, where packing all 8 together makes 3.
  counter = padding.PaddingCounter(10, max_sequences_per_row=3, window=4)
  for length in LENGTHS:
    counter.add(length)
  stats = counter.stats()
  assert (stats.records, stats.real_tokens, stats.positions, stats.packed_rows) == (8, 24, 80, 4)
  assert stats.mean_length == 3.0 and stats.real_token_fraction == 0.3
  assert stats.sequences_per_row == 2.0
  # Buckets of 10: <=1 (10/8), 2 (10/4), 3-5, 6-7, 8-9, 10.
  assert padding.bucket_bounds(10) == [(0, 1), (2, 2), (3, 5), (6, 7), (8, 9), (10, 10)]
  assert stats.histogram == (2, 2, 3, 1, 0, 0)


def test_histogram_buckets_at_512():
  assert padding.bucket_bounds(512) == [(0, 64), (65, 128), (129, 256), (257, 384), (385, 511),
                                        (512, 512)]
  got = [padding.length_bucket(n, 512) for n in (1, 64, 65, 128, 129, 256, 257, 384, 385, 511,
                                                  512)]
  assert got == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5]


# --- Reading records without TensorFlow, against TensorFlow's reading.

def _tf_example(length, max_seq_length):
  """A pretraining-like tf.train.Example made by TensorFlow's protobuf: ids with multi-byte and
  negative values around input_mask, a float and a bytes feature."""
  feature = tf.train.Feature
  ints = lambda v: feature(int64_list=tf.train.Int64List(value=v))
  return tf.train.Example(features=tf.train.Features(feature={
      "input_ids": ints([29999, -1, 300] + [7] * (max_seq_length - 3)),
      "input_mask": ints([1] * length + [0] * (max_seq_length - length)),
      "masked_lm_weights": feature(float_list=tf.train.FloatList(value=[1.0, 0.5])),
      "note": feature(bytes_list=tf.train.BytesList(value=[b"input_mask"])),
      "next_sentence_labels": ints([1]),
  })).SerializeToString()


def test_file_stats_equal_tensorflows_reading(tmp_path):
  path = str(tmp_path / "hand.tfrecord")
  lengths = [10, 64, 3, 33, 64, 17, 50, 8]
  with tf.io.TFRecordWriter(path) as writer:
    for n in lengths:
      writer.write(_tf_example(n, 64))
  stats = padding.file_stats(path, max_sequences_per_row=2)
  masks = [r["input_mask"] for r in read_examples(path)]
  assert stats.records == len(masks) == 8
  assert stats.real_tokens == sum(map(sum, masks)) == 249
  assert stats.positions == sum(map(len, masks)) == 8 * 64
  assert stats.max_seq_length == 64
  # <=8: 3, 8; 9-16: 10; 17-32: 17; 33-48: 33; 49-63: 50; 64: 64, 64.
  assert stats.histogram == (2, 1, 1, 1, 1, 2)
  # At most 2 a row of 64: 64; 64; 50+10; 33+17; 8+3.
  assert stats.packed_rows == 5


def test_an_unpacked_int64_list_is_read_as_tensorflow_reads_it(tmp_path):
  # input_mask as repeated varints (wire type 0), which protobuf parsers accept: 1, 1, 0.
  int64_list = b"".join(b"\x08" + bytes([v]) for v in (1, 1, 0))
  feature = b"\x1a" + bytes([len(int64_list)]) + int64_list
  entry = b"\x0a\x0ainput_mask" + b"\x12" + bytes([len(feature)]) + feature
  features = b"\x0a" + bytes([len(entry)]) + entry
  record = b"\x0a" + bytes([len(features)]) + features
  assert list(tf.train.Example.FromString(record).features.feature["input_mask"]
              .int64_list.value) == [1, 1, 0]
  path = str(tmp_path / "unpacked.tfrecord")
  with tf.io.TFRecordWriter(path) as writer:
    writer.write(record)
  assert list(padding.record_lengths(path)) == [(3, 2)]


def test_records_without_input_mask_are_refused(tmp_path):
  path = str(tmp_path / "other.tfrecord")
  with tf.io.TFRecordWriter(path) as writer:
    writer.write(tf.train.Example().SerializeToString())
  with pytest.raises(errors.DataFormatError, match="record 0 has no int64 feature `input_mask`"):
    padding.file_stats(path)


# --- create_pretraining_data's end line.

@pytest.fixture(name="short_corpus", scope="module")
def fixture_short_corpus(tmp_path_factory):
  """The first documents of the sample corpus, cut into pieces of 2 to 4 sentences."""
  directory = tmp_path_factory.mktemp("short")
  head = directory / "head.txt"
  with open(SAMPLE_CORPUS, encoding="utf-8") as f:
    head.write_text("".join(f.readlines()[:300]), encoding="utf-8")
  out = directory / "short.txt"
  result = run_tool("make_short_documents.py", f"--input={head}", f"--output={out}")
  assert result.returncode == 0, result.stderr
  return str(out)


_END_LINE = re.compile(r"\] wrote (\d+) records: mean length ([\d.]+) of (\d+) tokens, real-token "
                       r"fraction ([\d.]+) \(packing would fit about ([\d.]+) sequences a row")


def _by_tensorflow(paths, max_seq_length):
  """(records, real tokens, rows packed 4 a row in windows of 256 of each file) of `paths`."""
  records = real = rows = 0
  for path in paths:
    lengths = [sum(r["input_mask"]) for r in read_examples(path)]
    records, real = records + len(lengths), real + sum(lengths)
    rows += sum(len(padding.first_fit_decreasing(lengths[i:i + 256], max_seq_length, 4))
                for i in range(0, len(lengths), 256))
  return records, real, rows


MODES = {
    "one_process_two_outputs": ["--output_file={out}/a.tfrecord,{out}/b.tfrecord"],
    "num_workers": ["--output_file={out}/", "--num_workers=1"],
    "beam": ["--output_file={out}/", "--beam_pipeline_options=--runner=DirectRunner"],
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_create_pretraining_data_ends_with_the_padding_it_wrote(mode, short_corpus, tmp_path):
  out = tmp_path / "out"
  cmd = [sys.executable, "-m", "albert_tf.create_pretraining_data", f"--input_file={short_corpus}",
         f"--spm_model_file={SPM}", "--vocab_file=unused", "--max_seq_length=128",
         "--max_predictions_per_seq=10", "--dupe_factor=3", "--random_seed=7"]
  cmd += [flag.replace("{out}", str(out)) for flag in MODES[mode]]
  result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  last = result.stderr.splitlines()[-1]
  found = _END_LINE.search(last)
  assert found, last
  paths = sorted(str(p) for p in out.iterdir())
  records, real, rows = _by_tensorflow(paths, 128)
  assert records > 300 and rows < records  # short documents: records that pack
  assert int(found.group(1)) == records
  assert found.group(2) == f"{real / records:.1f}"
  assert int(found.group(3)) == 128
  assert found.group(4) == f"{real / (records * 128):.2f}"
  assert found.group(5) == f"{records / rows:.2f}"


# --- tools/padding_report.py, without TensorFlow.

@pytest.fixture(name="records", scope="module")
def fixture_records(short_corpus, tmp_path_factory):
  """Two record files of the short corpus at max_seq_length 128."""
  from albert_tf.core.settings import TokenizerSettings
  from albert_tf.data.instances import InstanceOptions
  from albert_tf.data.pretraining_data import (
      GenerationSettings, Progress, generate)
  directory = tmp_path_factory.mktemp("records")
  paths = [str(directory / f"{name}.tfrecord") for name in ("a", "b")]
  settings = GenerationSettings(tokenizer=TokenizerSettings(spm_model_file=SPM), dupe_factor=3,
                                instance=InstanceOptions(max_seq_length=128,
                                                         max_predictions_per_seq=10))
  with open(os.devnull, "w", encoding="utf-8") as quiet:
    generate([short_corpus], paths, settings, Progress(quiet))
  return paths


def test_report_json_equals_tensorflows_reading(records):
  result = run_tool("padding_report.py", f"--input_file={os.path.dirname(records[0])}/*",
                    "--json", "--max_sequences_per_row=3")
  assert result.returncode == 0, result.stderr[-3000:]
  report = json.loads(result.stdout)
  assert [f["file"] for f in report["files"]] == records
  for entry, path in zip(report["files"], records):
    lengths = [sum(r["input_mask"]) for r in read_examples(path)]
    assert entry["records"] == len(lengths) and entry["real_tokens"] == sum(lengths)
    assert entry["real_token_fraction"] == sum(lengths) / (len(lengths) * 128)
    assert entry["mean_length"] == sum(lengths) / len(lengths)
    assert entry["packed_rows"] == sum(
        len(padding.first_fit_decreasing(lengths[i:i + 256], 128, 3))
        for i in range(0, len(lengths), 256))
    assert [b["records"] for b in entry["histogram"]] == [
        sum(low <= n <= high for n in lengths) for low, high in padding.bucket_bounds(128)]
  total = report["total"]
  assert total["records"] == sum(f["records"] for f in report["files"])
  assert total["packed_rows"] == sum(f["packed_rows"] for f in report["files"])
  assert total["max_seq_length"] == 128 and total["max_sequences_per_row"] == 3


def test_report_text_names_each_file_and_the_total(records):
  result = run_tool("padding_report.py", f"--input_file={records[0]},{records[1]}")
  assert result.returncode == 0, result.stderr[-3000:]
  stats = [padding.file_stats(p) for p in records]
  total = padding.PaddingStats.combine(stats)
  text = result.stdout
  assert f"{records[0]}: {stats[0].records} records of max_seq_length 128" in text
  assert f"total (2 files): {total.records} records of max_seq_length 128" in text
  assert f"real-token fraction {total.real_token_fraction:.3f}" in text
  assert f"{total.sequences_per_row:.2f}x the real tokens per row" in text


def test_report_errors_are_one_line(tmp_path):
  missing = str(tmp_path / "missing.tfrecord")
  line = error_line(run_tool("padding_report.py", f"--input_file={missing}"), 2)
  assert f"--input_file: input file not found: {missing}" in line
  line = error_line(run_tool("padding_report.py", f"--input_file={SAMPLE_CORPUS}"), 1)
  assert f"--input_file: {SAMPLE_CORPUS} is not a TFRecord file" in line
  line = error_line(run_tool("padding_report.py", f"--input_file={SAMPLE_CORPUS}",
                             "--max_sequences_per_row=0"), 2)
  assert "--max_sequences_per_row=0" in line


def test_compressed_and_truncated_files_are_named(records, tmp_path):
  with open(records[0], "rb") as f:
    data = f.read()
  packed = tmp_path / "a.tfrecord.gz"
  packed.write_bytes(gzip.compress(data))
  line = error_line(run_tool("padding_report.py", f"--input_file={packed}"), 1)
  assert f"{packed} is gzip-compressed" in line
  cut = tmp_path / "cut.tfrecord"
  cut.write_bytes(data[:len(data) // 2])
  with pytest.raises(errors.DataFormatError, match=r"cut.tfrecord ends inside record \d+"):
    padding.file_stats(str(cut))


# --- tools/make_short_documents.py

def test_short_documents_are_cut_in_order(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("a1\na2\na3\na4\na5\n\n\n b1 \nb2\n\nc1\n", encoding="utf-8")
  out = tmp_path / "short.txt"
  result = run_tool("make_short_documents.py", f"--input={corpus}", f"--output={out}",
                    "--min_sentences=2", "--max_sentences=2")
  assert result.returncode == 0, result.stderr
  assert out.read_text(encoding="utf-8") == "a1\na2\n\na3\na4\n\na5\n\nb1\nb2\n\nc1\n"
  assert result.stdout.startswith("wrote 5 documents (8 sentences, 1.6 a document) from 3 ")


def test_short_documents_of_the_sample_corpus(tmp_path):
  out = tmp_path / "short.txt"
  result = run_tool("make_short_documents.py", f"--output={out}", "--seed=3")
  assert result.returncode == 0, result.stderr
  with open(SAMPLE_CORPUS, encoding="utf-8") as f:
    documents = [d.split("\n") for d in f.read().strip("\n").split("\n\n")]
  pieces = [p.split("\n") for p in out.read_text(encoding="utf-8").strip("\n").split("\n\n")]
  # Every document, in order, is its pieces one after another; each piece 2 to 4 sentences but
  # a document's last.
  k = 0
  for document in documents:
    start = 0
    while start < len(document):
      piece = pieces[k]
      assert piece == document[start:start + len(piece)]
      start, k = start + len(piece), k + 1
      assert 2 <= len(piece) <= 4 or start == len(document)
  assert k == len(pieces) > 5 * len(documents)
  again = tmp_path / "again.txt"
  assert run_tool("make_short_documents.py", f"--output={again}", "--seed=3").returncode == 0
  assert again.read_bytes() == out.read_bytes()  # seeded


def test_short_documents_errors_are_one_line(tmp_path):
  out = str(tmp_path / "short.txt")
  line = error_line(run_tool("make_short_documents.py", f"--output={out}", "--min_sentences=5",
                             "--max_sentences=3"), 2)
  assert "--min_sentences=5 is above --max_sentences=3" in line
  line = error_line(run_tool("make_short_documents.py", f"--output={out}",
                             "--input=/nonexistent/corpus.txt"), 1)
  assert "--input: no such file: /nonexistent/corpus.txt" in line
  assert os.listdir(tmp_path) == []


def test_module_examples():
  result = doctest.testmod(padding)
  assert result.attempted > 0 and result.failed == 0
