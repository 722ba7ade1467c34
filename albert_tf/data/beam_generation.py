"""create_pretraining_data as an Apache Beam pipeline: one element per input file.

  python -m albert_tf.create_pretraining_data --input_file='gs://bucket/shards/*.txt' \
      --output_file=gs://bucket/records/ --spm_model_file=30k-clean.model --vocab_file=unused \
      --beam_pipeline_options="--runner=DataflowRunner,--project=P,--region=R,--temp_location=gs://bucket/tmp,--setup_file=./beam_worker/setup.py"

Input file i is generated alone, seeded with random_seed + i, into its own output, exactly as
`--num_workers` does: the records equal the original run on that file alone. Files are read and
written through Beam's FileSystems (local, gs://, hdfs://, s3:// as the Beam installation
supports), outputs atomically (a hidden temporary renamed into place), so a retried element
leaves one complete file. Counters (namespace `create_pretraining_data`): files, documents,
instances, skipped_documents, and real_tokens and packed_rows (generate's, for the end line on
padding).

Temporaries of killed writers (`.<name>.tmp-<pid>` next to an output) are removed when the next
run starts, by the launcher (remove_stale_temps), each one logged: a local one when its pid runs
on this host no more (as the local writers do); a remote one when it was last written more than
STALE_TEMP_HOURS ago, since the pids of Dataflow's or a cluster's workers mean nothing here (a
younger one is kept and reported: a running job's is younger).

Imports apache_beam: only the `--beam_pipeline_options` path loads this module.
"""

import dataclasses
import logging
import os
import re
import shutil
import tempfile
import time

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import Metrics, MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions

from albert_tf.core import io as files
from albert_tf.data import beam_runner
from albert_tf.data.pretraining_data import (FileAccess, check_one_output_per_input,
                                             generate_file)

COUNTER_NAMESPACE = "create_pretraining_data"
COUNTERS = ("files", "documents", "instances", "skipped_documents", "real_tokens",
            "packed_rows")
# Age (of its last write) past which a remote output's temporary is taken for a dead writer's.
STALE_TEMP_HOURS = 6.0


def _open_binary(path):
  # Bytes as stored: a corpus named .gz is not decompressed, as on the local path.
  return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)


def _size(path):
  try:
    return FileSystems.match([path])[0].metadata_list[0].size_in_bytes
  except Exception:  # noqa: BLE001 -- any filesystem's error: see below
    return None  # progress without a percentage; reading reports a missing file itself


class BeamAtomicFile(files.AtomicFile):
  """files.AtomicFile on Beam's FileSystems: writes `<dir>/.<name>.tmp-<pid>`, renamed to `path`
  by commit(); abort() (or any failure in commit) removes the temporary."""

  def _prepare(self):
    pass  # FileSystems.create makes local directories; object stores have none

  def _open_temp(self):
    return FileSystems.create(self.tmp, compression_type=CompressionTypes.UNCOMPRESSED)

  def _publish(self):
    self._file.close()
    FileSystems.rename([self.tmp], [self.path])

  def _remove_temp(self):
    try:
      if FileSystems.exists(self.tmp):
        FileSystems.delete([self.tmp])
    except Exception:  # noqa: BLE001 -- see below
      pass  # never raising: the error that caused the abort is the one to report


def is_local_dir(path):
  """Directory test for output paths that needs no TensorFlow: object stores have no
  directories, so a remote output directory is written with a trailing '/'."""
  return not files.is_remote(path) and os.path.isdir(path)


BEAM_FILE_ACCESS = FileAccess(_open_binary, BeamAtomicFile, _size, is_local_dir)


def match_pattern(pattern):
  """The files matching `pattern` on Beam's FileSystems (for io.expand_input_patterns); Beam's
  own error where it has no file system for the scheme (e.g. gs:// without apache-beam[gcp])."""
  return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)


def _read_tokenizer_file(settings):
  """(settings field, base name, bytes) of the tokenizer's model file, read where the pipeline
  is launched: workers (Dataflow's, a cluster's) see neither the launcher's local files nor, without
  TensorFlow, a TF file system."""
  field = "spm_model_file" if settings.tokenizer.spm_model_file else "vocab_file"
  path = getattr(settings.tokenizer, field)
  try:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
      data = f.read()
  except Exception as e:  # noqa: BLE001 -- any filesystem's error, named
    raise FileNotFoundError(f"--{field}={path}: cannot be read ({e}); give a file that exists "
                            "(gs:// paths need apache-beam[gcp])") from None
  return field, os.path.basename(path), data


