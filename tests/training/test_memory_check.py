"""The memory pre-flight (albert_tf/training/footprints.py and memory.py): the estimate's
arithmetic, the memory available as the cgroup and /proc/meminfo give it, the refusal of the
README's TPU-pod sizes as one error: line, and the estimate within 2x of a run's measured peak
RSS."""

import os
import subprocess
import sys

import numpy as np
import pytest

from albert_tf.core import errors, settings
from albert_tf.core.config import AlbertConfig
from albert_tf.training import footprints, memory
from albert_tf.tasks.race import settings as race_settings
from albert_tf.tasks.squad import settings as squad_settings
from helpers import REPO_ROOT, run_binary

TINY = os.path.join(REPO_ROOT, "data", "configs", "tiny_quickstart.json")
BASE = os.path.join(REPO_ROOT, "data", "configs", "albert_base_v2.json")
CPU = ["/job:localhost/replica:0/task:0/device:CPU:0"]


def _config(path):
  return AlbertConfig.from_json_file(path)


def write_pretraining_records(path, num_records, seq_length, predictions, vocab_size, seed=0):
  """Synthetic run_pretraining records (random ids, every position real, `predictions` masked
  positions per record): what create_pretraining_data writes, at any size."""
  import tensorflow as tf
  rng = np.random.default_rng(seed)

  def ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

  with tf.io.TFRecordWriter(str(path)) as writer:
    for _ in range(num_records):
      features = {
          "input_ids": ints(rng.integers(5, vocab_size, seq_length)),
          "input_mask": ints(np.ones(seq_length)),
          "segment_ids": ints(np.arange(seq_length) >= seq_length // 2),
          "masked_lm_positions": ints(np.sort(rng.choice(np.arange(1, seq_length), predictions,
                                                         replace=False))),
          "masked_lm_ids": ints(rng.integers(5, vocab_size, predictions)),
          "masked_lm_weights": tf.train.Feature(
              float_list=tf.train.FloatList(value=[1.0] * predictions)),
          "next_sentence_labels": ints([rng.integers(0, 2)]),
      }
      writer.write(tf.train.Example(
          features=tf.train.Features(feature=features)).SerializeToString())


def pretraining_flags(config, records, output_dir, batch, seq, predictions=20):
  return [f"--albert_config_file={config}", f"--input_file={records}",
          f"--output_dir={output_dir}", f"--train_batch_size={batch}",
          f"--max_seq_length={seq}", f"--max_predictions_per_seq={predictions}",
          "--optimizer=lamb", "--num_train_steps=2", "--num_warmup_steps=1",
          "--iterations_per_loop=1", "--save_checkpoints_steps=2", "--random_seed=1",
          "--data_seed=1"]


def measured_peak_rss(flags):
  """(peak RSS in bytes, stderr) of `python -m albert_tf.run_pretraining flags`, measured by a
  fresh Python parent of it (RUSAGE_CHILDREN covers its one child)."""
  code = ("import resource, subprocess, sys\n"
          "r = subprocess.run([sys.executable, '-m', 'albert_tf.run_pretraining'] + sys.argv[1:],"
          " capture_output=True, text=True)\n"
          "sys.stderr.write(r.stderr)\n"
          "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
  result = subprocess.run([sys.executable, "-c", code] + list(flags), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=900)
  returncode, max_rss_kib = map(int, result.stdout.split())
  assert returncode == 0, result.stderr[-3000:]
  return max_rss_kib * 1024, result.stderr


def _pretraining_settings(batch, seq, accumulation=1, precision="float32"):
  return settings.PretrainingSettings(
      output_dir="unused", input_file="unused",
      model=settings.ModelSettings(max_seq_length=seq),
      run=settings.RunSettings(mixed_precision=precision),
      train=settings.TrainSettings(train_batch_size=batch,
                                   gradient_accumulation_steps=accumulation))


# -- the estimate's arithmetic (fast) -------------------------------------------------------------
def test_parameter_count_is_the_built_models():
  # ALBERT-base: the paper's 12M parameters; exactly what AlbertPretrainer holds.
  import albert_tf
  for path in (TINY, BASE):
    config = _config(path)
    model = albert_tf.AlbertPretrainer(config)
    built = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    assert footprints.parameter_count(config) == built, path
  assert 11e6 < footprints.parameter_count(_config(BASE)) < 13e6


def test_parameter_count_of_the_sharing_variants():
  base = _config(BASE)
  shared = footprints.parameter_count(base)
  not_shared = AlbertConfig.from_dict(dict(base.to_dict(), parameter_sharing="not-shared"))
  h, i = base.hidden_size, base.intermediate_size
  block = 4 * (h * h + h) + 2 * h + h * i + i + i * h + h + 2 * h
  assert footprints.parameter_count(not_shared) == shared + 11 * block
  attention = AlbertConfig.from_dict(dict(base.to_dict(), parameter_sharing="shared-attention"))
  assert footprints.parameter_count(attention) == shared + 11 * (h * i + i + i * h + h + 2 * h)


def test_estimate_arithmetic():
  config = _config(BASE)
  params = footprints.parameter_count(config)
  b, t, h, i, n, l = 8, 128, 768, 3072, 12, 12
  f = footprints.estimate(config, b, t, max_predictions_per_seq=20)
  assert f.state == 4 * 5 * params
  per_layer = b * t * (12 * h + 5 * i) + 3 * b * n * t * t
  embeddings = b * t * (3 * 128 + 2 * h)
  assert f.activations == 4 * (l * per_layer + embeddings) + 4 * 6 * b * 20 * 30000
  assert f.total == footprints.RUNTIME_BYTES + f.state + f.activations
  # Activations scale with the batch; attention scores with T^2; the state with neither.
  f2 = footprints.estimate(config, 2 * b, t, max_predictions_per_seq=20)
  assert f2.activations == 2 * f.activations and f2.state == f.state
  f_long = footprints.estimate(config, b, 2 * t)
  f_short = footprints.estimate(config, b, t)
  assert f_long.activations - 2 * f_short.activations == 4 * l * 3 * b * n * t * t * 2
  # Accumulation keeps one more float32 copy of the parameters; mixed precision halves the
  # encoder's activations, not the float32 MLM logits.
  assert footprints.estimate(config, b, t, gradient_accumulation_steps=2).state == 4 * 6 * params
  mixed = footprints.estimate(config, b, t, mixed_precision="mixed_bfloat16",
                              max_predictions_per_seq=20)
  assert mixed.activations == 2 * (l * per_layer + embeddings) + 4 * 6 * b * 20 * 30000
  # Two local replicas (mirrored CPUs) hold two of everything but the runtime.
  two = footprints.estimate(config, b, t, local_replicas=2)
  assert (two.state, two.activations) == (2 * f_short.state, 2 * f_short.activations)


def test_job_footprint_splits_the_batch_and_counts_race_choices():
  config = _config(BASE)
  # 4096 over 2 replicas x 4 micro-batches: 512 sequences per micro-batch.
  f = footprints.job_footprint(_pretraining_settings(4096, 512, accumulation=4), config, 2, 2)
  assert f.micro_batch_size == 512
  assert f == footprints.estimate(config, 512, 512, local_replicas=2,
                                  gradient_accumulation_steps=4, max_predictions_per_seq=20)
  race = race_settings.RaceSettings(output_dir="o", data_dir="d", do_train=True,
                               model=settings.ModelSettings(max_seq_length=512),
                               train=settings.TrainSettings(train_batch_size=32))
  assert footprints.job_footprint(race, config, 1, 1) == footprints.estimate(config, 4 * 32, 512)
  squad = squad_settings.SquadSettings(do_train=True, output_dir="o",
                                 model=settings.ModelSettings(max_seq_length=384),
                                 train=settings.TrainSettings(train_batch_size=48))
  assert footprints.job_footprint(squad, config, 1, 1) == footprints.estimate(
      config, 48, 384, span_head=True)


def test_available_reads_cgroup_v2_v1_and_meminfo(tmp_path):
  proc = tmp_path / "cgroup"
  proc.write_text("0::/job\n4:memory:/job\n")
  v2 = tmp_path / "v2"
  (v2 / "job").mkdir(parents=True)
  (v2 / "job" / "memory.max").write_text(f"{8 * 2**30}\n")
  (v2 / "job" / "memory.current").write_text(f"{3 * 2**30}\n")
  assert memory.cgroup_free(str(v2), str(proc)) == (5 * 2**30, str(v2 / "job" / "memory.max"))
  (v2 / "job" / "memory.max").write_text("max\n")
  assert memory.cgroup_free(str(v2), str(proc)) == (None, None)
  v1 = tmp_path / "v1"
  (v1 / "memory").mkdir(parents=True)
  (v1 / "memory" / "memory.limit_in_bytes").write_text(f"{4 * 2**30}\n")
  (v1 / "memory" / "memory.usage_in_bytes").write_text(f"{2**30}\n")
  assert memory.cgroup_free(str(v1), str(proc))[0] == 3 * 2**30
  # v1's "no limit" is a huge number.
  (v1 / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
  assert memory.cgroup_free(str(v1), str(proc)) == (None, None)
  meminfo = tmp_path / "meminfo"
  meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n")
  assert memory.meminfo_available(str(meminfo)) == 20000000 * 1024


def test_device_types():
  assert memory.device_types(CPU + ["/job:worker/replica:0/task:1/device:CPU:1"]) == {"CPU"}
  assert memory.device_types(["/job:localhost/replica:0/task:0/device:GPU:0"]) == {"GPU"}
  assert memory.device_types(["/device:TPU:0", "cpu:0"]) == {"TPU", "CPU"}


def test_check_refuses_logs_and_skips_accelerators(monkeypatch, caplog):
  config = _config(BASE)
  monkeypatch.setattr(memory, "available", lambda: (4 * 2**30, "4.00 GiB free per test"))
  big = footprints.estimate(config, 512, 512, max_predictions_per_seq=20)
  with pytest.raises(errors.MemoryCheckError) as e:
    memory.check(big, CPU)
  message = str(e.value)
  assert footprints.gib(big.total) in message and "4.00 GiB is available" in message
  for flag in ("--train_batch_size", "--gradient_accumulation_steps", "--max_seq_length",
               "--nomemory_check"):
    assert flag in message
  caplog.set_level("INFO", logger="albert_tf")
  memory.check(big, ["/job:localhost/replica:0/task:0/device:GPU:0"])
  assert "memory check skipped: training runs on GPU" in caplog.text
  memory.check(footprints.estimate(_config(TINY), 8, 64), CPU)
  assert "memory check: training estimated at" in caplog.text


# -- the binaries ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def records_512(tmp_path_factory):
  path = tmp_path_factory.mktemp("records") / "seq512.tfrecord"
  write_pretraining_records(path, 4, 512, 20, 30000)
  return path


def test_readme_pod_sizes_are_refused_not_killed(records_512, tmp_path):
  # The README's pretraining block at the original's TPU-pod sizes (batch 4096 x 512): it grew
  # to 22 GB and was killed by the OOM killer (exit 137, nothing printed).
  flags = pretraining_flags(BASE, records_512, tmp_path / "out", 4096, 512)
  result = run_binary("run_pretraining", flags, check=False, timeout=60)
  assert result.returncode == 1, result.stderr[-3000:]
  lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
  assert "training would need about" in lines[0] and "--nomemory_check" in lines[0]
  estimate = float(lines[0].split("about ")[1].split(" GiB")[0])
  assert estimate > 40  # activations of 4096 x 512 tokens x 12 layers: far above 24 GB
  assert not os.path.exists(tmp_path / "out")  # refused before output_dir is written


@pytest.mark.slow
def test_estimate_within_2x_of_measured_peak_rss(tmp_path):
  records = tmp_path / "seq64.tfrecord"
  write_pretraining_records(records, 32, 64, 20, 2000)
  flags = pretraining_flags(TINY, records, tmp_path / "out", 8, 64)
  measured, stderr = measured_peak_rss(flags)
  logged = [l for l in stderr.splitlines() if "memory check: training estimated at" in l]
  assert logged, stderr[-3000:]
  estimate = float(logged[0].split("estimated at ")[1].split(" GiB")[0]) * 2**30
  assert 0.5 < estimate / measured < 2, (estimate, measured)


def test_nomemory_check_skips_the_check():
  # A job whose settings say --nomemory_check is not estimated (nor its strategy looked at).
  job = type("Job", (), {})()
  job.settings = _pretraining_settings(4096, 512)
  job.settings.run.memory_check = False
  job.config, job.config_file, job.strategy = _config(BASE), BASE, None
  job.scheduled_train_steps = lambda: job.settings.train.num_train_steps
  memory.check_job(job)
  job.settings.run.memory_check = True
  job.strategy = __import__("tensorflow").distribute.get_strategy()
  with pytest.raises(errors.MemoryCheckError):
    memory.check_job(job)


def test_race_is_refused_with_its_choices_counted(tmp_path):
  # Fine-tuning binaries run the same check with their own activations: RACE's 4 choices per
  # question are 4 sequences each (and no masked LM logits).
  testdata = os.path.join(REPO_ROOT, "tests", "testdata")
  spm = os.path.join(testdata, "original_pretraining_data", "30k-clean-tiny.model")
  result = run_binary("run_race", [
      f"--data_dir={os.path.join(testdata, 'original_finetuning', 'race')}",
      f"--spm_model_file={spm}",
      f"--albert_config_file={BASE}", f"--output_dir={tmp_path / 'out'}", "--do_train",
      "--train_batch_size=1024", "--max_seq_length=512", "--max_qa_length=128"],
                      check=False, timeout=120)
  assert result.returncode == 1, result.stderr[-3000:]
  lines = [l for l in result.stderr.splitlines() if l.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
  assert "activations of 4096 sequences x 512 tokens" in lines[0]
  expected = footprints.estimate(_config(BASE), 4096, 512)
  assert f"need about {footprints.gib(expected.total)}" in lines[0]
  assert not os.path.exists(tmp_path / "out")
