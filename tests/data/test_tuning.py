"""The input pipelines run without tf.data's autotuning model (albert_tf.data.tuning: deleting an
iterator waited for the model thread's sleep, up to a minute at the end of a run), and give the
same elements, in the same order, as with it."""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data import epochs, packing
from albert_tf.data.pipeline import pretraining_dataset
from albert_tf.data.tuning import without_autotuning_model
from albert_tf.finetuning.inputs import classifier_features, feature_dataset
from helpers import ORIGINAL_MODEL, TESTDATA

RECORDS = os.path.join(TESTDATA, "original_pretraining_data", "expected.tfrecord")  # T 64, P 10
EVAL_RECORDS = os.path.join(ORIGINAL_MODEL, "eval.tfrecord")  # T 24, P 5


def _with_the_model(dataset):
  options = tf.data.Options()
  options.autotune.enabled = True
  return dataset.with_options(options)


def _batches(dataset, count):
  return [{k: v.numpy() for k, v in batch.items()} for batch in dataset.take(count)]


def _assert_same(ours, theirs):
  assert len(ours) == len(theirs)
  for a, b in zip(ours, theirs):
    assert a.keys() == b.keys()
    for name in a:  # the records' own values, decoded: equal bit for bit
      np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def _classifier_records(path, count=40, max_seq_length=16):
  with tf.io.TFRecordWriter(str(path)) as writer:
    for i in range(count):
      length = 2 + i % (max_seq_length - 1)
      pad = [0] * (max_seq_length - length)
      values = {"input_ids": [i + 1] * length + pad, "input_mask": [1] * length + pad,
                "segment_ids": [0] * max_seq_length, "label_ids": [i], "is_real_example": [1]}
      features = {k: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
                  for k, v in values.items()}
      writer.write(tf.train.Example(features=tf.train.Features(feature=features))
                   .SerializeToString())
  return str(path)


PIPELINES = {
    "pretraining_train": lambda tmp: pretraining_dataset(RECORDS, 64, 10, 16, True, seed=1),
    "pretraining_eval": lambda tmp: pretraining_dataset(EVAL_RECORDS, 24, 5, 2, False),
    "pretraining_packed": lambda tmp: pretraining_dataset(RECORDS, 64, 10, 8, True, seed=1,
                                                          max_sequences_per_row=2),
    "finetuning_train": lambda tmp: feature_dataset(
        _classifier_records(tmp / "train.tf_record"), classifier_features(16), 4, True, 16,
        seed=2),
    "finetuning_eval": lambda tmp: feature_dataset(
        _classifier_records(tmp / "eval.tf_record"), classifier_features(16), 4, False, 16),
}


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_the_pipeline_runs_without_the_model_and_gives_the_same_elements(name, tmp_path):
  dataset = PIPELINES[name](tmp_path)
  assert dataset.options().autotune.enabled is False
  _assert_same(_batches(dataset, 12), _batches(_with_the_model(dataset), 12))


def test_the_record_counts_run_without_the_model(monkeypatch):
  seen = []

  def recording(dataset):
    made = without_autotuning_model(dataset)
    seen.append(made.options().autotune.enabled)
    return made

  monkeypatch.setattr(epochs, "without_autotuning_model", recording)
  monkeypatch.setattr(packing, "without_autotuning_model", recording)
  records = sum(1 for _ in tf.data.TFRecordDataset(RECORDS))
  assert epochs.count_records([RECORDS, RECORDS]) == 2 * records
  assert 0 < packing.count_packed_rows(RECORDS, 64, 4) <= records
  assert seen == [False, False]
