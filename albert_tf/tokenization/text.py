"""Text normalisation of the original (preprocess_text) and the BERT basic-tokenizer helpers."""

import unicodedata


def convert_to_unicode(text):
  """str as is; bytes decoded as UTF-8, dropping undecodable bytes (as the original)."""
  if isinstance(text, str):
    return text
  if isinstance(text, bytes):
    return text.decode("utf-8", "ignore")
  raise ValueError(f"Unsupported string type: {type(text)}")


def preprocess_text(inputs, remove_space=True, lower=False):
  """Collapses whitespace, NFKD-normalises, drops combining marks, optionally lower-cases."""
  outputs = convert_to_unicode(inputs)
  if remove_space:
    outputs = " ".join(outputs.strip().split())
  outputs = unicodedata.normalize("NFKD", outputs)
  outputs = "".join(c for c in outputs if not unicodedata.combining(c))
  if lower:
    outputs = outputs.lower()
  return outputs


def is_whitespace(char):
  if char in " \t\n\r":
    return True
  return unicodedata.category(char) == "Zs"


def is_control(char):
  if char in "\t\n\r":
    return False
  return unicodedata.category(char) in ("Cc", "Cf")


def is_punctuation(char):
  """ASCII non-alphanumerics and every Unicode P* category count as punctuation."""
  cp = ord(char)
  if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
    return True
  return unicodedata.category(char).startswith("P")


CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_cjk(cp):
  return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def cjk_character_class():
  """CJK_RANGES as an RE2 character class, for TF's regex ops."""
  return "[" + "".join(f"\\x{{{lo:X}}}-\\x{{{hi:X}}}" for lo, hi in CJK_RANGES) + "]"
