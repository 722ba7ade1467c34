"""Packed sequences (albert_tf.data.packing): each packed sequence's MLM and sentence-order outputs,
losses and gradients equal its own unpacked ones; the packed stream holds every record once per
epoch, is deterministic under a seed and resumes exactly; evaluation packs the very sequences
it evaluates unpacked."""

import collections

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.core import settings
from albert_tf.data import packing
from albert_tf.data.pipeline import DynamicMasking, pretraining_dataset
from albert_tf.models.losses import masked_lm_loss, sentence_order_loss
from albert_tf.training import footprints
from albert_tf.training.pretraining import PretrainingObjective
from packing_records import make_records, short_lengths, write_records

CONFIGS = {
    "shared": dict(vocab_size=60, embedding_size=8, hidden_size=16, num_hidden_layers=3,
                   num_attention_heads=2, intermediate_size=32, max_position_embeddings=48),
    "two_groups_no_projection": dict(vocab_size=70, embedding_size=12, hidden_size=12,
                                     num_hidden_layers=2, num_hidden_groups=2,
                                     num_attention_heads=3, intermediate_size=20,
                                     max_position_embeddings=40, type_vocab_size=2),
}


# -- packing itself -------------------------------------------------------------------------------
def test_first_fit_decreasing_by_hand():
  # Longest first: 7 opens row 0, 4 opens row 1 (7 + 4 > 10), 3 joins row 0 (7 + 3 = 10), 2
  # joins row 1; at most 3 a row.
  row, offset, slot, num_rows = packing.assign_rows(tf.constant([4, 7, 3, 2]), 10, 3)
  assert row.numpy().tolist() == [1, 0, 0, 1]
  assert offset.numpy().tolist() == [0, 0, 7, 4]
  assert slot.numpy().tolist() == [0, 0, 1, 1]
  assert int(num_rows) == 2
  # At most 2 sequences a row: five of length 1 need 3 rows.
  row, _, slot, num_rows = packing.assign_rows(tf.constant([1, 1, 1, 1, 1]), 10, 2)
  assert row.numpy().tolist() == [0, 0, 1, 1, 2] and slot.numpy().tolist() == [0, 1, 0, 1, 0]
  assert int(num_rows) == 3


def test_pack_window_by_hand():
  records = make_records([4, 7, 3], 10, 2, seed=0)
  rows, num_rows = packing.pack_window({k: tf.constant(v) for k, v in records.items()}, 3)
  rows = {k: v.numpy() for k, v in rows.items()}
  assert int(num_rows) == 2
  ids = records["input_ids"]
  # Row 0: the 7-token sequence (record 1), then the 3-token one (record 2); row 1: record 0.
  np.testing.assert_array_equal(rows["input_ids"][0], np.concatenate([ids[1, :7], ids[2, :3]]))
  np.testing.assert_array_equal(rows["input_ids"][1], np.concatenate([ids[0, :4], [0] * 6]))
  np.testing.assert_array_equal(rows["position_ids"][0], [0, 1, 2, 3, 4, 5, 6, 0, 1, 2])
  np.testing.assert_array_equal(rows["sequence_ids"][0], [1] * 7 + [2] * 3)
  np.testing.assert_array_equal(rows["sequence_ids"][1], [1] * 4 + [0] * 6)
  np.testing.assert_array_equal(rows["input_mask"][1], [1] * 4 + [0] * 6)
  np.testing.assert_array_equal(rows["sequence_starts"][:2], [[0, 7, 0], [0, 0, 0]])
  np.testing.assert_array_equal(rows["sequence_weights"][:2], [[1, 1, 0], [1, 0, 0]])
  labels = records["next_sentence_labels"][:, 0]
  np.testing.assert_array_equal(rows["next_sentence_labels"][:2],
                                [[labels[1], labels[2], 0], [labels[0], 0, 0]])
  # Record 2's predictions in slot 1 (columns 2-3), their positions moved by 7.
  positions, weights = records["masked_lm_positions"], records["masked_lm_weights"]
  moved = np.where(weights[2] > 0, positions[2] + 7, 0)
  np.testing.assert_array_equal(rows["masked_lm_positions"][0, 2:4], moved)
  np.testing.assert_array_equal(rows["masked_lm_ids"][0, 2:4], records["masked_lm_ids"][2])
  # The third row is empty.
  assert not any(rows[name][2].any() for name in rows)


# -- the model on packed rows ----------------------------------------------------------------------
def _model(name):
  tf.keras.utils.set_random_seed(7)
  return albert_tf.AlbertPretrainer(albert_tf.AlbertConfig(**CONFIGS[name]))


