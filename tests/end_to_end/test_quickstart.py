"""The README's main job, as a user runs it: this checkout's wheel installed by pip in a plain
venv, with the dependencies it declares and nothing else (tests/installed_package.py),
tools/quickstart.sh through its albert-* commands (the session's
`quickstart` fixture, tests/conftest.py), and the held-out metrics equal to the README's table to
its printed digits (the run is seeded throughout)."""

import os
import re

import pytest

from albert_tf.core import hardware
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


# The table was measured on x86-64 CPUs with AVX-512, where every run prints its digits. Other
# CPUs run other oneDNN kernels (and XLA code for their own instruction set): their float sums
# round differently, which 400 steps of training carry into the last printed digits (the README
# says so). There, each value may differ from the table by this many units of its last digit:
# trained rows more than the untrained step-0 row.
OTHER_CPU_UNITS = {"step 0": 2, "trained": 10}


def _units_allowed(step):
  if "avx512f" in hardware.cpu_flags():
    return 0
  return OTHER_CPU_UNITS["step 0" if step == 0 else "trained"]


def assert_matches_readme(step0_file, final_file):
  table = readme_table()
  for path in (step0_file, final_file):
    metrics = read_metrics(path)
    step = int(metrics["global_step"])
    assert step in table, f"README's table has no step {step} row"
    got = {m: printed_like(metrics[m], table[step][m]) for m in METRICS}
    units = _units_allowed(step)
    off = {m: round(abs(float(got[m]) - float(table[step][m])) /
                    10 ** -len(table[step][m].split(".")[1])) for m in METRICS}
    assert all(o <= units for o in off.values()), (
        f"step {step}: the quick start gave {got}, the README's table says {table[step]} "
        f"(at most {units} units of the last digit apart on this CPU)")


@pytest.mark.slow
def test_quickstart_from_the_wheel_reproduces_the_readme(quickstart):
  # tests/conftest.py: the wheel's quick start, run once per session for every test that needs it.
  result, work = quickstart.result, quickstart.out
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Traceback" not in result.stderr
  assert_matches_readme(work / "eval_results_step0.txt", work / "model" / "eval_results.txt")
