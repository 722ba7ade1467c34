"""Local Beam runs without Beam's noise: the runner is chosen here, and Beam's notices that
report nothing wrong are hidden.

Beam 2.77's DirectRunner first tries to download and start the Prism runner (a Go binary fetched
from GitHub), and only then falls back to the FnApiRunner, printing failed downloads and
fallbacks on a machine without network access. Generation runs Create, Reshuffle and a ParDo,
which the FnApiRunner runs (in-process, or in worker processes with --direct_num_workers and
--direct_running_mode): it is chosen directly when --runner is DirectRunner or absent. Any other
runner (Dataflow, Flink, Spark, Prism) is Beam's to choose.

Imports apache_beam only in its functions: quiet_beam() wraps the import too.
"""

import re

from albert_tf.core import startup

_DIRECT_RUNNER_NAMES = (None, "DirectRunner", "direct", "directrunner")

# What `import apache_beam` and each local worker process print (its first INFO line too) without
# the GCP extra or a semi-persistent directory, and the two flags Beam itself hands its workers
# and then discards (in the worker's own line or relayed by the job service, quotes escaped).
# Nothing else.
_NOTICES = (
    r"apitools not found, and bigquery client libraries are not available",
    r"the ReadFromBigQuery transform \*CANNOT\* be used",
    r"No semi_persistent_directory found",
    r"INFO:__main__:Logging handler created\.$",  # before the worker applies its log level
    r"Discarding unparseable args: \[\\?'--pipeline_type_check\\?', "
    r"\\?'--direct_runner_use_stacked_bundle\\?'\]",
)
_NOTICE_PATTERN = ("^.*(?:" + "|".join(_NOTICES) + ")").encode()
_HARNESS_LOG_LEVEL = "--default_sdk_harness_log_level"


def quiet_beam():
  """A context in which Beam's notices (_NOTICES) are dropped from stderr, the local workers'
  included; every other line passes."""
  return startup.stderr_without(_NOTICE_PATTERN)


def with_quiet_workers(flags):
  """Pipeline `flags` (a list) with the workers' log level at WARNING unless the user set it:
  local workers otherwise log every channel they open."""
  if any(re.match(f"{_HARNESS_LOG_LEVEL}(=|$)", f) for f in flags):
    return flags
  return flags + [f"{_HARNESS_LOG_LEVEL}=WARNING"]


def local_runner(options):
  """The FnApiRunner where `options` ask for the DirectRunner (or no runner), else None.

  Args:
    options: the pipeline's PipelineOptions.
  """
  from apache_beam.options.pipeline_options import StandardOptions
  if options.view_as(StandardOptions).runner not in _DIRECT_RUNNER_NAMES:
    return None
  from apache_beam.portability.api import beam_provision_api_pb2
  from apache_beam.runners.portability.fn_api_runner import fn_runner
  from apache_beam.runners.portability.portable_runner import JobServiceHandle
  # As the DirectRunner builds it: the workers receive the pipeline options.
  encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
  return fn_runner.FnApiRunner(provision_info=fn_runner.ExtendedProvisionInfo(
      beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)))
