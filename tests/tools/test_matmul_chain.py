"""tools/matmul_chain.py, the model's own matmul chain (tools/cpu_check.py's reference): its
FLOPs against the pretraining count and a hand count, the weights each block reads under every
parameter sharing, the TensorFlow and ONNX chains holding the matmuls and nothing else (int8:
quantized as the int8 export is), the int8 line without the portable extra, its one-line
refusals, and (slow) the tool end to end on the fixture config. Speeds are never asserted."""

import collections
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import albert_tf
import warm_binaries
from helpers import ORIGINAL_MODEL, REPO_ROOT
from tool_runs import error_line, run_tool

sys.path.insert(0, os.path.join(REPO_ROOT, "tools"))
import benchmark
import matmul_chain

TOOL = os.path.join(REPO_ROOT, "tools", "matmul_chain.py")
TINY_CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")


@pytest.fixture(name="tiny")
def fixture_tiny():
  return albert_tf.AlbertConfig.from_json_file(TINY_CONFIG)


@pytest.mark.parametrize("tokens, batch_size", [(8, 1), (16, 2), (64, 3)])
def test_flops_are_the_encoders_of_the_pretraining_count(tiny, tokens, batch_size):
  spec = matmul_chain.chain_spec(tiny, tokens, batch_size)
  # The pretraining count without masked positions, less the sentence-order logits [B, H] x
  # [H, 2]: the projection, the blocks and the pooler.
  encoder = (benchmark.pretraining_flops(tiny, batch_size, tokens, 0).forward
             - 2 * batch_size * tiny.hidden_size * 2)
  assert spec.flops == encoder
  # 1 projection, 8 matmuls in each of the 3 blocks, 1 pooler.
  assert spec.matmuls == 1 + 3 * 8 + 1


def test_flops_hand_count(tiny):
  # The fixture config: E=16, H=32, N=4 heads (d=8), I=64, 3 layers; B=2, T=8.
  projection = 2 * 16 * 16 * 32                # [16, 16] x [16, 32]
  qkv_and_output = 4 * (2 * 16 * 32 * 32)      # [16, 32] x [32, 32]
  scores = 2 * 8 * 8 * 8 * 8                   # [8, 8, 8] x [8, 8, 8]
  context = 2 * 8 * 8 * 8 * 8                  # [8, 8, 8] x [8, 8, 8]
  ffn = 2 * 16 * 32 * 64 + 2 * 16 * 64 * 32    # [16, 32] x [32, 64], [16, 64] x [64, 32]
  pooler = 2 * 2 * 32 * 32                     # [2, 32] x [32, 32]
  expected = projection + 3 * (qkv_and_output + scores + context + ffn) + pooler
  assert matmul_chain.chain_spec(tiny, 8, 2).flops == expected == 856_064


def test_no_projection_where_embeddings_are_hidden_sized(tiny):
  same = tiny.replace(embedding_size=tiny.hidden_size)
  spec = matmul_chain.chain_spec(same, 8, 1)
  assert "projection" not in spec.weights and spec.matmuls == 3 * 8 + 1
  assert spec.flops == benchmark.pretraining_flops(same, 1, 8, 0).forward - 2 * 32 * 2


def test_each_block_reads_the_weights_the_models_block_reads(tiny):
  # ALBERT's all-shared layers read one block's weights, every layer.
  assert matmul_chain.block_weights(tiny) == [("group_0/inner_0", "group_0/inner_0")] * 3
  assert sorted(matmul_chain.chain_spec(tiny, 8, 1).weights) == [
      "group_0/inner_0/ffn_in", "group_0/inner_0/ffn_out", "group_0/inner_0/key",
      "group_0/inner_0/output", "group_0/inner_0/query", "group_0/inner_0/value", "pooler",
      "projection"]
  layers = [f"layer_{l}/inner_0" for l in range(3)]
  not_shared = matmul_chain.block_weights(tiny.replace(parameter_sharing="not-shared"))
  assert not_shared == [(f"group_{l}/inner_0",) * 2 for l in range(3)]
  attention = matmul_chain.block_weights(tiny.replace(parameter_sharing="shared-attention"))
  assert attention == [("group_0/inner_0", own) for own in layers]
  ffn = matmul_chain.block_weights(tiny.replace(parameter_sharing="shared-FFN"))
  assert ffn == [(own, "group_0/inner_0") for own in layers]
  # Groups as the original assigns layers to them; inner groups run one after another.
  grouped = tiny.replace(num_hidden_groups=2, inner_group_num=2)
  assert matmul_chain.block_weights(grouped) == [
      (f"group_{g}/inner_{i}",) * 2 for g in (0, 0, 1) for i in (0, 1)]
  assert matmul_chain.chain_spec(grouped, 8, 1).matmuls == 1 + 6 * 8 + 1


