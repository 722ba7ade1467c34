"""Pretraining records with sequences of chosen lengths (short ones pad most), for the packing
tests: decoded as tf.data gives them, or written as create_pretraining_data's TFRecords."""

import numpy as np
import tensorflow as tf

CLS, SEP, MASK = 2, 3, 4


def make_records(lengths, seq_length, num_predictions, seed, vocab_size=60):
  """Decoded records as create_pretraining_data writes them: [CLS] a [SEP] b [SEP], the real
  tokens first, a few of them masked."""
  rng = np.random.default_rng(seed)
  n = len(lengths)
  out = {name: np.zeros((n, seq_length), np.int32)
         for name in ("input_ids", "input_mask", "segment_ids", "token_boundary")}
  out.update(masked_lm_positions=np.zeros((n, num_predictions), np.int32),
             masked_lm_ids=np.zeros((n, num_predictions), np.int32),
             masked_lm_weights=np.zeros((n, num_predictions), np.float32),
             next_sentence_labels=rng.integers(0, 2, (n, 1)).astype(np.int32))
  for i, length in enumerate(lengths):
    ids = rng.integers(5, vocab_size, length)
    split = int(rng.integers(2, max(3, length - 1)))
    ids[0], ids[split - 1], ids[-1] = CLS, SEP, SEP
    out["input_mask"][i, :length] = 1
    out["segment_ids"][i, split:length] = 1
    out["token_boundary"][i, :length] = 1
    candidates = [p for p in range(1, length) if ids[p] not in (CLS, SEP)]
    count = min(num_predictions, max(1, round(length * 0.15)), len(candidates))
    positions = np.sort(rng.choice(candidates, count, replace=False)).astype(np.int64)
    out["masked_lm_positions"][i, :count] = positions
    out["masked_lm_ids"][i, :count] = ids[positions]
    out["masked_lm_weights"][i, :count] = 1.0
    ids = ids.copy()
    ids[positions] = MASK
    out["input_ids"][i, :length] = ids
  return out


def write_records(path, records):
  with tf.io.TFRecordWriter(str(path)) as writer:
    for i in range(len(records["input_ids"])):
      feature = {}
      for name, values in records.items():
        row = values[i].reshape(-1)
        if values.dtype == np.float32:
          feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=row))
        else:
          feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=row))
      writer.write(tf.train.Example(
          features=tf.train.Features(feature=feature)).SerializeToString())


def short_lengths(n, seq_length, seed):
  """Mostly short sequences, a few full ones (a short-document corpus)."""
  rng = np.random.default_rng(seed)
  lengths = rng.integers(5, seq_length // 3, n)
  lengths[rng.random(n) < 0.15] = seq_length
  return lengths
