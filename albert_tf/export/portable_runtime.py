"""Runs the portable exports (export.tflite, export.onnx) in their runtimes, without TensorFlow:
LiteRT's interpreter for .tflite, ONNX Runtime for .onnx. The tests and tools/benchmark.py call
these in processes that never import TensorFlow, as a phone or an ORT server would.

Features are {input_ids, input_mask, segment_ids: int32 [B, T]}; outputs {name: float32 array}
(see export.portable for the names).
"""

import numpy as np

from albert_tf.core import errors

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


# LiteRT's XNNPACK settings (TfliteRunner's xnnpack): off (LiteRT's own kernels), default
# (the XNNPACK delegate LiteRT applies unasked; it runs the dynamic-range int8 FULLY_CONNECTEDs),
# latest (that delegate with its flag-protected features too). Measured on ALBERT-base int8
# (docs/exports.md): default is 2.8x off at 128 tokens; latest is no faster than default.
XNNPACK_CHOICES = ("off", "default", "latest")
DEFAULT_XNNPACK = "default"


class TfliteRunner:
  """A .tflite file's serving_default signature in LiteRT.

  Args:
    path: the .tflite file.
    num_threads: LiteRT's CPU threads.
    xnnpack: one of XNNPACK_CHOICES.
  """

  def __init__(self, path, num_threads=2, xnnpack=DEFAULT_XNNPACK):
    litert = errors.require_module("ai_edge_litert.interpreter", "portable",
                                   "running a .tflite file")
    if xnnpack not in XNNPACK_CHOICES:
      raise errors.UsageError(f"xnnpack={xnnpack!r}: choose one of {', '.join(XNNPACK_CHOICES)}")
    resolver = (litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES if xnnpack == "off"
                else litert.OpResolverType.AUTO)
    self.interpreter = litert.Interpreter(
        model_path=path, num_threads=num_threads, experimental_op_resolver_type=resolver,
        experimental_default_delegate_latest_features=xnnpack == "latest")
    self.runner = self.interpreter.get_signature_runner("serving_default")
    self.output_names = sorted(self.interpreter.get_signature_list()["serving_default"]["outputs"])

  def __call__(self, features):
    # The signature runner resizes the inputs to each request's [B, T].
    return {name: np.asarray(value) for name, value in self.runner(
        **{name: np.asarray(features[name], np.int32) for name in INPUT_NAMES}).items()}


class OnnxRunner:
  """An .onnx file in ONNX Runtime's CPU provider.

  Args:
    path: the .onnx file.
    num_threads: ORT's intra-op threads.
  """

  def __init__(self, path, num_threads=2):
    ort = errors.require_module("onnxruntime", "portable", "running an .onnx file")
    options = ort.SessionOptions()
    options.intra_op_num_threads = num_threads
    options.inter_op_num_threads = 1
    self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    self.output_names = [o.name for o in self.session.get_outputs()]

  def __call__(self, features):
    values = self.session.run(self.output_names, {
        name: np.asarray(features[name], np.int32) for name in INPUT_NAMES})
    return dict(zip(self.output_names, values))


def runner_for(path, num_threads=2, xnnpack=DEFAULT_XNNPACK):
  """The runner of a .tflite or .onnx file, by its extension (xnnpack: TfliteRunner's)."""
  if str(path).endswith(".tflite"):
    return TfliteRunner(path, num_threads, xnnpack)
  if str(path).endswith(".onnx"):
    return OnnxRunner(path, num_threads)
  raise errors.UsageError(f"{path}: a portable export ends in .tflite or .onnx")


def worst_cosine(a, b, input_mask):
  """The lowest cosine similarity between a [B, T, H] and b over the real tokens (input_mask
  1): how far a quantized sequence_output strays from the float one."""
  a = np.asarray(a, np.float64)[np.asarray(input_mask) > 0]
  b = np.asarray(b, np.float64)[np.asarray(input_mask) > 0]
  cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1) + 1e-12)
  return float(cos.min())
