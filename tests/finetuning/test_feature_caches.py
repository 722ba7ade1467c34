"""Feature caches keyed by what they hold (albert_tf.finetuning.feature_cache): a cache is reused
only for the same data, labels, columns, lengths and tokenizer; otherwise written again, with a
log line naming what differed. A file the user named is never overwritten when stale. And two
own-data runs that share --cached_dir, or a data file edited under the same name, each read
their own data."""

import csv
import json
import logging
import os

import pytest

from albert_tf.core import errors, settings
from albert_tf.finetuning import feature_cache
from albert_tf.core.settings import TokenizerSettings
from albert_tf.tasks.classifier.data import InputExample, PaddingInputExample
from albert_tf.tasks.classifier.settings import OwnDataSettings
from helpers import ORIGINAL_MODEL, TESTDATA
from tfrecord_utils import read_examples

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
GLUE = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")
MRPC_CHECKPOINT = os.path.join(TESTDATA, "original_finetuning", "classifier", "mrpc",
                               "model.ckpt-4")
TOKENIZER = TokenizerSettings(spm_model_file=SPM)


def _writer(path, calls):
  def write():
    calls.append(path)
    with open(path, "wb") as f:
      f.write(b"records")
  return write


# ---- the stamp -------------------------------------------------------------------------------
def test_a_cache_is_reused_only_for_the_inputs_it_was_written_from(tmp_path, caplog):
  path, calls = str(tmp_path / "dev_eval.tf_record"), []
  first = feature_cache.make_stamp(TOKENIZER, max_seq_length=48, labels=["neg", "pos"],
                                   examples_sha256="a" * 64)
  second = dict(first, labels=["neg", "neutral", "pos"])
  assert feature_cache.freshness(path, first) == (feature_cache.MISSING, "")
  cached, write = feature_cache.checked(path, first, _writer(path, calls))
  assert not cached
  write()
  assert json.load(open(feature_cache.stamp_path(path))) == first
  assert feature_cache.checked(path, first, _writer(path, calls))[0]
  with caplog.at_level(logging.INFO, logger="albert_tf"):
    cached, write = feature_cache.checked(path, second, _writer(path, calls))
  assert not cached
  assert ('dev_eval.tf_record is stale (labels: ["neg", "pos"] -> ["neg", "neutral", "pos"])'
          in caplog.text)
  write()
  assert len(calls) == 2 and json.load(open(feature_cache.stamp_path(path))) == second
  # Prediction features are written every run, as the original's.
  assert not feature_cache.checked(path, second, _writer(path, calls), regenerate=True)[0]


def test_an_unstamped_cache_is_written_again_and_a_users_stale_file_refused(tmp_path):
  path, calls = str(tmp_path / "race_train.tf_record"), []
  stamp = feature_cache.make_stamp(TOKENIZER, max_seq_length=48)
  open(path, "wb").write(b"the original's records")
  state, why = feature_cache.freshness(path, stamp)
  assert state == feature_cache.UNSTAMPED and "race_train.tf_record.stamp.json" in why
  # In a place the job chose: written again.
  assert not feature_cache.checked(path, stamp, _writer(path, calls))[0]
  # Named by the user: used as the original uses it (it cannot be checked)...
  assert feature_cache.checked(path, stamp, _writer(path, calls), named_by="--train_file")[0]
  # ... and refused, never overwritten, when its stamp says it was written for other inputs.
  open(feature_cache.stamp_path(path), "w").write(json.dumps(dict(stamp, max_seq_length=64)))
  with pytest.raises(errors.CacheError, match=r"--train_file=.*race_train.tf_record holds "
                     r"features written for other inputs \(max_seq_length: 64 -> 48\)"):
    feature_cache.checked(path, stamp, _writer(path, calls), named_by="--train_file")
  assert calls == [] and open(path, "rb").read() == b"the original's records"


def test_a_write_that_fails_leaves_no_stamp_behind(tmp_path):
  path = str(tmp_path / "train.tf_record")
  old = feature_cache.make_stamp(TOKENIZER, max_seq_length=32)
  open(path, "wb").write(b"old")
  open(feature_cache.stamp_path(path), "w").write(json.dumps(old))

  def failing():
    raise KeyboardInterrupt
  _, write = feature_cache.checked(path, dict(old, max_seq_length=48), failing)
  with pytest.raises(KeyboardInterrupt):
    write()
  # The old records may remain, but never under a stamp that claims them fresh.
  assert feature_cache.freshness(path, old)[0] == feature_cache.UNSTAMPED


def test_the_examples_hash_sees_texts_labels_order_and_padding():
  examples = [InputExample("0", "a good film", label="pos"), InputExample("1", "dull", label="neg")]
  digest = feature_cache.examples_sha256(examples)
  assert digest == feature_cache.examples_sha256([InputExample(e.guid, e.text_a, e.text_b,
                                                               e.label) for e in examples])
  assert digest != feature_cache.examples_sha256(examples[::-1])
  assert digest != feature_cache.examples_sha256([examples[0], InputExample("1", "dull",
                                                                            label="pos")])
  assert digest != feature_cache.examples_sha256(examples + [PaddingInputExample()])
  assert feature_cache.examples_sha256([InputExample("0", "x", label=["a", "b"])]) != (
      feature_cache.examples_sha256([InputExample("0", "x", label=["a,b"])]))


# ---- own-data runs ---------------------------------------------------------------------------
def _mrpc_rows(split, flip=False):
  with open(os.path.join(GLUE, "MRPC", f"{split}.tsv"), encoding="utf-8") as f:
    rows = [line.rstrip("\n").split("\t") for line in f][1:]
  return [[r[3], r[4], str(1 - int(r[0])) if flip else r[0]] for r in rows]


