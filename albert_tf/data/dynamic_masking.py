"""Fresh n-gram masks at every epoch, in TF ops, from `token_boundary` (the original's
`masked_lm_budget` idea): the same rules as create_pretraining_data.

Per example: words start where token_boundary is 1 (a non-start piece continues the previous word,
across [SEP] too, as the original's candidates do); candidate word starts are visited in random
order; each draws an n-gram length n with p(n) ∝ 1/n (or reversed), shortened until it fits the
budget num_to_predict = min(max_predictions, max(1, round(length * masked_lm_prob))); overlapping
picks are skipped. Each chosen position becomes [MASK] 80% of the time, stays 10%, becomes a random
id 10%.
"""

import numpy as np
import tensorflow as tf


def ngram_log_probs(max_ngram, favor_shorter_ngram=True):
  p = 1.0 / np.arange(1, max_ngram + 1)
  p /= p.sum()
  if not favor_shorter_ngram:
    p = p[::-1]
  return tf.constant(np.log(p)[np.newaxis], tf.float32)


def restore_original_ids(features):
  """Puts the true tokens back at the positions an offline mask changed."""
  ids = features["input_ids"]
  if "masked_lm_positions" not in features:
    return ids
  real = features["masked_lm_weights"] > 0
  positions = tf.boolean_mask(features["masked_lm_positions"], real)
  labels = tf.boolean_mask(features["masked_lm_ids"], real)
  return tf.tensor_scatter_nd_update(ids, positions[:, tf.newaxis], labels)


def mask_example(ids, input_mask, token_boundary, *, cls_id, sep_id, mask_id, vocab_size,
                 max_predictions_per_seq, masked_lm_prob=0.15, max_ngram=3,
                 favor_shorter_ngram=True, whole_word=True, seed=None):
  """One example's dynamic mask. ids, input_mask, token_boundary: int32 [T] (ids unmasked).
  seed: a stateless seed ([2] int) fixing every draw (the pipeline's, per record); None draws
  with stateful ops (a new mask at each call).

  Returns (masked input_ids [T], masked_lm_positions [P], masked_lm_ids [P],
  masked_lm_weights float32 [P]).
  """
  ids = tf.cast(ids, tf.int32)
  seq_len = tf.shape(ids)[0]
  real = tf.cast(input_mask, tf.bool)
  candidate = real & tf.not_equal(ids, cls_id) & tf.not_equal(ids, sep_id)
  if whole_word:
    first = candidate & tf.equal(tf.cumsum(tf.cast(candidate, tf.int32)), 1)
    starts = candidate & (tf.equal(token_boundary, 1) | first)
  else:
    starts = candidate
  word_of = tf.cumsum(tf.cast(starts, tf.int32)) - 1          # word index of every token
  word_of = tf.where(candidate, word_of, -1)
  num_words = tf.reduce_sum(tf.cast(starts, tf.int32))
  word_len = tf.math.unsorted_segment_sum(tf.cast(candidate, tf.int32),
                                          tf.maximum(word_of, 0), num_words)
  length = tf.reduce_sum(tf.cast(real, tf.float32))
  budget = tf.minimum(max_predictions_per_seq,
                      tf.maximum(1, tf.cast(tf.round(length * masked_lm_prob), tf.int32)))

  draw = _draws(seed)
  order = draw.shuffle(tf.range(num_words))
  ngram = draw.categorical(ngram_log_probs(max_ngram, favor_shorter_ngram),
                           tf.maximum(num_words, 1))[0] + 1
  padded_len = tf.concat([word_len, tf.zeros([max_ngram], tf.int32)], 0)

  def body(i, selected, covered):
    w = order[i]
    span = padded_len[w:w + max_ngram]
    cumulative = tf.cumsum(span)                                # tokens in 1..max_ngram words
    n_words = tf.minimum(ngram[i], num_words - w)
    fits = (tf.range(1, max_ngram + 1) <= n_words) & (selected + cumulative <= budget)
    n = tf.reduce_max(tf.where(fits, tf.range(1, max_ngram + 1), 0))
    in_span = (tf.range(num_words) >= w) & (tf.range(num_words) < w + n)
    clash = tf.reduce_any(in_span & covered)
    accept = (n > 0) & ~clash
    covered = tf.where(accept, covered | in_span, covered)
    selected = tf.where(accept, selected + tf.reduce_sum(tf.where(in_span, word_len, 0)),
                        selected)
    return i + 1, selected, covered

  _, _, covered = tf.while_loop(
      lambda i, selected, covered: (i < num_words) & (selected < budget), body,
      (0, 0, tf.zeros([num_words], tf.bool)))

  chosen = candidate & tf.gather(tf.concat([covered, [False]], 0),
                                 tf.where(word_of >= 0, word_of, num_words))
  u = draw.uniform([seq_len])
  keep_or_random = draw.uniform([seq_len]) < 0.5
  random_ids = draw.uniform([seq_len], 0, vocab_size, dtype=tf.int32)
  replacement = tf.where(u < 0.8, mask_id, tf.where(keep_or_random, ids, random_ids))
  masked_ids = tf.where(chosen, replacement, ids)

  positions = tf.cast(tf.where(chosen)[:, 0], tf.int32)[:max_predictions_per_seq]
  count = tf.shape(positions)[0]
  pad = max_predictions_per_seq - count
  labels = tf.gather(ids, positions)
  return (masked_ids,
          tf.pad(positions, [[0, pad]]),
          tf.pad(labels, [[0, pad]]),
          tf.pad(tf.ones([count], tf.float32), [[0, pad]]))


class _StatefulDraws:
  """tf.random's stateful ops (a fresh draw at every call)."""

  def shuffle(self, values):
    return tf.random.shuffle(values)

  def categorical(self, logits, num_samples):
    return tf.random.categorical(logits, num_samples, dtype=tf.int32)

  def uniform(self, shape, minval=0, maxval=None, dtype=tf.float32):
    return tf.random.uniform(shape, minval, maxval, dtype=dtype)


class _StatelessDraws:
  """Stateless draws, each with its own seed split in turn from `seed` (fixed by it alone)."""

  def __init__(self, seed):
    self._seeds = iter(tf.unstack(tf.random.experimental.stateless_split(seed, 5)))

  def shuffle(self, values):
    return tf.random.experimental.stateless_shuffle(values, next(self._seeds))

  def categorical(self, logits, num_samples):
    return tf.random.stateless_categorical(logits, num_samples, next(self._seeds),
                                           dtype=tf.int32)

  def uniform(self, shape, minval=0, maxval=None, dtype=tf.float32):
    return tf.random.stateless_uniform(shape, next(self._seeds), minval, maxval, dtype=dtype)


def _draws(seed):
  return _StatefulDraws() if seed is None else _StatelessDraws(seed)
