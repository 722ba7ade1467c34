"""run_ner end to end: it learns on the fixture set from scratch (dev F1 well above the untrained
model's), predicts every word of sentences longer than max_seq_length, scores as seqeval does,
loads and writes Hugging Face AlbertForTokenClassification, and stops on bad input with the file
and line."""

import json
import os

import numpy as np
import pytest
import safetensors.numpy
from seqeval import metrics as seqeval_metrics

from albert_tf.config import AlbertConfig
from albert_tf.tasks.ner import data

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
  assert results["f1"] == pytest.approx(seqeval_metrics.f1_score(gold, tags), abs=1e-12)
  assert results["accuracy"] == pytest.approx(seqeval_metrics.accuracy_score(gold, tags))
  dev = _predictions(tmp_path / "dev_predictions.txt")
  assert best == pytest.approx(seqeval_metrics.f1_score(
      [[g for _, g, _ in s] for s in dev], [[p for _, _, p in s] for s in dev]), abs=1e-12)
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
  AlbertConfig.from_hf_config(HF_DIR).to_json_file(config_file)
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
  assert result.returncode != 0
  assert expected in result.stderr, result.stderr[-2000:]
  assert "Traceback" not in result.stderr
  assert not (tmp_path / "out").exists()  # nothing written before the data is checked
