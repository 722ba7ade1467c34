"""Each refusal a user meets ends its binary with one `error:` line (albert_tf.core.errors: status 2
for flags, 1 for the rest) and no traceback; so does a missing pip extra, naming it.

The checkpoints and configs of the refusals are made here, in the test process, from the tiny
fixture model (tests/testdata/original_model); every binary refuses before it trains, but for
the classifier resume, which needs a first run (slow tier).
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

import albert_tf
from helpers import ORIGINAL_MODEL, REPO_ROOT, TESTDATA, run_binary

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")  # all-shared, intermediate_size 64
CKPT0 = os.path.join(ORIGINAL_MODEL, "model.ckpt-0")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
GLUE_DATA = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")
HF_CLASSIFIER = os.path.join(TESTDATA, "hf_albert", "classifier")
PRETRAINING = [f"--input_file={os.path.join(ORIGINAL_MODEL, 'train.tfrecord')}",
               "--train_batch_size=2", "--max_seq_length=24", "--max_predictions_per_seq=5",
               "--num_train_steps=1", "--num_warmup_steps=0"]
CLASSIFIER = [f"--spm_model_file={SPM}", "--task_name=mrpc", f"--data_dir={GLUE_DATA}",
              "--max_seq_length=48", "--train_batch_size=4", "--warmup_step=0"]


def _one_error_line(result, code):
  """The one `error: ...` line of `result`'s stderr; status `code`, no traceback. (Lines
  absl logged before the refusal may come first.)"""
  assert result.returncode == code, result.stderr[-3000:]
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and result.stderr.strip().splitlines()[-1] == lines[0], result.stderr
  return lines[0]


def _write_config(path, **changes):
  with open(CONFIG, encoding="utf-8") as f:
    values = json.load(f)
  values.update(changes)
  with open(path, "w", encoding="utf-8") as f:
    json.dump(values, f)
  return str(path)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
  """Configs and checkpoints of the refusals (paths by name)."""
  root = tmp_path_factory.mktemp("refusals")
  config = albert_tf.AlbertConfig.from_json_file(CONFIG)
  paths = {}
  for sharing in ("not-shared", "shared-FFN"):
    variant = albert_tf.AlbertConfig(**dict(config.to_dict(), parameter_sharing=sharing))
    paths[sharing + " config"] = _write_config(root / f"{sharing}.json",
                                               parameter_sharing=sharing)
    paths[sharing] = albert_tf.save_original_checkpoint(
        albert_tf.AlbertPretrainer(variant), str(root / sharing / "model.ckpt"))
  # output_weights [1, H]: RACE's head, or a one-label classifier's; its directory tells neither.
  paths["one logit"] = albert_tf.save_original_checkpoint(
      albert_tf.AlbertClassifier(config, num_labels=1), str(root / "one_logit" / "model.ckpt"))
  paths["misspelt sharing"] = _write_config(root / "misspelt.json", parameter_sharing="shared_ffn")
  paths["intermediate_size"] = _write_config(root / "wide.json", intermediate_size=96)
  return paths


def test_misspelt_parameter_sharing(made, tmp_path):
  line = _one_error_line(run_binary("run_pretraining", PRETRAINING + [
      f"--albert_config_file={made['misspelt sharing']}", f"--output_dir={tmp_path}"],
      check=False), 1)
  assert "did you mean 'shared-FFN'" in line and made["misspelt sharing"] in line


@pytest.mark.parametrize("binary", ["run_pretraining", "run_classifier", "export_saved_model",
                                    "export_checkpoints"])
def test_checkpoint_of_another_sharing_variant(binary, made, tmp_path):
  common = [f"--albert_config_file={CONFIG}", f"--init_checkpoint={made['not-shared']}"]
  flags = {
      "run_pretraining": PRETRAINING + [f"--output_dir={tmp_path}"],
      "run_classifier": CLASSIFIER + [f"--output_dir={tmp_path}", "--do_train",
                                      "--train_step=1"],
      "export_saved_model": [f"--spm_model_file={SPM}", "--max_seq_length=24",
                             f"--export_dir={tmp_path / 'serving'}"],
      "export_checkpoints": [f"--spm_model_file={SPM}", f"--export_path={tmp_path / 'out'}"],
  }[binary]
  line = _one_error_line(run_binary(binary, common + flags, check=False), 1)
  assert made["not-shared"] in line and "parameter_sharing" in line, line


def test_hf_export_of_shared_ffn(made, tmp_path):
  line = _one_error_line(run_binary("export_checkpoints", [
      f"--albert_config_file={made['shared-FFN config']}",
      f"--init_checkpoint={made['shared-FFN']}", "--format=hf",
      f"--export_path={tmp_path / 'hf'}"], check=False), 1)
  assert "shared-FFN" in line and "no Hugging Face counterpart" in line, line
  assert not os.path.exists(tmp_path / "hf")


def test_every_checkpoint_in_output_dir_corrupt(tmp_path):
  for suffix in (".index", ".data-00000-of-00001"):
    shutil.copy(CKPT0 + suffix, tmp_path / f"model.ckpt-1{suffix}")
  (tmp_path / "model.ckpt-1.index").write_bytes(b"not an index")
  (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-1"\n'
                                       'all_model_checkpoint_paths: "model.ckpt-1"\n')
  line = _one_error_line(run_binary("run_pretraining", PRETRAINING + [
      f"--albert_config_file={CONFIG}", f"--output_dir={tmp_path}"], check=False), 1)
  assert f"no readable checkpoint in {tmp_path}" in line and "model.ckpt-1" in line, line


def test_config_of_another_intermediate_size(made, tmp_path):
  # The checkpoint alone: an albert_config.json beside it would be compared first
  # (tests/checkpoints/test_formats.py); this is the loader's shape check.
  for suffix in (".index", ".data-00000-of-00001"):
    shutil.copy(CKPT0 + suffix, tmp_path / f"model.ckpt-0{suffix}")
  line = _one_error_line(run_binary("export_saved_model", [
      f"--albert_config_file={made['intermediate_size']}",
      f"--init_checkpoint={tmp_path / 'model.ckpt-0'}",
      f"--spm_model_file={SPM}", "--max_seq_length=24",
      f"--export_dir={tmp_path / 'serving'}"], check=False), 1)
  assert "shape mismatch" in line and "[32, 64]" in line and "[32, 96]" in line, line


def test_ambiguous_one_logit_head(made, tmp_path):
  line = _one_error_line(run_binary("export_checkpoints", [
      f"--albert_config_file={CONFIG}", f"--init_checkpoint={made['one logit']}", "--format=hf",
      f"--export_path={tmp_path / 'hf'}"], check=False), 1)
  assert "output_weights [1, H]" in line and "--head=multiple_choice" in line, line


@pytest.mark.slow
def test_classifier_resume_with_another_max_seq_length(tmp_path):
  flags = [f"--albert_config_file={CONFIG}", f"--init_checkpoint={CKPT0}",
           f"--output_dir={tmp_path}", "--do_train", "--save_checkpoints_steps=1"]
  run_binary("run_classifier", CLASSIFIER + flags + ["--train_step=1"])
  # The cached features were written for 48 tokens: their stamp says so, and they are written
  # again for 64 (finetuning.feature_cache), never read at the wrong length.
  result = run_binary("run_classifier", CLASSIFIER + flags + ["--train_step=2",
                                                              "--max_seq_length=64"])
  assert "mrpc_train.tf_record is stale (max_seq_length: 48 -> 64)" in result.stderr
  assert "saved checkpoint" in result.stderr and "model.ckpt-2" in result.stderr


# ---- a missing extra ---------------------------------------------------------------------------
# Runs a binary as `python -m` does, with the modules named in argv[2] not importable (as without
# their extra), so nothing is uninstalled.
_WITHOUT = r"""
import runpy, sys
blocked = set(sys.argv[2].split(","))