def test_the_tensorflow_chain_is_the_matmuls_alone(tiny):
  import tensorflow as tf
  weights = matmul_chain.chain_weights(tiny)
  assert weights["group_0/inner_0/ffn_in"].shape == (32, 64)
  assert abs(float(weights["group_0/inner_0/ffn_in"].std()) - tiny.initializer_range) < 0.005
  x = matmul_chain.chain_input(tiny, 8, 2)
  for precision in ("float32", "bfloat16"):
    call = matmul_chain.tensorflow_call(tiny, 8, 2, precision, weights, x)
    pooled = call()
    assert pooled.shape == (2, 32) and pooled.dtype == precision
    assert not np.any(pooled.numpy().astype(np.float32))  # zeros in, zeros out (no NaN)
  graph = tf.function(lambda x: matmul_chain.encoder_chain(
      tiny, 8, 2, matmul_chain.TensorFlowOps({k: tf.constant(v) for k, v in weights.items()}),
      x)).get_concrete_function(tf.constant(x)).graph
  ops = collections.Counter(op.type for op in graph.get_operations())
  assert ops["MatMul"] + ops["BatchMatMulV2"] == 26 and ops["BatchMatMulV2"] == 6
  # Nothing a request computes besides its matmuls: no softmax, LayerNorm, GELU, add.
  assert set(ops) <= {"MatMul", "BatchMatMulV2", "Reshape", "StridedSlice", "Const",
                      "Placeholder", "Identity"}, ops


def test_the_int8_chain_is_quantized_as_the_int8_export(tiny):
  from albert_tf.export.onnx import DEFAULT_OPSET, quantize_dynamic
  weights = matmul_chain.chain_weights(tiny)
  ops = matmul_chain.OnnxOps(weights)
  output = matmul_chain.encoder_chain(tiny, 8, 1, ops, "x")
  quantized = quantize_dynamic(ops.model("x", [8, 16], output, [1, 32], DEFAULT_OPSET))
  nodes = collections.Counter(node.op_type for node in quantized.graph.node)
  # Every weight's matmul in int8 (projection, 6 per block, pooler); the scores and context,
  # activation by activation, float.
  assert nodes["MatMulInteger"] == 1 + 3 * 6 + 1 and nodes["MatMul"] == 3 * 2
  # The shared block's weights once, as in the export's file.
  int8_weights = [i.name for i in quantized.graph.initializer if i.name.endswith("_quantized")]
  assert sorted(int8_weights) == sorted(f"{name}_quantized" for name in weights)
  x = matmul_chain.chain_input(tiny, 8, 1)
  pooled = matmul_chain.onnx_call(tiny, 8, 1, weights, x, threads=1)()["pooled"]
  assert pooled.shape == (1, 32) and not np.any(pooled)


def test_the_onnx_float32_chain_is_the_same_graph_unquantized(tiny, monkeypatch):
  weights = matmul_chain.chain_weights(tiny)
  x = matmul_chain.chain_input(tiny, 8, 1)
  quantized = []
  monkeypatch.setattr("albert_tf.export.onnx.quantize_dynamic",
                      lambda *a, **k: quantized.append(a) or a[0])
  pooled = matmul_chain.onnx_call(tiny, 8, 1, weights, x, threads=1, int8=False)()["pooled"]
  assert pooled.shape == (1, 32) and not np.any(pooled) and quantized == []
  line = matmul_chain.measure(tiny, weights, 8, 1, "onnx_float32", 1, 0, 2)
  assert (line["runtime"], line["precision"], line["requests"]) == (
      "onnxruntime", "onnx_float32", 2)
  assert line["flops"] == matmul_chain.chain_spec(tiny, 8, 1).flops and line["p50_ms"] >= 0


