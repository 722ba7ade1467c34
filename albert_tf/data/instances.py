"""Sentence-order pretraining instances from documents, as the original create_pretraining_data.

A document is a list of sentences; a sentence is a `Sentence` (token ids and, per token, whether
it starts a word). Instances hold ids, so nothing is converted twice.
"""

import collections
import dataclasses

from albert_tf.data.masking import create_masked_lm_predictions

Sentence = collections.namedtuple("Sentence", ["ids", "starts"])


@dataclasses.dataclass
class Instance:
  input_ids: list
  segment_ids: list
  token_boundary: list
  masked_lm_positions: list
  masked_lm_ids: list
  is_random_next: bool


@dataclasses.dataclass
class InstanceOptions:
  max_seq_length: int = 512
  short_seq_prob: float = 0.1
  masked_lm_prob: float = 0.15
  max_predictions_per_seq: int = 20
  do_whole_word_mask: bool = True
  do_permutation: bool = False
  random_next_sentence: bool = False


@dataclasses.dataclass
class SpecialIds:
  cls: int
  sep: int
  mask: int
  vocab_size: int


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
  """Trims the longer side, from the front or the back at random, until the pair fits.
  tokens_a / tokens_b are lists of (id, start) pairs, changed in place."""
  while len(tokens_a) + len(tokens_b) > max_num_tokens:
    trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
    if rng.random() < 0.5:
      del trunc[0]
    else:
      trunc.pop()


def _extend(target, sentence):
  target.extend(zip(sentence.ids, sentence.starts))


def create_instances_from_document(all_documents, document_index, options, special, rng,
                                   sampler):
  """The original's chunking of one document into A/B pairs (swapped for sentence order)."""
  document = all_documents[document_index]
  max_num_tokens = options.max_seq_length - 3
  target_seq_length = max_num_tokens
  if rng.random() < options.short_seq_prob:
    target_seq_length = rng.randint(2, max_num_tokens)

  instances = []
  current_chunk = []
  current_length = 0
  i = 0
  while i < len(document):
    segment = document[i]
    current_chunk.append(segment)
    current_length += len(segment.ids)
    if i == len(document) - 1 or current_length >= target_seq_length:
      if current_chunk:
        a_end = 1
        if len(current_chunk) >= 2:
          a_end = rng.randint(1, len(current_chunk) - 1)
        tokens_a = []
        for j in range(a_end):
          _extend(tokens_a, current_chunk[j])
        tokens_b = []
        if len(current_chunk) == 1 or (options.random_next_sentence and rng.random() < 0.5):
          is_random_next = True
          target_b_length = target_seq_length - len(tokens_a)
          for _ in range(10):
            random_document_index = rng.randint(0, len(all_documents) - 1)
            if random_document_index != document_index:
              break
          random_document = all_documents[random_document_index]
          random_start = rng.randint(0, len(random_document) - 1)
          for j in range(random_start, len(random_document)):
            _extend(tokens_b, random_document[j])
            if len(tokens_b) >= target_b_length:
              break
          # The segments not used go back to the document.
          i -= len(current_chunk) - a_end
        elif not options.random_next_sentence and rng.random() < 0.5:
          is_random_next = True
          for j in range(a_end, len(current_chunk)):
            _extend(tokens_b, current_chunk[j])
          tokens_a, tokens_b = tokens_b, tokens_a  # sentence order swapped
        else:
          is_random_next = False
          for j in range(a_end, len(current_chunk)):
            _extend(tokens_b, current_chunk[j])
        truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
        if not tokens_a or not tokens_b:
          raise AssertionError("empty segment in a pretraining instance")
        instances.append(_build_instance(tokens_a, tokens_b, is_random_next, options, special,
                                         rng, sampler))
      current_chunk = []
      current_length = 0
    i += 1
  return instances


def _build_instance(tokens_a, tokens_b, is_random_next, options, special, rng, sampler):
  ids = [special.cls] + [t for t, _ in tokens_a] + [special.sep] + [t for t, _ in tokens_b] + [
      special.sep]
  starts = [True] + [s for _, s in tokens_a] + [True] + [s for _, s in tokens_b] + [True]
  len_a = len(tokens_a) + 2
  segment_ids = [0] * len_a + [1] * (len(tokens_b) + 1)
  flags = [False] * len(ids)
  flags[0] = flags[len_a - 1] = flags[-1] = True
  output, positions, labels, boundary = create_masked_lm_predictions(
      ids, starts, flags, options.masked_lm_prob, options.max_predictions_per_seq,
      special.vocab_size, special.mask, rng, sampler, options.do_whole_word_mask,
      options.do_permutation)
  return Instance(output, segment_ids, boundary, positions, labels, is_random_next)


def instances_by_document(all_documents, options, special, dupe_factor, rng, sampler):
  """The original's instance creation, one document at a time: shuffles `all_documents` in place,
  then yields (step, instances of that document) for the dupe_factor x len(all_documents)
  documents visited, in the original's order (step counts from 1).

  The original then shuffles all the instances with `rng`: `shuffled_order` gives that
  permutation, so that the instances need not be held as objects meanwhile.
  """
  rng.shuffle(all_documents)
  step = 0
  for _ in range(dupe_factor):
    for document_index in range(len(all_documents)):
      step += 1
      yield step, create_instances_from_document(all_documents, document_index, options,
                                                 special, rng, sampler)


def shuffled_order(count, rng):
  """The permutation that rng.shuffle applies to a list of `count` items (it depends only on the
  length): item order[k] goes to position k."""
  order = list(range(count))
  rng.shuffle(order)
  return order
