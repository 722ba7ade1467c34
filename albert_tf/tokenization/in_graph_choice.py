"""The in-graph tokenizer of a model's tokenizer files, chosen as FullTokenizer chooses: used by
the raw-text exports (albert_tf.export) and by the AlbertPreprocessor layer, so that both
tokenize alike."""

from albert_tf.core import errors
from albert_tf.tokenization.in_graph import InGraphTokenizer
from albert_tf.tokenization.in_graph_wordpiece import WordpieceInGraphTokenizer


def in_graph_tokenizer(spm_model_file=None, vocab_file=None, do_lower_case=True):
  """The in-graph tokenizer of a SentencePiece model or, without one, a WordPiece vocab.txt.

  Args:
    spm_model_file: a SentencePiece model file, or None.
    vocab_file: a WordPiece vocab.txt, used when spm_model_file is None.
    do_lower_case: bool, as FullTokenizer's.

  Raises:
    errors.UsageError: neither file is given.
  """
  if spm_model_file:
    return InGraphTokenizer(spm_model_file, do_lower_case)
  if vocab_file:
    return WordpieceInGraphTokenizer(vocab_file, do_lower_case)
  raise errors.UsageError(
      "a raw-text export needs --spm_model_file (SentencePiece) or --vocab_file "
      "(WordPiece vocab.txt) to tokenize in the graph")
