"""Two refusals of the fine-tuning jobs: an evaluation whose key metric or loss is NaN or
infinite never becomes model.ckpt-best (finetuning/evaluation.py), and the memory pre-flight
estimates what a run takes, not what its flags could mean: a run_race `--do_eval` (training is
on by default, as the original's) resuming at the end of its schedule trains no step and is
checked for its evaluation (training/memory.py, footprints.py, tasks/race/job.py)."""

import dataclasses
import os

import pytest

from albert_tf.core import errors, settings
from albert_tf.core.config import AlbertConfig
from albert_tf.finetuning import evaluation
from albert_tf.finetuning.evaluation import BestCheckpointTracker
from albert_tf.tasks.classifier import settings as classifier_settings
from albert_tf.tasks.ner import settings as ner_settings
from albert_tf.tasks.race import settings as race_settings
from albert_tf.tasks.squad import settings as squad_settings
from albert_tf.training import footprints, memory
from helpers import REPO_ROOT, TESTDATA

BASE = os.path.join(REPO_ROOT, "data", "configs", "albert_base_v2.json")
SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
RACE = os.path.join(TESTDATA, "original_finetuning", "race")
GIB = 2**30


def _blocks(path):
  """eval_results.txt as one {key: value} per evaluation."""
  with open(path, encoding="utf-8") as f:
    return [dict(line.split(" = ") for line in block.strip().splitlines())
            for block in f.read().split("=" * 50)[:-1]]


# -- the best checkpoint ----------------------------------------------------------------------
def test_a_nan_loss_is_never_best_not_even_the_first(tmp_path, caplog):
  caplog.set_level("INFO", logger="albert_tf")
  tracker, saved = BestCheckpointTracker(str(tmp_path), "eval_accuracy"), []
  # A diverged model's step-1 evaluation: its loss is NaN, its accuracy (an argmax) is not.
  diverged = {"eval_accuracy": 0.25, "eval_loss": float("nan"), "loss": float("nan")}
  assert not tracker.improves(diverged)
  assert not tracker.record(1, diverged, lambda: saved.append(1))
  assert saved == [] and (tracker.best_step, tracker.best_value) == (-1, -1.0)
  assert (tmp_path / "best_trial.txt").read_text() == "1:-1:-1.0"
  assert ("the evaluation at step 1 is not finite (eval_loss = nan, loss = nan): it is not a "
          "candidate for best") in caplog.text
  # The next finite one is the first best.
  assert tracker.record(2, {"eval_accuracy": 0.5, "eval_loss": 0.75, "loss": 0.75},
                        lambda: saved.append(2))
  assert saved == [2] and (tmp_path / "best_trial.txt").read_text() == "2:2:0.5"
  assert [b["best"] for b in _blocks(tmp_path / "eval_results.txt")] == ["-1.0", "0.5"]
  assert "step 2 is not finite" not in caplog.text


@pytest.mark.parametrize("result, bad", [
    ({"f1": float("inf")}, {"f1": float("inf")}),
    ({"f1": float("-inf")}, {"f1": float("-inf")}),
    ({"f1": float("nan")}, {"f1": float("nan")}),
    ({"f1": 0.9, "loss": float("inf")}, {"loss": float("inf")}),
    ({"f1": 0.9, "start_loss": float("-inf"), "exact_match": float("nan")},
     {"start_loss": float("-inf")}),  # only the key metric and the losses are looked at
])
def test_non_finite_key_metrics_and_losses_never_improve(tmp_path, result, bad):
  tracker, saved = BestCheckpointTracker(str(tmp_path), "f1"), []
  # First: not a best, though anything beats the starting -1.0.
  assert not tracker.record(2, result, lambda: saved.append(2))
  assert tracker.record(4, {"f1": 0.5, "loss": 1.0}, lambda: saved.append(4))
  # After a finite best: it stays the best (+inf used to outrank every later evaluation).
  assert not tracker.record(6, result, lambda: saved.append(6))
  assert tracker.record(8, {"f1": 0.75, "loss": 1.0}, lambda: saved.append(8))
  assert saved == [4, 8] and (tmp_path / "best_trial.txt").read_text() == "8:8:0.75"
  assert repr(evaluation.non_finite_values(result, "f1")) == repr(bad)


