"""export.onnx_layer_norm: tf2onnx's ten-node LayerNorm becomes one LayerNormalization node with
the same outputs in ONNX Runtime, and nothing else is touched (a value read elsewhere, another
axis, an opset without the op). Graphs built by hand here; the real export's count is asserted in
test_portable_exports."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402 -- only where onnx imports (importorskip above)

from albert_tf.export.onnx_layer_norm import fuse_layer_norms  # noqa: E402 -- only where onnx imports (importorskip above)

HIDDEN = 8
EPSILON = 1e-12


def _graph(mean_op="GlobalAveragePool", opset=17, rank=3, extra_output=None, scale_order=None):
  """x -> LayerNorm (tf2onnx's spelling of layers.common.LayerNorm) -> Add(., x) -> y."""
  rng = np.random.default_rng(0)
  inits = [numpy_helper.from_array(rng.normal(size=HIDDEN).astype(np.float32), "gamma"),
           numpy_helper.from_array(rng.normal(size=HIDDEN).astype(np.float32), "beta"),
           numpy_helper.from_array(np.array(EPSILON, np.float32), "eps")]
  if mean_op == "ReduceMean" and opset >= 18:  # axes became an input in opset 18
    inits.append(numpy_helper.from_array(np.array([-1], np.int64), "axes"))
    mean = lambda source, out: helper.make_node("ReduceMean", [source, "axes"], [out])
  elif mean_op == "ReduceMean":
    mean = lambda source, out: helper.make_node("ReduceMean", [source], [out], axes=[-1])
  else:
    mean = lambda source, out: helper.make_node(mean_op, [source], [out])
  nodes = [
      mean("x", "mean"),
      helper.make_node("Sub", ["x", "mean"], ["centered"]),
      helper.make_node("Mul", ["centered", "centered"], ["square"]),
      mean("square", "variance"),
      helper.make_node("Add", ["variance", "eps"], ["shifted"]),
      helper.make_node("Sqrt", ["shifted"], ["root"]),
      helper.make_node("Reciprocal", ["root"], ["inverse"]),
      helper.make_node("Mul", scale_order or ["inverse", "gamma"], ["scale"]),
      helper.make_node("Mul", ["centered", "scale"], ["scaled"]),
      helper.make_node("Add", ["scaled", "beta"], ["normed"]),
      helper.make_node("Add", ["normed", "x"], ["y"]),
  ]
  shape = [2, 3, HIDDEN] if rank == 3 else [6, HIDDEN] if rank == 2 else [2, 3, 1, HIDDEN]
  outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)]
  if extra_output:
    outputs.append(helper.make_tensor_value_info(extra_output, TensorProto.FLOAT, None))
  graph = helper.make_graph(nodes, "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                          shape)],
                            outputs, inits)
  # IR version 8 (ONNX 1.10), which every ONNX Runtime since 1.10 reads; tf2onnx writes the same.
  return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _run(proto, x):
  session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
  return session.run(None, {"x": x})


@pytest.mark.parametrize("mean_op,rank,opset", [("GlobalAveragePool", 3, 17),
                                                ("ReduceMean", 2, 17), ("ReduceMean", 3, 18)])
def test_the_subgraph_becomes_one_node_with_the_same_outputs(mean_op, rank, opset):
  proto = _graph(mean_op, opset=opset, rank=rank)
  x = np.random.default_rng(1).normal(size=[2, 3, HIDDEN] if rank == 3 else [6, HIDDEN])
  x = (3 + 5 * x).astype(np.float32)  # far from normalized already
  expected = _run(proto, x)[0]
  assert fuse_layer_norms(proto) == 1
  onnx.checker.check_model(proto, full_check=True)
  assert [node.op_type for node in proto.graph.node] == ["LayerNormalization", "Add"]
  layer_norm = proto.graph.node[0]
  assert list(layer_norm.input) == ["x", "gamma", "beta"]
  attrs = {a.name: helper.get_attribute_value(a) for a in layer_norm.attribute}
  assert attrs["axis"] == -1 and attrs["epsilon"] == pytest.approx(EPSILON)
  # The epsilon scalar (and the means' axes) are read by nothing now and are gone.
  assert sorted(init.name for init in proto.graph.initializer) == ["beta", "gamma"]
  # Two kernels (ORT's LayerNormalization, the ten float32 nodes): a few float32 roundings
  # of values of magnitude ~3.
  np.testing.assert_allclose(_run(proto, x)[0], expected, rtol=0, atol=2e-5)


def test_gamma_may_come_first_in_the_scale():
  proto = _graph(scale_order=["gamma", "inverse"])
  assert fuse_layer_norms(proto) == 1


@pytest.mark.parametrize("case", ["intermediate read elsewhere", "opset 16",
                                  "GlobalAveragePool of rank 4"])
def test_anything_else_is_left_as_it_is(case):
  proto = {"intermediate read elsewhere": lambda: _graph(extra_output="variance"),
           "opset 16": lambda: _graph(opset=16),
           "GlobalAveragePool of rank 4": lambda: _graph(rank=4)}[case]()
  before = proto.SerializeToString()
  assert fuse_layer_norms(proto) == 0
  assert proto.SerializeToString() == before


def test_ort_optimize_keeps_the_residual_add_apart():
  """export.onnx.ort_optimize leaves a residual Add and the LayerNormalization after it as they
  are: ORT's fused SkipLayerNormalization was the slower kernel (the comment there has the
  figures)."""
  pytest.importorskip("sympy")  # ORT's transformer optimizer imports it
  from albert_tf.export import onnx as onnx_export
  rng = np.random.default_rng(0)
  weights = [numpy_helper.from_array(rng.normal(size=HIDDEN).astype(np.float32), name)
             for name in ("gamma", "beta")]
  inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3, HIDDEN])
            for name in ("x", "skip")]
  graph = helper.make_graph(
      [helper.make_node("Add", ["x", "skip"], ["sum"]),
       helper.make_node("LayerNormalization", ["sum", "gamma", "beta"], ["y"], axis=-1,
                        epsilon=EPSILON)],
      "residual", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, HIDDEN])],
      weights)
  proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
  config = type("Config", (), {"num_attention_heads": 2, "hidden_size": HIDDEN})()
  ops = [node.op_type for node in onnx_export.ort_optimize(proto, config).graph.node]
  assert ops == ["Add", "LayerNormalization"]
