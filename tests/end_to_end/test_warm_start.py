"""A binary or tool run from the suite's warm start (tests/warm_binaries.py) is the run a fresh
interpreter makes: the same checkpoint, bit for bit, the same exit status and error line, the
same environment after the start-up. Which runs go cold is decided by can_run_warm; which server
serves a run, by its environment (warm_environment, against what each server loaded TensorFlow
with)."""

import json
import os
import subprocess
import sys

import pytest

import warm_binaries
import warm_server
from albert_tf.core import onednn
from helpers import (ORIGINAL_MODEL, TESTDATA, assert_same_checkpoint_values, run_binary)
from repo_paths import TESTS

SPM = os.path.join(TESTDATA, "original_pretraining_data", "30k-clean-tiny.model")
GLUE = os.path.join(TESTDATA, "original_finetuning", "glue", "glue_data")
PROBE = os.path.join(TESTS, "warm_env_probe.py")


def _classifier(output_dir, *extra):
  return [f"--spm_model_file={SPM}",
          f"--albert_config_file={os.path.join(ORIGINAL_MODEL, 'albert_config.json')}",
          "--task_name=mrpc", f"--data_dir={GLUE}", f"--output_dir={output_dir}",
          "--max_seq_length=32", "--do_train", "--train_batch_size=4", "--train_step=3",
          "--warmup_step=1", "--save_checkpoints_steps=3", "--learning_rate=1e-3",
          "--random_seed=1", *extra]


@pytest.mark.slow
def test_a_warm_run_trains_as_a_fresh_interpreter(tmp_path):
  """Same flags and seeds: the warm and the cold run end with bit-identical weights (one
  process each, the same kernels: the training server turns oneDNN on as the binary does)."""
  warm = run_binary("run_classifier", _classifier(tmp_path / "warm", "--data_seed=7"))
  cold = run_binary("run_classifier", _classifier(tmp_path / "cold", "--data_seed=7"), cold=True)
  assert warm.returncode == cold.returncode == 0
  assert_same_checkpoint_values(tmp_path / "warm" / "model.ckpt-3", tmp_path / "cold" /
                                "model.ckpt-3")


def test_a_refusal_reads_the_same_warm_and_cold(tmp_path):
  flags = _classifier(tmp_path / "out") + ["--max_seq_length=65"]
  warm = run_binary("run_classifier", flags, check=False)
  cold = run_binary("run_classifier", flags, check=False, cold=True)
  lines = [[l for l in r.stderr.splitlines() if l.startswith("error:")] for r in (warm, cold)]
  assert warm.returncode == cold.returncode == 2
  assert lines[0] == lines[1] and len(lines[0]) == 1, (warm.stderr[-2000:], cold.stderr[-2000:])


def test_a_tools_flavor_follows_its_flags():
  """tools/benchmark.py turns oneDNN on where it times steps (every --mode but serving, or a
  --compare): it starts in the training flavor then, else in the serving one; flags whose form
  the suite does not read run it as given."""
  flavor = warm_binaries.tool_flavor
  assert flavor("tools/benchmark.py", []) == "training"  # --mode=all
  assert flavor("tools/benchmark.py", ["--mode=serving"]) == "serving"
  assert flavor("tools/benchmark.py", ["--mode=serving", "--mode=forward"]) == "training"
  assert flavor("tools/benchmark.py", ["--mode=serving", "--compare=packing"]) == "training"
  assert flavor("tools/benchmark.py", ["--mode", "serving"]) is None
  assert warm_binaries.command_target(["tools/benchmark.py", "--mode", "serving"]) is None
  assert warm_binaries.command_target(["tools/matmul_chain.py", "--tokens=8"])[2] == "serving"


def test_what_runs_cold():
  assert warm_binaries.can_run_warm("run_classifier", ["--do_train"])
  assert warm_binaries.can_run_warm("export_saved_model", [])
  assert not warm_binaries.can_run_warm("run_classifier", ["--help"])
  assert not warm_binaries.can_run_warm("create_pretraining_data", [])  # runs without TF


@pytest.mark.slow  # starts a server of its own: TensorFlow loaded once more
def test_each_environment_tensorflow_loads_in_has_its_server():
  """A run is served by a server that loaded TensorFlow as the run's fresh process would: one
  launched with another value of a variable read at load serves no run without that value."""
  server = warm_binaries.server("training")
  env = dict(server.launch_env)
  assert warm_binaries.server("training", env) is server
  # Not read while TensorFlow loads: the same server.
  assert warm_binaries.server("training", dict(env, ALBERT_SOMETHING="1")) is server
  assert warm_binaries.server("training", dict(env, TF_CONFIG='{"cluster": {}}')) is server
  # Read while it loads: a server launched with it.
  other = warm_binaries.server("training", dict(env, OMP_NUM_THREADS="1"))
  assert other is not server and other.launch_env["OMP_NUM_THREADS"] == "1"
  assert server.environment(dict(env, OMP_NUM_THREADS="1")) is None
  assert other.environment(env) is None
  assert warm_binaries.server("serving", env).flavor == "serving"


