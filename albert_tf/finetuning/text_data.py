"""What the text classification tasks (run_classifier's GLUE and own data, run_race) share
between their files and their feature records: the original processors' text normalisation
(TextProcessor), the examples that pad a set to whole batches (PaddingInputExample) and
[CLS] a [SEP] b [SEP] packing (pack_pair). No TensorFlow."""

from albert_tf.tokenization.text import convert_to_unicode, preprocess_text


class PaddingInputExample:
  """A stand-in example (all-zero features, is_real_example 0) that pads an eval or predict set
  to a whole number of batches, as the original does on TPU."""


class TextProcessor:
  """What every processor of the original shares: its text normalisation and the
  get_{train,dev,test}_examples methods (subclasses define get_examples(data_dir, split))."""

  regression = False

  def __init__(self, use_spm=True, do_lower_case=True):
    self.use_spm = use_spm
    self.do_lower_case = do_lower_case

  def process_text(self, text):
    """The original's normalisation of every field it reads (whitespace, NFKD, accents, case)."""
    if self.use_spm:
      return preprocess_text(text, lower=self.do_lower_case)
    return convert_to_unicode(text)

  def get_examples(self, data_dir, split):
    raise NotImplementedError

  def get_train_examples(self, data_dir):
    return self.get_examples(data_dir, "train")

  def get_dev_examples(self, data_dir):
    return self.get_examples(data_dir, "dev")

  def get_test_examples(self, data_dir):
    return self.get_examples(data_dir, "test")


def pack_pair(tokenizer, tokens_a, tokens_b, max_seq_length):
  """[CLS] a [SEP] (b [SEP]) as ids, mask and segment ids padded to max_seq_length."""
  tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
  segment_ids = [0] * len(tokens)
  if tokens_b:
    tokens += tokens_b + ["[SEP]"]
    segment_ids += [1] * (len(tokens_b) + 1)
  input_ids = tokenizer.convert_tokens_to_ids(tokens)
  pad = max_seq_length - len(input_ids)
  return (input_ids + [0] * pad, [1] * len(input_ids) + [0] * pad, segment_ids + [0] * pad)