def _write_csv(path, rows):
  with open(path, "w", newline="", encoding="utf-8") as f:
    csv.writer(f).writerows([["text", "text_b", "label"], *rows])
  return str(path)


def _run(out, cached_dir, **kwargs):
  from albert_tf.tasks.classifier.own_job import OwnDataJob
  OwnDataJob(OwnDataSettings(
      output_dir=str(out), cached_dir=str(cached_dir), text_b_column="text_b",
      model=settings.ModelSettings(
          albert_config_file=os.path.join(ORIGINAL_MODEL, "albert_config.json"),
          max_seq_length=48, init_checkpoint=kwargs.pop("init_checkpoint", None)),
      tokenizer=TOKENIZER, eval_batch_size=4,
      train=settings.TrainSettings(optimizer="adamw", train_batch_size=4, num_train_steps=1,
                                   num_warmup_steps=0, learning_rate=1e-3,
                                   save_checkpoints_steps=1),
      run=settings.RunSettings(random_seed=1, data_seed=1), **kwargs)).run()


def _keyed(cached, name):
  """The caches of feature file `name` in shared directory `cached`: <stem>.<key><ext>, each
  named after its stamp (feature_cache.cache_path); never the file at `name` itself."""
  stem, extension = os.path.splitext(name)
  pattern = f"{stem}.{'[0-9a-f]' * feature_cache.KEY_DIGITS}{extension}"
  return sorted(str(path) for path in cached.glob(pattern))


def _stamp_of(path):
  """The stamp beside keyed cache `path`, after checking that its name carries that stamp."""
  stamp = json.load(open(feature_cache.stamp_path(path)))
  assert os.path.basename(path).split(".")[-2] == feature_cache.stamp_key(stamp)
  return stamp


def _label_ids(path):
  return [e["label_ids"][0] for e in read_examples(path)]


def _accuracy(out):
  lines = (out / "eval_results.txt").read_text().splitlines()
  return float(next(l.split(" = ")[1] for l in lines if l.startswith("eval_accuracy")))


@pytest.mark.slow
def test_a_dev_file_edited_under_its_name_is_evaluated_anew(tmp_path):
  """Two evaluations sharing --cached_dir: the dev file's labels flipped in between (same name,
  same length, same texts) make the second run's accuracy 1 - the first's. With a cache keyed
  by the tokenizer alone, the second evaluated the first file's labels again."""
  cached, dev = tmp_path / "cache", tmp_path / "dev.csv"
  _write_csv(dev, _mrpc_rows("dev"))
  _run(tmp_path / "first", cached, dev_file=str(dev), do_eval=True, label_list="0,1",
       init_checkpoint=MRPC_CHECKPOINT)
  _write_csv(dev, _mrpc_rows("dev", flip=True))
  _run(tmp_path / "second", cached, dev_file=str(dev), do_eval=True, label_list="0,1",
       init_checkpoint=MRPC_CHECKPOINT)
  first, second = _accuracy(tmp_path / "first"), _accuracy(tmp_path / "second")
  assert 0 < first < 1 and second == pytest.approx(1 - first, abs=1e-6)
  # Each dev file's contents got a cache of their own, named after its stamp: the stamps differ
  # in the examples alone, and each holds its run's labels.
  files = _keyed(cached, "dev_eval.tf_record")
  assert len(files) == 2
  stamps = [_stamp_of(path) for path in files]
  for stamp in stamps:
    assert stamp["labels"] == ["0", "1"] and stamp["examples"] == 12
  assert [d.split(":")[0] for d in feature_cache.differences(*stamps)] == ["examples_sha256"]
  labels = sorted(_label_ids(path) for path in files)
  assert labels == sorted([[int(r[2]) for r in _mrpc_rows("dev")],
                           [int(r[2]) for r in _mrpc_rows("dev", flip=True)]])


@pytest.mark.slow
def test_runs_sharing_a_cached_dir_train_on_their_own_files(tmp_path, caplog):
  """A 2-label training file, then a 3-label one of the same name in another output_dir with
  the same --cached_dir: the second run writes and trains on a file of its own, holding its
  three label ids, beside the first run's, which it leaves as it was."""
  cached, train = tmp_path / "cache", tmp_path / "train.csv"
  rows = _mrpc_rows("train")
  _write_csv(train, rows)
  _run(tmp_path / "two", cached, train_file=str(train), do_train=True)
  # The output_dir keeps its tokenizer beside its config: a checkpoint to point exports at.
  assert (tmp_path / "two" / "spiece.model").read_bytes() == open(SPM, "rb").read()
  [two] = _keyed(cached, "train_train.tf_record")
  assert _stamp_of(two)["labels"] == ["0", "1"]
  assert set(_label_ids(two)) == {0, 1}
  written = open(two, "rb").read()
  _write_csv(train, [r[:2] + [["0", "1", "2"][i % 3]] for i, r in enumerate(rows)])
  with caplog.at_level(logging.INFO, logger="albert_tf"):
    _run(tmp_path / "three", cached, train_file=str(train), do_train=True)
  [three] = [path for path in _keyed(cached, "train_train.tf_record") if path != two]
  assert _stamp_of(three)["labels"] == ["0", "1", "2"]
  assert set(_label_ids(three)) == {0, 1, 2}
  # The run trained on the file it wrote (cached_features returns it), not on the first run's.
  assert f" train features ({len(rows)} real) to {three}" in caplog.text
  assert str(two) not in caplog.text
  assert open(two, "rb").read() == written and _stamp_of(two)["labels"] == ["0", "1"]
  assert json.load(open(tmp_path / "three" / "classifier_labels.json"))["labels"] == [
      "0", "1", "2"]
