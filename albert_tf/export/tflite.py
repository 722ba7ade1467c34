"""TFLite (LiteRT) export: the frozen serving function (export.portable) as a .tflite file with a
`serving_default` signature, builtin ops only (no Flex delegate, so it runs on phones).

Quantization (--quantize):
  none           float32 weights and compute;
  float16        float16 weights, dequantized to float32 at load (half the file, float accuracy);
  dynamic_range  int8 weights (per output channel for the dense layers; the embedding tables too,
                 which hold a third of ALBERT-base's weights), float32 activations: LiteRT
                 quantizes each dense layer's input on the fly. The attention softmax, LayerNorm
                 and GELU stay float: they have no weights, and int8 activations there are what
                 cost the naive full-integer conversions their accuracy (tensorflow#44306).

Shared weights once: the converter folds each use of a weight on its own (the dense kernels are
transposed to TFLite's [out, in] once per layer), so the 12 uses of ALBERT's shared block give 12
identical buffers. dedupe_buffers points every tensor at the first copy of its bytes.
"""

import hashlib
import os

import tensorflow as tf
from tensorflow.lite.tools import flatbuffer_utils

from albert_tf.core import errors
from albert_tf.export.portable import frozen_serving_function
from albert_tf.export.staging import check_output_file, write_file_atomically

QUANTIZE_CHOICES = ("none", "float16", "dynamic_range")


def convert(concrete_function, quantize="none"):
  """The .tflite bytes of a frozen concrete function (export.portable), builtin ops only.

  Args:
    concrete_function: from frozen_serving_function.
    quantize: one of QUANTIZE_CHOICES (see the module docstring).

  Returns:
    The flatbuffer's bytes, each weight stored once.
  """
  if quantize not in QUANTIZE_CHOICES:
    raise errors.UsageError(f"quantize={quantize!r}: choose one of {', '.join(QUANTIZE_CHOICES)}")
  # An empty trackable makes the converter write the function's signature (serving_default);
  # the function holds no variables to track.
  converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete_function], tf.Module())
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  if quantize != "none":
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
  if quantize == "float16":
    converter.target_spec.supported_types = [tf.float16]
  return dedupe_buffers(converter.convert())


def dedupe_buffers(model_bytes):
  """The flatbuffer with every tensor whose bytes equal an earlier buffer's pointing at that
  buffer, and the copies emptied. Tensors keep their own shape and quantization; only the
  storage is shared, which TFLite's read-only constant buffers allow."""
  model = flatbuffer_utils.convert_bytearray_to_object(bytearray(model_bytes))
  first = {}  # digest -> buffer index
  remap = {}
  for index, buffer in enumerate(model.buffers):
    if buffer.data is None or len(buffer.data) == 0:
      continue
    digest = hashlib.sha256(bytes(buffer.data)).digest()
    if digest in first:
      remap[index] = first[digest]
      buffer.data = None
    else:
      first[digest] = index
  if not remap:
    return bytes(model_bytes)
  for subgraph in model.subgraphs:
    for tensor in subgraph.tensors:
      tensor.buffer = remap.get(tensor.buffer, tensor.buffer)
  return bytes(flatbuffer_utils.convert_object_to_bytearray(model))


def export_tflite(model, output_file, max_seq_length, quantize="none", overwrite=False):
  """Writes `model`'s serving function (export.portable) as a .tflite file, atomically (a
  temporary renamed into place, so a reader never sees half a model; export.staging).

  Args:
    model: a loaded Keras model (export.portable.load_exportable_model).
    output_file: the .tflite path to write (local or remote).
    max_seq_length: the longest request the export promises to serve (<= the config's
      max_position_embeddings).
    quantize: one of QUANTIZE_CHOICES.
    overwrite: replace output_file when it exists.

  Returns:
    The number of bytes written.

  Raises:
    export.staging.OutputPathError: output_file exists (without overwrite), or cannot be
      written; checked before the conversion too.
  """
  check_output_file(output_file, overwrite)  # before the conversion, which takes minutes
  data = convert(frozen_serving_function(model, max_seq_length), quantize)
  write_file_atomically(output_file, data, overwrite)
  return len(data)


# The name the original's run_squad_v1 gave the TFLite file it wrote into its SavedModel's
# directory.
SAVED_MODEL_COMPANION = "albert_model.tflite"


def export_beside_saved_model(model, saved_model_dir, max_seq_length):
  """Writes `model` (float32) as <saved_model_dir>/albert_model.tflite, as the original's
  run_squad_v1 --export_dir did: the same start/end logits as the SavedModel's features
  signature, for on-device use. Returns the file's path."""
  path = os.path.join(saved_model_dir, SAVED_MODEL_COMPANION)
  export_tflite(model, path, max_seq_length)
  return path
