"""Our own (object-based, tf.train.Checkpoint) checkpoints: telling them from the released
layout, and loading them (formats.load_checkpoint picks the format)."""

import collections

import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from albert_tf.core import deprecation, errors
from albert_tf.checkpoints import layout, original

_OBJECT_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"
# Children of the root of a Runner's checkpoint that hold training state, not model weights.
_TRAINING_STATE = ("optimizer", "global_step", "loss_scale", "save_counter", "dropout_seeds",
                   "records_consumed")
# The object path of the encoder's transformer layers in our checkpoints.
_LAYERS_PATH = "encoder/transformer/"


def is_original_layout(prefix):
  """True for a TF1 name-based checkpoint (bert/..., cls/...), False for ours."""
  reader = original.checkpoint_reader(original.resolve_checkpoint_path(prefix))
  return is_original_layout_names(reader.get_variable_to_shape_map())


def is_original_layout_names(names):
  """is_original_layout of a checkpoint holding tensors `names`."""
  if _OBJECT_GRAPH in names:
    return False
  return any(n.startswith("bert/") for n in names)


def load_ours_checkpoint(model, prefix, init_from_group0=False, reader=None):
  """Loads one of our checkpoints (a resolved prefix) into `model`: finds each model variable's
  key through the checkpoint's object graph, then loads as the original layout does.
  tf.train.Checkpoint's own restore would leave variables the checkpoint lacks at their random
  values without a word.

  Args:
    model: any albert_tf model (see layout.model_parts).
    prefix: the checkpoint prefix (original.resolve_checkpoint_path's).
    init_from_group0: initialise layer groups the checkpoint lacks from its group 0.
    reader: the checkpoint's reader when the caller has it open.

  Returns:
    A LoadReport; unused weights go by their object paths.

  Raises:
    ValueError: a variable of another shape; KeyError: no encoder, or encoder variables the
      checkpoint lacks, or transformer layers the model has no place for.
  """
  reader = reader or original.checkpoint_reader(prefix)
  graph = _object_graph(reader, prefix)
  held = {child.local_name for child in graph.nodes[0].children}
  if "encoder" not in held:
    raise errors.MissingKeyError(
        f"checkpoint {prefix} holds no encoder weights (found {sorted(held)})")
  paired = _pair_objects(tf.train.Checkpoint(**layout.model_parts(model)), graph)
  targets = layout.original_variable_map(model)
  sources = {}
  for name, variable in targets.items():
    key = _variable_key(graph.nodes[paired[id(variable)]]) if id(variable) in paired else None
    if key is not None:
      sources[name] = key
  paired_nodes = set(paired.values())
  unused = sorted(path for node_id, path in _weight_paths(graph).items()
                  if node_id not in paired_nodes)
  original.check_layers_used([p for p in unused if p.startswith(_LAYERS_PATH)], prefix)
  loaded, missing, from_group0 = original.load_variables(targets, sources, reader, prefix,
                                                         init_from_group0)
  return original.LoadReport(prefix, loaded, missing, unused, from_group0)


def _object_graph(reader, prefix):
  if not reader.has_tensor(_OBJECT_GRAPH):
    raise errors.MissingKeyError(
        f"checkpoint {prefix} is in neither known layout: no {_OBJECT_GRAPH} (ours, written by "
        "tf.train.Checkpoint) and no bert/... variables (the released layout)")
  graph = trackable_object_graph_pb2.TrackableObjectGraph()
  graph.ParseFromString(reader.get_tensor(_OBJECT_GRAPH))
  return graph


def _pair_objects(root, graph):
  """{id(model object): checkpoint node id}, matching child names down from the root as
  tf.train.Checkpoint's restore does. Model objects the checkpoint lacks are left out."""
  paired = {id(root): 0}
  queue = collections.deque([(root, 0)])
  while queue:
    obj, node_id = queue.popleft()
    children = tf.train.TrackableView.children(obj)
    for child in graph.nodes[node_id].children:
      target = children.get(child.local_name)
      if target is not None and id(target) not in paired:
        paired[id(target)] = child.node_id
        queue.append((target, child.node_id))
  return paired


def _variable_key(node):
  for attribute in node.attributes:
    if attribute.name == "VARIABLE_VALUE":
      return attribute.checkpoint_key
  return None


def _weight_paths(graph):
  """{node id: object path} of the checkpoint's model weights (training state left out).

  The checkpoint keys cannot name them: a variable that the optimizer also tracks may be keyed
  under optimizer/_trainable_variables/N, whichever path to it tf.train.Checkpoint met first.
  """
  paths, seen = {}, {0}
  queue = collections.deque((child, child.local_name) for child in graph.nodes[0].children
                            if child.local_name not in _TRAINING_STATE)
  while queue:
    child, path = queue.popleft()
    if child.node_id in seen:
      continue
    seen.add(child.node_id)
    node = graph.nodes[child.node_id]
    if _variable_key(node) is not None:
      paths[child.node_id] = path
    queue.extend((c, f"{path}/{c.local_name}") for c in node.children)
  return paths


# Loading any format, and a checkpoint's step, moved to formats (albert_tf.load_checkpoint).
__getattr__ = deprecation.moved_names(__name__, {
    "checkpoint_global_step": "albert_tf.checkpoints.formats",
    "load_checkpoint": "albert_tf.checkpoints.formats",
})
