"""Fine-tunes one recipe with several seeds, one after another, and summarises their dev metrics
(the paper reports the median over runs: docs/reproducing.md).

  python tools/run_seeds.py --seeds=5 --output_dir=out/rte -- \\
      --task_name=RTE --data_dir=glue_data --init_checkpoint=out/mnli --do_train --do_eval \\
      --spm_model_file=30k-clean.model --albert_config_file=albert_config.json ...

Everything after `--` goes to the fine-tuning binary (--binary, default run_classifier; a
--flagfile too), which runs as `python -m albert_tf.<binary>` with --output_dir=<output_dir>/
seed_<s> --random_seed=<s> --data_seed=<s> added, for s = --first_seed .. --first_seed +
--seeds - 1; its stdout and stderr go to <output_dir>/seed_<s>.log. --parallel=K runs K seeds at
a time (each one the devices it sees: give several only where they fit).

A seed that ran to the end with the same flags (its record <output_dir>/seed_<s>.json says so,
and its eval_results.txt ends at the step it recorded) is skipped; any other is run, and the
binary resumes it from its output_dir. A seed that fails is reported (exit status, last line of
its stderr) and the others still run; the tool then exits 1.

At the end, <output_dir>/seeds_summary.json (written atomically) and a table give, for every
numeric key of the seeds' eval_results.txt, the median, mean, std (the sample's, n - 1), min and
max and each seed's value: "final" from each seed's last evaluation, "best" from the evaluation
of its model.ckpt-best (the step best_trial.txt names). No TensorFlow here: the binaries are
subprocesses. A mistake in the flags is one `error:` line (albert_tf.core.cli), exit status 2.
"""

import json
import os
import statistics
import subprocess
import sys
import time

from absl import flags

from albert_tf.core import cli, errors, io

BINARIES = ("run_classifier", "run_race", "run_squad_v1", "run_squad_v2", "run_ner")
# The flags this tool sets for each seed: the recipe must not give them.
SEED_FLAGS = ("output_dir", "random_seed", "data_seed")
SUMMARY_NAME = "seeds_summary.json"
RESULTS_NAME = "eval_results.txt"
STATISTICS = ("median", "mean", "std", "min", "max")

FLAGS = flags.FLAGS
flags.DEFINE_integer("seeds", None, "How many seeds to fine-tune (1 or more).")
flags.DEFINE_integer("first_seed", 1, "The first seed; the others follow it (0 to 2**32 - 1).")
flags.DEFINE_string("output_dir", None,
                    "Where each seed's output_dir (seed_<s>), its log and the summary go.")
flags.DEFINE_enum("binary", "run_classifier", list(BINARIES),
                  "The fine-tuning binary (albert_tf.<binary>).")
flags.DEFINE_integer("parallel", 1, "How many seeds run at a time (1: one after another).")


def parse_eval_results(text):
  """The evaluations of an eval_results.txt, in file order.

  Args:
    text: the file's text: blocks of `key = value` lines, each ended by a ruler of `=`.

  Returns:
    a list of {key: value}: floats where the value is a number, else the text
    (`checkpoint = <init>`).
  """
  blocks, current = [], {}
  for line in text.splitlines():
    if line.startswith("="):
      blocks.append(current)
      current = {}
    elif " = " in line:
      key, value = line.strip().split(" = ", 1)
      try:
        current[key] = float(value)
      except ValueError:
        current[key] = value
  return blocks


def seed_results(seed_dir):
  """(final, best) evaluations of one seed's output_dir: its last evaluation, and the one of its
  model.ckpt-best (the step best_trial.txt names; None when it names none). (None, None) when
  it holds no evaluation."""
  path = os.path.join(seed_dir, RESULTS_NAME)
  blocks = parse_eval_results(io.read_text(path)) if io.exists(path) else []
  if not blocks:
    return None, None
  best = None
  trial = os.path.join(seed_dir, "best_trial.txt")
  if io.exists(trial):
    best_step = float(io.read_text(trial).strip().split(":")[1])
    # The last evaluation of that step: a run resumed after its start evaluated it once.
    best = next((b for b in reversed(blocks) if b.get("global_step") == best_step), None)
  return blocks[-1], best


