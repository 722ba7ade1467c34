"""TF Hub-format encoder SavedModels: what Model Garden's export_tfhub wrote for albert_en_base/3,
the Reusable SavedModel API for text encoders
(https://www.tensorflow.org/hub/common_saved_model_apis/text).

The root object, loaded with tensorflow_hub.load or tf.saved_model.load:
  __call__(inputs, training=False)  inputs {input_word_ids, input_mask, input_type_ids} int32
      [B, S], S <= max_position_embeddings -> pooled_output [B, H], sequence_output [B, S, H],
      encoder_outputs (a list of num_hidden_layers [B, S, H]: each layer's output, its last
      block's where inner_group_num > 1; the last is sequence_output), default (pooled_output).
      training=True applies dropout.
  variables, trainable_variables    the encoder's (gradients flow through them: hub.KerasLayer
      fine-tunes with trainable=True); regularization_losses, empty.
  mlm (export_type=model_with_mlm)  the same, with masked_lm_positions int32 [B, P] in the
      inputs and mlm_logits [B, P, V] in the outputs; its variables add the MLM head's (not the
      sentence-order head's, which no call uses).
  serving_default                   a tf.function of the inputs dict (Keras 3's TFSMLayer calls
      this attribute with one dict) and the SavedModel signature of the same name (TF Serving):
      pooled_output, sequence_output, default, and encoder_outputs_<l> for l < num_hidden_layers
      (a signature's outputs are flat).
  sp_model_file (SentencePiece) or vocab_file (WordPiece): the tokenizer, an asset, as Model
      Garden's; do_lower_case, a bool variable.

The requests are not checked in the graph (Model Garden's are not either): an id outside the
vocabulary fails in the embedding lookup on a CPU. Float outputs are float32.
"""

import tensorflow as tf

from albert_tf.core import errors
from albert_tf.tokenization.in_graph_choice import in_graph_tokenizer
from albert_tf.export.staging import checked_export_dir, write_directory_atomically
from albert_tf.export.tokenizer_arguments import old_tokenizer_arguments
from albert_tf.tokenization.bert_packing import MASK, TYPE_IDS, WORD_IDS
from albert_tf.tokenization.vocab_check import check_vocab_fits

# TF Hub's encoder inputs -> ours.
FEATURES = {WORD_IDS: "input_ids", MASK: "input_mask", TYPE_IDS: "segment_ids"}
POSITIONS = "masked_lm_positions"


def inputs_spec(with_positions=False):
  """The dict of int32 [B, S] TensorSpecs an encoder call takes (and [B, P] positions)."""
  names = tuple(FEATURES) + ((POSITIONS,) if with_positions else ())
  return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in names}


def layer_outputs(encoder_outputs, inner_group_num):
  """Each layer's output from the encoder's every block's (num_hidden_layers x inner_group_num,
  layer-major): the last block of each layer."""
  return list(encoder_outputs[inner_group_num - 1::inner_group_num])


def flat_outputs(outputs):
  """A call's outputs as a signature's: encoder_outputs as encoder_outputs_<l>."""
  flat = {name: value for name, value in outputs.items() if name != "encoder_outputs"}
  flat.update({f"encoder_outputs_{l}": value
               for l, value in enumerate(outputs["encoder_outputs"])})
  return flat


def _float32(x):
  return tf.cast(x, tf.float32)


class _Reusable(tf.train.Checkpoint):
  """A Reusable SavedModel object: `call(inputs, training)` saved as __call__ for both values of
  training, and the variables of `layers` (Keras layers and models: the TF variables they wrap),
  those the call uses."""

  def __init__(self, layers, call, with_positions):
    super().__init__()
    self.variables = [v.value for layer in layers for v in layer.variables]
    self.trainable_variables = [v.value for layer in layers for v in layer.trainable_variables]
    self.regularization_losses = []
    function = tf.function(call, autograph=False)  # nothing to convert; faster tracing
    for training in (False, True):
      function.get_concrete_function(inputs_spec(with_positions), training=training)
    self.__call__ = function


