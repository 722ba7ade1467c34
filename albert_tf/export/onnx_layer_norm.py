"""Writes each LayerNorm of a tf2onnx graph as one ONNX LayerNormalization node (opset 17 and
later, the standard domain: every ONNX runtime reads it).

tf2onnx spells layers.common.LayerNorm, (x - mean) * (rsqrt(var + eps) * gamma) + beta over the
last axis, as ten elementwise and reduction nodes:

    mean = GlobalAveragePool(x)            (ReduceMean over the last axis when x is not [B, T, H])
    centered = Sub(x, mean)
    variance = GlobalAveragePool(Mul(centered, centered))
    scale = Mul(Reciprocal(Sqrt(Add(variance, epsilon))), gamma)
    y = Add(Mul(centered, scale), beta)

each one a pass over [B, T, H] in ONNX Runtime (25 LayerNorms a request for ALBERT-base: a
fifth of an int8 request's time, docs/speed.md). As one node ORT runs a single fused
kernel, and at load also folds the residual Add before it in (SkipLayerNormalization), which it
cannot do on the ten nodes, whose GlobalAveragePool it does not recognise as a mean.

Only that exact subgraph is rewritten, when its intermediate values feed nothing else, its
epsilon is a scalar and gamma and beta are [H] weights; anything else is left as it is.
"""

LAYER_NORM_OPSET = 17  # LayerNormalization joined the standard domain in opset 17


def fuse_layer_norms(proto):
  """Rewrites, in place, every LayerNorm subgraph of `proto` (see the module docstring) as one
  LayerNormalization node. Returns the number rewritten: none below opset 17."""
  import onnx
  from onnx import numpy_helper
  if _default_opset(proto) < LAYER_NORM_OPSET:
    return 0
  graph = proto.graph
  constants = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
  ranks = _ranks(proto)
  consumers = {}
  for node in graph.node:
    for name in set(node.input):
      consumers.setdefault(name, []).append(node)
  graph_outputs = {value.name for value in graph.output}

  def only(name, op_type):
    """The single node reading `name`, if it is `op_type` and `name` is no graph output."""
    readers = consumers.get(name, [])
    if len(readers) == 1 and readers[0].op_type == op_type and name not in graph_outputs:
      return readers[0]
    return None

  def other_input(node, name):
    rest = [i for i in node.input if i != name]
    return rest[0] if len(rest) == 1 else None

  def is_last_axis_mean(node, source):
    rank = ranks.get(source)
    if node is None or rank is None:
      return False
    if node.op_type == "GlobalAveragePool":
      return rank == 3  # averages the axes after the first two: the last one only
    if node.op_type != "ReduceMean":
      return False
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    axes = attrs.get("axes")
    if axes is None and len(node.input) > 1 and node.input[1] in constants:
      axes = constants[node.input[1]].tolist()
    return attrs.get("keepdims", 1) == 1 and axes is not None and [a % rank for a in axes] == [
        rank - 1]

  def vector(name, size):
    value = constants.get(name)
    return value is not None and value.shape == (size,)

  fused = []
  for mean in list(graph.node):
    x = mean.input[0] if mean.input else None
    if not is_last_axis_mean(mean, x):
      continue
    sub = only(mean.output[0], "Sub")
    if sub is None or list(sub.input) != [x, mean.output[0]]:
      continue
    centered = sub.output[0]
    readers = consumers.get(centered, [])
    squares = [n for n in readers if n.op_type == "Mul" and list(n.input) == [centered, centered]]
    products = [n for n in readers if n.op_type == "Mul" and n not in squares]
    if len(readers) != 2 or len(squares) != 1 or len(products) != 1 or centered in graph_outputs:
      continue
    square, product = squares[0], products[0]
    variance = only(square.output[0], mean.op_type)
    if not is_last_axis_mean(variance, square.output[0]):
      continue
    add_eps = only(variance.output[0], "Add")
    epsilon = other_input(add_eps, variance.output[0]) if add_eps else None
    if epsilon not in constants or constants[epsilon].size != 1:
      continue
    sqrt = only(add_eps.output[0], "Sqrt")
    reciprocal = only(sqrt.output[0], "Reciprocal") if sqrt else None
    scale = only(reciprocal.output[0], "Mul") if reciprocal else None
    if scale is None or only(scale.output[0], "Mul") is not product:
      continue
    gamma = other_input(scale, reciprocal.output[0])
    hidden = constants[gamma].shape[-1] if gamma in constants and constants[gamma].ndim == 1 else 0
    if other_input(product, scale.output[0]) != centered or not vector(gamma, hidden):
      continue
    add_beta = only(product.output[0], "Add")
    beta = other_input(add_beta, product.output[0]) if add_beta else None
    if not vector(beta, hidden):
      continue
    nodes = [mean, sub, square, variance, add_eps, sqrt, reciprocal, scale, product, add_beta]
    layer_norm = onnx.helper.make_node(
        "LayerNormalization", [x, gamma, beta], [add_beta.output[0]],
        name=mean.name.rsplit("/", 1)[0] + "/LayerNormalization", axis=-1,
        epsilon=float(constants[epsilon].reshape(())))
    fused.append((nodes, layer_norm))

  if not fused:
    return 0
  # Nodes are known by their first output, which SSA makes unique.
  removed = {node.output[0] for nodes, _ in fused for node in nodes}
  replacement = {nodes[-1].output[0]: layer_norm for nodes, layer_norm in fused}
  kept = []
  for node in graph.node:
    if node.output[0] in replacement:
      kept.append(replacement[node.output[0]])  # where the last node was: its readers follow it
    elif node.output[0] not in removed:
      kept.append(node)
  del graph.node[:]
  graph.node.extend(kept)
  # The constants only the removed nodes read (the epsilons, a ReduceMean's axes) go too.
  read_before = {name for nodes, _ in fused for node in nodes for name in node.input}
  read_now = {name for node in graph.node for name in node.input}
  for init in [i for i in graph.initializer if i.name in read_before - read_now]:
    graph.initializer.remove(init)
  return len(fused)


def _default_opset(proto):
  return max((op.version for op in proto.opset_import if op.domain in ("", "ai.onnx")),
             default=0)


def _ranks(proto):
  """{tensor name: rank} for every tensor ONNX's shape inference gives a rank."""
  import onnx
  inferred = onnx.shape_inference.infer_shapes(proto)
  ranks = {}
  for value in (list(inferred.graph.value_info) + list(inferred.graph.input)
                + list(inferred.graph.output)):
    if value.type.tensor_type.HasField("shape"):
      ranks[value.name] = len(value.type.tensor_type.shape.dim)
  for init in proto.graph.initializer:
    ranks[init.name] = len(init.dims)
  return ranks