def test_a_run_is_warm_where_its_fresh_process_loads_as_the_server_did():
  launch = {"PATH": "/bin", "OMP_NUM_THREADS": "2"}
  startup = {"TF_CPP_MIN_LOG_LEVEL": "1", "TF_ENABLE_ONEDNN_OPTS": "1"}
  fresh = lambda env: warm_binaries.warm_environment(env, launch, startup)
  # The start-up's variables where the run leaves them unset, as its fresh start-up sets them;
  # set to the same values (what an in-process start-up leaves in os.environ), the same run.
  assert fresh(dict(launch, HOME="/h")) == dict(launch, HOME="/h", **startup)
  assert fresh(dict(launch, TF_CPP_MIN_LOG_LEVEL="1")) == dict(launch, **startup)
  assert fresh(dict(launch, PATH="/usr/bin"))["PATH"] == "/usr/bin"  # not read at load
  # Another value of a variable read at load than the server loaded with, or one given or left
  # out: cold.
  assert fresh(dict(launch, TF_CPP_MIN_LOG_LEVEL="0")) is None
  assert fresh(dict(launch, TF_ENABLE_ONEDNN_OPTS="0")) is None
  assert fresh(dict(launch, OMP_NUM_THREADS="4")) is None
  assert fresh(dict(launch, XLA_FLAGS="--xla_cpu_use_thunk_runtime=false")) is None
  assert fresh({"PATH": "/bin"}) is None


def test_the_start_up_only_sets_variables_left_unset():
  """What warm_environment relies on: a binary's start-up keeps a value it was given (here both
  of them, before TensorFlow would load), and the server refuses a start-up that does not."""
  code = ("import os; from albert_tf.core import onednn, startup; "
          "startup.quiet_tensorflow_startup(); onednn.turn_on_for_training(); "
          "print(os.environ['TF_CPP_MIN_LOG_LEVEL'], os.environ['TF_ENABLE_ONEDNN_OPTS'])")
  given = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="0")
  result = subprocess.run([sys.executable, "-c", code], env=given, capture_output=True,
                          text=True, timeout=120, check=True)
  assert result.stdout.split() == ["2", "0"], result.stderr[-2000:]
  assert warm_server.startup_variables({"A": "1"}, {"A": "1", "B": "2"}) == {"B": "2"}
  for after in ({"A": "2"}, {}):
    with pytest.raises(RuntimeError, match=r"changed or removed \['A'\]"):
      warm_server.startup_variables({"A": "1"}, after)


def test_what_this_process_sets_after_the_server_started_changes_no_answer(monkeypatch):
  """Runs are judged against what the server loaded with, not against os.environ now."""
  server = warm_binaries.server("training")
  loaded = dict(server.launch_env, **server.startup_env)
  assert "TF_CPP_MIN_LOG_LEVEL" in loaded  # the quiet start-up's, where not the launch's
  # An in-process start-up sets the server's start-up variables here: the same server.
  for name, value in server.startup_env.items():
    monkeypatch.setenv(name, value)
  assert warm_binaries.server("training") is server
  # Another value read at load here: another server for a run given os.environ now, the same
  # one for a run given the server's environment.
  monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0" if loaded["TF_CPP_MIN_LOG_LEVEL"] != "0" else "2")
  assert server.environment(dict(os.environ)) is None
  assert warm_binaries.server("training", server.launch_env) is server


def _environ_as_launched(flavor, monkeypatch):
  """The flavor's server, with this process's os.environ set as the server was launched with: an
  in-process test's start-up may have set a variable since, and a run given that changed one
  rightly runs cold."""
  server = warm_binaries.server(flavor)
  for name in set(os.environ) - set(server.launch_env):
    monkeypatch.delenv(name)
  for name, value in server.launch_env.items():
    monkeypatch.setenv(name, value)
  return server


def _probe(flavor, env, cold=False):
  flags = ["--training"] if flavor == "training" else []
  result = warm_binaries.run_script(PROBE, flags, flavor=flavor, env=env, cold=cold, timeout=120)
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout)


@pytest.mark.parametrize("flavor, env", [
    ("serving", {}),
    ("training", {}),
    # Given by the user, not set by the start-up: passed on to the children TensorFlow's default
    # is for (onednn.child_environment), and not logged as turned on.
    ("training", {onednn.VARIABLE: "1"}),
])
def test_a_warm_script_starts_as_a_fresh_one(flavor, env, monkeypatch):
  """Its os.environ after the start-up (the start-up's variables in it where the run left them
  unset), what onednn says and passes on, and sys.argv, sys.path[0], __file__ and __name__ as
  `python3 <script>` sets them."""
  server = _environ_as_launched(flavor, monkeypatch)
  environment = dict(os.environ, **env)
  fits = server.environment(environment) is not None
  if env and not fits:
    pytest.skip("the server loaded TensorFlow with another TF_ENABLE_ONEDNN_OPTS here (no AVX2, "
                "or the user's value): that run goes cold")
  assert fits  # it runs warm
  warm, cold = _probe(flavor, env), _probe(flavor, env, cold=True)
  assert warm == cold
  added = server.startup_env
  assert {k: warm["environ"][k] for k in added} == dict(added, **{
      k: v for k, v in environment.items() if k in added})


