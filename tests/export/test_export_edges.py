"""Exports never silent: a run_ner checkpoint without its label_list.txt exports as a
token tagger (or is refused, asking for --head), never as a sentence classifier; the portable
exports need --init_checkpoint unless --random_weights; a fine-tuning output_dir exports its
model.ckpt-best, not its latest checkpoint; a SQuAD v2 head is refused in one line.

Checkpoints are written directly (no training): the tiny HF encoder config, hidden size 32."""

import os

import numpy as np
import pytest

import albert_tf
from albert_tf.checkpoints.hf_config import from_hf_config
from albert_tf.core import errors
from albert_tf.checkpoints import resolve_checkpoint_path, save_original_checkpoint
from albert_tf.export import portable
from albert_tf.export.hf import checkpoint_head, export_hf_layout
from albert_tf.tasks.ner.model import AlbertTokenClassifier
from helpers import TESTDATA, read_tf1_checkpoint, run_binary

HF_ENCODER = os.path.join(TESTDATA, "hf_albert", "encoder")
NUM_TAGS = 8


def _config():
  return from_hf_config(HF_ENCODER)


def _config_file(tmp_path):
  path = str(tmp_path / "albert_config.json")
  _config().to_json_file(path)
  return path


def _tagger_run(directory, evidence=("ner_train.tf_record", "test_results.txt")):
  """A run_ner output_dir that lost its label_list.txt: model.ckpt-best of a tagger of NUM_TAGS
  tags, and the run's files named in `evidence`."""
  os.makedirs(directory, exist_ok=True)
  prefix = save_original_checkpoint(AlbertTokenClassifier(_config(), num_labels=NUM_TAGS),
                                    os.path.join(directory, "model.ckpt-best"))
  for name in evidence:
    with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
      f.write("")
  return prefix


def _one_error_line(result):
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
  return lines[0]


# ---- item 4: a tagger without its label names ---------------------------------------------------
def test_a_run_ner_dir_without_label_list_exports_a_token_tagger(tmp_path):
  prefix = _tagger_run(str(tmp_path / "ner"))
  assert checkpoint_head(prefix) == ("token_classifier", NUM_TAGS)
  model = portable.load_exportable_model(_config(), prefix)
  assert isinstance(model, AlbertTokenClassifier)
  outputs = portable.serving_outputs(model, portable.sample_features(_config(), 2, 12))
  assert "probabilities" not in outputs and tuple(outputs["logits"].shape) == (2, 12, NUM_TAGS)
  out = export_hf_layout(_config(), prefix, str(tmp_path / "hf"))
  import json
  written = json.loads(open(os.path.join(out, "config.json"), encoding="utf-8").read())
  assert written["architectures"] == ["AlbertForTokenClassification"]


def test_a_classifier_run_dir_stays_a_sentence_classifier(tmp_path):
  directory = str(tmp_path / "mrpc")
  os.makedirs(directory)
  prefix = save_original_checkpoint(albert_tf.AlbertClassifier(_config(), num_labels=3),
                                    os.path.join(directory, "model.ckpt-best"))
  open(os.path.join(directory, "mrpc_train.tf_record"), "w").close()
  assert checkpoint_head(prefix) == ("classifier", 3)
  outputs = portable.serving_outputs(portable.load_exportable_model(_config(), prefix),
                                     portable.sample_features(_config(), 2, 12))
  assert tuple(outputs["probabilities"].shape) == (2, 3) and "logits" not in outputs


@pytest.mark.parametrize("evidence", [(), ("ner_train.tf_record", "submit_results.tsv")])
def test_an_L_by_H_head_nothing_tells_asks_for_head(tmp_path, evidence):
  prefix = _tagger_run(str(tmp_path / "ner"), evidence)
  with pytest.raises(errors.HeadAmbiguityError,
                     match=rf"output_weights \[{NUM_TAGS}, H\].*--head=classifier .*"
                           "--head=token_classifier"):
    portable.load_exportable_model(_config(), prefix)
  with pytest.raises(errors.HeadAmbiguityError):
    export_hf_layout(_config(), prefix, str(tmp_path / "hf"))
  assert not (tmp_path / "hf").exists()
  model = portable.load_exportable_model(_config(), prefix, head="token_classifier")
  assert isinstance(model, AlbertTokenClassifier) and model.num_labels == NUM_TAGS


@pytest.mark.slow
def test_export_tflite_of_a_bare_tagger_refuses_then_exports_with_head(tmp_path):
  prefix = _tagger_run(str(tmp_path / "ner"), evidence=())
  flags = [f"--albert_config_file={_config_file(tmp_path)}", f"--init_checkpoint={prefix}",
           f"--output_file={tmp_path / 'ner.tflite'}", "--max_seq_length=16"]
  result = run_binary("export_tflite", flags, check=False)
  assert result.returncode == 1
  assert "--head=token_classifier" in _one_error_line(result)
  assert not (tmp_path / "ner.tflite").exists()
  run_binary("export_tflite", flags + ["--head=token_classifier"])
  from ai_edge_litert.interpreter import Interpreter
  runner = Interpreter(str(tmp_path / "ner.tflite")).get_signature_runner("serving_default")
  features = portable.sample_features(_config(), 2, 12)
  outputs = runner(**features)
  assert outputs["logits"].shape == (2, 12, NUM_TAGS) and "probabilities" not in outputs
  model = portable.load_exportable_model(_config(), prefix, head="token_classifier")
  np.testing.assert_allclose(outputs["logits"], portable.serving_outputs(model, features)["logits"],
                             atol=1e-4)


