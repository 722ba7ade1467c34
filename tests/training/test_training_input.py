"""The training input is built once per run: every record is read once per epoch however often the
run checkpoints, and a seeded input resumes exactly where an interrupted run stopped (pretraining
and fine-tuning pipelines, run_training, run_pretraining and run_classifier)."""

import os
import shutil

import pytest
import tensorflow as tf

from albert_tf.core import settings
from albert_tf.data.pipeline import pretraining_dataset
from albert_tf.finetuning.inputs import classifier_features, feature_dataset
from albert_tf.training import runner as runners
from helpers import ORIGINAL_MODEL, TESTDATA, assert_same_checkpoint_values, run_binary

SEQ, PREDS = 8, 2


def _int64(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _write_pretraining_records(path, first_id, count):
  """`count` records whose input_ids start with their own number (first_id, first_id + 1, ...)."""
  with tf.io.TFRecordWriter(str(path)) as writer:
    for i in range(first_id, first_id + count):
      features = {
          "input_ids": _int64([i] + [5] * (SEQ - 1)), "input_mask": _int64([1] * SEQ),
          "segment_ids": _int64([0] * SEQ), "next_sentence_labels": _int64([i % 2]),
          "masked_lm_positions": _int64([1, 2]), "masked_lm_ids": _int64([7, 8]),
          "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[1, 1]))}
      writer.write(tf.train.Example(features=tf.train.Features(feature=features))
                   .SerializeToString())
  return str(path)


def _write_classifier_records(path, count, max_seq_length=16):
  """`count` classifier records of real lengths 2..max_seq_length, label = record number."""
  with tf.io.TFRecordWriter(str(path)) as writer:
    for i in range(count):
      length = 2 + i % (max_seq_length - 1)
      mask = [1] * length + [0] * (max_seq_length - length)
      features = {"input_ids": _int64([i + 1] * length + [0] * (max_seq_length - length)),
                  "input_mask": _int64(mask), "segment_ids": _int64([0] * max_seq_length),
                  "label_ids": _int64([i]), "is_real_example": _int64([1])}
      writer.write(tf.train.Example(features=tf.train.Features(feature=features))
                   .SerializeToString())
  return str(path)


def _first_ids(dataset, batches):
  return [b["input_ids"][:, 0].numpy().tolist() for b in dataset.take(batches)]


class _RecordingRunner:
  """Consumes one batch per step and notes the records it saw (no model)."""

  class objective:
    @staticmethod
    def metrics(values):
      del values
      return {}

  def __init__(self):
    self.global_step = tf.Variable(0, dtype=tf.int64)
    self.seen = []

  def train_until_stopped(self, iterator, steps):
    for _ in range(steps):
      self.seen.extend(next(iterator)["input_ids"][:, 0].numpy().tolist())
      self.global_step.assign_add(1)
    return {"loss": 1.0, "learning_rate": 0.1}, False


class _Manager:
  latest_checkpoint = None

  def save(self, checkpoint_number):
    return f"model.ckpt-{checkpoint_number}"


@pytest.mark.parametrize("seed", [None, 7])
def test_one_epoch_with_a_checkpoint_every_step_reads_every_record_once(seed, tmp_path):
  # 300 records, three times the shuffle buffer: rebuilding the input at each checkpoint would
  # only ever read the first ~100 records of the file.
  files = [_write_pretraining_records(tmp_path / "a.tfrecord", 0, 180),
           _write_pretraining_records(tmp_path / "b.tfrecord", 180, 120)]
  runner = _RecordingRunner()
  train = settings.TrainSettings(num_train_steps=75, save_checkpoints_steps=1,
                                 iterations_per_loop=1)
  runners.run_training(
      runner, lambda step: iter(pretraining_dataset(files, SEQ, PREDS, 4, True, seed=seed,
                                                    start_step=step)),
      _Manager(), train)
  assert sorted(runner.seen) == list(range(300))


def test_seeded_pretraining_input_resumes_at_any_step(tmp_path):
  files = [_write_pretraining_records(tmp_path / "a.tfrecord", 0, 17),
           _write_pretraining_records(tmp_path / "b.tfrecord", 17, 13)]
  straight = _first_ids(pretraining_dataset(files, SEQ, PREDS, 4, True, seed=3), 30)
  # 30 records in batches of 4: the first epoch ends inside batch 7, the second in batch 14.
  first = sum(straight[:7], []) + straight[7][:2]
  second = straight[7][2:] + sum(straight[8:15], [])
  assert sorted(first) == sorted(second) == list(range(30))
  assert first != second  # each epoch has its own order
  for start in (1, 7, 11, 16):  # within the first epoch, at its end, in the second and third
    resumed = _first_ids(pretraining_dataset(files, SEQ, PREDS, 4, True, seed=3,
                                             start_step=start), 30 - start)
    assert resumed == straight[start:], start


def test_seeded_pretraining_input_resumes_per_input_pipeline(tmp_path):
  files = [_write_pretraining_records(tmp_path / f"{i}.tfrecord", 10 * i, 10) for i in range(4)]
  for pipeline in range(2):
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                         num_replicas_in_sync=4)
    # Global batch 8: each of the 2 pipelines hands its 2 replicas 2 records each per step.
    straight = _first_ids(pretraining_dataset(files, SEQ, PREDS, 8, True, input_context=context,
                                              seed=5), 24)
    assert {i // 10 for i in sum(straight, [])} == {pipeline, pipeline + 2}
    resumed = _first_ids(pretraining_dataset(files, SEQ, PREDS, 8, True, input_context=context,
                                             seed=5, start_step=6), 12)
    # 6 steps consumed 2 per-replica batches each of this pipeline.
    assert resumed == straight[12:]


@pytest.mark.parametrize("dynamic_length", [False, True])
def test_finetuning_input_reads_every_record_each_epoch(dynamic_length, tmp_path):
  path = _write_classifier_records(tmp_path / "train.tf_record", 240)
  spec = classifier_features(16)
  data = feature_dataset(path, spec, 4, True, 16, dynamic_length=dynamic_length, seed=2)
  labels = [b["label_ids"].numpy().tolist() for b in data.take(120)]
  first_epoch = sum(labels[:60], [])
  if dynamic_length:
    # Length buckets hold back at most a batch per bucket at an epoch's end.
    assert set(sum(labels[:63], [])) == set(range(240))
  else:
    assert sorted(first_epoch) == list(range(240))
  again = [b["label_ids"].numpy().tolist() for b in feature_dataset(
      path, spec, 4, True, 16, dynamic_length=dynamic_length, seed=2).take(120)]
  assert again == labels


@pytest.mark.slow
def test_pretraining_flags_that_do_not_match_the_records(tmp_path):
  common = [f"--input_file={os.path.join(ORIGINAL_MODEL, 'eval.tfrecord')}",
            f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
            f"--output_dir={tmp_path}", "--train_batch_size=2", "--num_train_steps=1"]
  r = run_binary("run_pretraining", common + ["--max_seq_length=32",
                                              "--max_predictions_per_seq=5"], check=False)
  assert r.returncode != 0
  assert "`input_ids` holds 24 values per record where --max_seq_length gives 32" in r.stderr
  r = run_binary("run_pretraining", common + ["--max_seq_length=24",
                                              "--max_predictions_per_seq=20"], check=False)
  assert r.returncode != 0
  assert ("`masked_lm_positions` holds 5 values per record where --max_predictions_per_seq "
          "gives 20") in r.stderr


@pytest.mark.slow
def test_a_corrupt_record_deep_in_a_file_is_reached(tmp_path):
  """The fault the rebuilt-at-every-checkpoint input hid: a run with frequent checkpoints never
  read past the head of its file, so a corrupt record at 80% of it went unnoticed."""
  path = _write_pretraining_records(tmp_path / "data.tfrecord", 0, 400)
  data = bytearray(open(path, "rb").read())
  data[int(len(data) * 0.8)] ^= 0xFF
  with open(path, "wb") as f:
    f.write(bytes(data))
  config = tmp_path / "config.json"
  config.write_text('{"vocab_size": 512, "embedding_size": 8, "hidden_size": 8, '
                    '"num_hidden_layers": 1, "num_attention_heads": 2, '
                    '"intermediate_size": 16, "max_position_embeddings": 8}')
  r = run_binary("run_pretraining", [
      f"--input_file={path}", f"--albert_config_file={config}", f"--output_dir={tmp_path / 'o'}",
      "--train_batch_size=8", f"--max_seq_length={SEQ}", f"--max_predictions_per_seq={PREDS}",
      "--num_train_steps=60", "--save_checkpoints_steps=2", "--iterations_per_loop=2",
      "--keep_checkpoint_max=1"], check=False)
  assert r.returncode != 0 and "corrupt TFRecord data" in r.stderr, r.stderr[-2000:]


def _rewind(output_dir, step):
  """Makes output_dir look like a run killed right after saving model.ckpt-<step>."""
  for name in os.listdir(output_dir):
    if name.startswith("model.ckpt-") and int(name.split("-")[1].split(".")[0]) > step:
      os.remove(os.path.join(output_dir, name))
  with open(os.path.join(output_dir, "checkpoint"), "w") as f:
    f.write(f'model_checkpoint_path: "model.ckpt-{step}"\n')


@pytest.mark.slow
def test_resumed_finetuning_ends_with_the_weights_of_an_uninterrupted_run(tmp_path):
  glue = os.path.join(TESTDATA, "original_finetuning", "glue")
  flags = ["--spm_model_file="
           f"{os.path.join(TESTDATA, 'original_pretraining_data', '30k-clean-tiny.model')}",
           f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
           "--task_name=qnli", f"--data_dir={os.path.join(glue, 'glue_data')}",
           "--max_seq_length=48", "--do_train", "--train_batch_size=4", "--train_step=6",
           "--warmup_step=1", "--save_checkpoints_steps=2", "--keep_checkpoint_max=0",
           "--learning_rate=1e-3", "--data_seed=9", "--random_seed=1", "--classifier_dropout=0"]
  straight, resumed = tmp_path / "straight", tmp_path / "resumed"
  run_binary("run_classifier", flags + [f"--output_dir={straight}"])
  shutil.copytree(straight, resumed)
  _rewind(resumed, 2)
  run_binary("run_classifier", flags + [f"--output_dir={resumed}"])
  assert_same_checkpoint_values(straight / "model.ckpt-6", resumed / "model.ckpt-6")
