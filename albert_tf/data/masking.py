"""The original's n-gram masked-LM selection, reproducing its random streams exactly.

Two streams drive it, as in the original: Python's `random.Random` (`rng`) for shuffles, the
80/10/10 replacement and random words; numpy's `RandomState` (`np_rng`) for the n-gram length.
"""

import numpy as np

SPECIAL_PIECES = set('!"#$%&\"()*+,-./:;?@[\\]^_`{|}~')
_ENGLISH_OR_SPECIAL = set("abcdefghijklmnopqrstuvwxyz") | SPECIAL_PIECES


def is_start_piece_sp(piece):
  """Whether a SentencePiece piece starts a word, as the original decides it under Python 3."""
  if piece.startswith("\u2581") or piece.startswith("<") or piece in SPECIAL_PIECES:
    return True
  return not all(c.lower() in _ENGLISH_OR_SPECIAL for c in piece)


def is_start_piece_wordpiece(piece):
  return not piece.startswith("##")


class NgramSampler:
  """Draws n-gram lengths 1..max_ngram with p ∝ 1/n (or reversed), exactly as
  `numpy.random.RandomState.choice(ngrams, p=...)` would, from one uniform draw."""

  def __init__(self, max_ngram, favor_shorter_ngram, np_rng):
    pvals = 1.0 / np.arange(1, max_ngram + 1)
    pvals /= pvals.sum(keepdims=True)
    if not favor_shorter_ngram:
      pvals = pvals[::-1]
    p = pvals / pvals.sum(keepdims=True)
    cdf = p.cumsum()
    cdf /= cdf[-1]
    self._cdf = cdf
    self._np_rng = np_rng

  def draw(self):
    return int(self._cdf.searchsorted(self._np_rng.random_sample(), side="right")) + 1


def _flatten(spans):
  return [i for span in spans for i in span]


def select_ngrams(cand_indexes, order, num_to_predict, sampler, is_taken):
  """Walks candidate word starts in `order`, drawing an n-gram length for each and shortening it
  until it fits the budget; yields the index lists accepted (the original's selection loop).

  `is_taken(index)` tells whether a position is already used; the caller marks positions.
  """
  selected = 0
  for idx in order:
    if selected >= num_to_predict:
      break
    n = sampler.draw()
    index_set = _flatten(cand_indexes[idx:idx + n])
    n -= 1
    while selected + len(index_set) > num_to_predict and n > 0:
      index_set = _flatten(cand_indexes[idx:idx + n])
      n -= 1
    if selected + len(index_set) > num_to_predict:
      continue
    if any(is_taken(i) for i in index_set):
      continue
    selected += len(index_set)
    yield index_set


def create_masked_lm_predictions(ids, starts, special, masked_lm_prob, max_predictions_per_seq,
                                 vocab_size, mask_id, rng, sampler, do_whole_word_mask=True,
                                 do_permutation=False):
  """Masks an instance's token ids in place of the original's string tokens.

  Args:
    ids: token ids of the instance ([CLS] a [SEP] b [SEP]).
    starts: per token, whether it starts a word (is_start_piece of its piece).
    special: per token, whether it is [CLS] or [SEP].
  Returns:
    (output_ids, masked_lm_positions, masked_lm_label_ids, token_boundary)
  """
  cand_indexes = []
  token_boundary = [0] * len(ids)
  for i, (start, is_special) in enumerate(zip(starts, special)):
    if is_special:
      token_boundary[i] = 1
      continue
    if do_whole_word_mask and cand_indexes and not start:
      cand_indexes[-1].append(i)
    else:
      cand_indexes.append([i])
      if start:
        token_boundary[i] = 1

  output = list(ids)
  if masked_lm_prob == 0:
    return output, [], [], token_boundary

  num_to_predict = min(max_predictions_per_seq, max(1, int(round(len(ids) * masked_lm_prob))))
  # Shuffling indexes draws exactly as shuffling the original's list of n-gram lists.
  order = list(range(len(cand_indexes)))
  rng.shuffle(order)

  masked = []
  covered = set()
  for index_set in select_ngrams(cand_indexes, order, num_to_predict, sampler,
                                 covered.__contains__):
    for index in index_set:
      covered.add(index)
      if rng.random() < 0.8:
        replacement = mask_id
      elif rng.random() < 0.5:
        replacement = ids[index]
      else:
        replacement = rng.randint(0, vocab_size - 1)
      output[index] = replacement
      masked.append((index, ids[index]))

  rng.shuffle(order)
  if do_permutation:
    chosen = set()
    taken = lambda i: i in covered or i in chosen
    for index_set in select_ngrams(cand_indexes, order, num_to_predict, sampler, taken):
      chosen.update(index_set)
    sources = sorted(chosen)
    targets = list(sources)
    rng.shuffle(targets)
    before = list(output)
    for src, tgt in zip(sources, targets):
      output[src] = before[tgt]
      masked.append((src, before[src]))

  masked.sort(key=lambda item: item[0])
  return output, [i for i, _ in masked], [label for _, label in masked], token_boundary
