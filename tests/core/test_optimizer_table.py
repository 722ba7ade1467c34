"""The optimizer table (albert_tf.core.optimizer_table): --optimizer's choices, the class
create_optimizer builds, the slot names the checkpoints skip and write, and the slot copies of
the memory estimate all come from it; a new optimizer is one entry."""

import ast
import glob
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from albert_tf.checkpoints import layout
from albert_tf.core import errors, optimizer_table
from albert_tf.core.config import AlbertConfig
from albert_tf.optimization import AdamWeightDecay, Lamb, create_optimizer
from albert_tf.training import footprints
from helpers import REPO_ROOT


class HeavyBall(AdamWeightDecay):
  """A stand-in for a new optimizer: AdamW's arithmetic, a table entry of its own with three
  slots."""


HEAVY_BALL = optimizer_table.OptimizerEntry(f"{__name__}.HeavyBall", ("m1", "m2", "m3"),
                                            "a test's optimizer")


def test_the_table_builds_the_original_optimizers():
  assert optimizer_table.names() == ["adamw", "lamb"]
  assert type(create_optimizer("lamb")) is Lamb
  assert type(create_optimizer("adamw", weight_decay_rate=0.5)) is AdamWeightDecay
  assert create_optimizer("adamw", weight_decay_rate=0.5).weight_decay_rate == 0.5
  with pytest.raises(errors.UsageError, match=r"Not supported optimizer: 'sgd' \(choose lamb or "
                     r"adamw\)"):
    create_optimizer("sgd")


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_checkpoint_slot_names_are_the_tables(name):
  optimizer = create_optimizer(name)
  w = tf.Variable([1.0, 2.0])
  optimizer.build([w], {id(w): "bert/pooler/dense/kernel"})
  written = sorted(optimizer.slot_tensors())
  slots = optimizer_table.entry(name).slots
  assert written == sorted(f"bert/pooler/dense/kernel/{s}" for s in slots)
  # What the optimizer writes, the readers skip as optimizer state; the weight itself is kept.
  assert not [n for n in written if layout.is_model_weight_name(n)]
  assert layout.is_model_weight_name("bert/pooler/dense/kernel")


@pytest.mark.slow
def test_every_binary_offers_the_tables_optimizers():
  code = ("import importlib, json, sys\nfrom absl import flags\nout = {}\n"
          "for m in sys.argv[1:]:\n"
          "  importlib.import_module('albert_tf.' + m)\n"
          "  out[m] = sorted(flags.FLAGS['optimizer'].parser.enum_values)\n"
          "print(json.dumps(out))")
  # One binary a process: absl holds one set of flags a process.
  for module in ("run_pretraining", "run_classifier", "run_squad_v2"):
    result = subprocess.run([sys.executable, "-c", code, module], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=120, check=True)
    assert f'"{module}": ["adamw", "lamb"]' in result.stdout, result.stdout


def test_a_new_optimizer_is_one_entry(monkeypatch):
  config = AlbertConfig.from_dict({"vocab_size": 100, "hidden_size": 32, "num_attention_heads": 4,
                                   "intermediate_size": 64, "embedding_size": 16})
  before = footprints.estimate(config, 2, 16, optimizer="adamw")
  monkeypatch.setitem(optimizer_table.OPTIMIZERS, "heavy_ball", HEAVY_BALL)
  assert type(create_optimizer("heavy_ball")) is HeavyBall
  assert "/m3" in optimizer_table.slot_suffixes()
  # One more float32 copy of the weights than AdamW's two slots.
  after = footprints.estimate(config, 2, 16, optimizer="heavy_ball")
  assert after.state - before.state == 4 * footprints.parameter_count(config)
  inference = (footprints.inference_estimate(config, 2, 16, optimizer="heavy_ball").state -
               footprints.inference_estimate(config, 2, 16, optimizer="adamw").state)
  assert inference == 4 * footprints.parameter_count(config)


def test_no_optimizer_list_is_written_out_beside_the_table():
  # A list or tuple of optimizer names anywhere in the package is a second home for them.
  names = set(optimizer_table.names())
  found = []
  for path in glob.glob(os.path.join(REPO_ROOT, "albert_tf", "**", "*.py"), recursive=True):
    if path.endswith(os.path.join("core", "optimizer_table.py")):
      continue
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
      if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        values = {e.value for e in node.elts if isinstance(e, ast.Constant)}
        if len(values & names) >= 2:
          found.append(f"{os.path.relpath(path, REPO_ROOT)}:{node.lineno}")
  assert not found, found
