"""Tokenization as the original: SentencePiece (ALBERT) or WordPiece (BERT vocabularies)."""

from albert_tf.tokenization.full import FullTokenizer, encode_ids, encode_pieces
from albert_tf.tokenization.text import convert_to_unicode, preprocess_text
from albert_tf.tokenization.wordpiece import BasicTokenizer, WordpieceTokenizer, load_vocab
from albert_tf.tokenization.vocab_check import check_vocab_fits