def _unpacked_and_packed(name, k=4, seed=1):
  config = CONFIGS[name]
  seq_length, num_predictions = config["max_position_embeddings"], 4
  records = make_records(short_lengths(23, seq_length, seed), seq_length, num_predictions, seed,
                         config["vocab_size"])
  records = {k_: tf.constant(v) for k_, v in records.items()}
  rows, num_rows = packing.pack_window(records, k)
  rows = {k_: v[:num_rows] for k_, v in rows.items()}
  lengths = tf.reduce_sum(records["input_mask"], 1)
  row, _, slot, _ = packing.assign_rows(lengths, seq_length, k)
  return records, rows, row.numpy(), slot.numpy(), num_predictions


def _summed_losses(outputs, features):
  """Sum over sequences of their MLM (weighted) and sentence-order losses."""
  _, mlm_nll, _ = masked_lm_loss(outputs["masked_lm_logits"], features["masked_lm_ids"],
                                 features["masked_lm_weights"])
  mlm = tf.reduce_sum(tf.reshape(features["masked_lm_weights"], [-1]) * mlm_nll)
  _, sop_nll, _ = sentence_order_loss(tf.reshape(outputs["sentence_order_logits"], [-1, 2]),
                                      features["next_sentence_labels"])
  if "sequence_weights" in features:
    sop_nll *= tf.reshape(features["sequence_weights"], [-1])
  return mlm + tf.reduce_sum(sop_nll)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_each_packed_sequence_equals_it_unpacked(name):
  model = _model(name)
  records, rows, row, slot, p = _unpacked_and_packed(name)
  assert len(rows["input_ids"]) < len(records["input_ids"]) / 1.5  # it did pack
  unpacked, packed = model(records), model(rows)
  weights = records["masked_lm_weights"].numpy()
  for i in range(len(row)):
    real = weights[i] > 0
    # Float32, the same products in other orders (another row length and neighbours): 1e-5.
    np.testing.assert_allclose(
        packed["masked_lm_logits"].numpy()[row[i], slot[i] * p:(slot[i] + 1) * p][real],
        unpacked["masked_lm_logits"].numpy()[i][real], atol=1e-5, err_msg=f"sequence {i}")
    np.testing.assert_allclose(packed["sentence_order_logits"].numpy()[row[i], slot[i]],
                               unpacked["sentence_order_logits"].numpy()[i], atol=1e-5)
    np.testing.assert_allclose(packed["pooled_output"].numpy()[row[i], slot[i]],
                               unpacked["pooled_output"].numpy()[i], atol=1e-5)

  # The summed loss and its gradients.
  def loss_and_grads(features):
    with tf.GradientTape() as tape:
      loss = _summed_losses(model(features, training=True), features)
    grads = tape.gradient(loss, model.trainable_variables)
    return loss, [tf.convert_to_tensor(g) for g in grads]
  loss_u, grads_u = loss_and_grads(records)
  loss_p, grads_p = loss_and_grads(rows)
  np.testing.assert_allclose(float(loss_p), float(loss_u), rtol=1e-5)
  for v, gu, gp in zip(model.trainable_variables, grads_u, grads_p):
    np.testing.assert_allclose(gp.numpy(), gu.numpy(), atol=1e-5, err_msg=v.path)


def test_a_packed_sequence_sees_no_other():
  model = _model("shared")
  _, rows, _, _, p = _unpacked_and_packed("shared")
  before = model(rows)
  # Every token of the rows' second and later sequences replaced: the first sequences' outputs
  # are unchanged (the same graph and shapes: bitwise).
  others = rows["sequence_ids"].numpy() > 1
  noise = np.random.default_rng(0).integers(5, 60, others.shape).astype(np.int32)
  changed = dict(rows, input_ids=tf.where(others, noise, rows["input_ids"]))
  after = model(changed)
  first = rows["sequence_ids"].numpy() == 1
  np.testing.assert_array_equal(after["sequence_output"].numpy()[first],
                                before["sequence_output"].numpy()[first])
  np.testing.assert_array_equal(after["sentence_order_logits"].numpy()[:, 0],
                                before["sentence_order_logits"].numpy()[:, 0])
  np.testing.assert_array_equal(after["masked_lm_logits"].numpy()[:, :p],
                                before["masked_lm_logits"].numpy()[:, :p])
  # ... while those sequences' own outputs did change.
  assert not np.allclose(after["sequence_output"].numpy()[others],
                         before["sequence_output"].numpy()[others])


def test_the_objective_packed_equals_unpacked():
  model = _model("shared")
  records, rows, _, _, _ = _unpacked_and_packed("shared")
  objective = PretrainingObjective()
  results = []
  for features in (records, rows):
    sums = objective.sums(model(features), features)
    totals = objective.totals(features)
    results.append((float(objective.loss(sums, totals)),
                    objective.metrics({k: float(v) for k, v in sums.items()})))
  (loss_u, metrics_u), (loss_p, metrics_p) = results
  np.testing.assert_allclose(loss_p, loss_u, rtol=1e-5)
  assert metrics_u.keys() == metrics_p.keys()
  for key in metrics_u:
    np.testing.assert_allclose(metrics_p[key], metrics_u[key], rtol=1e-5, err_msg=key)


