"""A run seeded with --data_seed resumes with that seed when the flag is left out (it is kept in
output_dir), and refuses another one: the data order of a resumed run is the uninterrupted
run's."""

import os

import pytest

from albert_tf.core import errors, settings
from albert_tf.tasks.pretraining.job import PretrainingJob
from helpers import ORIGINAL_MODEL, TESTDATA, assert_same_checkpoint_values

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
# 1,799 records (max_seq_length 64, 10 predictions): the seed decides which ones a step reads.
RECORDS = os.path.join(TESTDATA, "original_pretraining_data", "expected.tfrecord")


def _pretrain(out, steps, data_seed):
  PretrainingJob(settings.PretrainingSettings(
      output_dir=str(out), input_file=RECORDS, max_predictions_per_seq=10,
      model=settings.ModelSettings(albert_config_file=CONFIG, max_seq_length=64,
                                   init_checkpoint=os.path.join(ORIGINAL_MODEL, "model.ckpt-0")),
      run=settings.RunSettings(random_seed=1, data_seed=data_seed),
      train=settings.TrainSettings(train_batch_size=2, num_train_steps=steps,
                                   num_warmup_steps=1, learning_rate=0.01,
                                   save_checkpoints_steps=2, iterations_per_loop=1))).run()


@pytest.mark.slow  # four pretraining runs
def test_a_seeded_run_resumed_without_the_flag_keeps_its_order(tmp_path):
  for name in ("flag_given", "flag_left_out"):
    _pretrain(tmp_path / name, 2, data_seed=5)
  assert (tmp_path / "flag_left_out" / "data_seed.txt").read_text() == "5\n"
  _pretrain(tmp_path / "flag_given", 4, data_seed=5)
  _pretrain(tmp_path / "flag_left_out", 4, data_seed=None)
  assert_same_checkpoint_values(str(tmp_path / "flag_given" / "model.ckpt-4"),
                                str(tmp_path / "flag_left_out" / "model.ckpt-4"))
  with pytest.raises(errors.ResumeMismatchError,
                     match=r"--data_seed=6: .* was trained with data seed 5 \(kept in "):
    _pretrain(tmp_path / "flag_left_out", 6, data_seed=6)
