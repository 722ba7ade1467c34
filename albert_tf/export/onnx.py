"""ONNX export: the serving function (export.portable) converted with tf2onnx, for ONNX Runtime and
other ONNX runtimes.

Inputs input_ids, input_mask, segment_ids int32 [batch, length], both axes dynamic; outputs as
export.portable names them.

Options:
  quantize=dynamic_range  ONNX Runtime's dynamic quantization: int8 weights (per output channel)
                          for the MatMuls and the embedding Gathers, activations quantized per
                          request; the softmax, LayerNorm and GELU stay float, as in
                          export.tflite, for the accuracy they cost in int8.
  quantize=static         ONNX Runtime's static quantization: the same int8 weights, and uint8
                          activations whose ranges are fixed from calibration examples
                          (export.calibration: the task's data) instead of measured per request,
                          so that no request pays for finding them. u8 activations x s8
                          per-channel weights: the operands of MLAS's u8s8 kernels (VNNI,
                          AMX-INT8). Only the MatMuls and the embedding Gathers are quantized;
                          softmax, LayerNorm and GELU stay float.
                          quant_format says how the file spells it:
                            qdq        QuantizeLinear/DequantizeLinear pairs on the quantized
                                       ops' inputs, their outputs float, which ORT fuses into
                                       MatMulIntegerToFloat at load (the format ORT recommends
                                       for CPUs since 1.11; the faster one);
                            qoperator  the integer ops themselves (QLinearMatMul), with a
                                       QuantizeLinear/DequantizeLinear at each float boundary.
  reduce_range            (both int8 kinds; default on) weights in 7 bits, [-64, 64] per channel,
                          as ONNX Runtime advises for CPUs without VNNI: there MLAS's u8s8
                          kernel (AVX2 vpmaddubsw) adds each pair of u8 x s8 products in int16,
                          which 8-bit weights overflow, saturating silently (ALBERT-base, 128
                          tokens, dynamic int8 on an AVX2 EPYC: cosine to float32 0.987). With
                          7-bit weights no pair can overflow, so a file computes the same
                          integers on every x86 CPU (cosine 0.9994 there and on VNNI/AMX);
                          8-bit weights are a little closer to float on VNNI/AMX only (0.9998).
  ort_optimize            ONNX Runtime's transformer fusions (onnxruntime.transformers, model type
                          'bert': attention and GELU where it finds them; not the residual Add
                          into the LayerNorm, slower in ORT's CPU kernel) before quantizing.
                          The fused ops are ORT's own (com.microsoft), so the file then runs
                          in ONNX Runtime only. On tf2onnx's ALBERT graph ORT finds no
                          attention to fuse, and fuses the GELU at load without the flag.

LayerNorms: each one LayerNormalization node (opset 17 and later; export.onnx_layer_norm), which
every runtime reads and ONNX Runtime runs as one fused kernel, where tf2onnx writes ten nodes.

Shared weights once: tf2onnx makes one initializer per frozen constant, and dedupe_initializers
merges any identical ones a pass may have copied, so ALBERT's shared block is stored once.
"""

import contextlib
import hashlib
import logging
import os
import tempfile

from albert_tf.core import errors
from albert_tf.export.onnx_layer_norm import fuse_layer_norms
from albert_tf.export.portable import input_signature, serving_function
from albert_tf.export.staging import check_output_file, write_file_atomically

QUANTIZE_CHOICES = ("none", "dynamic_range", "static")
QUANT_FORMATS = ("qdq", "qoperator")
# The ops static quantization rewrites (see the module docstring): the MatMuls by a weight (the
# attention scores' are excluded by name, activation_matmuls) and the embedding lookups.
STATIC_OP_TYPES = ("MatMul", "Gather")
DEFAULT_OPSET = 17
# The dynamic axes' names in the file (tf2onnx writes unk__N).
AXIS_NAMES = ("batch", "length")
# TensorFlow's C++ log level, which tf2onnx sets while it loads (_log_level_kept).
_LOG_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"


@contextlib.contextmanager
def _log_level_kept():
  """Puts TF_CPP_MIN_LOG_LEVEL back as it was (or unset) after the block: tf2onnx sets it to 3 in
  os.environ while it loads, which would hide TensorFlow's errors in every process this one starts
  afterwards."""
  before = os.environ.get(_LOG_LEVEL_VARIABLE)
  try:
    yield
  finally:
    if before is None:
      os.environ.pop(_LOG_LEVEL_VARIABLE, None)
    else:
      os.environ[_LOG_LEVEL_VARIABLE] = before


def _converter():
  """tf2onnx's convert module (which tf2onnx loads at first use), loaded with the log level kept
  (_log_level_kept)."""
  with _log_level_kept():
    from tf2onnx import convert as converter
  return converter