# -- the packed stream -----------------------------------------------------------------------------
T, P = 32, 4


@pytest.fixture(name="records_file")
def fixture_records_file(tmp_path):
  records = make_records(short_lengths(120, T, 3), T, P, 3)
  path = tmp_path / "short.tfrecord"
  write_records(path, records)
  return str(path), records


def _sequences_of_rows(batches):
  """The (token ids, label) of every packed sequence in `batches`."""
  found = []
  for batch in batches:
    b = {k: v.numpy() for k, v in batch.items()}
    for r in range(len(b["input_ids"])):
      for s in range(b["sequence_weights"].shape[1]):
        if b["sequence_weights"][r, s]:
          tokens = b["input_ids"][r][b["sequence_ids"][r] == s + 1]
          found.append((tuple(tokens), int(b["next_sentence_labels"][r, s])))
  return found


def _sequences_of_records(records):
  return [(tuple(records["input_ids"][i][records["input_mask"][i] > 0]),
           int(records["next_sentence_labels"][i, 0])) for i in range(len(records["input_ids"]))]


def test_an_epoch_of_rows_holds_every_record_once(records_file):
  path, records = records_file
  rows = packing.count_packed_rows(path, T, 3)
  assert rows < 0.6 * len(records["input_ids"])
  d = pretraining_dataset([path], T, P, 1, True, seed=5, max_sequences_per_row=3)
  epoch = list(d.take(rows))
  assert collections.Counter(_sequences_of_rows(epoch)) == collections.Counter(
      _sequences_of_records(records))


def _stream(path, start_step, steps, **kwargs):
  d = pretraining_dataset([path], T, P, 4, True, seed=9, start_step=start_step,
                          max_sequences_per_row=3, **kwargs)
  return [{k: v.numpy() for k, v in b.items()} for b in d.take(steps)]


def _assert_same_batches(a, b):
  assert len(a) == len(b)
  for x, y in zip(a, b):
    for name in x:
      np.testing.assert_array_equal(x[name], y[name], err_msg=name)


def test_the_packed_stream_is_seeded_and_resumes_exactly(records_file, tmp_path):
  path, _ = records_file
  # 120 records pack into about 50 rows: 13 batches of 4 an epoch; 30 steps cross two epochs.
  straight = _stream(path, 0, 30)
  _assert_same_batches(straight, _stream(path, 0, 30))
  cache = (str(tmp_path / "counts.json"), True)
  _assert_same_batches(straight[17:], _stream(path, 17, 13, count_cache=cache))
  assert "packed_rows_T32_K3_W256" in (tmp_path / "counts.json").read_text()
  _assert_same_batches(straight[26:], _stream(path, 26, 4, count_cache=cache))


def test_dynamic_masks_on_packed_rows_are_seeded_and_resume(records_file):
  path, _ = records_file
  dynamic = DynamicMasking(vocab_size=60, masked_lm_prob=0.2)
  straight = _stream(path, 0, 20, dynamic=dynamic)
  _assert_same_batches(straight[15:], _stream(path, 15, 5, dynamic=dynamic))
  # Fresh masks: they are not the records' own.
  plain = _stream(path, 0, 20)
  assert any((a["masked_lm_positions"] != b["masked_lm_positions"]).any()
             for a, b in zip(straight, plain))


def test_evaluation_packs_the_batches_it_evaluates_unpacked(records_file):
  path, _ = records_file
  unpacked = pretraining_dataset([path], T, P, 8, False)
  packed = pretraining_dataset([path], T, P, 8, False, max_sequences_per_row=3)
  for u, p in zip(unpacked.take(5), packed.take(5)):
    assert p["input_ids"].shape == u["input_ids"].shape
    u = {k: v.numpy() for k, v in u.items()}
    assert collections.Counter(_sequences_of_rows([p])) == collections.Counter(
        _sequences_of_records(u))


def test_the_memory_check_counts_a_packed_rows_predictions():
  config = albert_tf.AlbertConfig(**CONFIGS["shared"])

  def training(**packing_settings):
    job = settings.PretrainingSettings(
        output_dir="unused", input_file="unused", max_predictions_per_seq=20,
        model=settings.ModelSettings(max_seq_length=48),
        train=settings.TrainSettings(train_batch_size=8), **packing_settings)
    return footprints.job_footprints(job, config, 1, 1, trains=True)[0]
  unpacked, packed = training(), training(pack_sequences=True, max_sequences_per_row=3)
  # The masked-LM logits: [8, 3 * 20, V] float32 a row batch, against [8, 20, V], at the
  # training step's per-logit count.
  per_logit = footprints._PER_MLM_LOGIT
  logits = 8 * 20 * config.vocab_size * 4 * per_logit
  assert packed.activations - unpacked.activations == 2 * logits
