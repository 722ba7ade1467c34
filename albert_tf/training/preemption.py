"""Preemption: SIGTERM stops training at the next step boundary, with a checkpoint at that step.

Preemptible TPUs and spot VMs (GCE shuts the VM down, which sends SIGTERM to its processes, TPU
maintenance events included), Kubernetes (SIGTERM, then SIGKILL after the grace period, 30 s by
default) and Slurm stop a job with SIGTERM. A Python signal handler runs only between bytecodes of
the main thread, and the main thread spends a training call (iterations_per_loop steps) inside
TensorFlow's C++: the handler would run only once the call returns. So the C-level handler's
wakeup fd (signal.set_wakeup_fd) wakes a watcher thread, which sets a tf.Variable that the
compiled loop reads before each step (see Runner.train_until_stopped). A multi-worker run sums the
flag over the workers in the step, so that every worker stops after the same step.

tf.distribute.experimental.PreemptionCheckpointHandler does the same between Python calls (a
whole iterations_per_loop call, not a step) and exits the process itself; here the loop stops
within its call, the job saves, writes its summaries, releases the output_dir lock and the binary
exits with PREEMPTED_EXIT_CODE (the handler's default code, 42), for a scheduler to restart it.
"""

import logging
import os
import signal
import socket
import threading

# The exit code of a run stopped by SIGTERM after saving its checkpoint (TensorFlow's
# PreemptionCheckpointHandler exits with the same by default): restart the run to resume.
PREEMPTED_EXIT_CODE = 42
# The signals that stop a run with a checkpoint. SIGINT (Ctrl-C) keeps Python's
# KeyboardInterrupt: it stops at once, losing the steps since the last checkpoint.
SIGNALS = (signal.SIGTERM,)
logger = logging.getLogger("albert_tf")


class Preempted(Exception):
  """A run stopped by a signal, with the checkpoint of the step it reached saved.

  Args:
    step: the step saved.
    path: the checkpoint written at that step (None: saved before `phase`).
    phase: what the signal stopped when it was not training, e.g. "the evaluation": what of
      it is not written yet, the restarted run does.
  """

  def __init__(self, step, path, phase=None):
    if phase is None:
      text = (f"preempted: saved {path} at step {step}; run again with the same flags to resume "
              f"(exit code {PREEMPTED_EXIT_CODE})")
    else:
      text = (f"preempted during {phase} at step {step}, its checkpoint saved: run again with "
              f"the same flags to finish {phase} (exit code {PREEMPTED_EXIT_CODE})")
    super().__init__(text)
    self.step = step
    self.path = path
    self.phase = phase


class PreemptionWatcher:
  """While installed, SIGTERM sets `flag` even while a compiled call runs.

  Args:
    flag: a boolean tf.Variable (a Runner's `stop_requested`, which its loops read).
    phase: what it watches when not training (e.g. "the evaluation"), for the log line: the
      checkpoint is then saved already.

  Example:
    with PreemptionWatcher(runner.stop_requested):  # the previous handler is back after
      ...                                           # the block
  """

  def __init__(self, flag, phase=None):
    self.flag = flag
    self.phase = phase
    self._previous = {}
    self._previous_fd = None
    self._sockets = None
    self._thread = None
    self._lock = threading.Lock()
    self._signalled = False

  def __enter__(self):
    self.install()
    return self

  def __exit__(self, *exc):
    self.uninstall()

  def install(self):
    """Sets the handlers of SIGNALS (main thread only; elsewhere signals keep their handler)."""
    if threading.current_thread() is not threading.main_thread():
      logger.info("not in the main thread: SIGTERM will not save a checkpoint")
      return
    reader, writer = socket.socketpair()
    writer.setblocking(False)  # set_wakeup_fd needs a non-blocking fd
    self._sockets = (reader, writer)
    self._previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    for signum in SIGNALS:
      self._previous[signum] = signal.signal(signum, self._on_signal)
    self._thread = threading.Thread(target=self._watch, args=(reader,), daemon=True,
                                    name="preemption-watcher")
    self._thread.start()

  def uninstall(self):
    """Puts the previous handlers and wakeup fd back."""
    if self._sockets is None:
      return
    for signum, handler in self._previous.items():
      signal.signal(signum, handler)
    signal.set_wakeup_fd(self._previous_fd)
    self._previous = {}
    reader, writer = self._sockets
    self._sockets = None
    writer.close()  # ends the watcher's recv
    self._thread.join(timeout=10)
    reader.close()

  def _watch(self, reader):
    """The watcher thread: sets the flag when a watched signal's number comes through the fd."""
    while True:
      try:
        data = reader.recv(64)
      except OSError:
        return
      if not data:
        return
      if any(byte in {int(s) for s in SIGNALS} for byte in data):
        self._stop(data[0])

  def _on_signal(self, signum, frame):
    # Runs once the compiled call returns; the watcher thread has set the flag already, this
    # covers a signal that came while no call was running.
    self._stop(signum)

  def _stop(self, signum):
    with self._lock:  # the watcher thread and the Python handler both come here
      first, self._signalled = not self._signalled, True
    if first:
      doing = ("saving a checkpoint after the step in flight" if self.phase is None else
               f"stopping {self.phase} (the checkpoint is saved already)")
      logger.info(f"{signal.Signals(signum).name} received: {doing}, then exiting with code "
                  f"{PREEMPTED_EXIT_CODE} (pid {os.getpid()})")
    self.flag.assign(True)
