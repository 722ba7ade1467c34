"""The README's main job, shortened: SentencePiece, data, pretraining, held-out evaluation."""

import os
import subprocess

import pytest

from helpers import REPO_ROOT


def _metrics(path):
  with open(path) as f:
    return {k: float(v) for k, v in (line.strip().split(" = ") for line in f)}


@pytest.mark.slow
def test_quickstart_learns(tmp_path):
  env = dict(os.environ, WORK=str(tmp_path / "qs"), STEPS="200")
  result = subprocess.run(["bash", os.path.join(REPO_ROOT, "tools", "quickstart.sh")],
                          capture_output=True, text=True, timeout=900, env=env)
  assert result.returncode == 0, result.stderr[-3000:]
  before = _metrics(tmp_path / "qs" / "eval_results_step0.txt")
  after = _metrics(tmp_path / "qs" / "model" / "eval_results.txt")
  assert before["global_step"] == 0 and after["global_step"] == 200
  assert after["masked_lm_loss"] < before["masked_lm_loss"] - 1.0
  assert after["masked_lm_accuracy"] > before["masked_lm_accuracy"] + 0.03
