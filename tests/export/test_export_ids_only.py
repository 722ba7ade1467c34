"""export_saved_model --ids_only: the signatures in token ids, with no tensorflow-text op in the
graph, so that a TensorFlow without tensorflow-text loads and runs the export
(`saved_model_cli run`, Python where tensorflow_text cannot be imported). The full export holds
TF Text's SentencePiece ops and fails to load there ("Op type not registered 'SentencepieceOp'")."""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

import albert_tf
from albert_tf.core.settings import TokenizerSettings
from albert_tf.export.saved_model import IdsServingModule
from albert_tf.export.serving_ops import saved_model_ops
from helpers import ORIGINAL_MODEL, TESTDATA, reference_batch, run_binary
from served_model_helpers import load_served_model
import warm_binaries

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
CKPT0 = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
VOCAB = os.path.join(TESTDATA, "original_wordpiece", "vocab.txt")  # 1,155 WordPiece entries
IDS_SIGNATURES = ["mlm", "sop_log_probs", "tokenization_info", "tokens"]
# The request of the documented `saved_model_cli run` command.
CLI_REQUEST = {"input_ids": [[2, 10, 3]], "input_mask": [[1, 1, 1]], "segment_ids": [[0, 0, 0]]}


def _export(base, *extra):
  run_binary("export_saved_model", [f"--albert_config_file={CONFIG}",
                                    f"--init_checkpoint={CKPT0}", f"--spm_model_file={SPM}",
                                    "--max_seq_length=64", f"--export_dir={base}", *extra])
  return os.path.join(base, "1")


# Two binary runs of some 15 s each: the slow tier.
@pytest.fixture(scope="module")
def exports(tmp_path_factory):
  base = tmp_path_factory.mktemp("ids_only")
  return {"ids": _export(base / "ids", "--ids_only"), "full": _export(base / "full")}


@pytest.fixture(scope="module")
def full_model(exports):
  """The full export, loaded as TF Serving loads it (tensorflow_text imported)."""
  return load_served_model(os.path.dirname(exports["full"]))


def _signature_names(export_path):
  saved = saved_model_pb2.SavedModel()
  with open(os.path.join(export_path, "saved_model.pb"), "rb") as f:
    saved.ParseFromString(f.read())
  # Less __saved_model_init_op, which every TF2 SavedModel has: its loading step, not a signature.
  return sorted(n for n in saved.meta_graphs[0].signature_def if not n.startswith("__"))


def _foreign_ops(export_path):
  """The export's ops that TensorFlow itself lacks: its own are all in tf.raw_ops, and
  tensorflow-text's are not."""
  return [op for op in saved_model_ops(export_path) if not hasattr(tf.raw_ops, op)]


@pytest.mark.slow
def test_ids_only_holds_the_ids_signatures_and_only_tensorflow_ops(exports):
  assert _signature_names(exports["ids"]) == IDS_SIGNATURES
  assert _signature_names(exports["full"]) == sorted(IDS_SIGNATURES + ["serving_default",
                                                                        "serving_text_pair"])
  assert not _foreign_ops(exports["ids"])
  assert _foreign_ops(exports["full"]) == ["NormalizeUTF8", "SentencepieceOp",
                                      "SentencepieceStringToIdOp", "SentencepieceTokenizeOp"]
  # The tokenizer still ships, for clients to make the ids with.
  assert os.listdir(os.path.join(exports["ids"], "assets")) == ["30k-clean-tiny.model"]


@pytest.mark.slow
def test_a_wordpiece_ids_only_export_holds_no_tensorflow_text_op(tmp_path):
  # A WordPiece model's full export tokenizes with NormalizeUTF8, RegexSplitWithOffsets and
  # WordpieceTokenizeWithOffsets; the ids-only one keeps vocab.txt as its asset only.
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  config.vocab_size = 1155  # VOCAB's entries
  module = IdsServingModule(albert_tf.AlbertPretrainer(config), TokenizerSettings(vocab_file=VOCAB),
                            max_seq_length=32)
  path = str(tmp_path / "wordpiece")
  tf.saved_model.save(module, path, signatures=module.signatures())
  assert _signature_names(path) == IDS_SIGNATURES
  assert not _foreign_ops(path)
  assert os.listdir(os.path.join(path, "assets")) == ["vocab.txt"]


# Run where tensorflow_text cannot be imported (a None entry in sys.modules makes the import
# fail), as a TensorFlow without it: the ids-only export loads and runs, the full one cannot.
_WITHOUT_TENSORFLOW_TEXT = r"""
import json, sys
sys.modules["tensorflow_text"] = None
import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_registry
try:
  import tensorflow_text  # noqa: F401 -- registers the text ops a SavedModel needs
  raise SystemExit("tensorflow_text was imported")
except ImportError:
  pass
ids_path, full_path, reference = sys.argv[1:]
model = tf.saved_model.load(ids_path)
ref = np.load(reference)
ids = {k: tf.constant(ref[k]) for k in ("input_ids", "input_mask", "segment_ids")}
tokens = model.signatures["tokens"](**ids)
mlm = model.signatures["mlm"](mlm_positions=tf.constant(ref["masked_lm_positions"]), **ids)
sop = model.signatures["sop_log_probs"](**ids)
info = model.signatures["tokenization_info"]()
try:
  tf.saved_model.load(full_path)
  full_error = ""
except Exception as e:
  full_error = str(e)
print(json.dumps({
    "signatures": sorted(model.signatures),
    "pooled": tokens["pooled_output"].numpy().tolist(),
    "sequence": tokens["sequence_output"].numpy().tolist(),
    "mlm_log_probs": tf.nn.log_softmax(mlm["mlm_logits"]).numpy().tolist(),
    "sop": sop["sop_log_probs"].numpy().tolist(),
    "vocab_file": info["vocab_file"].numpy().decode(),
    "do_lower_case": bool(info["do_lower_case"]), "max_seq_length": int(info["max_seq_length"]),
    "sentencepiece_registered": op_def_registry.get("SentencepieceOp") is not None,
    "modules": sorted(m for m in ("albert_tf", "tensorflow_text")
                      if sys.modules.get(m) is not None),
    "full_error": full_error}))
"""


