"""The memory pre-flight of the runs that build a model without training it
(albert_tf/training/footprints.py, memory.py): the forward pass's and the export's arithmetic, a
job checked for the largest part of its run (evaluation, prediction, export), the exporters'
check_model_build, and an eval-only run_pretraining of a model far beyond memory refused as one
error: line before output_dir is written."""

import json
import os

import pytest

from albert_tf.core import errors, settings
from albert_tf.core.config import AlbertConfig
from albert_tf.training import footprints, memory
from albert_tf.tasks.classifier import settings as classifier_settings
from albert_tf.tasks.race import settings as race_settings
from helpers import REPO_ROOT, run_binary
from test_memory_check import measured_peak_rss, write_pretraining_records

TINY = os.path.join(REPO_ROOT, "data", "configs", "tiny_quickstart.json")
BASE = os.path.join(REPO_ROOT, "data", "configs", "albert_base_v2.json")
SPM = os.path.join(REPO_ROOT, "tests", "testdata", "original_pretraining_data",
                   "30k-clean-tiny.model")
CPU = ["/job:localhost/replica:0/task:0/device:CPU:0"]
GIB = 2**30


def _base(**changes):
  return AlbertConfig.from_dict(dict(AlbertConfig.from_json_file(BASE).to_dict(), **changes))


def _absurd_config_file(directory):
  """An albert_config.json of ALBERT-base with hidden_size 65536: 17e9 parameters in one
  attention block alone, about 200 GiB of float32 weights."""
  path = os.path.join(directory, "albert_config.json")
  with open(path, "w", encoding="utf-8") as f:
    json.dump(dict(AlbertConfig.from_json_file(BASE).to_dict(), hidden_size=65536,
                   num_attention_heads=16), f)
  return path


def _fake_available(monkeypatch, gib):
  monkeypatch.setattr(memory, "available", lambda: (gib * GIB, f"{gib}.00 GiB free per test"))


# -- the arithmetic (fast) ------------------------------------------------------------------------
def test_forward_activations_hold_one_layer_and_the_mlm_logits():
  config = _base()
  b, t, h, i, n, p, v = 16, 512, 768, 3072, 12, 20, 30000
  encoder = b * t * (6 * h + 2 * i) + 2 * b * n * t * t
  assert footprints.forward_activations(config, b, t, max_predictions_per_seq=p) == (
      4 * encoder + 4 * 2 * b * p * v)
  # 16 x 512 of ALBERT-base: 0.70 GiB at the peak, whatever the number of layers (training the
  # same batch keeps 15.8 GiB of activations).
  assert footprints.forward_activations(config, b, t) == 4 * encoder == 754_974_720
  assert footprints.forward_activations(_base(num_hidden_layers=48), b, t) == 4 * encoder
  assert footprints.estimate(config, b, t).activations > 15.8 * GIB
  # Mixed precision halves the encoder's tensors, not the float32 masked LM loss's.
  assert footprints.forward_activations(config, b, t, mixed_precision="mixed_bfloat16",
                                        max_predictions_per_seq=p) == (
      2 * encoder + 4 * 2 * b * p * v)


def test_inference_estimate_is_weights_slots_and_one_batch():
  config = _base()
  params = footprints.parameter_count(config)
  f = footprints.inference_estimate(config, 64, 128, max_predictions_per_seq=20)
  # The job's Runner builds the optimizer's slots in every run: weights + m + v, float32.
  assert f.state == 4 * 3 * params
  assert f.activations == footprints.forward_activations(config, 64, 128,
                                                         max_predictions_per_seq=20)
  assert f.total == footprints.RUNTIME_BYTES + f.state + f.activations
  assert footprints.gib(f.total) == "1.52 GiB"  # measured 1.43 GiB (the module docstring's table)
  two = footprints.inference_estimate(config, 64, 128, local_replicas=2)
  assert (two.state, two.activations) == (2 * f.state, 2 * (f.activations - 4 * 2 * 64 * 20 *
                                                            30000))


