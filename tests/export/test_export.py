"""export_checkpoints, export_saved_model, and the serving client (without a model server)."""

import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.checkpoints.layout import original_variable_map
from albert_tf.tasks.classifier.export import ClassifierServingModule
from albert_tf.core.settings import TokenizerSettings
from albert_tf.export.released import export_released_layout
from albert_tf.export.saved_model import ServingModule
from albert_tf.tasks.squad.export import SquadServingModule
from albert_tf.tokenization import check_vocab_fits
from albert_tf.tokenization.vocab_check import spm_vocab_size, wordpiece_vocab_size
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, reference_batch, run_binary
from served_model_helpers import load_served_model, run_signature

sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
import serving_client
import warm_binaries

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
CKPT0 = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")


def _fixture_weight_names():
  shapes = tf.train.load_checkpoint(CKPT0).get_variable_to_shape_map()
  return {n: s for n, s in shapes.items() if not n.endswith(("/adam_m", "/adam_v"))}


@pytest.mark.slow
@pytest.mark.parametrize("source", ["original", "ours"])
def test_export_checkpoints_released_layout(source, tmp_path):
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  reference = albert_tf.AlbertPretrainer(config)
  albert_tf.load_original_checkpoint(reference, CKPT0)
  checkpoint = CKPT0
  if source == "ours":
    parts = albert_tf.checkpoints.model_parts(reference)
    checkpoint = tf.train.Checkpoint(**parts).write(str(tmp_path / "ours" / "ckpt"))
  out = tmp_path / "albert_export"
  run_binary("export_checkpoints", [f"--albert_config_file={CONFIG}",
                                 f"--init_checkpoint={checkpoint}", f"--spm_model_file={SPM}",
                                 f"--export_path={out}"])
  assert sorted(os.listdir(out)) == sorted([
      "albert_config.json", "model.ckpt-best.index", "model.ckpt-best.data-00000-of-00001",
      "30k-clean-tiny.model", "30k-clean-tiny.vocab"])
  prefix = str(out / "model.ckpt-best")
  assert tf.train.load_checkpoint(prefix).get_variable_to_shape_map() == _fixture_weight_names()
  assert albert_tf.AlbertConfig.from_json_file(str(out / "albert_config.json")) == config
  loaded = albert_tf.AlbertPretrainer(config)
  report = albert_tf.load_original_checkpoint(loaded, prefix)
  assert not report.missing and not report.unused
  for (name, a), b in zip(original_variable_map(reference).items(),
                          original_variable_map(loaded).values()):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
  # The original's flag form, and no overwriting.
  with pytest.raises(AssertionError):
    run_binary("export_checkpoints", [f"--albert_directory={out}", f"--export_path={out}"])


# The tests of this export are in the slow tier: the binary takes some 10 s to write it.
@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  base = tmp_path_factory.mktemp("serving") / "albert"
  run_binary("export_saved_model", [f"--albert_config_file={CONFIG}", f"--init_checkpoint={CKPT0}",
                                 f"--spm_model_file={SPM}", "--max_seq_length=64",
                                 f"--export_dir={base}", "--version=3"])
  assert sorted(os.listdir(base)) == ["3"]
  return str(base)


_FRESH_PROCESS = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # the SentencePiece ops, as TF Serving links them
assert "albert_tf" not in sys.modules
model = tf.saved_model.load(sys.argv[1])
ref = np.load(sys.argv[2])
out = model.signatures["tokens"](input_ids=tf.constant(ref["input_ids"]),
                                 input_mask=tf.constant(ref["input_mask"]),
                                 segment_ids=tf.constant(ref["segment_ids"]))
lines = [json.loads(l) for l in open(sys.argv[3], encoding="utf-8")]
text = model.signatures["serving_default"](text=tf.constant([l["text"] for l in lines]))
ids = [row[m.astype(bool)].tolist() for row, m in zip(text["input_ids"].numpy(),
                                                       text["input_mask"].numpy())]
print(json.dumps({"pooled": out["pooled_output"].numpy().tolist(),
                  "sequence": out["sequence_output"].numpy().tolist(), "ids": ids,
                  "signatures": sorted(model.signatures)}))
