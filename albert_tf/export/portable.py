"""What the TFLite and ONNX exports share: the model a checkpoint holds, and one frozen serving
function of token ids.

The function's inputs are `input_ids`, `input_mask`, `segment_ids` int32 [B, T] (any B, any
T up to max_seq_length); its outputs, all float32:
  sequence_output [B, T, H], pooled_output [B, H]   always (the encoder's);
  probabilities [B, C]                              a classifier (regression: the score [B, 1]);
  start_logits, end_logits [B, T]                   a SQuAD v1 span labeler;
  logits [B, T, L]                                  a token classifier (NER).

Weights are frozen into constants: the files hold no variables, so they run where no TensorFlow
(and no variable support) is. ALBERT's shared block is one set of constants used by every layer;
the format writers (export.tflite, export.onnx) make sure each file stores it once.
"""

import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import (
    convert_variables_to_constants_v2)

from albert_tf.core import errors
from albert_tf.core.config import check_max_seq_length
from albert_tf.checkpoints import load_checkpoint
from albert_tf.export.hf import model_for_checkpoint
from albert_tf.export.portable_heads import HEADS
from albert_tf.export.saved_model import signature_function
from albert_tf.models import AlbertPretrainer

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def load_exportable_model(config, checkpoint, head="auto"):
  """The model whose head `checkpoint` holds (as export_checkpoints detects it), loaded.

  A pretraining checkpoint exports its encoder alone: the MLM and sentence-order heads are
  training objectives, not serving outputs.

  Args:
    config: the AlbertConfig the checkpoint was trained with.
    checkpoint: a checkpoint of any layout (ours, the released one, Hugging Face's), or None for
      random weights (benchmarks, tests).
    head: one of HEADS (the --head flag): "auto" for the checkpoint's own.

  Returns:
    A Keras model: AlbertModel, AlbertClassifier, AlbertSpanLabeler (or whatever head
    model_for_checkpoint finds).

  Raises:
    errors.HeadAmbiguityError: (auto) a head the checkpoint's variables and files do not tell
      (see export.hf.checkpoint_head), naming the --head values to choose from.
    errors.CheckpointError: a SQuAD 2.0 head, which has no portable export; a head the
      checkpoint lacks.
  """
  from albert_tf.models import AlbertModel
  if checkpoint is None:
    return AlbertModel(config)
  if head not in HEADS:
    raise errors.UsageError(f"--head={head}: one of {', '.join(HEADS)}")
  head, model = model_for_checkpoint(config, checkpoint, head)
  if head == "squad_v2":
    # Its answer-class and end logits depend on the start positions of a beam search that needs
    # each feature's p_mask: no fixed-output serving function of the three token inputs holds it.
    raise errors.CheckpointError(
        f"{checkpoint} holds a SQuAD 2.0 head (start_logits/, end_logits/, answer_class/), which "
        "has no TFLite or ONNX export yet: serve it as a SavedModel (run_squad_v2 --export_dir), "
        "or export its encoder alone with --head=none")
  report = load_checkpoint(model, checkpoint)
  head_missing = [name for name in report.missing if not name.startswith("bert/")]
  if head not in ("none", "pretraining") and head_missing:
    raise errors.CheckpointError(
        f"--head={head}: {checkpoint} has no such head (it lacks {', '.join(head_missing[:4])}); "
        "a random one would mislead: give the head it has, or --head=auto")
  return model.encoder if isinstance(model, AlbertPretrainer) else model


def serving_outputs(model, features):
  """The exported outputs (see the module docstring) of `model` on features [B, T]."""
  out = model(features, training=False)
  result = {"sequence_output": out["sequence_output"], "pooled_output": out["pooled_output"]}
  # Told by what the model has, not by its class: the task models live above export/.
  if hasattr(model, "probabilities"):
    # As ClassifierServingModule's: a softmax, a regression's score, or (multi-label) sigmoids.
    result["probabilities"] = model.probabilities(out["logits"])
  elif "start_logits" in out:
    result["start_logits"], result["end_logits"] = out["start_logits"], out["end_logits"]
  elif "logits" in out and out["logits"].shape.rank == 3:
    result["logits"] = out["logits"]  # a token classifier's [B, T, L]
  return {name: tf.cast(value, tf.float32) for name, value in result.items()}


def input_signature():
  return [tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES]


def check_serving_length(config, max_seq_length, source="the exported model's config"):
  """Raises errors.UsageError unless 0 < max_seq_length <= the config's max_position_embeddings
  (core.config.check_max_seq_length, naming `source`: where the config came from)."""
  if max_seq_length < 1:
    raise errors.UsageError(f"--max_seq_length={max_seq_length}: must be at least 1")
  check_max_seq_length(max_seq_length, config, source)


def serving_function(model, max_seq_length):
  """tf.function(input_ids, input_mask, segment_ids) -> {name: output} of `model`."""
  check_serving_length(model.config, max_seq_length)

  @signature_function(input_signature=input_signature())
  def serve(input_ids, input_mask, segment_ids):
    return serving_outputs(model, {"input_ids": input_ids, "input_mask": input_mask,
                                   "segment_ids": segment_ids})
  return serve


def frozen_serving_function(model, max_seq_length):
  """The serving function with every weight a constant: a concrete function of the three
  inputs returning {name: output}.

  convert_variables_to_constants_v2 turns each variable into one Const, however many layers
  read it, and returns a function with flat outputs; the wrapper gives them their names again.
  """
  concrete = serving_function(model, max_seq_length).get_concrete_function()
  names = sorted(concrete.structured_outputs)  # the order tf.nest flattens a dict in
  frozen = convert_variables_to_constants_v2(concrete)

  @signature_function(input_signature=input_signature())
  def named(input_ids, input_mask, segment_ids):
    return dict(zip(names, frozen(input_ids, input_mask, segment_ids)))
  return named.get_concrete_function()


def parameter_count(model):
  """The model's weights, each counted once (ALBERT's shared block included once)."""
  return sum(int(np.prod(w.shape)) for w in model.weights)


def sample_features(config, batch_size, seq_length, seed=0):
  """Random token features int32 [B, T] whose last rows have padding: what the tests and the
  export's self-check feed."""
  rng = np.random.default_rng(seed)
  ids = rng.integers(5, config.vocab_size, size=(batch_size, seq_length)).astype(np.int32)
  mask = np.ones_like(ids)
  for row in range(1, batch_size):
    mask[row, max(1, seq_length - 3 * row):] = 0
  segments = np.zeros_like(ids)
  segments[:, seq_length // 2:] = 1
  return {"input_ids": ids * mask, "input_mask": mask, "segment_ids": segments * mask}