def require_dependencies(quantize="none", optimize=False, command="export_onnx"):
  """Raises errors.MissingExtraError, naming `command` and the portable extra, unless what the
  export imports is installed: tf2onnx (the conversion), onnx (the graph edits) and, to
  quantize or optimize, onnxruntime. The binary calls it before loading the model."""
  modules = ["tf2onnx", "onnx"] + (["onnxruntime"] if optimize or quantize != "none" else [])
  # ORT's transformer optimizer imports sympy; onnxruntime does not declare it.
  modules += ["sympy"] if optimize else []
  with _log_level_kept():
    for module in modules:
      errors.require_module(module, "portable", command)


def convert(model, max_seq_length, opset=DEFAULT_OPSET):
  """The ModelProto of `model`'s serving function, converted by tf2onnx, each LayerNorm one
  LayerNormalization node from opset 17 (export.onnx_layer_norm)."""
  proto, _ = _converter().from_function(serving_function(model, max_seq_length),
                                        input_signature=input_signature(), opset=opset)
  name_dynamic_axes(proto)
  dedupe_initializers(proto)
  fuse_layer_norms(proto)
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
  from onnx import numpy_helper
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
  import onnx
  from onnxruntime.transformers import optimizer
  from onnxruntime.transformers.fusion_options import FusionOptions
  options = FusionOptions("bert")
  # Not SkipLayerNormalization (the residual Add folded into the LayerNorm): in ORT 1.31 it ran
  # several times slower a node in the int8 graph than LayerNormalization plus the Add
  # (docs/speed.md, "ONNX export choices").
  options.enable_skip_layer_norm = False
  options.enable_bias_skip_layer_norm = False
  optimized = optimizer.optimize_model(proto, model_type="bert",
                                       num_heads=config.num_attention_heads,
                                       hidden_size=config.hidden_size, opt_level=0,
                                       optimization_options=options)
  proto = optimized.model
  # The fused ops live in ORT's domain; quantization's shape inference needs it declared.
  if not any(op.domain == "com.microsoft" for op in proto.opset_import):
    proto.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
  return proto


@contextlib.contextmanager
def quiet_quantizer(verbose=False):
  """Drops, unless `verbose`, what ONNX Runtime's quantizer logs below ERROR: its advice to
  pre-process the model and a line for each tensor or MatMul it leaves float (about 30 lines for
  ALBERT-base), all of which the export means. The quantizer logs through the root logger
  (logging.info/warning), so its level is raised for the call and restored after."""
  if verbose:
    yield
    return
  root = logging.getLogger()
  level = root.level
  root.setLevel(logging.ERROR)
  try:
    yield
  finally:
    root.setLevel(level)