"""


@pytest.mark.slow
def test_saved_model_in_a_fresh_process(exported, tmp_path):
  script = tmp_path / "load.py"
  script.write_text(_FRESH_PROCESS)
  lines_file = os.path.join(TESTDATA, "original_pretraining_data", "tokenization.jsonl")
  result = warm_binaries.run_python([str(script), os.path.join(exported, "3"),
                                     os.path.join(ORIGINAL_MODEL, "reference.npz"), lines_file],
                                    "bare", cwd=tmp_path, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  got = json.loads(result.stdout.strip().splitlines()[-1])
  assert got["signatures"] == ["mlm", "serving_default", "serving_text_pair", "sop_log_probs",
                               "tokenization_info", "tokens"]
  # The Keras model's outputs (the original graph's, see test_model_fixture) within 1e-5.
  ref = reference_batch()
  model = albert_tf.AlbertModel(albert_tf.AlbertConfig.from_json_file(CONFIG))
  albert_tf.load_original_checkpoint(model, CKPT0)
  keras_out = model({k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")})
  np.testing.assert_allclose(got["pooled"], keras_out["pooled_output"], atol=1e-5)
  np.testing.assert_allclose(got["sequence"], keras_out["sequence_output"], atol=1e-5)
  with open(lines_file, encoding="utf-8") as f:
    lines = [json.loads(l) for l in f]
  same = sum(ids == [2] + l["ids"][:62] + [3] for ids, l in zip(got["ids"], lines))
  assert same >= len(lines) - 6  # the 6 tie-break lines of test_in_graph_tokenizer


@pytest.mark.slow
def test_saved_model_cli_lists_the_documented_signatures(exported):
  # Through this interpreter: the saved_model_cli script need not be on PATH.
  result = warm_binaries.run_python(["-m", "tensorflow.python.tools.saved_model_cli", "show",
                                     "--dir", os.path.join(exported, "3"), "--all"],
                                    "bare", timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  text = result.stdout
  for expected in ["signature_def['serving_default']", "inputs['text']", "DT_STRING",
                   "signature_def['serving_text_pair']", "inputs['text_b']",
                   "signature_def['tokens']", "inputs['input_ids']", "DT_INT32", "shape: (-1, -1)",
                   "outputs['pooled_output']", "shape: (-1, 32)", "outputs['sequence_output']",
                   "signature_def['mlm']", "inputs['mlm_positions']", "outputs['mlm_logits']",
                   "signature_def['sop_log_probs']", "outputs['sop_log_probs']",
                   "signature_def['tokenization_info']", "outputs['vocab_file']",
                   "outputs['do_lower_case']"]:
    assert expected in text, expected
  with open(os.path.join(REPO_ROOT, "README.md")) as f:
    readme = f.read()
  for name in ("serving_default", "serving_text_pair", "tokens", "mlm", "sop_log_probs",
               "tokenization_info", "saved_model_cli show"):
    assert name in readme


@pytest.fixture(scope="module")
def served(exported):
  return load_served_model(exported)


def _direct(served_model_obj, signature, inputs):
  return {k: v.numpy() for k, v in served_model_obj.signatures[signature](
      **{k: tf.constant(v) for k, v in inputs.items()}).items()}


@pytest.mark.slow
def test_grpc_request_as_the_server_reads_it(served):
  inputs = serving_client.text_inputs(["The value is 10,000.", "x"], ["a pair", "y"])
  request = serving_client.predict_request("albert", "serving_text_pair", inputs)
  assert request.model_spec.signature_name == "serving_text_pair"
  decoded = {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}
  out = run_signature(served, "serving_text_pair", decoded)
  want = _direct(served, "serving_text_pair", inputs)
  for key in want:
    np.testing.assert_array_equal(out[key].numpy(), want[key])
  assert out["pooled_output"].shape == (2, 32)


@pytest.mark.slow
def test_rest_body_as_the_server_reads_it(served):
  ref = reference_batch()
  inputs = serving_client.token_inputs(ref["input_ids"], ref["input_mask"], ref["segment_ids"],
                                       ref["masked_lm_positions"])
  body = json.loads(json.dumps(serving_client.rest_body("mlm", inputs)))
  assert body["signature_name"] == "mlm" and isinstance(body["inputs"]["input_ids"], list)
  out = run_signature(served, body["signature_name"], body["inputs"])
  assert out["mlm_logits"].shape == (3, 5, 1000)
  np.testing.assert_allclose(out["mlm_logits"], _direct(served, "mlm", inputs)["mlm_logits"],
                             atol=1e-6)
  text_body = json.loads(json.dumps(serving_client.rest_body(
      "serving_default", serving_client.text_inputs(["héllo wörld"]))))
  assert text_body["inputs"]["text"] == ["héllo wörld"]
  out = run_signature(served, "serving_default", text_body["inputs"])
  assert out["input_ids"].shape == (1, 64)


@pytest.mark.slow
def test_clear_errors(served, exported, tmp_path):
  with pytest.raises(ValueError, match="'input_ids'.*int32.*float"):
    run_signature(served, "tokens", {"input_ids": np.ones((1, 4), np.float32),
                                     "input_mask": np.ones((1, 4), np.int32),
                                     "segment_ids": np.zeros((1, 4), np.int32)})
  with pytest.raises(ValueError, match=r"'input_ids'.*shape \[None, None\]"):
    run_signature(served, "tokens", {"input_ids": np.ones(4, np.int32),
                                     "input_mask": np.ones((1, 4), np.int32),
                                     "segment_ids": np.zeros((1, 4), np.int32)})
  with pytest.raises(ValueError, match="missing \\['segment_ids'\\]"):
    run_signature(served, "tokens", {"input_ids": np.ones((1, 4), np.int32),
                                     "input_mask": np.ones((1, 4), np.int32)})
  with pytest.raises(ValueError, match="unknown signature"):
    run_signature(served, "predict", {})
  flat = tmp_path / "flat"
  shutil.copytree(os.path.join(exported, "3"), flat)
  with pytest.raises(FileNotFoundError, match="no version folder.*inside a version folder"):
    load_served_model(str(flat))
  with pytest.raises(ValueError, match="input_ids must be"):
    serving_client.token_inputs([1, 2, 3])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tensorflow_model_server") is None,
                    reason="tensorflow_model_server is not on PATH (it cannot be installed here)")
def test_against_a_real_model_server(exported):
  import socket
  import time
  ports = []
  for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    ports.append(s.getsockname()[1])
    s.close()
  server = subprocess.Popen(["tensorflow_model_server", f"--port={ports[0]}",
                             f"--rest_api_port={ports[1]}", "--model_name=albert",
                             f"--model_base_path={exported}"])
  try:
    inputs = serving_client.text_inputs(["The value is 10,000."])
    for _ in range(60):
      try:
        out = serving_client.predict_grpc(
            f"127.0.0.1:{ports[0]}",
            serving_client.predict_request("albert", "serving_default", inputs), 5.0)
        break
      except Exception:  # noqa: BLE001 -- the server is still starting
        time.sleep(1)
    rest = serving_client.predict_rest(f"127.0.0.1:{ports[1]}", "albert",
                                       serving_client.rest_body("serving_default", inputs), 5.0)
    np.testing.assert_allclose(out["pooled_output"], rest["pooled_output"], atol=1e-5)
  finally:
    server.terminate()
    server.wait(timeout=30)


# -- the tokenizer's vocabulary against the config's vocab_size ---------------------------------

def test_check_vocab_fits(tmp_path):
  check_vocab_fits(1000, 1000, "spm.model", "albert_config.json")
  check_vocab_fits(900, 1000, "spm.model")  # fewer pieces than rows: released models pad
  with pytest.raises(ValueError) as info:
    check_vocab_fits(1000, 500, "spm.model", "albert_config.json")
  message = str(info.value)
  for expected in ["tokenizer spm.model has 1000 pieces but the config albert_config.json has "
                   "vocab_size 500", "ids 500 to 999 have no embedding",
                   "Use the SentencePiece model (or vocab file) the model was trained with, or "
                   "the albert_config.json that matches this tokenizer"]:
    assert expected in message
  with pytest.raises(ValueError, match="but the model's config has vocab_size 500"):
    check_vocab_fits(1000, 500, "spm.model")
  assert spm_vocab_size(SPM) == 1000
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n\nhello\nhello\n")  # a blank line and a repeat still take ids
  assert wordpiece_vocab_size(str(vocab)) == 5


def _small_vocab_model(tmp_path, vocab_size):
  """A config like the fixture's with another vocab_size, and a checkpoint of its shape."""
  with open(CONFIG) as f:
    values = dict(json.load(f), vocab_size=vocab_size)
  config_file = tmp_path / f"config_{vocab_size}.json"
  config_file.write_text(json.dumps(values))
  config = albert_tf.AlbertConfig.from_json_file(str(config_file))
  model = albert_tf.AlbertPretrainer(config)
  parts = albert_tf.checkpoints.model_parts(model)
  checkpoint = tf.train.Checkpoint(**parts).write(str(tmp_path / f"ckpt_{vocab_size}" / "ckpt"))
  return str(config_file), config, checkpoint


