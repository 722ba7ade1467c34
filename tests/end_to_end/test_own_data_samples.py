"""The own-data samples of docs/fine-tuning.md learn: each block runs as pasted (with the quick
start's model, the `quickstart` fixture of tests/conftest.py, as work/quickstart: the
`own_data_run` fixture there, whose runs tests/end_to_end/test_readme_commands.py checks too) and
its dev metrics beat what a model that learnt nothing scores.

- regression (ratings_*.csv): a dev pearson above 0.5, and test predictions that spread over
  more than one rating point (a model that learnt only the mean predicts one number);
- multi-label (the JSON-lines sample): a best micro F1 more than 0.1 above that of every
  constant prediction (the same label set for every dev row, the majority label set and the
  all-labels one among them), computed from the block's own --dev_file, and test rows that get
  different label sets.
"""

import csv
import itertools
import json
import os
import re

import pytest

from helpers import REPO_ROOT

DOC = os.path.join(REPO_ROOT, "docs", "fine-tuning.md")
COMMAND = "python3 -m albert_tf.run_classifier --train_file="


def sample_block(marker):
  """The fine-tuning page's own-data block (a bash block of run_classifier on --train_file)
  that holds `marker`."""
  with open(DOC, encoding="utf-8") as f:
    text = f.read()
  blocks = [b for b in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S)
            if b.startswith(COMMAND) and marker in b]
  assert len(blocks) == 1, f"{DOC}: expected one own-data block holding {marker!r}: {blocks}"
  return blocks[0]


def flag(block, name):
  match = re.search(rf"--{name}=(\S+)", block)
  assert match, f"the block has no --{name}: {block}"
  return match.group(1)


def run_block(block, own_data_run):
  """The block's run (the `own_data_run` fixture): asserts it succeeded; returns the block's
  --output_dir there."""
  result, directory = own_data_run(block)[:2]
  assert result.returncode == 0, result.stderr[-4000:]
  return directory / flag(block, "output_dir")


def eval_results(output_dir):
  """{global_step: {metric: value}} of eval_results.txt: a block of sorted `key = value` lines
  per evaluated checkpoint, each ended by a line of `=`."""
  results, block = {}, {}
  with open(output_dir / "eval_results.txt", encoding="utf-8") as f:
    for line in f:
      key, equals, value = line.strip().partition(" = ")
      if equals and key != "best":  # best: the best key metric so far
        block[key] = float(value)
      elif line.startswith("="):
        results[int(block.pop("global_step"))] = block
        block = {}
  assert results, f"{output_dir}/eval_results.txt holds no evaluation"
  return results


def predictions(output_dir):
  with open(output_dir / "submit_results.tsv", encoding="utf-8") as f:
    return [row["prediction"] for row in csv.DictReader(f, delimiter="\t")]


def best_constant_micro_f1(rows):
  """The best micro F1 over dev rows (label sets) of predicting one label set for every row."""
  labels = sorted(set().union(*rows))
  def micro_f1(predicted):
    tp = sum(len(predicted & gold) for gold in rows)
    wrong = sum(len(predicted ^ gold) for gold in rows)
    return 2 * tp / (2 * tp + wrong) if tp else 0.0
  return max(micro_f1(set(chosen)) for n in range(len(labels) + 1)
             for chosen in itertools.combinations(labels, n))


@pytest.mark.slow
def test_the_ratings_sample_learns_the_ratings(own_data_run):
  output_dir = run_block(sample_block("ratings_train.csv"), own_data_run)
  results = eval_results(output_dir)
  best = max(r["pearson"] for r in results.values())
  assert best > 0.5, results
  scores = [float(p) for p in predictions(output_dir)]
  assert max(scores) - min(scores) > 1.0, scores


@pytest.mark.slow
def test_the_multi_label_sample_beats_every_constant_prediction(own_data_run):
  block = sample_block("--label_column=labels")
  with open(os.path.join(REPO_ROOT, flag(block, "dev_file")), encoding="utf-8") as f:
    dev = [frozenset(json.loads(line)["labels"]) for line in f if line.strip()]
  baseline = best_constant_micro_f1(dev)
  output_dir = run_block(block, own_data_run)
  results = eval_results(output_dir)
  best = max(r["micro_f1"] for r in results.values())
  assert best > baseline + 0.1, (baseline, results)
  assert len(set(predictions(output_dir))) > 1, predictions(output_dir)
