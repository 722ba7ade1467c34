"""--help on every binary (`python -m albert_tf.<binary>` and the `albert-*` scripts) lists the
binary's own flags and the shared albert_tf flags it reads, with their help, exits 0 and loads no
TensorFlow; --helpfull is absl's."""

import ast
import os
import subprocess
import sys
import tomllib

import pytest

from helpers import REPO_ROOT, run_binary

with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as _f:
  SCRIPTS = tomllib.load(_f)["project"]["scripts"]
BINARIES = sorted(entry.split(":")[0].split(".")[-1] for entry in SCRIPTS.values())

# Flags each binary must list: its own and shared ones (common_flags, squad.flags,
# export.portable_flags), as --helpfull alone showed them before.
EXPECTED = {
    "create_pretraining_data": ["--input_file", "--output_file", "--dupe_factor"],
    "run_pretraining": ["--input_file", "--init_checkpoint", "--num_train_steps",
                        "--save_checkpoints_steps", "--strategy"],
    "run_classifier": ["--task_name", "--init_checkpoint", "--max_seq_length", "--train_step"],
    "run_squad_v1": ["--train_file", "--doc_stride", "--init_checkpoint"],
    "run_squad_v2": ["--train_file", "--doc_stride", "--init_checkpoint"],
    "run_race": ["--data_dir", "--init_checkpoint", "--max_qa_length"],
    "run_ner": ["--doc_stride", "--init_checkpoint", "--label_list", "--spm_model_file"],
    "export_checkpoints": ["--init_checkpoint", "--export_path", "--format"],
    "export_saved_model": ["--init_checkpoint", "--export_dir", "--serving_precision"],
    "export_tflite": ["--init_checkpoint", "--output_file", "--quantize"],
    "export_onnx": ["--init_checkpoint", "--output_file", "--quantize", "--opset"],
    "export_tfhub": ["--export_type", "--export_path", "--default_seq_length",
                     "--init_checkpoint", "--spm_model_file", "--vocab_file"],
}

# What an `albert-*` script does (pip's console-script wrapper: its __main__ is not the
# binary), then whether TensorFlow got imported.
_SCRIPT = r"""
import sys
from importlib import import_module
module, sys.argv = sys.argv[1], sys.argv[2:]  # argv[0]: the script's name
code = None
try:
  import_module("albert_tf." + module).run()
except SystemExit as e:
  code = e.code
print("tensorflow imported:", "tensorflow" in sys.modules, "exit:", code)
"""


def test_every_script_is_listed():
  assert set(EXPECTED) == set(BINARIES)


def _assert_lists(text, binary):
  for flag in EXPECTED[binary] + ["--verbose"]:
    assert f"\n  {flag}: " in text or f"\n  --[no]{flag[2:]}: " in text, (flag, text)
  assert "Try --helpfull" not in text and "--helpfull lists absl's flags too." in text
  assert "--flagfile" not in text  # absl's own flags stay in --helpfull


@pytest.mark.parametrize("binary", BINARIES)
def test_help_of_python_m(binary):
  result = run_binary(binary, ["--help"], check=False, timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  _assert_lists(result.stdout, binary)
  with open(os.path.join(REPO_ROOT, "albert_tf", f"{binary}.py"), encoding="utf-8") as f:
    doc = ast.get_docstring(ast.parse(f.read()))
  assert result.stdout.startswith(doc.splitlines()[0]), result.stdout[:300]


@pytest.mark.parametrize("binary,argument", [("run_ner", "--help"), ("export_onnx", "-h"),
                                             ("run_pretraining", "--helpshort")])
def test_help_of_the_script_loads_no_tensorflow(binary, argument):
  script = next(name for name, entry in SCRIPTS.items()
                if entry == f"albert_tf.{binary}:run")
  result = subprocess.run([sys.executable, "-c", _SCRIPT, binary, script, argument],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.rstrip().endswith("tensorflow imported: False exit: 0"), result.stdout
  _assert_lists(result.stdout, binary)
  assert f"\nalbert_tf.{binary}:" in result.stdout or binary.startswith("run_squad")


def test_help_needs_no_required_flag_and_helpfull_is_absls():
  # export_onnx requires --output_file: asking how to give it must not be refused for lacking it.
  result = run_binary("export_onnx", ["--help"], check=False, timeout=120)
  assert result.returncode == 0 and "error:" not in result.stderr, result.stderr
  result = run_binary("export_onnx", ["--helpfull"], check=False, timeout=120)
  assert "--flagfile" in result.stdout and "--output_file" in result.stdout