def test_a_script_run_in_the_other_flavor_fails_saying_so(monkeypatch):
  """The server cannot load TensorFlow again: a run whose fresh process would load it otherwise
  (oneDNN on or off) must not pass for that run."""
  _environ_as_launched("training", monkeypatch)
  result = warm_binaries.run_script(PROBE, [], flavor="training", timeout=120)
  assert result.returncode == 1 and "run it in the serving flavor" in result.stderr
  _environ_as_launched("serving", monkeypatch)
  if onednn.applies() and onednn.VARIABLE not in os.environ:
    result = warm_binaries.run_script(PROBE, ["--training"], flavor="serving", timeout=120)
    assert result.returncode == 1 and "run it in the training flavor" in result.stderr


# What a client of an export sees of its process once it has imported TensorFlow.
_BARE_PROBE = """
import json, os, sys
import tensorflow as tf
print(json.dumps({"albert_tf": sorted(m for m in sys.modules if m.split(".")[0] == "albert_tf"),
                  "keras": "keras" in sys.modules, "environ": dict(os.environ),
                  "argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(),
                  "version": tf.__version__}))
"""


@pytest.mark.slow  # a server of its own and a fresh TensorFlow start-up
def test_a_bare_child_is_a_client_that_imported_tensorflow(tmp_path):
  """The bare flavor (the tests' clients of an export, which must not need albert_tf): the
  process a fresh `python -c` makes once it has imported TensorFlow, albert_tf never loaded;
  a run that imports albert_tf there fails, saying so."""
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  args = ["-c", _BARE_PROBE, "an argument"]
  warm = warm_binaries.run_python(args, "bare", env=env, cwd=tmp_path, timeout=120)
  cold = subprocess.run([sys.executable] + args, env=env, cwd=tmp_path, capture_output=True,
                        text=True, timeout=120)
  assert warm.returncode == cold.returncode == 0, warm.stderr[-3000:] + cold.stderr[-3000:]
  assert json.loads(warm.stdout) == json.loads(cold.stdout)
  assert json.loads(warm.stdout)["albert_tf"] == []
  imports = warm_binaries.run_python(["-c", "import albert_tf.core.onednn"], "bare", env=env,
                                     cwd=tmp_path, timeout=120)
  assert imports.returncode == 1 and "run it in the serving or training flavor" in imports.stderr


def test_the_python3_shim_runs_binaries_warm_and_the_rest_as_given(tmp_path):
  """The docs' blocks' python3 (warm_binaries.python3_shim): a binary from the warm server, with
  the exit status and error line of a fresh run; any other command run by the real python."""
  shim = warm_binaries.python3_shim(str(tmp_path / "bin"), sys.executable, dict(os.environ),
                                    [["-m", "albert_tf.export_checkpoints"]])
  python3 = os.path.join(shim, "python3")
  flags = ["-m", "albert_tf.export_checkpoints", f"--albert_config_file={tmp_path / 'none.json'}",
           f"--output_dir={tmp_path / 'out'}"]
  warm, cold = (subprocess.run([python, *flags], cwd=tmp_path, capture_output=True, text=True,
                               timeout=120) for python in (python3, sys.executable))
  assert warm.returncode == cold.returncode != 0
  lines = [[l for l in r.stderr.splitlines() if l.startswith("error:")] for r in (warm, cold)]
  assert lines[0] == lines[1] and len(lines[0]) == 1, (warm.stderr[-2000:], cold.stderr[-2000:])
  log = warm_binaries.server("serving").tail()
  assert "runs albert_tf.export_checkpoints --albert_config_file=" in log, log
  other = subprocess.run([python3, "-c", "import sys; print(sys.flags.no_site, sys.argv)", "x"],
                         capture_output=True, text=True, timeout=60, check=True)
  assert other.stdout.split("\n")[0] == "0 ['-c', 'x']"


@pytest.mark.slow
def test_a_closed_server_has_ended_and_holds_nothing_open_here():
  """A server this process closes (at its exit, or the least recently used one where MAX_SERVERS
  run) has ended, its pipes and log file are closed here and the log is removed: no
  ResourceWarning at this process's exit."""
  server = warm_binaries._Server("serving", dict(os.environ), sys.executable)
  server.close()
  assert server.process.returncode == 0
  assert server.process.stdin.closed and server.process.stdout.closed and server.log.closed
  assert not os.path.exists(server.log.name)