def summarise(values):
  """{median, mean, std, min, max, seeds} of {seed: value} (std: the sample's, 0 for one)."""
  numbers = list(values.values())
  return {"median": statistics.median(numbers), "mean": statistics.fmean(numbers),
          "std": statistics.stdev(numbers) if len(numbers) > 1 else 0.0,
          "min": min(numbers), "max": max(numbers),
          "seeds": {str(seed): value for seed, value in values.items()}}


def metric_table(evaluations):
  """{key: summarise(...)} over every numeric key of {seed: evaluation} (None: skipped)."""
  keys = sorted({k for e in evaluations.values() if e for k, v in e.items()
                 if isinstance(v, float)})
  return {key: summarise({seed: e[key] for seed, e in evaluations.items()
                          if e and isinstance(e.get(key), float)}) for key in keys}


class Seed:
  """One seed's run: its output_dir, log, record and the binary's command line."""

  def __init__(self, seed, output_dir, binary, recipe):
    self.seed = seed
    self.dir = os.path.join(output_dir, f"seed_{seed}")
    self.log = os.path.join(output_dir, f"seed_{seed}.log")
    self.record_path = os.path.join(output_dir, f"seed_{seed}.json")
    self.recipe = list(recipe)
    self.command = [sys.executable, "-m", f"albert_tf.{binary}"] + self.recipe + [
        f"--output_dir={self.dir}", f"--random_seed={seed}", f"--data_seed={seed}"]
    self.status, self.error, self.seconds, self.skipped = None, None, 0.0, False
    self._process = self._log_file = self._start = None

  def finished(self):
    """Whether an earlier run of the same command ended with exit status 0 and its
    eval_results.txt still ends at the step it recorded."""
    if not io.exists(self.record_path):
      return False
    try:
      record = json.loads(io.read_text(self.record_path))
    except ValueError:
      return False
    final, _ = seed_results(self.dir)
    return (record.get("exit_status") == 0 and record.get("command") == self.command[1:]
            and final is not None and final.get("global_step") == record.get("final_step"))

  def start(self):
    self._start = time.monotonic()
    self._log_file = open(self.log, "w", encoding="utf-8")
    self._process = subprocess.Popen(
        self.command, stdout=self._log_file, stderr=subprocess.STDOUT)

  def poll(self):
    """Whether the run ended (then its status, error and record are set)."""
    if self._process.poll() is None:
      return False
    self._log_file.close()
    self.seconds = time.monotonic() - self._start
    self.status = self._process.returncode
    final, _ = seed_results(self.dir)
    if self.status != 0:
      self.error = _last_line(self.log) or f"exit status {self.status}"
    elif final is None:
      self.error = (f"no evaluation in {os.path.join(self.dir, RESULTS_NAME)}: give the "
                    "binary's evaluation flag (--do_eval)")
    io.write_text_atomically(self.record_path, json.dumps({
        "seed": self.seed, "exit_status": self.status, "command": self.command[1:],
        "final_step": final.get("global_step") if final else None,
        "seconds": round(self.seconds, 1)}, indent=1) + "\n")
    return True


def _last_line(path):
  """The last non-empty line of a log (what a binary's one-line error says)."""
  lines = [line for line in io.read_text(path).splitlines() if line.strip()]
  return lines[-1].strip() if lines else ""


def run_all(seeds, parallel):
  """Runs the seeds that are not finished, up to `parallel` at a time, printing a line as each
  starts and ends."""
  waiting = []
  for seed in seeds:
    if seed.finished():
      seed.skipped, seed.status = True, 0
      print(f"seed {seed.seed}: finished before, skipped ({seed.dir})", flush=True)
    else:
      waiting.append(seed)
  running = []
  while waiting or running:
    while waiting and len(running) < parallel:
      seed = waiting.pop(0)
      seed.start()
      print(f"seed {seed.seed}: running (log {seed.log})", flush=True)
      running.append(seed)
    time.sleep(0.2)
    for seed in [s for s in running if s.poll()]:
      running.remove(seed)
      if seed.error:
        print(f"seed {seed.seed}: FAILED (exit status {seed.status}): {seed.error}", flush=True)
      else:
        print(f"seed {seed.seed}: done in {seed.seconds:.0f} s", flush=True)


