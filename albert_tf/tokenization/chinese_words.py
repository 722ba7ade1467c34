"""Chinese whole-word marking for masked-LM data: jieba's words over WordPiece's characters.

A Chinese WordPiece vocabulary (Google's and brightmart's albert_*_zh vocab.txt) makes every CJK
character its own piece, so the `##` rule of whole-word masking never joins two characters. The
Chinese BERT-wwm scheme segments each line into words and treats the later characters of a
multi-character word as if they carried `##`: for the start-piece decision only, the ids written
stay those of the plain characters (and so do the masked-LM labels).

Here a line's pieces are joined (as brightmart/albert_zh's get_new_segment joins them), jieba
segments the joined text, and a piece continues a word when it and the piece before it are both
single CJK characters inside one jieba word. Unlike get_new_segment (which matches at most three
characters at a time against the line's set of words) a word of any length is marked whole.

Pure Python (no TensorFlow); jieba comes with the `chinese` extra.
"""

import functools
import logging
import os

from albert_tf.core import errors
from albert_tf.tokenization.text import is_cjk

JIEBA = "jieba"
SEGMENTERS = (JIEBA,)


def is_cjk_char_piece(piece) -> bool:
  """Whether a piece is one CJK character (as BasicTokenizer isolates them)."""
  return len(piece) == 1 and is_cjk(ord(piece))


def continuation_flags(pieces, words) -> list:
  """Which pieces continue a Chinese word.

  Args:
    pieces: a line's WordPiece pieces.
    words: the segmentation of "".join(pieces) into consecutive words (their concatenation must
      be that text).

  Returns:
    One bool per piece: True where the piece and the one before it are single CJK characters of
    the same word.

  Raises:
    ValueError: when `words` do not spell the joined pieces.
  """
  word_of_char = []
  for k, word in enumerate(words):
    word_of_char.extend([k] * len(word))
  text = "".join(pieces)
  if len(word_of_char) != len(text) or "".join(words) != text:
    raise ValueError(f"the segmentation {words!r} does not spell {text!r}")
  flags, offset, previous = [], 0, None  # previous: the word of the last piece if a CJK char
  for piece in pieces:
    here = word_of_char[offset] if is_cjk_char_piece(piece) else None
    flags.append(here is not None and here == previous)
    previous = here
    offset += len(piece)
  return flags


def default_cache_dir() -> str:
  """Where jieba keeps its prefix-dictionary cache: $XDG_CACHE_HOME/albert_tf (default
  ~/.cache/albert_tf), not the shared temporary directory jieba would use (another user's
  cache file there would be loaded with marshal)."""
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.path.join(base, "albert_tf")


class JiebaSegmenter:
  """jieba's default-dictionary segmentation (precise mode with its HMM for unknown words, as
  jieba.lcut), deterministic for a given jieba version.

  The dictionary loads on first use, once per process (about 1 s to build, then 0.5 s from its
  cache); jieba's own log lines are silenced below WARNING.

  Args:
    cache_dir: where the dictionary cache is written (default_cache_dir() when None).
    command: what needs jieba, named when it is not installed.

  Raises:
    errors.MissingExtraError: jieba is not installed (the `chinese` extra).
  """

  def __init__(self, cache_dir=None, command="create_pretraining_data "
               "--chinese_word_segmentation=jieba"):
    errors.require_module("jieba", "chinese", command)
    self.cache_dir = cache_dir or default_cache_dir()

  def __call__(self, text) -> list:
    """The words of `text`, in order (their concatenation is `text`)."""
    return _loaded_tokenizer(self.cache_dir).lcut(text)


@functools.lru_cache(maxsize=None)
def _loaded_tokenizer(cache_dir):
  """A jieba.Tokenizer with its default dictionary loaded, once per process and cache_dir (a
  load is slow enough to do once)."""
  import jieba
  logging.getLogger("jieba").setLevel(logging.WARNING)  # its "Building prefix dict ..." lines
  tokenizer = jieba.Tokenizer()
  tokenizer.tmp_dir = cache_dir
  os.makedirs(cache_dir, exist_ok=True)
  tokenizer.initialize()
  return tokenizer


def segmenter(name, cache_dir=None):
  """The segmenter called `name` (one of SEGMENTERS), or None for None.

  Raises:
    errors.UsageError: an unknown name.
  """
  if name is None:
    return None
  if name != JIEBA:
    raise errors.UsageError(f"--chinese_word_segmentation={name!r}: the choices are "
                            f"{', '.join(SEGMENTERS)}")
  return JiebaSegmenter(cache_dir)


def word_start_flags(pieces, starts, segment):
  """`starts` (per piece, whether it starts a word by the `##` rule) with the later characters
  of each Chinese word of `segment("".join(pieces))` turned to False.

  Args:
    pieces: a line's pieces.
    starts: a sequence of 0/1 of the same length.
    segment: a callable str -> list of words (e.g. a JiebaSegmenter).

  Returns:
    A bytearray of 0/1, one per piece.
  """
  flags = continuation_flags(pieces, segment("".join(pieces)))
  return bytearray(0 if later else start for start, later in zip(starts, flags))