def test_int8_without_the_portable_extra_is_an_error_line(tiny, monkeypatch):
  monkeypatch.setitem(sys.modules, "onnx", None)
  line = matmul_chain.measure(tiny, matmul_chain.chain_weights(tiny), 8, 1, "int8", 2, 0, 1)
  assert line == {"mode": "matmul_chain", "precision": "int8", "tokens": 8, "batch_size": 1,
                  "flops": 428_032, "threads": 2, "runtime": "onnxruntime",
                  "error": "tools/matmul_chain.py --precisions=int8 needs the portable extra (no "
                           "module named 'onnx'): pip install \"albert-tf[portable]\""}


@pytest.mark.parametrize("flags, message", [
    (["--tokens=0"], "error: --tokens=0: give positive integers separated by commas"),
    (["--tokens=8", "--batch_size=two"], "error: --batch_size=two: give positive integers"),
    (["--tokens=8,65"], "error: --tokens=8,65: over the config's max_position_embeddings (64)"),
    (["--tokens=8", "--precisions=float32,int4"],
     "error: --precisions=float32,int4: choose from float32, bfloat16, int8, onnx_float32"),
    (["--tokens=8", "--threads=0"], "error: flag --threads=0: 0 is not a positive integer"),
    (["--config=huge", "--tokens=8"], "error: --config=huge: unknown ALBERT preset 'huge'"),
])
def test_a_bad_flag_is_one_error_line(flags, message):
  # TensorFlow unimportable: every refusal comes before it would load.
  config = [] if any(f.startswith("--config") for f in flags) else [f"--config={TINY_CONFIG}"]
  assert error_line(run_tool("matmul_chain.py", *config, *flags), 2).startswith(message)


def _run(*flags, prelude=""):
  """The tool's lines: from the suite's warm start (tests/warm_binaries.py), or fresh after
  `prelude`, which the warm start cannot run before the modules it has loaded."""
  if not prelude:
    result = warm_binaries.run_script(TOOL, [f"--config={TINY_CONFIG}", *flags], cwd=REPO_ROOT,
                                      timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(l) for l in result.stdout.splitlines()]
  code = prelude + ("import runpy, sys; sys.argv = sys.argv[1:]; "
                    "sys.path.insert(0, __import__('os').path.dirname(sys.argv[0])); "
                    "runpy.run_path(sys.argv[0], run_name='__main__')")
  result = subprocess.run([sys.executable, "-c", code, TOOL, f"--config={TINY_CONFIG}", *flags],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  return [json.loads(l) for l in result.stdout.splitlines()]


@pytest.mark.slow
def test_the_tool_prints_a_line_per_precision():
  lines = _run("--tokens=8", "--requests=5", "--threads=1")
  assert [l["precision"] for l in lines] == ["float32", "bfloat16", "int8", "onnx_float32"]
  flops = benchmark.pretraining_flops(albert_tf.AlbertConfig.from_json_file(TINY_CONFIG), 1, 8,
                                      0).forward - 2 * 32 * 2
  for line in lines:
    assert {k: line[k] for k in ("mode", "tokens", "batch_size", "flops", "threads")} == {
        "mode": "matmul_chain", "tokens": 8, "batch_size": 1, "flops": flops, "threads": 1}
    assert line["p50_ms"] >= 0 and line["requests"] == 5 and "error" not in line
  assert [l["runtime"] for l in lines] == ["tensorflow", "tensorflow", "onnxruntime",
                                            "onnxruntime"]


@pytest.mark.slow
def test_without_onnx_its_lines_name_the_extra_and_the_others_print():
  lines = _run("--tokens=8", "--batch_size=1,2", "--requests=12",
               prelude="import sys; sys.modules['onnx'] = None; ")
  assert [(l["precision"], l["batch_size"]) for l in lines] == [
      (p, b) for b in (1, 2) for p in ("float32", "bfloat16", "int8", "onnx_float32")]
  for line in lines:
    if line["precision"] in ("int8", "onnx_float32"):
      assert "p50_ms" not in line and line["error"].startswith(
          f"tools/matmul_chain.py --precisions={line['precision']} needs the portable extra")
    else:
      assert line["p50_ms"] >= 0 and "error" not in line
      assert line["requests"] == (12 if line["batch_size"] == 1 else 3)  # a sixth, at least 3
