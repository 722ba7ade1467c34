"""TF Hub-format preprocessing SavedModels, as albert_en_preprocess/3 (the Preprocessor API of
https://www.tensorflow.org/hub/common_saved_model_apis/text), with our tokenizers' ids.

The root object, loaded with tensorflow_hub.load or tf.saved_model.load:
  __call__(sentences)   string [B] -> {input_word_ids, input_mask, input_type_ids} int32
      [B, default_seq_length]: one segment packed as bert_pack_inputs packs it.
  tokenize(sentences)   string [B] -> ids as FullTokenizer(spm_model_file or vocab_file,
      do_lower_case) gives them, a RaggedTensor int32: SentencePiece [B, (pieces)], WordPiece
      [B, (words), (pieces)];
      tokenize.get_special_tokens_dict() -> {vocab_size, start_of_sequence_id,
      end_of_segment_id, padding_id, mask_id}, int32 scalars.
  bert_pack_inputs(segments, seq_length=default_seq_length)  a list of 1 or 2 RaggedTensors of
      ids, int32 of ragged rank 1 or 2 -> the encoder inputs [B, seq_length]: [CLS] a [SEP]
      b [SEP], type ids 0 then 1, trimmed round-robin (albert_tf.tokenization.bert_packing).
  serving_default       __call__, also as the SavedModel signature (input `sentences`) for TF
      Serving and Keras 3's TFSMLayer.
  sp_model_file or vocab_file (an asset), do_lower_case (a bool variable).

The functions are traced without autograph: their Python control flow is fixed at tracing, and
autograph's conversion of the tokenizers would triple the export's time.
"""

import tensorflow as tf

from albert_tf.tokenization.in_graph_choice import in_graph_tokenizer
from albert_tf.export.tfhub import add_tokenizer_assets
from albert_tf.export.tokenizer_arguments import old_tokenizer_arguments
from albert_tf.tokenization import bert_packing

_SENTENCES = tf.TensorSpec([None], tf.string, name="sentences")


class _Tokenize(tf.train.Checkpoint):
  """`tokenize`: __call__(sentences) and get_special_tokens_dict()."""

  def __init__(self, tokenizer, special):
    super().__init__()
    self.__call__ = tf.function(lambda sentences: bert_packing.tokenize(tokenizer, sentences),
                                input_signature=[_SENTENCES], autograph=False)
    self.get_special_tokens_dict = tf.train.Checkpoint()
    self.get_special_tokens_dict.__call__ = tf.function(
        lambda: {name: tf.constant(value, tf.int32) for name, value in special.items()},
        input_signature=[], autograph=False)


class _PackInputs(tf.train.Checkpoint):
  """`bert_pack_inputs`: __call__(segments, seq_length=default_seq_length), traced for 1 and 2
  segments of ragged rank 1 and 2 (a saved function keeps only what was traced)."""

  def __init__(self, special, default_seq_length):
    super().__init__()

    @tf.function(autograph=False)
    def pack(segments, seq_length=default_seq_length):
      return bert_packing.bert_pack_inputs(
          segments, seq_length, special["start_of_sequence_id"], special["end_of_segment_id"],
          special["padding_id"])

    for ragged_rank in (1, 2):
      for count in (1, 2):
        spec = tf.RaggedTensorSpec([None] * (ragged_rank + 1), tf.int32)
        pack.get_concrete_function([spec] * count, seq_length=tf.TensorSpec([], tf.int32))
    self.__call__ = pack


class HubPreprocessor(tf.train.Checkpoint):
  """The root object of a TF Hub preprocessing export (see the module doc).

  Args:
    tokenizer: a settings.TokenizerSettings (SentencePiece when its spm_model_file is given,
      else WordPiece; 0.3's spm_model_file, vocab_file and do_lower_case arguments work until
      0.4.0: export.tokenizer_arguments).
    default_seq_length: int, the length of the root call's outputs and bert_pack_inputs'
      default.
  """

  @old_tokenizer_arguments(lambda self, spm_model_file=None, vocab_file=None, do_lower_case=True,
                           default_seq_length=128: None)
  def __init__(self, tokenizer, default_seq_length=128):
    super().__init__()
    self.tokenizer = in_graph_tokenizer(tokenizer.spm_model_file, tokenizer.vocab_file,
                                        tokenizer.do_lower_case)
    special = bert_packing.special_tokens(self.tokenizer)
    self.tokenize = _Tokenize(self.tokenizer, special)
    self.bert_pack_inputs = _PackInputs(special, default_seq_length)

    # Calls of the traced tokenize and bert_pack_inputs: their graphs are not traced again.
    def preprocess(sentences):
      ids = self.tokenize.__call__(sentences)
      return self.bert_pack_inputs.__call__([ids], tf.constant(default_seq_length))

    self.__call__ = tf.function(preprocess, input_signature=[_SENTENCES], autograph=False)
    self.serving_default = self.__call__
    add_tokenizer_assets(self, tokenizer)

  def signatures(self):
    """TF Serving's signatures: serving_default."""
    return {"serving_default": self.serving_default}