@pytest.mark.slow
def test_exports_refuse_a_tokenizer_bigger_than_the_vocab(tmp_path):
  config_file, config, checkpoint = _small_vocab_model(tmp_path, 500)
  expected = f"tokenizer {SPM} has 1000 pieces but the config {config_file} has vocab_size 500"
  base = tmp_path / "serving"
  result = run_binary("export_saved_model", [
      f"--albert_config_file={config_file}", f"--init_checkpoint={checkpoint}",
      f"--spm_model_file={SPM}", "--max_seq_length=16", f"--export_dir={base}", "--version=1"],
                      check=False)
  assert result.returncode != 0
  assert expected in result.stderr, result.stderr[-3000:]
  assert not os.path.exists(base / "1")
  result = run_binary("export_checkpoints", [
      f"--albert_config_file={config_file}", f"--init_checkpoint={checkpoint}",
      f"--spm_model_file={SPM}", f"--export_path={tmp_path / 'released'}"], check=False)
  assert result.returncode != 0
  assert expected in result.stderr, result.stderr[-3000:]
  assert not os.path.exists(tmp_path / "released")
  # The fine-tuning exports (their modules check it; the config file is not known there).
  with pytest.raises(ValueError, match=re.escape(f"{SPM} has 1000 pieces but the model's config "
                                                 "has vocab_size 500")):
    ClassifierServingModule(albert_tf.AlbertClassifier(config, num_labels=2),
                            TokenizerSettings(spm_model_file=SPM), ["a", "b"], pair=False,
                            max_seq_length=16)
  with pytest.raises(ValueError, match="has 1000 pieces but the model's config has vocab_size"):
    SquadServingModule(albert_tf.AlbertSpanLabeler(config), TokenizerSettings(spm_model_file=SPM),
                       max_seq_length=32)
  # A tokenizer smaller than the table is fine.
  _, padded, _ = _small_vocab_model(tmp_path, 1200)
  module = ServingModule(albert_tf.AlbertPretrainer(padded), TokenizerSettings(spm_model_file=SPM),
                         max_seq_length=16)
  assert module.vocab_size == 1200


