"""run_squad_v1 / run_squad_v2 end to end on the fixture data: train, evaluate each checkpoint,
predict, export; the exported SavedModel (loaded without albert_tf) answers raw text as the
binary's predictions.json."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.core.settings import TokenizerSettings
from albert_tf.tasks.squad.export import SquadServingModule
from albert_tf.tasks.squad import postprocess as squad_postprocess
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, run_binary
from tfrecord_utils import read_examples
import warm_binaries

SQUAD = os.path.join(TESTDATA, "original_finetuning", "squad")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
WINDOWS = ["--max_seq_length=64", "--doc_stride=24", "--max_query_length=16"]

SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the SentencePiece ops
model = tf.saved_model.load(sys.argv[1])
questions, contexts = json.load(open(sys.argv[2]))
out = model.signatures["serving_default"](question=tf.constant(questions),
                                          context=tf.constant(contexts))
assert "albert_tf" not in sys.modules
print(json.dumps({k: [x.decode() if isinstance(x, bytes) else float(x) for x in v.numpy()]
                  for k, v in out.items()}))
"""


def _questions(version):
  with open(os.path.join(SQUAD, version, "dev.json")) as f:
    data = json.load(f)["data"]
  qas = [(qa["id"], qa["question"], p["context"]) for a in data for p in a["paragraphs"]
         for qa in p["qas"]]
  return [q[0] for q in qas], [q[1] for q in qas], [q[2] for q in qas]


def _serve(export, version, tmp_path):
  [stamp] = os.listdir(export)
  ids, questions, contexts = _questions(version)
  (tmp_path / "inputs.json").write_text(json.dumps([questions, contexts]))
  served = warm_binaries.run_python(
      ["-c", SERVE, str(export / stamp), str(tmp_path / "inputs.json")], "bare", cwd=tmp_path,
      timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
  assert served.returncode == 0, served.stderr[-3000:]
  return ids, json.loads(served.stdout.strip().splitlines()[-1])


def _same_pieces(contexts):
  from albert_tf.tokenization import FullTokenizer
  from albert_tf.tokenization.full import encode_pieces
  from albert_tf.tokenization.in_graph import InGraphTokenizer
  from albert_tf.tokenization.text import preprocess_text
  python, graph = FullTokenizer(spm_model_file=SPM), InGraphTokenizer(SPM)
  return np.array([
      encode_pieces(python.sp_model, preprocess_text(c, lower=True))
      == [p.decode() for p in graph.pieces(tf.constant(c.split())).flat_values.numpy()]
      for c in contexts])


def _json(path):
  with open(path) as f:
    return json.load(f)


@pytest.mark.slow
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_train_predict_export(version, squad_trained, tmp_path):
  run = squad_trained(version)  # tests/conftest.py: trained, evaluated, predicted and exported
  out, export = run.out, run.export
  with open(out / "eval_results.txt") as f:
    evaluations = f.read().count("=" * 50)
  assert evaluations == 2
  assert os.path.exists(out / "model.ckpt-best.index")
  predictions = _json(out / "predictions.json")
  nbest = _json(out / "nbest_predictions.json")
  ids, served = _serve(export, version, tmp_path)
  assert list(predictions) == ids
  # The SavedModel answers raw text as the binary's predictions.json.
  assert served["answer"] == [predictions[i] for i in ids]
  if version == "v1":
    dataset = _json(os.path.join(SQUAD, "v1", "dev.json"))["data"]
    assert squad_postprocess.evaluate_v1(dataset, predictions)["f1"] > 5.0  # it learned a bit
    # Scores agree where tensorflow-text segments the context as the Python SentencePiece
    # does (it breaks ties differently on a few runs of one repeated symbol, "*****").
    same = _same_pieces(_questions("v1")[2])
    assert sum(same) >= 12
    expected = [nbest[i][0]["start_log_prob"] + nbest[i][0]["end_log_prob"] for i in ids]
    np.testing.assert_allclose(np.array(served["score"])[same], np.array(expected)[same],
                               atol=1e-4)
    _check_tflite_beside_saved_model(export, tmp_path)
  else:
    null_odds = _json(out / "null_odds.json")
    np.testing.assert_allclose(served["null_odds"], [null_odds[i] for i in ids], atol=1e-5)
    # Without the threshold, the graph's answer is the n-best list's best text.
    config = albert_tf.AlbertConfig.from_json_file(CONFIG)
    model = albert_tf.AlbertSquadV2(config)
    albert_tf.load_checkpoint(model, str(out / "model.ckpt-best"))
    module = SquadServingModule(model, TokenizerSettings(spm_model_file=SPM), 64, 24, 16, 30, 20,
                                v2=True, null_score_diff_threshold=float("inf"))
    _, questions, contexts = _questions("v2")
    answers = module.serve(tf.constant(questions), tf.constant(contexts))["answer"].numpy()
    assert [a.decode() for a in answers] == [nbest[i][0]["text"] for i in ids]


# The .tflite file run_squad_v1 writes beside its SavedModel, run in LiteRT without TensorFlow.
RUN_TFLITE = """
import sys
import numpy as np
from albert_tf.export.portable_runtime import TfliteRunner
features = dict(np.load(sys.argv[1]))
out = TfliteRunner(sys.argv[2])(features)
assert "tensorflow" not in sys.modules
np.savez(sys.argv[3], start_logits=out["start_logits"], end_logits=out["end_logits"])
"""


def _check_tflite_beside_saved_model(export, tmp_path):
  """albert_model.tflite (the original's name) answers the dev features as the SavedModel's
  features signature does."""
  [stamp] = os.listdir(export)
  records = read_examples(os.path.join(SQUAD, "v1", "dev.tfrecord"))
  features = {name: np.array([r[name] for r in records], np.int32)
              for name in ("input_ids", "input_mask", "segment_ids")}
  served = tf.saved_model.load(str(export / stamp)).signatures["features"](
      p_mask=tf.zeros_like(features["input_ids"]),
      **{k: tf.constant(v) for k, v in features.items()})
  np.savez(tmp_path / "features.npz", **features)
  result = subprocess.run([sys.executable, "-c", RUN_TFLITE, str(tmp_path / "features.npz"),
                           str(export / stamp / "albert_model.tflite"),
                           str(tmp_path / "tflite.npz")], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  lite = np.load(tmp_path / "tflite.npz")
  np.testing.assert_allclose(lite["start_logits"], served["start_log_prob"].numpy(), atol=1e-4)
  np.testing.assert_allclose(lite["end_logits"], served["end_log_prob"].numpy(), atol=1e-4)


def test_an_empty_predict_file_fails_before_training(tmp_path):
  empty = tmp_path / "empty.json"
  empty.write_text('{"version": "1.1", "data": []}')
  out = tmp_path / "out"
  r = run_binary("run_squad_v1", [
      f"--spm_model_file={SPM}", f"--albert_config_file={CONFIG}", f"--output_dir={out}",
      f"--train_file={os.path.join(SQUAD, 'v1', 'train.json')}", f"--predict_file={empty}",
      "--do_train", "--do_predict", "--train_batch_size=8"] + WINDOWS, check=False, timeout=300)
  assert r.returncode != 0
  assert f"SQuAD file {empty} has no usable questions" in r.stderr
  assert "Running training" not in r.stderr
  assert not [name for name in os.listdir(out) if "ckpt" in name or "tf_record" in name]
