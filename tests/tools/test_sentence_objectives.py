"""tools/sentence_objectives.py, the paper's Table 5 (None / NSP / SOP) at laptop scale: its
document split keeps the held-out documents out of every training record, its table, and a
--quick run end to end (then again, resumed: nothing is retrained)."""

import json
import os
import sys

import pytest
import sentencepiece as spm
import tensorflow as tf

import warm_binaries
from helpers import REPO_ROOT, TESTDATA

sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
import sentence_objectives

SPM_MODEL = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")


def test_split_is_seeded_disjoint_and_whole():
  documents = [[f"document {i}"] for i in range(10)]
  train, heldout = sentence_objectives.split_documents(documents, 0.2, seed=1)
  assert len(heldout) == 2 and len(train) == 8
  assert sorted(train + heldout) == sorted(documents)
  assert not [d for d in heldout if d in train]
  # Corpus order within each part; the same seed, the same split; another seed, another one.
  assert train == [d for d in documents if d in train]
  assert sentence_objectives.split_documents(documents, 0.2, seed=1) == (train, heldout)
  assert sentence_objectives.split_documents(documents, 0.2, seed=2) != (train, heldout)


def test_split_keeps_two_documents_on_each_side():
  documents = [[str(i)] for i in range(5)]
  assert [len(p) for p in sentence_objectives.split_documents(documents, 0.0, 0)] == [3, 2]
  assert [len(p) for p in sentence_objectives.split_documents(documents, 1.0, 0)] == [2, 3]
  with pytest.raises(sentence_objectives.errors.UsageError, match="--corpus has 3 documents"):
    sentence_objectives.split_documents(documents[:3], 0.2, 0)


def _record_token_ids(path):
  """The ids of the text a record file holds: unmasked input_ids and the masked positions' true
  ids (masked_lm_ids); a masked position's input id may be a random token."""
  spec = {"input_ids": tf.io.VarLenFeature(tf.int64),
          "masked_lm_positions": tf.io.VarLenFeature(tf.int64),
          "masked_lm_ids": tf.io.VarLenFeature(tf.int64),
          "masked_lm_weights": tf.io.VarLenFeature(tf.float32)}
  ids = set()
  for record in tf.data.TFRecordDataset(path):
    f = {k: tf.sparse.to_dense(v).numpy() for k, v in tf.io.parse_single_example(record,
                                                                                 spec).items()}
    masked = {int(p) for p, w in zip(f["masked_lm_positions"], f["masked_lm_weights"]) if w > 0}
    ids.update(int(t) for i, t in enumerate(f["input_ids"]) if i not in masked)
    ids.update(int(t) for t, w in zip(f["masked_lm_ids"], f["masked_lm_weights"]) if w > 0)
  return ids


@pytest.mark.parametrize("kind", ["sop", "nsp"])
def test_no_heldout_document_in_the_training_records(tmp_path, kind):
  # Each document repeats one word that is a single piece of the vocabulary: a record's ids tell
  # which documents it was made of (the next-sentence records take segments of other documents).
  sp = spm.SentencePieceProcessor(model_file=SPM_MODEL)
  words = ["object", "class", "method", "value", "function", "statement", "exception",
           "module", "dictionary", "instance"]
  word_ids = {w: sp.piece_to_id("\u2581" + w) for w in words}
  assert all(sp.encode(w) == [i] for w, i in word_ids.items())
  documents = [[" ".join([w] * (5 + line)) for line in range(6)] for w in words]
  train, heldout = sentence_objectives.split_documents(documents, 0.3, seed=3)
  assert len(heldout) == 3
  text = str(tmp_path / "train.txt")
  sentence_objectives.write_corpus_documents(train, text)
  settings = {"seed": 3, "max_seq_length": 32, "max_predictions_per_seq": 5}
  records = str(tmp_path / f"train_{kind}.tfrecord")
  sentence_objectives.make_records(text, records, SPM_MODEL, settings, kind == "nsp",
                                   dupe_factor=3)
  specials = {sp.pad_id()} | {sp.piece_to_id(p) for p in ("[CLS]", "[SEP]", "[MASK]")}
  seen = _record_token_ids(records) - specials
  assert seen == {word_ids[d[0].split()[0]] for d in train}
  assert not seen & {word_ids[d[0].split()[0]] for d in heldout}


def test_format_table():
  rows = [{"objective": "NSP", "paper": sentence_objectives.PAPER["NSP"],
           "measured": {"mlm_accuracy": 0.0812, "nsp_accuracy": 0.9, "sop_accuracy": 0.5}},
          {"objective": "chance", "measured": {"nsp_accuracy": 0.5123, "sop_accuracy": 0.575}}]
  assert sentence_objectives.format_table(rows) == (
      "| objective | MLM acc (paper) | NSP acc (paper) | SOP acc (paper) |\n"
      "|---|---|---|---|\n"
      "| NSP | 8.1 (54.5) | 90.0 (90.5) | 50.0 (52.0) |\n"
      "| chance | - | 51.2 | 57.5 |\n")


