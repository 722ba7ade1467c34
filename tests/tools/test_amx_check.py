"""tools/amx_check.py, the AMX check under its earlier name, is tools/cpu_check.py now
(tests/tools/test_cpu_check.py has the bars); and tools/hf_torch_bench.py, the HF torch peer both
run: its config, command line and lines.

The HF side needs an interpreter with torch and transformers (not the project's dependencies):
set AMX_CHECK_HF_PYTHON to one (python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch
transformers numpy) for the tests that run it; without it they skip.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

from albert_tf.checkpoints.hf_config import to_hf_config
from albert_tf.core.config import AlbertConfig
from helpers import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
import hf_torch_bench

TOOL = os.path.join(REPO_ROOT, "tools", "amx_check.py")
HF_TOOL = os.path.join(REPO_ROOT, "tools", "hf_torch_bench.py")
TINY_CONFIG = os.path.join(REPO_ROOT, "albert_tf", "configs", "tiny_quickstart.json")
HF_PYTHON = os.environ.get("AMX_CHECK_HF_PYTHON")
needs_hf_python = pytest.mark.skipif(
    not HF_PYTHON, reason="set AMX_CHECK_HF_PYTHON to an interpreter with torch and transformers")


def test_amx_check_is_cpu_check():
  config = os.path.join(REPO_ROOT, "tests", "testdata", "original_model", "albert_config.json")
  runs = [subprocess.run([sys.executable, tool, f"--config={config}"], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=120, check=False)
          for tool in (TOOL, os.path.join(REPO_ROOT, "tools", "cpu_check.py"))]
  assert [r.returncode for r in runs] == [2, 2]
  assert runs[0].stderr.strip().splitlines()[-1] == runs[1].stderr.strip().splitlines()[-1] == (
      f"error: --config={config}: max_position_embeddings is 64, under the 128 tokens the bars "
      "are at; use a config with more positions, or shorter --serving_tokens/--short_tokens/"
      "--seq_length")


# -- tools/hf_torch_bench.py ----------------------------------------------------------------------
@pytest.mark.parametrize("preset", ["base", "large", "xxlarge"])
def test_hf_config_is_the_one_our_config_exports(preset):
  ours = to_hf_config(AlbertConfig.from_preset(preset))
  values = hf_torch_bench.hf_config_values(hf_torch_bench.config_path(preset))
  for key, value in values.items():
    if key != "classifier_dropout_prob":  # ours writes HF's default head dropout, 0.1
      assert ours[key] == value, key
  assert values["hidden_act"] == "gelu_new" and values["layer_norm_eps"] == 1e-12
  assert set(hf_torch_bench.HF_FIELDS) <= set(values)


def test_hf_config_of_other_sharings(tmp_path):
  base = AlbertConfig.from_preset("base")
  path = tmp_path / "albert_config.json"
  path.write_text(base.replace(parameter_sharing="not-shared").to_json_string())
  values = hf_torch_bench.hf_config_values(str(path))
  assert values["num_hidden_groups"] == 12 == to_hf_config(base.replace(
      parameter_sharing="not-shared"))["num_hidden_groups"]
  path.write_text(base.replace(parameter_sharing="shared-attention").to_json_string())
  with pytest.raises(hf_torch_bench.UsageError, match="parameter_sharing 'shared-attention'"):
    hf_torch_bench.hf_config_values(str(path))
  with pytest.raises(hf_torch_bench.UsageError, match="--config=huge: no such"):
    hf_torch_bench.config_path("huge")


def test_hf_command_and_lines():
  argv = hf_torch_bench.command("/hf/python", config="base", mode=["forward", "train"],
                                steps=3, threads=None)
  assert argv == ["/hf/python", HF_TOOL, "--config=base", "--mode=forward,train", "--steps=3"]
  args = hf_torch_bench.parse_args(argv[2:])
  assert (args.config, args.mode, args.steps) == ("base", ["forward", "train"], 3)
  assert args.mixed_precision == ["float32", "mixed_bfloat16"] and args.batch_size == 8
  assert hf_torch_bench.parse_lines('notice\n{"mode": "forward"}\n') == [{"mode": "forward"}]
  # Another peer's program (tools/kerashub_bench.py) runs from the same command line.
  assert hf_torch_bench.command("/py", tool="/t/kh.py", steps=1) == [
      "/py", "/t/kh.py", "--steps=1"]
  assert hf_torch_bench._without_hf_python(
      ["--hf_python", "/x", "--steps=2", "--hf_python=/y"]) == ["--steps=2"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None,
                    reason="torch is installed in this interpreter")
def test_hf_bench_without_torch_names_the_fix():
  result = subprocess.run([sys.executable, HF_TOOL, "--steps=1"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
  assert result.returncode == 2 and result.stdout == ""
  (line,) = result.stderr.strip().splitlines()
  assert line.startswith("error: ") and "has no torch" in line and "--hf_python=" in line
  with pytest.raises(hf_torch_bench.UsageError, match="--hf_python=.*torch and transformers"):
    hf_torch_bench.check_interpreter(sys.executable)
  with pytest.raises(hf_torch_bench.UsageError, match=r"--kerashub_python=\S+: cannot import nope"):
    hf_torch_bench.check_interpreter(sys.executable, "import nope", "--kerashub_python", "nope",
                                     "pip install nope")


@pytest.mark.slow
@needs_hf_python
def test_hf_bench_times_each_mode_and_precision_without_tensorflow():
  result = subprocess.run(
      [sys.executable, HF_TOOL, f"--hf_python={HF_PYTHON}", f"--config={TINY_CONFIG}",
       "--batch_size=2", "--seq_length=16", "--num_predictions=3", "--warmup_steps=1",
       "--steps=2", "--threads=1"],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)
  assert result.returncode == 0, result.stderr[-2000:]
  lines = hf_torch_bench.parse_lines(result.stdout)
  assert [(l["mode"], l["mixed_precision"]) for l in lines] == [
      ("forward", "float32"), ("train", "float32"), ("forward", "mixed_bfloat16"),
      ("train", "mixed_bfloat16")]
  # AlbertForPreTraining's parameters: the tiny config's, pretraining heads included.
  config = AlbertConfig.from_json_file(TINY_CONFIG)
  e, h, i, v = config.embedding_size, config.hidden_size, config.intermediate_size, 2000
  embeddings = (v + config.max_position_embeddings + 2) * e + 2 * e
  layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
  heads = (e * h + h) + (h * h + h) + (h * e + e) + 2 * e + v + (h * 2 + 2)
  for line in lines:
    assert line["runtime"] == "hf_torch" and line["tensorflow_loaded"] is False
    assert line["threads"] == 1 and line["batch_size"] == 2 and line["seconds_per_step"] > 0
    assert line["examples_per_second"] == pytest.approx(2 / line["seconds_per_step"], rel=1e-2)
    assert line["parameters"] == embeddings + layer + heads
