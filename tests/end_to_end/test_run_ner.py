"""run_ner end to end: it learns on the fixture set from scratch (dev F1 well above the untrained
model's), predicts every word of sentences longer than max_seq_length, scores its predictions as
seqeval does (albert_tf.tasks.ner.metrics, checked against seqeval's outputs in test_ner_data.py),
loads and writes Hugging Face AlbertForTokenClassification, and stops on bad input with the file
and line."""

import json
import os
import re

import numpy as np
import pytest
import safetensors.numpy

from albert_tf.checkpoints.hf_config import from_hf_config
from albert_tf.tasks.ner import data
from albert_tf.tasks.ner.metrics import entity_metrics

from helpers import TESTDATA, run_binary

# Every test runs run_ner (10 to 70 s each on 2 cores).
pytestmark = pytest.mark.slow

NER = os.path.join(TESTDATA, "ner")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
TINY = os.path.join(NER, "albert_config_tiny.json")
HF_DIR = os.path.join(TESTDATA, "hf_albert_tagging", "token_classifier")
# Measured (random_seed 1, data_seed 1, 2 CPU cores): dev F1 0.014 untrained, 0.28 after 1,200
# steps (the best of steps 0, 600, 1200). The thresholds leave room for other machines' float
# summation order.
MIN_DEV_F1, MIN_GAIN = 0.15, 0.10


def _blocks(path):
  """eval_results.txt's evaluations, each {key: float}."""
  blocks, current = [], {}
  for line in open(path).read().splitlines():
    if line.startswith("="):
      blocks.append(current)
      current = {}
    else:
      key, value = line.split(" = ")
      current[key] = value if key == "checkpoint" else float(value)  # `checkpoint = <init>`
  return blocks


def _results(path):
  return {k: float(v) for k, v in (line.split(" = ") for line in open(path).read().splitlines())}


def _predictions(path):
  """[[(word, gold, predicted)]] of a <split>_predictions.txt."""
  sentences, current = [], []
  for line in open(path).read().splitlines():
    if line:
      current.append(tuple(line.split(" ")))
    else:
      sentences.append(current)
      current = []
  assert not current, "the file must end with a blank line"
  return sentences


def test_learns_from_scratch_and_predicts_every_word(tmp_path):
  run_binary("run_ner", [
      f"--data_dir={NER}", f"--output_dir={tmp_path}", f"--spm_model_file={SPM}",
      f"--albert_config_file={TINY}", "--do_train", "--do_eval", "--do_predict",
      "--max_seq_length=64", "--doc_stride=32", "--train_batch_size=16", "--learning_rate=1e-3",
      "--train_step=1200", "--warmup_step=100", "--save_checkpoints_steps=600",
      "--eval_batch_size=32", "--predict_batch_size=32", "--random_seed=1", "--data_seed=1"])
  blocks = _blocks(tmp_path / "eval_results.txt")
  assert [b["global_step"] for b in blocks] == [0, 600, 1200]
  untrained, best = blocks[0]["f1"], max(b["f1"] for b in blocks)
  assert best >= MIN_DEV_F1 and best >= untrained + MIN_GAIN, [b["f1"] for b in blocks]
  assert {"PER_f1", "LOC_precision", "ORG_recall", "accuracy", "eval_loss"} <= set(blocks[-1])

  # One prediction per word, sentences (the first three longer than 120 words) in order.
  expected = data.read_split(NER, "test")
  predicted = _predictions(tmp_path / "test_predictions.txt")
  assert len(expected[0].words) > 120
  assert [[w for w, _, _ in s] for s in predicted] == [list(s.words) for s in expected]
  assert [[g for _, g, _ in s] for s in predicted] == [list(s.tags) for s in expected]
  gold = [[g for _, g, _ in s] for s in predicted]
  tags = [[p for _, _, p in s] for s in predicted]
  results = _results(tmp_path / "test_results.txt")
  scores = entity_metrics(gold, tags)
  assert results["f1"] == pytest.approx(scores["f1"], abs=1e-12)
  assert results["accuracy"] == pytest.approx(scores["accuracy"])
  dev = _predictions(tmp_path / "dev_predictions.txt")
  assert best == pytest.approx(entity_metrics(
      [[g for _, g, _ in s] for s in dev], [[p for _, _, p in s] for s in dev])["f1"], abs=1e-12)
  assert open(tmp_path / "label_list.txt").read().splitlines()[0] == "O"