class Uninstalled:
  def find_spec(self, name, path=None, target=None):
    if name.split(".")[0] in blocked:
      raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return None

sys.meta_path.insert(0, Uninstalled())
module = sys.argv[1]
sys.argv = [module] + sys.argv[3:]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def _run_without(modules, binary, flags):
  return subprocess.run([sys.executable, "-c", _WITHOUT, f"albert_tf.{binary}", ",".join(modules)]
                        + flags, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)


def test_export_onnx_without_the_portable_extra(tmp_path):
  line = _one_error_line(_run_without(["tf2onnx"], "export_onnx", [
      f"--albert_config_file={CONFIG}", f"--init_checkpoint={CKPT0}", "--max_seq_length=24",
      f"--output_file={tmp_path / 'a.onnx'}"]), 1)
  assert line == ('error: export_onnx needs the portable extra (no module named \'tf2onnx\'): '
                  'pip install "albert-tf[portable]"')
  assert not os.path.exists(tmp_path / "a.onnx")


@pytest.mark.slow  # converts the model
def test_export_tflite_needs_no_extra(tmp_path):
  r = _run_without(["tf2onnx", "onnx", "onnxruntime", "ai_edge_litert", "safetensors"],
                   "export_tflite", [f"--albert_config_file={CONFIG}",
                                     f"--init_checkpoint={CKPT0}", "--max_seq_length=24",
                                     f"--output_file={tmp_path / 'a.tflite'}"])
  assert r.returncode == 0, r.stderr[-3000:]
  assert os.path.getsize(tmp_path / "a.tflite") > 100_000


