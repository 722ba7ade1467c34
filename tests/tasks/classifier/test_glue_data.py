"""GLUE processors and classifier features against the original's (every task and split of the
fixture, max_seq_length 48), and the dynamic-length input."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.tasks.classifier import features as classifier_data
from albert_tf.tasks.classifier import data as glue
from albert_tf.data.trimming import trimmed_length
from albert_tf.finetuning.inputs import classifier_features, feature_dataset, in_file_order
from albert_tf.tokenization import FullTokenizer
from helpers import TESTDATA
from tfrecord_utils import read_examples

GLUE = os.path.join(TESTDATA, "original_finetuning", "glue")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
TASKS = ["cola", "mnli", "mismnli", "mrpc", "rte", "sst-2", "sts-b", "qqp", "qnli", "wnli"]


@pytest.fixture(scope="module")
def tokenizer():
  return FullTokenizer(spm_model_file=SPM, do_lower_case=True)


def _expected(task, split):
  with open(os.path.join(GLUE, "expected", f"{task}_{split}.examples.jsonl")) as f:
    return [json.loads(line) for line in f]


@pytest.mark.parametrize("task", TASKS)
def test_examples_and_features_equal_the_original(task, tokenizer, tmp_path):
  processor = glue.processor(task, use_spm=True, do_lower_case=True)
  with open(os.path.join(GLUE, "summary.json")) as f:
    summary = json.load(f)
  assert processor.get_labels() == summary["labels"][task]
  for split in ("train", "dev", "test"):
    examples = processor.get_examples(os.path.join(GLUE, "glue_data"), split)
    got = [{"guid": e.guid, "text_a": e.text_a, "text_b": e.text_b, "label": e.label}
           for e in examples]
    assert got == _expected(task, split), (task, split)
    out = tmp_path / f"{task}_{split}.tf_record"
    classifier_data.file_based_convert_examples_to_features(
        examples, processor.get_labels(), 48, tokenizer, str(out), processor.spec.regression)
    expected = read_examples(os.path.join(GLUE, "expected", f"{task}_{split}.tfrecord"))
    assert read_examples(str(out)) == expected, (task, split)
    assert len(expected) == summary["counts"][f"{task}_{split}"]


def test_qqp_skips_the_malformed_row():
  processor = glue.processor("qqp")
  rows = glue.read_tsv(os.path.join(GLUE, "glue_data", "QQP", "train.tsv"))
  assert len(processor.get_train_examples(os.path.join(GLUE, "glue_data"))) < len(rows) - 1


def test_errors(tmp_path, tokenizer):
  with pytest.raises(ValueError, match="Task not found: nope"):
    glue.processor("nope")
  with pytest.raises(FileNotFoundError, match="MRPC"):
    glue.processor("mrpc").get_train_examples(str(tmp_path))
  bad = glue.InputExample("x-1", "a b c", label="maybe")
  with pytest.raises(ValueError, match="x-1 has label 'maybe'"):
    classifier_data.convert_single_example(bad, ["0", "1"], 16, tokenizer)
  with pytest.raises(ValueError, match="row 1 has 2 columns"):
    glue.processor("mrpc").create_examples([["h"] * 5, ["a", "b"]], "train")


def test_truncation_pops_the_longer_side_then_b_on_ties():
  a, b = list("abcdef"), list("xyz")
  classifier_data.truncate_seq_pair(a, b, 6)
  assert (a, b) == (list("abc"), list("xyz"))
  a, b = list("abcd"), list("wxyz")
  classifier_data.truncate_seq_pair(a, b, 5)
  assert (a, b) == (list("abc"), list("wx"))


def test_padding_example_has_no_weight(tokenizer):
  feature = classifier_data.convert_single_example(glue.PaddingInputExample(), ["0"], 8, tokenizer)
  assert feature.input_ids == [0] * 8 and not feature.is_real_example


def test_dynamic_batches_keep_every_real_token():
  path = os.path.join(GLUE, "expected", "sst-2_dev.tfrecord")  # real lengths 7 to 48
  spec = classifier_features(48)
  [full] = list(feature_dataset(path, spec, 12, False, 48, dynamic_length=False))
  trimmed = list(feature_dataset(path, spec, 3, False, 48))
  assert sorted(b["input_ids"].shape[1] for b in trimmed) == [16, 24, 48, 48]
  seen = []
  for t in trimmed:
    n = t["input_ids"].shape[1]
    lengths = tf.reduce_sum(t["input_mask"], 1).numpy()
    assert n == min(48, -(-lengths.max() // 8) * 8)
    for row, index in enumerate(t["example_index"].numpy()):
      seen.append(index)
      assert int(tf.reduce_sum(full["input_mask"][index, n:])) == 0
      np.testing.assert_array_equal(full["input_ids"][index, :n], t["input_ids"][row])
      assert full["label_ids"][index] == t["label_ids"][row]
  assert sorted(seen) == list(range(12))
  restored = in_file_order({k: np.concatenate([b[k].numpy() for b in trimmed])
                            for k in ("example_index", "label_ids")})
  np.testing.assert_array_equal(restored["label_ids"], full["label_ids"])
  assert int(trimmed_length(tf.zeros([0, 48], tf.int32), 48)) == 8


def test_training_batches_are_grouped_by_length():
  path = os.path.join(GLUE, "expected", "qnli_train.tfrecord")
  batches = list(feature_dataset(path, classifier_features(48), 2, True, 48, seed=3,
                                 bucket_width=16).take(20))
  for b in batches:
    lengths = tf.reduce_sum(b["input_mask"], 1).numpy()
    assert b["input_ids"].shape == (2, min(48, -(-lengths.max() // 8) * 8))


def test_diagnostic_set(tmp_path):
  (tmp_path / "diagnostic").mkdir()
  (tmp_path / "diagnostic" / "diagnostic.tsv").write_text(
      "index\tsentence1\tsentence2\n0\tThe  Cat sat.\tA cat sat.\n1\tÉté\tSummer\n",
      encoding="utf-8")
  processor = glue.processor("AX")
  examples = processor.get_test_examples(str(tmp_path))
  assert [(e.guid, e.text_a, e.text_b, e.label) for e in examples] == [
      ("0", "the cat sat.", "a cat sat.", "contradiction"),
      ("1", "ete", "summer", "contradiction")]
  assert processor.get_labels() == ["contradiction", "entailment", "neutral"]
  with pytest.raises(ValueError, match="no train set"):
    processor.get_train_examples(str(tmp_path))


def test_data_dir_may_be_the_task_folder():
  # `--data_dir=glue_data/MRPC` for task MRPC reads the same files as `--data_dir=glue_data`.
  glue_data = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")
  processor = glue.GlueProcessor("MRPC")
  assert ([e.text_a for e in processor.get_examples(os.path.join(glue_data, "MRPC"), "train")] ==
          [e.text_a for e in processor.get_examples(glue_data, "train")])