def quantize_dynamic(proto, reduce_range=True, verbose=False):
  """ONNX Runtime's dynamic int8 quantization of `proto`: per-channel int8 weights, in 7 bits with
  `reduce_range` (see the module docstring). `verbose` shows the quantizer's notices (see
  quiet_quantizer)."""
  import onnx
  from onnxruntime.quantization import QuantType
  from onnxruntime.quantization import quantize_dynamic as ort_quantize
  with tempfile.TemporaryDirectory() as tmp:
    source, target = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "int8.onnx")
    onnx.save(proto, source)
    # Shape inference knows no fused (com.microsoft) op's output type: they are all float.
    with quiet_quantizer(verbose):
      ort_quantize(source, target, per_channel=True, reduce_range=reduce_range,
                   weight_type=QuantType.QInt8,
                   op_types_to_quantize=["MatMul", "Gather", "Attention"],
                   extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return onnx.load(target)


def activation_matmuls(proto):
  """The names of the MatMuls that multiply two activations (the attention scores and their
  weighted sum), not an activation by a weight: they stay float, as quantize_dynamic leaves
  them, since the softmax's probabilities in uint8 cost accuracy for few FLOPs."""
  weights = {init.name for init in proto.graph.initializer}
  return [node.name for node in proto.graph.node
          if node.op_type == "MatMul" and not weights.intersection(node.input)]


def check_fusions(quantize, optimize):
  """Raises errors.UsageError for ort_optimize with quantize=static (before a conversion that
  takes minutes): on ORT's fused graph the static quantizer leaves the weight MatMuls float,
  dequantizing their int8 weights on every request (an order of magnitude slower: docs/speed.md,
  "ONNX export choices"), and its qoperator format fails on the fused ops."""
  if optimize and quantize == "static":
    raise errors.UsageError(
        "--ort_optimize with --quantize=static: ONNX Runtime's fused ops leave the static int8 "
        "file dequantizing its weights on every request (about 10x slower); drop "
        "--ort_optimize (ONNX Runtime fuses the GELU of a static file itself at load), or use "
        "--quantize=dynamic_range with it")


def check_static_options(calibration, quant_format):
  """Raises errors.UsageError unless quantize_static can run with these (before a conversion
  that takes minutes)."""
  if not calibration:
    raise errors.UsageError("quantize=static needs calibration examples: give --calibration_data "
                            "(export.calibration.read_calibration_examples)")
  if quant_format not in QUANT_FORMATS:
    raise errors.UsageError(f"quant_format={quant_format!r}: choose one of "
                            f"{', '.join(QUANT_FORMATS)}")


def quantize_static(proto, calibration, quant_format="qdq", reduce_range=True, verbose=False):
  """ONNX Runtime's static int8 quantization of `proto` (see the module docstring).

  Args:
    proto: the float ModelProto.
    calibration: a list of {input_ids, input_mask, segment_ids: int32 [1, t]} features
      (export.calibration), run through the float model to fix each activation's range.
    quant_format: one of QUANT_FORMATS.
    reduce_range: weights in 7 bits (see the module docstring).
    verbose: show the quantizer's notices (see quiet_quantizer).

  Returns:
    The quantized ModelProto.
  """
  import onnx
  from onnxruntime import quantization

  class Reader(quantization.CalibrationDataReader):
    """The calibration examples, one at a time (their lengths differ)."""

    def __init__(self):
      self.examples = iter(calibration)

    def get_next(self):
      return next(self.examples, None)

  check_static_options(calibration, quant_format)
  formats = {"qdq": quantization.QuantFormat.QDQ,
             "qoperator": quantization.QuantFormat.QOperator}
  with tempfile.TemporaryDirectory() as tmp:
    source, target = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "int8.onnx")
    onnx.save(proto, source)
    with quiet_quantizer(verbose):
      quantization.quantize_static(
          source, target, Reader(), quant_format=formats[quant_format],
          op_types_to_quantize=list(STATIC_OP_TYPES), nodes_to_exclude=activation_matmuls(proto),
          per_channel=True, reduce_range=reduce_range,
          activation_type=quantization.QuantType.QUInt8,
          weight_type=quantization.QuantType.QInt8,
          # MinMax: the ranges seen. ORT's Percentile and Entropy calibrators need examples of
          # one length (they stack them), and clipped the tiny fixture's outputs further from
          # float.
          calibrate_method=quantization.CalibrationMethod.MinMax,
          # Not CalibMaxIntermediateOutputs: ORT 1.31 drops each full chunk uncomputed. Memory
          # is small without it: MinMax keeps two scalars (ReduceMin/Max) per tensor per
          # example.
          extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT,
                         # The quantized ops' outputs stay float (qdq only; a QLinearMatMul's
                         # output is uint8 by definition): ORT then runs each weight MatMul as
                         # one MatMulIntegerToFloat, where a quantized output cost a
                         # QuantizeLinear + DequantizeLinear per MatMul and kept ORT from fusing
                         # the GELU that follows (docs/speed.md, "ONNX export choices"), and the
                         # outputs lose no precision to a second rounding.
                         "OpTypesToExcludeOutputQuantization": list(STATIC_OP_TYPES)})
    return onnx.load(target)


def export_onnx(model, output_file, max_seq_length, quantize="none", opset=DEFAULT_OPSET,
                optimize=False, calibration=None, quant_format="qdq", reduce_range=True,
                overwrite=False, verbose=False):
  """Writes `model`'s serving function as an .onnx file, atomically.

  Args:
    model: a loaded Keras model (export.portable.load_exportable_model).
    output_file: the .onnx path to write (local or remote).
    max_seq_length: the longest request the export promises to serve.
    quantize: one of QUANTIZE_CHOICES.
    opset: the ONNX opset to target.
    optimize: apply ONNX Runtime's transformer fusions (ORT-only ops; see the module docstring).
    calibration: for quantize=static, the examples that fix the activations' ranges (a list as
      export.calibration.read_calibration_examples returns).
    quant_format: for quantize=static, one of QUANT_FORMATS.
    reduce_range: for int8, weights in 7 bits (see the module docstring).
    overwrite: replace output_file when it exists.
    verbose: show the quantizer's notices (see quiet_quantizer).

  Returns:
    The number of bytes written.

  Raises:
    errors.MissingExtraError: without the portable extra (see require_dependencies).
    export.staging.OutputPathError: output_file exists (without overwrite), or cannot be
      written; checked before the conversion too.
  """
  if quantize not in QUANTIZE_CHOICES:
    raise errors.UsageError(f"quantize={quantize!r}: choose one of {', '.join(QUANTIZE_CHOICES)}")
  check_fusions(quantize, optimize)
  require_dependencies(quantize, optimize)
  if quantize == "static":
    check_static_options(calibration, quant_format)
  check_output_file(output_file, overwrite)  # before the conversion, which takes minutes
  proto = convert(model, max_seq_length, opset)
  if optimize:
    proto = ort_optimize(proto, model.config)
  if quantize == "dynamic_range":
    proto = quantize_dynamic(proto, reduce_range, verbose)
  elif quantize == "static":
    proto = quantize_static(proto, calibration, quant_format, reduce_range, verbose)
  data = proto.SerializeToString()
  write_file_atomically(output_file, data, overwrite)
  return len(data)
