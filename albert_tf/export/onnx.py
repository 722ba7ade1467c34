"""ONNX export: the serving function (export.portable) converted with tf2onnx, for ONNX Runtime and
other ONNX runtimes.

Inputs input_ids, input_mask, segment_ids int32 [batch, length], both axes dynamic; outputs as
export.portable names them.

Options:
  quantize=dynamic_range  ONNX Runtime's dynamic quantization: int8 weights (per output channel)
                          for the MatMuls and the embedding Gathers, activations quantized per
                          request; the softmax, LayerNorm and GELU stay float, as in
                          export.tflite, for the accuracy they cost in int8.
  ort_optimize            ONNX Runtime's transformer fusions (onnxruntime.transformers, model type
                          'bert': attention, LayerNorm, GELU, skip connections) before
                          quantizing: faster in ORT, but the fused ops are ORT's own
                          (com.microsoft), so the file then runs in ONNX Runtime only.

Shared weights once: tf2onnx makes one initializer per frozen constant, and dedupe_initializers
merges any identical ones a pass may have copied, so ALBERT's shared block is stored once.
"""

import hashlib
import os
import tempfile

from albert_tf import errors
from albert_tf import io
from albert_tf.export.portable import input_signature, serving_function

QUANTIZE_CHOICES = ("none", "dynamic_range")
DEFAULT_OPSET = 17
# The dynamic axes' names in the file (tf2onnx writes unk__N).
AXIS_NAMES = ("batch", "length")


def require_dependencies(quantize="none", optimize=False, command="export_onnx"):
  """Raises errors.MissingExtraError, naming `command` and the portable extra, unless what the
  export imports is installed: tf2onnx (the conversion), onnx (the graph edits) and, to
  quantize or optimize, onnxruntime. The binary calls it before loading the model."""
  modules = ["tf2onnx", "onnx"] + (["onnxruntime"] if optimize or quantize != "none" else [])
  # ORT's transformer optimizer imports sympy; onnxruntime does not declare it.
  modules += ["sympy"] if optimize else []
  for module in modules:
    errors.require_module(module, "portable", command)


def convert(model, max_seq_length, opset=DEFAULT_OPSET):
  """The ModelProto of `model`'s serving function, converted by tf2onnx."""
  import tf2onnx  # pylint: disable=import-outside-toplevel
  proto, _ = tf2onnx.convert.from_function(serving_function(model, max_seq_length),
                                           input_signature=input_signature(), opset=opset)
  name_dynamic_axes(proto)
  dedupe_initializers(proto)
  return proto


def name_dynamic_axes(proto):
  """Renames the inputs' and outputs' symbolic dims: [batch, length] for every input; outputs'
  first two axes (sequence outputs) or first (pooled, probabilities) follow suit."""
  renames = {}
  for value in proto.graph.input:
    for dim, name in zip(value.type.tensor_type.shape.dim, AXIS_NAMES):
      renames.setdefault(dim.dim_param, name)
  for value in list(proto.graph.input) + list(proto.graph.output):
    for dim in value.type.tensor_type.shape.dim:
      if dim.dim_param in renames:
        dim.dim_param = renames[dim.dim_param]


def dedupe_initializers(proto):
  """Merges initializers of equal dtype, shape and bytes into the first: nodes that read a copy
  read the first. Returns the number removed."""
  from onnx import numpy_helper  # pylint: disable=import-outside-toplevel
  first, rename, keep = {}, {}, []
  for init in proto.graph.initializer:
    array = numpy_helper.to_array(init)
    key = (init.data_type, tuple(init.dims), hashlib.sha256(array.tobytes()).digest())
    if key in first:
      rename[init.name] = first[key]
    else:
      first[key] = init.name
      keep.append(init)
  if not rename:
    return 0
  del proto.graph.initializer[:]
  proto.graph.initializer.extend(keep)
  for node in proto.graph.node:
    for i, name in enumerate(node.input):
      if name in rename:
        node.input[i] = rename[name]
  return len(rename)


def ort_optimize(proto, config):
  """ONNX Runtime's BERT fusions of `proto` (see the module docstring)."""
  import onnx  # pylint: disable=import-outside-toplevel
  from onnxruntime.transformers import optimizer  # pylint: disable=import-outside-toplevel
  optimized = optimizer.optimize_model(proto, model_type="bert",
                                       num_heads=config.num_attention_heads,
                                       hidden_size=config.hidden_size, opt_level=0)
  proto = optimized.model
  # The fused ops live in ORT's domain; quantization's shape inference needs it declared.
  if not any(op.domain == "com.microsoft" for op in proto.opset_import):
    proto.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
  return proto


def quantize_dynamic(proto):
  """ONNX Runtime's dynamic int8 quantization of `proto`: per-channel int8 weights."""
  import onnx  # pylint: disable=import-outside-toplevel
  from onnxruntime.quantization import QuantType  # pylint: disable=import-outside-toplevel
  from onnxruntime.quantization import quantize_dynamic as ort_quantize  # pylint: disable=import-outside-toplevel
  with tempfile.TemporaryDirectory() as tmp:
    source, target = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "int8.onnx")
    onnx.save(proto, source)
    # Shape inference knows no fused (com.microsoft) op's output type: they are all float.
    ort_quantize(source, target, per_channel=True, weight_type=QuantType.QInt8,
                 op_types_to_quantize=["MatMul", "Gather", "Attention"],
                 extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return onnx.load(target)


def export_onnx(model, output_file, max_seq_length, quantize="none", opset=DEFAULT_OPSET,
                optimize=False):
  """Writes `model`'s serving function as an .onnx file, atomically.

  Args:
    model: a loaded Keras model (export.portable.load_exportable_model).
    output_file: the .onnx path to write (local or remote).
    max_seq_length: the longest request the export promises to serve.
    quantize: one of QUANTIZE_CHOICES.
    opset: the ONNX opset to target.
    optimize: apply ONNX Runtime's transformer fusions (ORT-only ops; see the module docstring).

  Returns:
    The number of bytes written.

  Raises:
    errors.MissingExtraError: without the portable extra (see require_dependencies).
  """
  if quantize not in QUANTIZE_CHOICES:
    raise errors.UsageError(f"quantize={quantize!r}: choose one of {', '.join(QUANTIZE_CHOICES)}")
  require_dependencies(quantize, optimize)
  proto = convert(model, max_seq_length, opset)
  if optimize:
    proto = ort_optimize(proto, model.config)
  if quantize == "dynamic_range":
    proto = quantize_dynamic(proto)
  data = proto.SerializeToString()
  with io.AtomicFile(output_file) as f:
    f.write(data)
  return len(data)
