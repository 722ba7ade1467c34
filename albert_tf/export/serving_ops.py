"""The ops a SavedModel needs at load time, for checking exports against an older TF Serving.

TF Serving links a fixed TensorFlow and tensorflow-text: a graph using an op either lacks fails
to load with "Op type not registered". tensorflow/serving 2.12.0 through 2.19 embed
tensorflow-text 2.12.1 (2.20 embeds 2.20); tests/testdata/serving_ops_tf2.12.txt lists what
TF 2.12.0 with tensorflow-text 2.12.1 registers (written by tools/serving_ops.py).
"""

import os

from tensorflow.core.protobuf import saved_model_pb2

from albert_tf.core import io


def saved_model_ops(export_path):
  """Every op type in the SavedModel at `export_path`: its graph's nodes and those of every
  function in the graph's library (the tf.functions behind the signatures). Sorted list."""
  path = os.path.join(export_path, "saved_model.pb")
  saved = saved_model_pb2.SavedModel()
  with io.open_binary(path) as f:
    saved.ParseFromString(f.read())
  ops = set()
  for meta_graph in saved.meta_graphs:
    graph = meta_graph.graph_def
    ops.update(node.op for node in graph.node)
    for function in graph.library.function:
      ops.update(node.op for node in function.node_def)
    # Calls of library functions appear as nodes whose op is the function's name.
    ops.difference_update(function.signature.name for function in graph.library.function)
  return sorted(ops)


def read_allowlist(path):
  """Op names of an allowlist file: one per line, '#' comments."""
  with io.open_text(path) as f:
    return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def ops_missing_from(export_path, allowlist_path):
  """The ops of the SavedModel that the allowlist lacks (sorted; empty when it loads)."""
  allowed = read_allowlist(allowlist_path)
  return [op for op in saved_model_ops(export_path) if op not in allowed]