@pytest.mark.slow
def test_loads_and_runs_where_tensorflow_text_cannot_be_imported(exports, tmp_path):
  script = tmp_path / "load.py"
  script.write_text(_WITHOUT_TENSORFLOW_TEXT)
  result = warm_binaries.run_python([str(script), exports["ids"], exports["full"],
                                     os.path.join(ORIGINAL_MODEL, "reference.npz")],
                                    "bare", cwd=tmp_path, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  got = json.loads(result.stdout.strip().splitlines()[-1])
  assert got["modules"] == [] and not got["sentencepiece_registered"]
  assert got["signatures"] == IDS_SIGNATURES
  assert "Op type not registered 'SentencepieceOp'" in got["full_error"]
  # The original graph's outputs on the fixture batch (tests/testdata/FIXTURES_README.md), within
  # 1e-5 as every export's check against them.
  ref = reference_batch()
  np.testing.assert_allclose(got["pooled"], ref["pooled_output"], atol=1e-5)
  np.testing.assert_allclose(got["sequence"], ref["sequence_output"], atol=1e-5)
  np.testing.assert_allclose(np.reshape(got["mlm_log_probs"], (15, 1000)),
                             ref["masked_lm_log_probs"], atol=1e-5)
  np.testing.assert_allclose(got["sop"], ref["sentence_order_log_probs"], atol=1e-5)
  assert got["vocab_file"].endswith(os.path.join("assets", "30k-clean-tiny.model"))
  assert got["do_lower_case"] is True and got["max_seq_length"] == 64


def _run(model, signature, inputs):
  return {k: v.numpy() for k, v in model.signatures[signature](
      **{k: tf.constant(v, tf.int32) for k, v in inputs.items()}).items()}


@pytest.mark.slow
def test_ids_only_signatures_give_the_full_exports_numbers(exports, full_model):
  ids_model = tf.saved_model.load(exports["ids"])
  ref = reference_batch()
  ids = {k: ref[k] for k in ("input_ids", "input_mask", "segment_ids")}
  requests = {"tokens": ids, "sop_log_probs": ids,
              "mlm": dict(ids, mlm_positions=ref["masked_lm_positions"])}
  for signature, inputs in requests.items():
    ours, full = _run(ids_model, signature, inputs), _run(full_model, signature, inputs)
    assert sorted(ours) == sorted(full)
    for name, value in full.items():
      # The same traced function on the same weights, in two SavedModels: only the order of
      # float sums could differ (thread scheduling), far below 1e-6 on outputs of order 1.
      np.testing.assert_allclose(ours[name], value, rtol=0, atol=1e-6,
                                 err_msg=f"{signature}: {name}")


def _saved_model_cli():
  """The saved_model_cli script TensorFlow installs beside this interpreter (else on PATH)."""
  beside = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
  path = beside if os.path.exists(beside) else shutil.which("saved_model_cli")
  assert path, f"saved_model_cli is neither beside {sys.executable} nor on PATH"
  return path


def _printed_results(stdout):
  """{output key: flat float array} of saved_model_cli run's "Result for output key K:" lines
  and the numpy array printed after each."""
  results = {}
  for part in stdout.split("Result for output key ")[1:]:
    name, _, values = part.partition(":")
    results[name] = np.array(re.findall(r"[-+]?\d+\.?\d*(?:e[-+]?\d+)?", values), np.float32)
  return results


@pytest.mark.slow
@pytest.mark.parametrize("signature", ["tokens", "sop_log_probs"])
def test_saved_model_cli_run_prints_the_signatures_outputs(exports, full_model, signature):
  exprs = ";".join(f"{k}={v}" for k, v in CLI_REQUEST.items()).replace(" ", "")
  result = subprocess.run([_saved_model_cli(), "run", "--dir", exports["ids"], "--tag_set",
                           "serve", "--signature_def", signature, "--input_exprs", exprs],
                          capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  printed = _printed_results(result.stdout)
  full = _run(full_model, signature, CLI_REQUEST)
  assert sorted(printed) == sorted(full)
  for name, value in full.items():
    # numpy prints at most 8 decimals (a rounding under 1e-8), and only the order of float sums
    # could differ from this process's run of the full export.
    np.testing.assert_allclose(printed[name], value.ravel(), rtol=0, atol=1e-6, err_msg=name)