class GenerateFileFn(beam.DoFn):
  """(index, (input_file, output_file)) -> the output file written; counts into COUNTERS.

  Carries the tokenizer's model file itself (SentencePiece models are well under 1 MB, vocab.txt
  files a few hundred KB) and writes it to a local temporary on each worker.
  """

  def __init__(self, settings):
    super().__init__()
    self.settings = settings
    self.tokenizer_file = _read_tokenizer_file(settings)
    self.counters = {name: Metrics.counter(COUNTER_NAMESPACE, name) for name in COUNTERS}
    self._directory = None
    self._worker_settings = None

  def setup(self):
    field, name, data = self.tokenizer_file
    self._directory = tempfile.mkdtemp(prefix="albert_tf_tokenizer_")
    local = os.path.join(self._directory, name)
    with open(local, "wb") as f:
      f.write(data)
    self._worker_settings = dataclasses.replace(
        self.settings, tokenizer=dataclasses.replace(self.settings.tokenizer, **{field: local}))

  def teardown(self):
    if self._directory:
      shutil.rmtree(self._directory, ignore_errors=True)

  def process(self, element):
    index, (input_file, output_file) = element
    stats = generate_file(index, input_file, output_file, self._worker_settings,
                          BEAM_FILE_ACCESS)
    self.counters["files"].inc()
    for name in COUNTERS[1:]:
      self.counters[name].inc(stats[name])
    yield output_file


def _writer_pids_visible(path):
  """Whether the pids in `path`'s temporaries' names are this host's: for local paths."""
  return not files.is_remote(path)


def remove_stale_temps(output_files, max_age_hours=STALE_TEMP_HOURS, log=logging.warning):
  """Removes the temporaries (`.<name>.tmp-<pid>`) that killed runs left next to output_files:
  local ones whose pid runs no more on this host (or is this process's), remote ones last written
  more than max_age_hours ago. Each removed or kept one is logged. Returns the removed paths."""
  removed = []
  for output in output_files:
    directory, name = files.split(output)
    pattern = re.compile(rf"\.{re.escape(name)}\.tmp-(\d+)")
    try:
      found = FileSystems.match([FileSystems.join(directory, f".{name}.tmp-*")])[0].metadata_list
    except Exception:  # noqa: BLE001 -- a folder Beam cannot list holds none
      continue
    for metadata in found:
      match = pattern.fullmatch(files.split(metadata.path)[1])
      if not match:
        continue
      pid = int(match.group(1))
      if _writer_pids_visible(output):
        stale = pid == os.getpid() or not files.process_running(pid)
        why = f"its writer (pid {pid}) runs no more"
      else:
        age = (time.time() - metadata.last_updated_in_seconds) / 3600
        stale = age > max_age_hours
        why = f"last written {age:.1f} hours ago (over {max_age_hours:g})"
      if stale:
        FileSystems.delete([metadata.path])
        removed.append(metadata.path)
        log(f"removed {metadata.path}, the temporary of a killed run: {why}")
      else:
        log(f"kept {metadata.path}: it may be a running job's (last written "
            f"{(time.time() - metadata.last_updated_in_seconds) / 3600:.1f} hours ago, pid "
            f"{pid}); a run removes it once its writer is gone or it is over "
            f"{max_age_hours:g} hours old")
  return removed


def parse_pipeline_options(text):
  """`--runner=DirectRunner,--direct_num_workers=2` (TFDS's convention; the leading dashes may be
  left out) -> a list of Beam flags. A comma starts a new option only before `--` or `name=`,
  so that values may hold commas (`--experiments=a,b,--region=r`)."""
  flags = []
  for option in re.split(r",(?=--|[A-Za-z_][\w-]*=)", text):
    option = option.strip()
    if option:
      flags.append(option if option.startswith("-") else f"--{option}")
  return flags


def run_pipeline(input_files, output_files, settings, pipeline_options):
  """Runs generation as a Beam pipeline and waits for it. Returns the counters as a dict."""
  check_one_output_per_input(input_files, output_files, "--beam_pipeline_options")
  remove_stale_temps(output_files)
  # The local runners relay every worker's INFO lines; the job's own messages (a Dataflow job's
  # URL) stay.
  for name in ("apache_beam.runners.portability", "apache_beam.runners.worker"):
    logging.getLogger(name).setLevel(logging.WARNING)
  options = PipelineOptions(
      flags=beam_runner.with_quiet_workers(parse_pipeline_options(pipeline_options)))
  pipeline = beam.Pipeline(runner=beam_runner.local_runner(options), options=options)
  _ = (pipeline
       | "InputFiles" >> beam.Create(list(enumerate(zip(input_files, output_files))))
       | "SpreadOverWorkers" >> beam.Reshuffle()
       | "Generate" >> beam.ParDo(GenerateFileFn(settings)))
  result = pipeline.run()
  result.wait_until_finish()
  counters = result.metrics().query(MetricsFilter().with_namespace(COUNTER_NAMESPACE))["counters"]
  stats = {name: 0 for name in COUNTERS}
  for counter in counters:
    # Some runners report only attempted values.
    value = counter.committed if counter.committed is not None else counter.attempted
    stats[counter.key.metric.name] = value
  return stats