# -- leftovers of killed exports ----------------------------------------------------------------

def _finished_pid():
  """The pid of a process that has exited (not reused this soon)."""
  result = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
  return int(result.stdout)


def _leftover(path):
  os.makedirs(path / "variables")
  (path / "saved_model.pb").write_bytes(b"half-written")
  return path


@pytest.mark.slow
def test_saved_model_export_removes_leftovers_of_killed_exports(tmp_path):
  base, host, dead = tmp_path / "albert", socket.gethostname(), _finished_pid()
  stale = [_leftover(base / f".tmp-2-{host}-{dead}"),
           _leftover(base / f".tmp-7-{dead}")]  # the name exports wrote before the host was in it
  kept = [_leftover(base / f".tmp-2-{host}-{os.getpid()}"),  # a running process's
          _leftover(base / f".tmp-2-otherhost-{dead}"),  # another host's: its pid means nothing
          _leftover(base / ".tmp-notes")]
  result = run_binary("export_saved_model", [
      f"--albert_config_file={CONFIG}", f"--init_checkpoint={CKPT0}", f"--spm_model_file={SPM}",
      "--max_seq_length=16", f"--export_dir={base}", "--version=3"])
  for path in stale:
    assert not os.path.exists(path)
    assert f"removing {path}, left by an export (pid {dead}) that did not finish" in result.stderr
  assert sorted(os.listdir(base)) == sorted(["3"] + [p.name for p in kept])
  ref = reference_batch()
  out = tf.saved_model.load(str(base / "3")).signatures["tokens"](
      **{k: tf.constant(ref[k]) for k in ("input_ids", "input_mask", "segment_ids")})
  np.testing.assert_allclose(out["pooled_output"], ref["pooled_output"], atol=1e-5)


def test_released_export_removes_leftovers_of_killed_exports(tmp_path, caplog):
  host, dead = socket.gethostname(), _finished_pid()
  out = tmp_path / "albert_export"
  stale = _leftover(tmp_path / f".tmp-albert_export-{host}-{dead}")
  other = _leftover(tmp_path / f".tmp-other_export-{host}-{dead}")  # another target's
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  with caplog.at_level(logging.WARNING):
    prefix = export_released_layout(config, CKPT0, str(out), TokenizerSettings(spm_model_file=SPM))
  assert not os.path.exists(stale)
  assert f"removing {stale}, left by an export (pid {dead}) that did not finish" in caplog.text
  assert os.path.exists(other)
  assert sorted(os.listdir(tmp_path)) == sorted(["albert_export", other.name])
  assert tf.train.load_checkpoint(prefix).get_variable_to_shape_map() == _fixture_weight_names()