def test_a_stored_infinite_best_is_dropped_on_resume(tmp_path, caplog):
  # best_trial.txt of a run from before: its +inf would have stayed the best for good.
  (tmp_path / "best_trial.txt").write_text("4:4:inf")
  caplog.set_level("INFO", logger="albert_tf")
  tracker, saved = BestCheckpointTracker(str(tmp_path), "eval_accuracy"), []
  assert (tracker.last_step, tracker.best_step, tracker.best_value) == (4, -1, -1.0)
  assert "the best eval_accuracy (inf, step 4) is not finite" in caplog.text
  assert tracker.record(6, {"eval_accuracy": 0.5, "eval_loss": 0.5}, lambda: saved.append(6))
  assert saved == [6] and (tmp_path / "best_trial.txt").read_text() == "6:6:0.5"


# -- what the memory pre-flight estimates -------------------------------------------------------
def _race(**fields):
  """RaceSettings at run_race's defaults for ALBERT-base: 32 questions x 512 tokens, 12000
  steps."""
  fields = {"output_dir": "o", "data_dir": "d", "model": settings.ModelSettings(max_seq_length=512),
            "train": settings.TrainSettings(train_batch_size=32, num_train_steps=12000), **fields}
  return race_settings.RaceSettings(**fields)


def test_each_job_estimates_only_the_parts_it_runs():
  config = AlbertConfig.from_json_file(BASE)
  # run_race's defaults (--do_train and --do_eval on): training is the peak, and its refusal
  # names the flag that evaluates alone.
  parts = footprints.job_footprints(_race(do_train=True, do_eval=True), config, 1, 1)
  assert [(p.what, p.micro_batch_size, footprints.gib(p.total)) for p in parts] == [
      ("training", 128, "127.37 GiB"), ("evaluation", 32, "2.22 GiB")]
  assert parts[0].fix == ("lower --train_batch_size, raise --gradient_accumulation_steps or "
                          "lower --max_seq_length; or --nodo_train, to run evaluation without "
                          "training")
  # The same run resuming at the end of its schedule (trains=False): the evaluation alone.
  f = footprints.job_footprint(_race(do_train=True, do_eval=True), config, 1, 1, trains=False)
  assert (f.what, footprints.gib(f.total)) == ("evaluation", "2.22 GiB")
  assert f == footprints.job_footprint(_race(do_eval=True), config, 1, 1)
  # A training run with nothing else to run has no --nodo_train to suggest.
  alone = footprints.job_footprint(_race(do_train=True), config, 1, 1)
  assert alone == footprints.estimate(config, 128, 512)
  # Each job's forward-only parts, with their own batch flags, and no training.
  model = settings.ModelSettings(max_seq_length=128)
  runs = {
      "classifier": classifier_settings.ClassifierSettings(
          output_dir="o", data_dir="d", task_name="mnli", do_eval=True, eval_batch_size=64,
          model=model),
      "squad": squad_settings.SquadSettings(output_dir="o", do_predict=True,
                                            predict_batch_size=24, model=model),
      "ner": ner_settings.NerSettings(output_dir="o", data_dir="d", do_eval=True,
                                      do_predict=True, eval_batch_size=16,
                                      predict_batch_size=48, model=model),
      "pretraining": settings.PretrainingSettings(output_dir="o", input_file="i",
                                                  do_train=False, do_eval=True, model=model),
  }
  described = {name: [(p.what, p.micro_batch_size) for p in footprints.job_footprints(
      s, config, 2, 2)] for name, s in runs.items()}
  assert described == {"classifier": [("evaluation", 32)], "squad": [("prediction", 12)],
                       "ner": [("evaluation", 8), ("prediction", 24)],
                       "pretraining": [("evaluation", 32)]}