def test_hf_tagger_in_and_out(tmp_path):
  # Config, spiece.model and label names from the HF directory; the untrained head evaluated.
  out = tmp_path / "run"
  run_binary("run_ner", [f"--data_dir={NER}", f"--output_dir={out}",
                         f"--init_checkpoint={HF_DIR}", "--do_eval", "--max_seq_length=64",
                         "--doc_stride=32", "--eval_batch_size=32"])
  given = json.load(open(os.path.join(HF_DIR, "config.json")))
  names = [given["id2label"][str(i)] for i in range(9)]
  assert open(out / "label_list.txt").read().splitlines() == names
  [block] = _blocks(out / "eval_results.txt")
  assert 0 <= block["f1"] <= 1
  # export_checkpoints --format=hf of the run's output_dir: transformers' files again.
  config_file = str(tmp_path / "albert_config.json")
  from_hf_config(HF_DIR).to_json_file(config_file)
  run_binary("export_checkpoints", [f"--albert_config_file={config_file}",
                                    f"--init_checkpoint={out / 'model.ckpt-best'}",
                                    f"--spm_model_file={SPM}", "--format=hf",
                                    f"--export_path={tmp_path / 'hf'}"])
  config = json.load(open(tmp_path / "hf" / "config.json"))
  for key in ("architectures", "id2label", "label2id", "hidden_size", "num_hidden_layers"):
    assert config[key] == given[key], key
  ours = safetensors.numpy.load_file(str(tmp_path / "hf" / "model.safetensors"))
  theirs = safetensors.numpy.load_file(os.path.join(HF_DIR, "model.safetensors"))
  assert {k: (v.shape, v.dtype) for k, v in ours.items()} == {
      k: (v.shape, v.dtype) for k, v in theirs.items()}
  for key in theirs:
    np.testing.assert_allclose(ours[key], theirs[key], atol=1e-7, err_msg=key)


@pytest.mark.parametrize("case", ["unknown_tag", "no_tag", "empty_dev"])
def test_bad_input_fails_with_file_and_line(case, tmp_path):
  data_dir = tmp_path / "data"
  data_dir.mkdir()
  train, dev = "Peter B-PER\nruns O\n\nhome O\n", "Peter B-PER\n"
  flags = ["--do_train", "--do_eval"]
  if case == "unknown_tag":
    train += "\nRome B-LOC\n"
    flags.append("--label_list=O,B-PER")
    expected = r"train.txt:6: tag 'B-LOC' is not in the label list"
  elif case == "no_tag":
    train = train.replace("runs O", "runs")
    expected = r"train.txt:2: line 'runs' has no tag"
  else:
    dev = "-DOCSTART- -X- O\n\n"
    expected = r"dev.txt: no sentence"
  (data_dir / "train.txt").write_text(train)
  (data_dir / "dev.txt").write_text(dev)
  result = run_binary("run_ner", [f"--data_dir={data_dir}", f"--output_dir={tmp_path / 'out'}",
                                  f"--spm_model_file={SPM}", f"--albert_config_file={TINY}",
                                  "--max_seq_length=32"] + flags, check=False)
  assert result.returncode == 1, result.stderr[-2000:]  # a data error, not a usage error
  assert expected in result.stderr, result.stderr[-2000:]
  assert "Traceback" not in result.stderr
  assert not (tmp_path / "out").exists()  # nothing written before the data is checked


def _tiny_flags(data_dir, output_dir, spm_model_file=SPM):
  return [f"--data_dir={data_dir}", f"--output_dir={output_dir}",
          f"--spm_model_file={spm_model_file}", f"--albert_config_file={TINY}",
          "--max_seq_length=32", "--doc_stride=16", "--train_batch_size=8",
          "--predict_batch_size=32", "--save_checkpoints_steps=2", "--train_step=2",
          "--random_seed=1", "--data_seed=1"]


def _error_line(result):
  assert result.returncode == 1, result.stderr[-2000:]
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
  return lines[0]