# ---- item 5: no silent random weights ------------------------------------------------------------
@pytest.mark.parametrize("binary", ["export_tflite", "export_onnx"])
def test_portable_exports_require_a_checkpoint(tmp_path, binary):
  output = tmp_path / "m.out"
  result = run_binary(binary, [f"--albert_config_file={_config_file(tmp_path)}",
                               f"--output_file={output}"], check=False)
  assert result.returncode == 2
  line = _one_error_line(result)
  assert "--init_checkpoint is not given" in line and "--random_weights" in line
  assert not output.exists()


@pytest.mark.slow
def test_random_weights_export_for_benchmarks(tmp_path):
  output = tmp_path / "random.tflite"
  result = run_binary("export_tflite", [f"--albert_config_file={_config_file(tmp_path)}",
                                        f"--output_file={output}", "--random_weights",
                                        "--max_seq_length=16"])
  assert "exported" in result.stdout and output.stat().st_size > 0


# ---- item 8: an output_dir exports model.ckpt-best -----------------------------------------------
def _run_dir_with_best(directory):
  """A fine-tuning output_dir whose latest checkpoint (model.ckpt-3, in the state file) and
  model.ckpt-best hold different weights. Returns (latest prefix, best prefix)."""
  latest = save_original_checkpoint(albert_tf.AlbertClassifier(_config(), num_labels=3),
                                    os.path.join(directory, "model.ckpt-3"), global_step=3)
  best = save_original_checkpoint(albert_tf.AlbertClassifier(_config(), num_labels=3),
                                  os.path.join(directory, "model.ckpt-best"), global_step=2,
                                  update_checkpoint_state=False)
  open(os.path.join(directory, "mrpc_train.tf_record"), "w").close()
  return latest, best


def test_a_directory_holding_model_ckpt_best_resolves_to_it(tmp_path, caplog):
  directory = str(tmp_path / "run")
  latest, best = _run_dir_with_best(directory)
  import tensorflow as tf
  assert tf.train.latest_checkpoint(directory) == latest
  with caplog.at_level("WARNING", logger="albert_tf"):
    assert resolve_checkpoint_path(directory) == best
  assert f"{directory} holds model.ckpt-best: using it, not the latest model.ckpt-3" in caplog.text
  model = portable.load_exportable_model(_config(), directory)
  expected = read_tf1_checkpoint(best)["output_weights"]
  assert not np.allclose(expected, read_tf1_checkpoint(latest)["output_weights"])
  np.testing.assert_array_equal(model.classifier.original_variables()["output_weights"].numpy(),
                                expected)
  # A directory without model.ckpt-best still resolves to its latest checkpoint.
  os.makedirs(tmp_path / "other")
  only = save_original_checkpoint(albert_tf.AlbertModel(_config()),
                                  str(tmp_path / "other" / "model.ckpt-5"))
  assert resolve_checkpoint_path(str(tmp_path / "other")) == only


@pytest.mark.slow
def test_export_checkpoints_of_an_output_dir_writes_model_ckpt_best(tmp_path):
  directory = str(tmp_path / "run")
  _, best = _run_dir_with_best(directory)
  out = tmp_path / "hf"
  result = run_binary("export_checkpoints", [
      f"--albert_config_file={_config_file(tmp_path)}", f"--init_checkpoint={directory}",
      "--format=hf", f"--export_path={out}"])
  assert "holds model.ckpt-best: using it" in result.stderr + result.stdout
  import safetensors.numpy
  written = safetensors.numpy.load_file(str(out / "model.safetensors"))
  # transformers' classifier.weight is output_weights [L, H] as it is.
  np.testing.assert_array_equal(written["classifier.weight"],
                                read_tf1_checkpoint(best)["output_weights"])


# ---- SQuAD v2: no portable export yet ------------------------------------------------------------
def test_a_squad_v2_checkpoint_has_no_portable_export(tmp_path):
  directory = str(tmp_path / "squad2")
  os.makedirs(directory)
  prefix = save_original_checkpoint(albert_tf.AlbertSquadV2(_config()),
                                    os.path.join(directory, "model.ckpt-best"))
  with pytest.raises(errors.CheckpointError, match="SQuAD 2.0 head .*no TFLite or ONNX export "
                                                   "yet: serve it as a SavedModel"):
    portable.load_exportable_model(_config(), prefix)
  encoder = portable.load_exportable_model(_config(), prefix, head="none")
  assert isinstance(encoder, albert_tf.AlbertModel)


@pytest.mark.slow
def test_export_onnx_refuses_a_squad_v2_checkpoint_in_one_line(tmp_path):
  directory = str(tmp_path / "squad2")
  os.makedirs(directory)
  prefix = save_original_checkpoint(albert_tf.AlbertSquadV2(_config()),
                                    os.path.join(directory, "model.ckpt-best"))
  result = run_binary("export_onnx", [f"--albert_config_file={_config_file(tmp_path)}",
                                      f"--init_checkpoint={prefix}",
                                      f"--output_file={tmp_path / 'v2.onnx'}",
                                      "--max_seq_length=16"], check=False)
  assert result.returncode == 1
  assert "run_squad_v2 --export_dir" in _one_error_line(result)
  assert not (tmp_path / "v2.onnx").exists()