@pytest.fixture
def race_job(tmp_path, monkeypatch):
  """A RaceJob of ALBERT-base as run_race's defaults make it (--do_train, --do_eval,
  --train_step=12000, 32 x 512), checked as if on a CPU host with 16 GiB free."""
  from albert_tf.tasks.race.job import RaceJob  # TensorFlow: only the tests that need it
  monkeypatch.setattr(memory, "available", lambda: (16 * GIB, "16.00 GiB free per test"))
  # A GPU would skip the host-memory check.
  monkeypatch.setattr(memory, "local_devices",
                      lambda strategy: ["/job:localhost/replica:0/task:0/device:CPU:0"])
  out = tmp_path / "out"
  out.mkdir()
  return RaceJob(_race(
      output_dir=str(out), data_dir=RACE, do_train=True, do_eval=True,
      model=settings.ModelSettings(albert_config_file=BASE, max_seq_length=512),
      tokenizer=settings.TokenizerSettings(spm_model_file=SPM)))


def test_a_finished_race_run_is_checked_for_its_evaluation(race_job, caplog):
  # `run_race --do_eval` on an output_dir trained to --train_step: it resumes at 12000, trains
  # no step and evaluates (2.22 GiB); it used to be refused for training (127.37 GiB).
  out = race_job.settings.output_dir
  open(os.path.join(out, "model.ckpt-12000.index"), "wb").close()
  caplog.set_level("INFO", logger="albert_tf")
  memory.check_job(race_job)
  assert (f"memory check: {os.path.join(out, 'model.ckpt-12000')} is at step 12000, the end of "
          "the training schedule (12000 steps): no training step runs") in caplog.text
  assert "memory check: evaluation estimated at 2.22 GiB" in caplog.text
  assert race_job.scheduled_train_steps() == 12000 and not memory.trains(race_job)
  # --nodo_train: no training, whatever output_dir holds.
  race_job.settings = dataclasses.replace(race_job.settings, do_train=False,
                                          output_dir=os.path.join(out, "missing"))
  assert not memory.trains(race_job)


def test_an_unfinished_race_run_is_refused_for_training(race_job):
  # A fresh output_dir, or one part-way through the schedule: the run trains, and is refused
  # with the flag that would evaluate alone.
  for step in (None, 11900):
    if step is not None:
      open(os.path.join(race_job.settings.output_dir, f"model.ckpt-{step}.index"), "wb").close()
    with pytest.raises(errors.MemoryCheckError) as e:
      memory.check_job(race_job)
    assert str(e.value).startswith("training would need about 127.37 GiB")
    assert ("; or --nodo_train, to run evaluation without training; or "
            "--recompute_activations (the same gradients, for about a third more compute), with "
            "which --train_batch_size up to 36 fits (or skip this check with --nomemory_check)"
            ) in str(e.value)
    assert memory.trains(race_job)


def test_a_job_without_a_schedule_before_its_data_is_checked_for_training(tmp_path):
  # SQuAD's steps come from its examples: a --do_train run is checked for training whatever
  # output_dir holds (a larger estimate rather than a kill).
  job = type("Job", (), {})()
  job.settings = squad_settings.SquadSettings(output_dir=str(tmp_path), do_train=True,
                                              model=settings.ModelSettings())
  (tmp_path / "model.ckpt-999999.index").write_bytes(b"")
  job.scheduled_train_steps = lambda: None
  assert memory.trains(job)
  job.scheduled_train_steps = lambda: 999999
  assert not memory.trains(job)


def test_no_prediction_or_export_from_a_run_whose_every_evaluation_diverged(tmp_path):
  from albert_tf.tasks.classifier.job import ClassifierJob
  config = os.path.join(TESTDATA, "original_model", "albert_config.json")
  job = ClassifierJob(classifier_settings.ClassifierSettings(
      output_dir=str(tmp_path), task_name="mrpc", data_dir=str(tmp_path), do_train=True,
      do_predict=True, model=settings.ModelSettings(albert_config_file=config, max_seq_length=32),
      tokenizer=settings.TokenizerSettings(spm_model_file=SPM)))
  tracker = job.tracker("eval_accuracy")
  tracker.record(2, {"eval_accuracy": 0.5, "eval_loss": float("nan")}, lambda: None)
  tracker.record(4, {"eval_accuracy": 0.5, "eval_loss": float("inf")}, lambda: None)
  # The latest checkpoint is the diverged model: it is no fallback for model.ckpt-best.
  with pytest.raises(errors.CheckpointError,
                     match=r"no model for predicting: every evaluation of .* had a loss that is "
                           r"not finite \(at step 2, 4: the model diverged\)"):
    job.load_best("predicting")