def summary(seeds, binary, recipe):
  """The seeds_summary.json object."""
  finals, bests = {}, {}
  for seed in seeds:
    if not seed.error:
      finals[seed.seed], bests[seed.seed] = seed_results(seed.dir)
  return {
      "binary": binary, "flags": recipe, "seeds": [s.seed for s in seeds],
      "runs": {str(s.seed): {"output_dir": s.dir, "exit_status": s.status, "skipped": s.skipped,
                             "seconds": round(s.seconds, 1)} for s in seeds},
      "failed": {str(s.seed): {"exit_status": s.status, "error": s.error}
                 for s in seeds if s.error},
      "final": metric_table(finals),
      "best": metric_table(bests),
  }


def format_table(result):
  """The summary as text: one row per (evaluation, metric)."""
  seeds = [str(s) for s in result["seeds"]]
  header = ["", "metric"] + list(STATISTICS) + [f"seed {s}" for s in seeds]
  rows = []
  for which in ("final", "best"):
    for key, row in result[which].items():
      rows.append([which, key] + [f"{row[k]:.4f}" for k in STATISTICS] +
                  [f"{row['seeds'][s]:.4f}" if s in row["seeds"] else "-" for s in seeds])
  widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
  lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header] + rows]
  for seed, failure in result["failed"].items():
    lines.append(f"seed {seed} failed (exit status {failure['exit_status']}): "
                 f"{failure['error']}")
  return "\n".join(lines)


def check_flags(recipe):
  """Raises errors.UsageError naming the flag and the fix."""
  if FLAGS.seeds < 1:
    raise errors.UsageError(f"--seeds={FLAGS.seeds}: give 1 or more seeds")
  if not (0 <= FLAGS.first_seed and FLAGS.first_seed + FLAGS.seeds - 1 < 2**32):
    raise errors.UsageError(f"--first_seed={FLAGS.first_seed}: the seeds must lie in 0 to "
                            "2**32 - 1")
  if FLAGS.parallel < 1:
    raise errors.UsageError(f"--parallel={FLAGS.parallel}: give 1 or more runs at a time")
  if not FLAGS.output_dir.strip():
    raise errors.UsageError("--output_dir is empty: give the directory for the seeds' runs")
  if not recipe:
    raise errors.UsageError(f"no flags for {FLAGS.binary}: give them after `--`, e.g. "
                            "`-- --task_name=RTE --data_dir=glue_data --do_train --do_eval ...`")
  for arg in recipe:
    name = arg.lstrip("-").split("=", 1)[0]
    if not arg.startswith("-"):
      raise errors.UsageError(f"unexpected argument {arg!r} after `--`: every setting of "
                              f"{FLAGS.binary} is a --flag")
    if name in SEED_FLAGS:
      raise errors.UsageError(
          f"{arg} after `--`: the tool sets --{name} for each seed (output_dir/seed_<s>, "
          "--random_seed and --data_seed = s): drop it, and give --output_dir before `--`")


def main(argv):
  recipe = argv[1:]
  check_flags(recipe)
  io.makedirs(FLAGS.output_dir)
  seeds = [Seed(s, FLAGS.output_dir, FLAGS.binary, recipe)
           for s in range(FLAGS.first_seed, FLAGS.first_seed + FLAGS.seeds)]
  run_all(seeds, FLAGS.parallel)
  result = summary(seeds, FLAGS.binary, recipe)
  path = os.path.join(FLAGS.output_dir, SUMMARY_NAME)
  io.write_text_atomically(path, json.dumps(result, indent=1, sort_keys=True) + "\n")
  print(format_table(result))
  print(f"wrote {path}")
  if result["failed"]:
    raise errors.AlbertError(f"{len(result['failed'])} of {len(seeds)} seeds failed "
                             f"({', '.join(result['failed'])}): see their logs in "
                             f"{FLAGS.output_dir}")


if __name__ == "__main__":
  cli.run(main, required_flags=("seeds", "output_dir"))