def test_beam_generation_without_the_beam_extra(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("One sentence.\nAnother one.\n", encoding="utf-8")
  line = _one_error_line(_run_without(["apache_beam"], "create_pretraining_data", [
      f"--input_file={corpus}", f"--output_file={tmp_path / 'out.tfrecord'}",
      f"--spm_model_file={SPM}",
      "--beam_pipeline_options=--runner=DirectRunner"]), 1)
  assert line == ("error: create_pretraining_data --beam_pipeline_options needs the beam extra "
                  "(no module named 'apache_beam'): pip install \"albert-tf[beam]\"")
  assert not os.path.exists(tmp_path / "out.tfrecord")


@pytest.mark.slow  # two binaries, each a TensorFlow start-up
def test_hf_checkpoints_without_the_hf_extra(tmp_path):
  hint = "needs the hf extra (no module named 'safetensors'): pip install \"albert-tf[hf]\""
  line = _one_error_line(_run_without(["safetensors"], "export_saved_model", [
      f"--init_checkpoint={HF_CLASSIFIER}", "--max_seq_length=24",
      f"--export_dir={tmp_path / 'serving'}"]), 1)
  assert line == f"error: reading the Hugging Face checkpoint {HF_CLASSIFIER} {hint}"
  line = _one_error_line(_run_without(["safetensors"], "export_checkpoints", [
      f"--albert_config_file={CONFIG}", f"--init_checkpoint={CKPT0}", "--format=hf",
      f"--export_path={tmp_path / 'hf'}"]), 1)
  assert line == f"error: writing a Hugging Face checkpoint {hint}"
  assert not os.path.exists(tmp_path / "hf")


# Every optional dependency group's modules: what a plain `pip install .` lacks.
_EXTRAS_MODULES = ["safetensors", "tf2onnx", "onnx", "onnxruntime", "ai_edge_litert", "sympy",
                   "apache_beam", "mkdocs", "tensorflow_serving", "jieba", "nltk"]


@pytest.mark.slow  # trains a step, fine-tunes a step, exports
def test_the_plain_install_trains_fine_tunes_and_exports(tmp_path):
  """Without any extra's module: run_pretraining, run_classifier (train + eval) and
  export_saved_model exit 0 (an unconditional safetensors import once broke all three)."""
  r = _run_without(_EXTRAS_MODULES, "run_pretraining", PRETRAINING + [
      f"--albert_config_file={CONFIG}", f"--output_dir={tmp_path / 'pre'}"])
  assert r.returncode == 0, r.stderr[-3000:]
  assert os.path.exists(tmp_path / "pre" / "model.ckpt-1.index")
  r = _run_without(_EXTRAS_MODULES, "run_classifier", CLASSIFIER + [
      f"--albert_config_file={CONFIG}", f"--init_checkpoint={CKPT0}", "--do_train", "--do_eval",
      "--train_step=1", f"--output_dir={tmp_path / 'cls'}"])
  assert r.returncode == 0, r.stderr[-3000:]
  assert "eval_accuracy" in (tmp_path / "cls" / "eval_results.txt").read_text()
  r = _run_without(_EXTRAS_MODULES, "export_saved_model", [
      f"--albert_config_file={CONFIG}", f"--init_checkpoint={CKPT0}", "--max_seq_length=24",
      f"--spm_model_file={SPM}", f"--export_dir={tmp_path / 'serving'}"])
  assert r.returncode == 0, r.stderr[-3000:]
  assert any((tmp_path / "serving").rglob("saved_model.pb"))
