"""The pretraining input pipeline and the dynamic-masking mode, on real records."""

import collections
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.data import dynamic_masking
from albert_tf.core.io import expand_input_patterns
from albert_tf.data.pipeline import DynamicMasking, pretraining_dataset
from helpers import ORIGINAL_MODEL, TESTDATA
from tfrecord_utils import read_examples

RECORDS = os.path.join(TESTDATA, "original_pretraining_data", "expected.tfrecord")
CLS, SEP, MASK, VOCAB = 2, 3, 4, 1000


def test_eval_pipeline_matches_records_in_order():
  ds = pretraining_dataset(os.path.join(ORIGINAL_MODEL, "eval.tfrecord"), 24, 5, batch_size=2,
                           is_training=False)
  expected = read_examples(os.path.join(ORIGINAL_MODEL, "eval.tfrecord"))
  batches = list(ds.take(3))  # repeated: records 0,1 | 2,0 | 1,2
  order = [0, 1, 2, 0, 1, 2]
  for b, batch in enumerate(batches):
    for j in range(2):
      ex = expected[order[2 * b + j]]
      for name, value in batch.items():
        np.testing.assert_array_equal(value[j].numpy().reshape(-1), np.asarray(ex[name]))
        assert value.dtype in (tf.int32, tf.float32)


def test_training_pipeline_shapes_and_coverage():
  ds = pretraining_dataset(RECORDS, 64, 10, batch_size=16, is_training=True, seed=1)
  seen = set()
  for batch in ds.take(120):
    assert batch["input_ids"].shape == (16, 64) and batch["masked_lm_ids"].shape == (16, 10)
    seen.update(map(tuple, batch["input_ids"].numpy()))
  assert len(seen) > 1500  # shuffled, repeated, reads (nearly) every record


def test_missing_input_files():
  with pytest.raises(FileNotFoundError, match="input file not found"):
    expand_input_patterns("/nonexistent/*.tfrecord")


def _word_runs(masked_words):
  """Lengths of maximal runs of consecutive masked words."""
  runs, current = [], 0
  for m in list(masked_words) + [False]:
    if m:
      current += 1
    elif current:
      runs.append(current)
      current = 0
  return runs


def _analyse(records_ids, boundaries, masks, positions_list):
  stats = collections.Counter()
  runs = collections.Counter()
  for ids, boundary, mask, positions in zip(records_ids, boundaries, masks, positions_list):
    real = np.asarray(mask, bool)
    masked = np.zeros(len(ids), bool)
    masked[positions] = True
    assert not (masked & ~real).any(), "padding masked"
    assert not np.isin(np.asarray(ids)[masked], [CLS, SEP]).any(), "[CLS]/[SEP] masked"
    candidate = real & ~np.isin(ids, [CLS, SEP])
    starts = candidate & (np.asarray(boundary) == 1)
    word_of = np.cumsum(starts) - 1
    words = collections.defaultdict(list)
    for i in np.where(candidate)[0]:
      words[word_of[i]].append(masked[i])
    for flags in words.values():
      assert all(flags) or not any(flags), "partial word masked"
    masked_words = [all(words[w]) for w in sorted(words)]
    runs.update(_word_runs(masked_words))
    stats["masked"] += masked.sum()
    stats["real"] += real.sum()
  return stats, runs


def test_dynamic_mask_statistics_match_offline_rules():
  originals = read_examples(RECORDS)
  settings = DynamicMasking(cls_id=CLS, sep_id=SEP, mask_id=MASK, vocab_size=VOCAB)
  ds = pretraining_dataset(RECORDS, 64, 10, batch_size=100, is_training=False, dynamic=settings)
  ids_by_record = {}
  for ex in originals:
    ids = np.array(ex["input_ids"])
    w = np.array(ex["masked_lm_weights"]) > 0
    ids[np.array(ex["masked_lm_positions"])[w]] = np.array(ex["masked_lm_ids"])[w]
    ids_by_record[len(ids_by_record)] = ids
  dyn_ids, dyn_bound, dyn_mask, dyn_pos = [], [], [], []
  replaced = collections.Counter()
  for b, batch in enumerate(ds.take(36)):  # two epochs of 1799 records
    for j in range(100):
      k = (b * 100 + j) % len(originals)
      true_ids = ids_by_record[k]
      w = batch["masked_lm_weights"][j].numpy() > 0
      pos = batch["masked_lm_positions"][j].numpy()[w]
      np.testing.assert_array_equal(batch["masked_lm_ids"][j].numpy()[w], true_ids[pos])
      out = batch["input_ids"][j].numpy()
      unmasked = np.ones(64, bool)
      unmasked[pos] = False
      np.testing.assert_array_equal(out[unmasked], true_ids[unmasked])
      for p in pos:
        replaced["mask" if out[p] == MASK else "keep" if out[p] == true_ids[p] else "random"] += 1
      dyn_ids.append(true_ids)
      dyn_bound.append(originals[k]["token_boundary"])
      dyn_mask.append(originals[k]["input_mask"])
      dyn_pos.append(pos)
  dyn_stats, dyn_runs = _analyse(dyn_ids, dyn_bound, dyn_mask, dyn_pos)
  off_stats, off_runs = _analyse(
      [ids_by_record[k] for k in range(len(originals))],
      [ex["token_boundary"] for ex in originals], [ex["input_mask"] for ex in originals],
      [np.array(ex["masked_lm_positions"])[np.array(ex["masked_lm_weights"]) > 0]
       for ex in originals])
  # Share of real positions masked: as the offline masks (budget min(10, round(0.15 * len))).
  dyn_share = dyn_stats["masked"] / dyn_stats["real"]
  off_share = off_stats["masked"] / off_stats["real"]
  assert abs(dyn_share - off_share) < 0.01, (dyn_share, off_share)
  # n-gram structure: distribution of masked word-run lengths like the offline masks.
  for length in (1, 2, 3):
    d = dyn_runs[length] / sum(dyn_runs.values())
    o = off_runs[length] / sum(off_runs.values())
    assert abs(d - o) < 0.04, (length, d, o)
  total = sum(replaced.values())
  assert abs(replaced["mask"] / total - 0.8) < 0.02
  assert abs(replaced["keep"] / total - 0.1) < 0.02
  assert abs(replaced["random"] / total - 0.1) < 0.02


def test_ngram_length_draws():
  logits = dynamic_masking.ngram_log_probs(3)
  draws = tf.random.categorical(logits, 30000, seed=3).numpy()[0] + 1
  freq = np.bincount(draws, minlength=4)[1:] / len(draws)
  np.testing.assert_allclose(freq, [6 / 11, 3 / 11, 2 / 11], atol=0.01)
  reverse = tf.exp(dynamic_masking.ngram_log_probs(3, favor_shorter_ngram=False)).numpy()[0]
  np.testing.assert_allclose(reverse, [2 / 11, 3 / 11, 6 / 11], atol=1e-6)
