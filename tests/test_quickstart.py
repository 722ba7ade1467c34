"""The README's main job, as a user runs it: this checkout's wheel installed by pip in a plain
venv, with the dependencies it declares and nothing else (tests/installed_package.py),
tools/quickstart.sh through its albert-* commands (the session's
`quickstart` fixture, tests/conftest.py), and the held-out metrics equal to the README's table to
its printed digits (the run is seeded throughout)."""

import os
import re

import pytest

from helpers import REPO_ROOT

README = os.path.join(REPO_ROOT, "README.md")
METRICS = ("masked_lm_accuracy", "masked_lm_loss", "sentence_order_accuracy",
           "sentence_order_loss")


def read_metrics(path):
  with open(path) as f:
    return {k: float(v) for k, v in (line.strip().split(" = ") for line in f)}


def readme_table():
  """{step: {metric: printed text}} of the README's quick start table."""
  with open(README, encoding="utf-8") as f:
    text = f.read()
  header = re.search(r"^ *\| \| " + r" \| ".join(METRICS) + r" \|$", text, re.M)
  assert header, "README: the quick start's metrics table is missing"
  rows = {}
  for line in text[header.end():].splitlines()[2:]:
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) != len(METRICS) + 1 or not cells[0].startswith("step "):
      break
    rows[int(cells[0].split()[1])] = dict(zip(METRICS, cells[1:]))
  return rows


def printed_like(value, printed):
  """value rounded to as many decimals as `printed` shows."""
  decimals = len(printed.split(".")[1]) if "." in printed else 0
  return f"{value:.{decimals}f}"


def assert_matches_readme(step0_file, final_file):
  table = readme_table()
  for path in (step0_file, final_file):
    metrics = read_metrics(path)
    step = int(metrics["global_step"])
    assert step in table, f"README's table has no step {step} row"
    got = {m: printed_like(metrics[m], table[step][m]) for m in METRICS}
    assert got == table[step], (f"step {step}: the quick start gave {got}, the README's table "
                                f"says {table[step]}")


@pytest.mark.slow
def test_quickstart_from_the_wheel_reproduces_the_readme(quickstart):
  # tests/conftest.py: the wheel's quick start, run once per session for every test that needs it.
  result, work = quickstart.result, quickstart.out
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Traceback" not in result.stderr
  assert_matches_readme(work / "eval_results_step0.txt", work / "model" / "eval_results.txt")