def test_paper_numbers():
  # The paper's Table 5 (arXiv 1909.11942), intrinsic tasks: MLM, NSP, SOP accuracy.
  assert {k: [round(100 * v[m], 1) for m in sentence_objectives.METRICS]
          for k, v in sentence_objectives.PAPER.items()} == {
              "None": [54.9, 52.4, 53.3], "NSP": [54.5, 90.5, 52.0], "SOP": [54.0, 78.9, 86.5]}


def _run_quick(output_dir):
  # From the suite's warm start (tests/warm_binaries.py): the tool trains as run_pretraining does.
  result = warm_binaries.run_script(
      os.path.join(REPO_ROOT, "tools", "sentence_objectives.py"),
      ["--quick", f"--output_dir={output_dir}"], flavor="training", cwd=REPO_ROOT, timeout=None)
  assert result.returncode == 0, result.stderr[-3000:]
  with open(os.path.join(output_dir, "table5.json"), encoding="utf-8") as f:
    return result.stdout, json.load(f)


@pytest.mark.slow
def test_quick_run_writes_the_table_and_resumes(tmp_path):
  stdout, table = _run_quick(tmp_path)
  rows = {row["objective"]: row for row in table["rows"]}
  assert [row["objective"] for row in table["rows"]] == ["None", "NSP", "SOP", "chance"]
  for objective in sentence_objectives.OBJECTIVES:
    assert rows[objective]["paper"] == sentence_objectives.PAPER[objective]
    measured = rows[objective]["measured"]
    assert sorted(measured) == sorted(sentence_objectives.METRICS)
    assert all(0 <= v <= 1 for v in measured.values()), measured
    assert f"{objective}: trained (4 steps" in stdout
  # The chance row: the majority label's share of each held-out record set.
  assert all(0.5 <= v <= 1 for v in rows["chance"]["measured"].values())
  # The sample corpus's 40 documents and 40 of the standard library's docstrings.
  assert table["documents"]["sources"] == {"corpus": 40, "stdlib_docstrings": 40}
  assert table["settings"]["train_steps"] == 4 and table["documents"]["heldout"] == 16
  assert sentence_objectives.format_table(table["rows"]) in stdout
  with open(tmp_path / "data" / "heldout.txt", encoding="utf-8") as f:
    heldout = f.read().split("\n\n")
  with open(tmp_path / "data" / "train.txt", encoding="utf-8") as f:
    train = f.read().split("\n\n")
  assert len(heldout) == 16 and len(train) == 64 and not set(heldout) & set(train)

  # Run again: the models are there, only evaluated; the same checkpoints on the same records
  # and graph give the same accuracies (a tolerance for float summation order only).
  stdout, again = _run_quick(tmp_path)
  assert stdout.count("already trained (4 steps") == 3 and ": trained" not in stdout
  for row, first in zip(again["rows"], table["rows"]):
    assert row["measured"] == pytest.approx(first["measured"], abs=1e-6), row["objective"]


def test_balanced_held_out_records_hold_as_many_of_each_label(tmp_path):
  from albert_tf.data import tfrecords
  labels = [1, 1, 0, 1, 1, 0, 1, 1]
  path, out = str(tmp_path / "heldout.tfrecord"), str(tmp_path / "balanced.tfrecord")
  with tfrecords.AtomicTFRecordWriter(path) as writer:
    for i, label in enumerate(labels):
      writer.write(tfrecords.encode_example({
          "input_ids": tfrecords.int64_feature([i]),
          "next_sentence_labels": tfrecords.int64_feature([label])}))
  written = sentence_objectives.balance_records(path, out, seed=3)
  assert sorted(written) == [0, 0, 1, 1]
  assert sentence_objectives.record_labels(out) == written
  spec = {"input_ids": tf.io.FixedLenFeature([1], tf.int64)}
  ids = [int(tf.io.parse_single_example(r, spec)["input_ids"][0])
         for r in tf.data.TFRecordDataset(out)]
  # Every label-0 record, two of the label-1 ones, in file order; the same seed, the same two.
  assert {2, 5} <= set(ids) and ids == sorted(ids) and len(ids) == 4
  assert sentence_objectives.balance_records(path, str(tmp_path / "again.tfrecord"), 3) == written
  ones = str(tmp_path / "ones.tfrecord")
  with tfrecords.AtomicTFRecordWriter(ones) as writer:
    for _ in range(3):
      writer.write(tfrecords.encode_example({"next_sentence_labels": tfrecords.int64_feature([1])}))
  with pytest.raises(sentence_objectives.errors.UsageError, match="the same sentence label"):
    sentence_objectives.balance_records(ones, str(tmp_path / "none.tfrecord"), 0)
  assert not (tmp_path / "none.tfrecord").exists()