class HubEncoder(_Reusable):
  """The root object of a TF Hub encoder export (see the module doc).

  Args:
    model: an AlbertModel, or an AlbertPretrainer (then `.mlm` is there too).
    tokenizer: a settings.TokenizerSettings, shipped as the asset and checked against the
      config's vocab_size (0.3's spm_model_file, vocab_file and do_lower_case arguments work
      until 0.4.0: export.tokenizer_arguments).
    config_file: the config's file, named in that check's error.
  """

  @old_tokenizer_arguments(lambda self, model, spm_model_file=None, vocab_file=None,
                           do_lower_case=True, config_file=None: None)
  def __init__(self, model, tokenizer, config_file=None):
    encoder = getattr(model, "encoder", model)
    config = encoder.config
    in_graph = in_graph_tokenizer(tokenizer.spm_model_file, tokenizer.vocab_file,
                                  tokenizer.do_lower_case)
    check_vocab_fits(in_graph.vocab_size, config.vocab_size, in_graph.model_file, config_file)
    inner = config.inner_group_num

    def encode(inputs, training):
      out = encoder({ours: inputs[hub] for hub, ours in FEATURES.items()}, training=training)
      return out, {"pooled_output": _float32(out["pooled_output"]),
                   "sequence_output": _float32(out["sequence_output"]),
                   "encoder_outputs": [_float32(x) for x in
                                       layer_outputs(out["encoder_outputs"], inner)]}

    def call(inputs, training=False):
      outputs = encode(inputs, training)[1]
      outputs["default"] = outputs["pooled_output"]
      return outputs

    super().__init__([encoder], call, with_positions=False)
    self.serving_default = tf.function(
        lambda inputs: flat_outputs(call(inputs, training=False)),
        input_signature=[inputs_spec()], autograph=False)
    if model is not encoder:
      def mlm(inputs, training=False):
        out, outputs = encode(inputs, training)
        logits = model.masked_lm(out["sequence_output"], inputs[POSITIONS],
                                 encoder.embedding_table)
        outputs["mlm_logits"] = _float32(logits)
        return outputs
      # Not the sentence-order head's variables: the call does not use them.
      self.mlm = _Reusable([encoder, model.masked_lm], mlm, with_positions=True)
    add_tokenizer_assets(self, tokenizer)

  def signatures(self):
    """TF Serving's signatures: serving_default."""
    return {"serving_default": self.serving_default}


def add_tokenizer_assets(root, tokenizer):
  """Gives a TF Hub object its tokenizer (a settings.TokenizerSettings) as Model Garden's exports
  hold it: the file as the asset `sp_model_file` (SentencePiece) or `vocab_file` (WordPiece), and
  a bool variable `do_lower_case`."""
  if tokenizer.spm_model_file:
    root.sp_model_file = tf.saved_model.Asset(tokenizer.spm_model_file)
  else:
    root.vocab_file = tf.saved_model.Asset(tokenizer.vocab_file)
  root.do_lower_case = tf.Variable(tokenizer.do_lower_case, trainable=False,
                                   name="do_lower_case")


def save_hub_model(root, export_path, flag=None):
  """Saves a TF Hub object (HubEncoder, HubPreprocessor) with saved_model.pb directly in
  export_path (no version folder, as TF Hub's models), written atomically (see export.staging).
  Raises FileExistsError when export_path holds files already, export.staging.OutputPathError
  (naming `flag`, the flag that gave export_path) when it cannot be written. Returns the
  absolute path."""
  export_path = checked_export_dir(export_path)
  write_directory_atomically(
      export_path, lambda staging: tf.saved_model.save(root, staging,
                                                       signatures=root.signatures()),
      flag=flag)
  return export_path


def mlm_head_missing(report):
  """The MLM head's variables that a checkpoint load (its LoadReport) did not find."""
  return [name for name in report.missing if name.startswith("cls/predictions/")]


def check_mlm_head(report, init_checkpoint):
  """Refuses a model_with_mlm export whose checkpoint lacks the MLM head: its logits would come
  from freshly initialised weights."""
  missing = mlm_head_missing(report)
  if missing:
    raise errors.CheckpointError(
        f"--export_type=model_with_mlm: {init_checkpoint} has no MLM head (it lacks "
        f"{', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); export "
        "--export_type=model, or give a pretraining checkpoint")
