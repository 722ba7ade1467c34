"""AlbertPreprocessor: raw text to the encoder's inputs, in the graph (a Keras 3 layer)."""

import keras
import tensorflow as tf

from albert_tf.tokenization import bert_packing
from albert_tf.tokenization.in_graph_choice import in_graph_tokenizer

# The encoder-input names of each `names` choice: TF Hub's, and ours (AlbertModel's).
NAMES = {
    "tfhub": (bert_packing.WORD_IDS, bert_packing.MASK, bert_packing.TYPE_IDS),
    "albert": ("input_ids", "input_mask", "segment_ids"),
}


@keras.saving.register_keras_serializable(package="albert_tf")
class AlbertPreprocessor(keras.layers.Layer):
  """Strings to the encoder's inputs, as TF Hub's albert_en_preprocess does, with FullTokenizer's
  ids: tokenize, then [CLS] a [SEP] (b [SEP]) trimmed round-robin to seq_length and padded
  (albert_tf.tokenization.bert_packing). With a TF Hub-format encoder in Keras 3:

    text = keras.Input(shape=(), dtype="string")
    encoder = keras.layers.TFSMLayer("hub/encoder", call_endpoint="serving_default")
    outputs = encoder(albert_tf.AlbertPreprocessor(spm_model_file="30k-clean.model")(text))

  or `AlbertPreprocessor(..., names="albert")` before our AlbertModel. No weights; serialised as
  its arguments (the tokenizer file must be where the config says when the model is loaded).

  Args:
    spm_model_file: a SentencePiece model; or None with `vocab_file`.
    vocab_file: a WordPiece vocab.txt, used when spm_model_file is None.
    do_lower_case: bool, as FullTokenizer's.
    seq_length: int >= 3, the packed length T.
    names: "tfhub" (input_word_ids, input_mask, input_type_ids) or "albert" (input_ids,
      input_mask, segment_ids): the output keys.
    **kwargs: passed to keras.layers.Layer.

  Call arguments:
    inputs: string [B] (one segment), or a list of 1 or 2 of them (sentence pairs).

  Returns:
    A dict of int32 [B, T] tensors under the `names` keys: ids, mask (1 on tokens), type ids
    (0 for the first segment, 1 for the second).
  """

  def __init__(self, spm_model_file: str | None = None, vocab_file: str | None = None,
               do_lower_case: bool = True, seq_length: int = 128, names: str = "tfhub",
               **kwargs):
    super().__init__(**kwargs)
    if names not in NAMES:
      raise ValueError(f"names must be one of {sorted(NAMES)}, got {names!r}")
    if seq_length < 3:
      raise ValueError(f"seq_length must be at least 3 ([CLS] and two [SEP]), got {seq_length}")
    self.spm_model_file = spm_model_file
    self.vocab_file = vocab_file
    self.do_lower_case = do_lower_case
    self.seq_length = seq_length
    self.names = names
    self.tokenizer = in_graph_tokenizer(spm_model_file, vocab_file, do_lower_case)
    self.special = bert_packing.special_tokens(self.tokenizer)
    self.built = True

  def call(self, inputs):
    texts = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    segments = [bert_packing.tokenize(self.tokenizer, tf.reshape(text, [-1])) for text in texts]
    packed = bert_packing.bert_pack_inputs(
        segments, self.seq_length, self.special["start_of_sequence_id"],
        self.special["end_of_segment_id"], self.special["padding_id"])
    return {ours: packed[hub] for hub, ours in zip(NAMES["tfhub"], NAMES[self.names])}

  def compute_output_spec(self, inputs):
    first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
    shape = (first.shape[0], self.seq_length)
    return {name: keras.KerasTensor(shape, dtype="int32") for name in NAMES[self.names]}

  def get_config(self) -> dict:
    config = super().get_config()
    config.update(spm_model_file=self.spm_model_file, vocab_file=self.vocab_file,
                  do_lower_case=self.do_lower_case, seq_length=self.seq_length,
                  names=self.names)
    return config