def test_another_tokenizer_of_the_same_name_writes_its_own_cache_in_a_shared_cached_dir(
    tmp_path):
  import tensorflow as tf
  from albert_tf.core import io
  from albert_tf.finetuning import feature_cache
  from albert_tf.tasks.ner import features
  from albert_tf.tokenization import FullTokenizer
  from helpers import other_spm_model
  other = other_spm_model(tmp_path / "other" / os.path.basename(SPM))
  cached = tmp_path / "cache"
  pattern = "ner_train." + "[0-9a-f]" * feature_cache.KEY_DIGITS + ".tf_record"
  run_binary("run_ner", _tiny_flags(NER, tmp_path / "a") + [f"--cached_dir={cached}",
                                                            "--do_train"])
  [first_file] = [str(p) for p in cached.glob(pattern)]
  written = open(first_file, "rb").read()
  second = run_binary("run_ner", _tiny_flags(NER, tmp_path / "b", other) + [
      f"--cached_dir={cached}", "--do_train"])
  # Both models' caches lie side by side, each named after its stamp, which names its model.
  [second_file] = [str(p) for p in cached.glob(pattern) if str(p) != first_file]
  for path, model in ((first_file, SPM), (second_file, other)):
    stamp = json.load(open(feature_cache.stamp_path(path)))
    assert stamp["tokenizer_sha256"] == io.sha256(model)
    assert stamp["tokenizer"] == os.path.basename(SPM)
    assert os.path.basename(path) == f"ner_train.{feature_cache.stamp_key(stamp)}.tf_record"
  # The second run wrote its own file, trained on it, and left the first run's as it was.
  assert re.search(rf"wrote \d+ train features \(\d+ sentences\) to {re.escape(second_file)}\n",
                   second.stderr)
  assert first_file not in second.stderr
  assert open(first_file, "rb").read() == written

  def first_ids(path):
    record = next(iter(tf.data.TFRecordDataset(path)))
    return list(tf.train.Example.FromString(record.numpy()).features.feature[
        "input_ids"].int64_list.value)
  labels = open(tmp_path / "b" / "label_list.txt").read().split()
  sentence = data.read_split(NER, "train")[0]
  expected = features.sentence_features(FullTokenizer(spm_model_file=other), sentence, labels,
                                        32, 16)[0]["input_ids"]
  first = features.sentence_features(FullTokenizer(spm_model_file=SPM), sentence, labels, 32,
                                     16)[0]["input_ids"]
  assert first_ids(second_file) == expected != first  # the second model's ids, not the first's
  assert first_ids(first_file) == first


def test_bom_data_and_label_lists_that_disagree_with_the_checkpoint(tmp_path):
  # The fixture saved with byte-order marks: no fake sentence, no "\ufeff" word.
  bom = tmp_path / "bom"
  bom.mkdir()
  for name in ("train.txt", "dev.txt", "test.txt"):
    (bom / name).write_bytes(b"\xef\xbb\xbf" + open(os.path.join(NER, name), "rb").read())
  out = tmp_path / "run"
  run_binary("run_ner", _tiny_flags(bom, out) + ["--do_train", "--do_predict"])
  predicted = _predictions(out / "test_predictions.txt")
  expected = data.read_split(NER, "test")
  assert [[w for w, _, _ in s] for s in predicted] == [list(s.words) for s in expected]
  trained = open(out / "label_list.txt").read().split()
  assert trained == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-ORG", "I-PER"]

  def predict(label_list, checkpoint, output_dir):
    return run_binary("run_ner", _tiny_flags(NER, output_dir) + [
        "--do_predict", f"--init_checkpoint={checkpoint}",
        f"--label_list={','.join(label_list)}"], check=False)
  checkpoint = out / "model.ckpt-2"
  # Reordered: every id would get another tag's name (before: exit 0, wrong tags).
  reordered = trained[:6] + ["I-PER", "I-ORG"]
  line = _error_line(predict(reordered, checkpoint, tmp_path / "p1"))
  assert " ".join(reordered) in line and " ".join(trained) in line, line
  assert f"--label_list={','.join(trained)}" in line
  # 9 labels against the 8-label head (before: a shape traceback).
  line = _error_line(predict(trained + ["I-MISC"], checkpoint, tmp_path / "p2"))
  assert "--label_list has 9 labels" in line and "has 8" in line, line
  # The same checkpoint without its label_list.txt: its head's size still says 8.
  bare = tmp_path / "bare"
  bare.mkdir()
  for name in os.listdir(out):
    if name.startswith("model.ckpt-2."):
      (bare / name).write_bytes(open(out / name, "rb").read())
  line = _error_line(predict(trained + ["I-MISC"], bare / "model.ckpt-2", tmp_path / "p3"))
  assert "has a head of 8 labels but the run has 9" in line, line
  assert not any((tmp_path / p).exists() for p in ("p1", "p2", "p3"))
