"""What TF Serving does, reproduced in process for the export and client tests: load the latest
version folder of a model base path, check a request against the signature (names, dtypes,
shapes), run it."""

import os

import numpy as np
import tensorflow as tf


def latest_version_dir(model_base_path):
  """The highest numeric version folder under a TF Serving model base path."""
  if not os.path.isdir(model_base_path):
    raise FileNotFoundError(f"model base path not found: {model_base_path}")
  versions = [d for d in os.listdir(model_base_path)
              if d.isdigit() and os.path.isdir(os.path.join(model_base_path, d))]
  if not versions:
    hint = (" (it holds a SavedModel directly: TF Serving needs it inside a version folder, "
            "e.g. <base>/1/saved_model.pb)"
            if os.path.exists(os.path.join(model_base_path, "saved_model.pb")) else "")
    raise FileNotFoundError(f"no version folder (1/, 2/, ...) under {model_base_path}{hint}")
  return os.path.join(model_base_path, max(versions, key=int))


def load_served_model(model_base_path):
  """Loads the latest version as TF Serving would (tensorflow_text registers its ops)."""
  import tensorflow_text  # noqa: F401 -- registers the text ops a SavedModel needs
  return tf.saved_model.load(latest_version_dir(model_base_path))


def check_inputs(signature_fn, inputs, signature_name="serving_default"):
  """Converts request inputs to tensors of the signature's dtypes; a clear error naming the input
  for missing or unknown names, a wrong dtype or a wrong shape."""
  specs = signature_fn.structured_input_signature[1]
  missing = sorted(set(specs) - set(inputs))
  unknown = sorted(set(inputs) - set(specs))
  if missing or unknown:
    raise ValueError(f"signature {signature_name!r} takes inputs {sorted(specs)}; missing "
                     f"{missing}, unknown {unknown}")
  tensors = {}
  for name, spec in specs.items():
    value = inputs[name]
    tensor = value if isinstance(value, tf.Tensor) else tf.constant(
        np.asarray(value, dtype=object) if spec.dtype == tf.string else np.asarray(value))
    if tensor.dtype != spec.dtype:
      if spec.dtype.is_integer and tensor.dtype.is_integer:
        tensor = tf.cast(tensor, spec.dtype)
      else:
        raise ValueError(f"input {name!r} of signature {signature_name!r} must be "
                         f"{spec.dtype.name}, got {tensor.dtype.name}")
    if not spec.shape.is_compatible_with(tensor.shape):
      raise ValueError(f"input {name!r} of signature {signature_name!r} must have shape "
                       f"{spec.shape.as_list()} (None: any), got {tensor.shape.as_list()}")
    tensors[name] = tensor
  return tensors


def run_signature(model, signature_name, inputs):
  """Runs `inputs` (lists, arrays or tensors) through the model's signature, checked first."""
  if signature_name not in model.signatures:
    raise ValueError(f"unknown signature {signature_name!r}; the model has "
                     f"{sorted(model.signatures)}")
  fn = model.signatures[signature_name]
  return fn(**check_inputs(fn, inputs, signature_name))