def test_export_estimate_counts_three_copies_of_the_weights():
  config = _base()
  params = footprints.parameter_count(config)
  f = footprints.export_estimate(config, 128)
  assert f.state == 3 * 4 * params  # the model, the serving copy, the values being saved
  assert f.activations == footprints.forward_activations(config, 1, 128)
  assert footprints.export_estimate(config, 128, precision="bfloat16").state == 3 * 2 * params
  # An export that runs no batch has no activations, and says none.
  none = footprints.export_estimate(config, 128, batch_size=0, model_bytes=7)
  assert (none.state, none.activations) == (7 + 2 * 4 * params, 0)
  assert "sequences" not in none.describe()


def _pretraining(do_train=True, do_eval=False, train_batch_size=4096, eval_batch_size=64):
  return settings.PretrainingSettings(
      output_dir="o", input_file="i", do_train=do_train, do_eval=do_eval,
      eval_batch_size=eval_batch_size, model=settings.ModelSettings(max_seq_length=512),
      train=settings.TrainSettings(train_batch_size=train_batch_size))


def test_job_footprint_is_the_largest_part_of_the_run():
  config = _base()
  params = footprints.parameter_count(config)
  # Eval-only pretraining: the evaluation, its global batch split over the 2 replicas, with the
  # masked LM logits; it used not to be estimated at all.
  f = footprints.job_footprint(_pretraining(do_train=False, do_eval=True), config, 2, 2)
  assert f == footprints.inference_estimate(
      config, 32, 512, local_replicas=2, max_predictions_per_seq=20, what="evaluation",
      fix="lower --eval_batch_size or --max_seq_length")
  # Train and evaluate: the larger of the two, whichever it is.
  both = _pretraining(do_eval=True, train_batch_size=8, eval_batch_size=4096)
  parts = footprints.job_footprints(both, config, 1, 1)
  assert [p.what for p in parts] == ["training", "evaluation"]
  assert (parts[1].total > parts[0].total
          and footprints.job_footprint(both, config, 1, 1) == parts[1])
  assert footprints.job_footprint(_pretraining(do_eval=True), config, 1, 1).what == "training"
  # Fine-tuning: predict-only RACE counts 4 choices per question of --predict_batch_size.
  race = race_settings.RaceSettings(output_dir="o", data_dir="d", do_predict=True,
                               predict_batch_size=16,
                               model=settings.ModelSettings(max_seq_length=512))
  f = footprints.job_footprint(race, config, 1, 1)
  assert (f.what, f.micro_batch_size, f.fix) == ("prediction", 64,
                                                 "lower --predict_batch_size or --max_seq_length")
  assert f.activations == footprints.forward_activations(config, 64, 512)
  # Export-only: the job's weights and slots, plus the export's two bfloat16 copies.
  export = classifier_settings.ClassifierSettings(output_dir="o", data_dir="d", task_name="mnli",
                                       export_dir="e", serving_precision="bfloat16",
                                       model=settings.ModelSettings(max_seq_length=128))
  f = footprints.job_footprint(export, config, 1, 1)
  assert (f.what, f.state, f.activations) == ("the export", 4 * 3 * params + 2 * 2 * params, 0)


def test_an_absurd_model_is_refused_naming_its_config(monkeypatch, tmp_path):
  _fake_available(monkeypatch, 16)
  path = _absurd_config_file(str(tmp_path))
  config = AlbertConfig.from_json_file(path)
  with pytest.raises(errors.MemoryCheckError) as e:
    memory.check_model_build(config, "exporting the SavedModel", seq_length=128,
                             config_file=path)
  message = str(e.value)
  expected = (footprints.RUNTIME_BYTES + 3 * 4 * footprints.parameter_count(config)
              + footprints.forward_activations(config, 1, 128))
  assert expected > 200 * GIB
  assert message.startswith(f"exporting the SavedModel would need about {footprints.gib(expected)}")
  assert "16.00 GiB is available" in message
  assert f"use a smaller model than {path}" in message
  assert "--nomemory_check" not in message  # the exporters have no such flag
  # A job's evaluation of it: no batch flag would help, the message says the model.
  f = footprints.job_footprint(_pretraining(do_train=False, do_eval=True), config, 1, 1)
  with pytest.raises(errors.MemoryCheckError) as e:
    memory.check(f, CPU, path)
  assert f"use a smaller model than {path}" in str(e.value)
  assert "--eval_batch_size" not in str(e.value) and "--nomemory_check" in str(e.value)
  # A model that fits with too big a batch: the batch flag is the fix.
  f = footprints.job_footprint(_pretraining(do_train=False, do_eval=True, eval_batch_size=4096),
                               _base(), 1, 1)
  with pytest.raises(errors.MemoryCheckError) as e:
    memory.check(f, CPU, BASE)
  assert str(e.value).startswith("evaluation would need about")
  assert "lower --eval_batch_size or --max_seq_length (or skip this check with " in str(e.value)
  # A tiny model passes.
  memory.check_model_build(AlbertConfig.from_json_file(TINY), "exporting", seq_length=64)


# -- the binaries ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_eval_only_run_of_an_absurd_config_is_refused_before_writing(tmp_path):
  # It used to skip the pre-flight (no training), write albert_config.json into output_dir, and
  # die of OOM minutes later with a traceback.
  config = _absurd_config_file(str(tmp_path))
  records = tmp_path / "seq128.tfrecord"
  write_pretraining_records(records, 2, 128, 20, 30000)
  out = tmp_path / "out"
  result = run_binary("run_pretraining", [
      f"--albert_config_file={config}", f"--input_file={records}", f"--output_dir={out}",
      "--nodo_train", "--do_eval", "--eval_batch_size=8", "--max_seq_length=128",
      "--max_predictions_per_seq=20"], check=False, timeout=120)
  assert result.returncode == 1, result.stderr[-3000:]
  lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
  assert lines[0].startswith("error: evaluation would need about"), lines[0]
  assert f"use a smaller model than {config}" in lines[0]
  assert not os.path.exists(out)  # refused before output_dir (and its albert_config.json)


@pytest.mark.slow
def test_eval_estimate_within_2x_of_measured_peak_rss(tmp_path):
  records = tmp_path / "seq64.tfrecord"
  write_pretraining_records(records, 8, 64, 20, 2000)
  measured, stderr = measured_peak_rss([
      f"--albert_config_file={TINY}", f"--input_file={records}",
      f"--output_dir={tmp_path / 'out'}", "--nodo_train", "--do_eval", "--eval_batch_size=8",
      "--max_eval_steps=1", "--max_seq_length=64", "--max_predictions_per_seq=20",
      "--random_seed=1"])
  logged = [l for l in stderr.splitlines() if "memory check: evaluation estimated at" in l]
  assert logged, stderr[-3000:]
  estimate = float(logged[0].split("estimated at ")[1].split(" GiB")[0]) * GIB
  assert 0.5 < estimate / measured < 2, (estimate, measured)


@pytest.mark.slow
@pytest.mark.parametrize("binary, flags, what", [
    ("export_tflite", ["--random_weights", "--output_file={out}/albert.tflite"],
     "exporting the portable model"),
    ("export_saved_model", ["--init_checkpoint={ckpt}", "--export_dir={out}",
                            f"--spm_model_file={SPM}"], "exporting the SavedModel"),
    ("export_checkpoints", ["--init_checkpoint={ckpt}", "--export_path={out}"],
     "converting the checkpoint"),
    ("export_tfhub", ["--init_checkpoint={ckpt}", "--export_path={out}",
                      f"--spm_model_file={SPM}"],
     "exporting the TF Hub encoder"),
])
def test_an_export_of_an_absurd_config_is_refused_before_writing(binary, flags, what, tmp_path):
  config = _absurd_config_file(str(tmp_path))
  out = tmp_path / "out"
  # A checkpoint prefix without a config beside it: the absurd config is the one compared. Its
  # index (empty) passes the flags' check; the memory check must refuse before it is read.
  ckpt = tmp_path / "ckpt" / "model.ckpt-0"
  ckpt.parent.mkdir()
  (tmp_path / "ckpt" / "model.ckpt-0.index").write_bytes(b"")
  result = run_binary(binary, [f"--albert_config_file={config}"] + [
      f.format(out=out, ckpt=ckpt) for f in flags], check=False, timeout=120)
  assert result.returncode == 1, result.stderr[-3000:]
  lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
  assert lines[0].startswith(f"error: {what} would need about"), lines[0]
  assert not os.path.exists(out)
