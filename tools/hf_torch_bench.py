"""Times Hugging Face transformers' ALBERT in PyTorch as tools/benchmark.py times ours: the
peer of tools/cpu_check.py (and of tools/amx_check.py, its alias), run in an
interpreter of its own.

  /tmp/hfvenv/bin/python tools/hf_torch_bench.py --config=base
  python3 tools/hf_torch_bench.py --hf_python=/tmp/hfvenv/bin/python   # re-runs itself there

torch and transformers are not albert_tf's dependencies: make a virtual environment for them,
  python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch transformers numpy
and name its interpreter with --hf_python (default: the one running this file).

The model: transformers' AlbertForPreTraining with random weights, its AlbertConfig built from
our albert_config.json (--config: a preset name, base by default, or a path; read as a file, so
that neither TensorFlow nor albert_tf is imported here). At --batch_size x --seq_length (8 x 128)
with --num_predictions masked positions (20), in the precision of each --mixed_precision:
float32, or mixed_bfloat16 (torch.autocast("cpu", dtype=torch.bfloat16): float32 weights, bf16
matmuls, as Keras' mixed_bfloat16). For each --mode:

  forward  the pretraining outputs under torch.inference_mode(): the masked-LM logits and the
           sentence-order logits.
  train    forward, the pretraining loss (masked-LM cross-entropy at the masked positions,
           weighted as ours, plus sentence-order cross-entropy), backward, gradients clipped at
           a global norm of 1.0 (as run_pretraining) and a torch.optim.AdamW step.

--mlm_logits=masked (the default) computes the masked-LM head at the masked positions only, as
the original ALBERT and ours do (the encoder's output gathered, then AlbertForPreTraining's own
`predictions` head); --mlm_logits=all calls AlbertForPreTraining as it is, whose head covers every
token (at base, batch 8 x 128, about 8 GFLOP more than ours: 4% of the forward pass).

Prints one JSON line per (mode, precision), as tools/benchmark.py's: mode, mixed_precision,
seconds_per_step (median of --steps after --warmup_steps), examples_per_second, batch_size,
seq_length, num_predictions, runtime="hf_torch", torch, transformers, threads (torch's intra-op
threads: --threads, else torch's default), attention (the attention implementation transformers
chose), mlm_logits, optimizer, parameters, tensorflow_loaded (false: this process never imports
it).

The command line is argparse's, not absl's as elsewhere in the project: the interpreter this
runs in has torch and transformers, and need not have absl or anything else of ours.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Our released configs (albert_tf/core/config.py's presets), read as files.
PRESET_DIR = os.path.join(REPO_ROOT, "albert_tf", "configs")
PRECISIONS = ("float32", "mixed_bfloat16")
MODES = ("forward", "train")
# run_pretraining's clipping (the original clips at a global norm of 1.0 before its optimizer).
CLIP_NORM = 1.0
# The original's layer norm epsilon (tf.contrib.layers.layer_norm's), which HF's ALBERT takes.
LAYER_NORM_EPS = 1e-12
# Our activation names -> transformers': the original's "gelu" is the tanh approximation, HF's
# "gelu_new" (HF's "gelu" is the exact erf form).
HF_ACTIVATIONS = {"gelu": "gelu_new", "relu": "relu", "tanh": "tanh", "linear": "linear"}
# Our albert_config.json fields that transformers' AlbertConfig takes under the same name.
HF_FIELDS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
             "num_hidden_groups", "num_attention_heads", "intermediate_size", "inner_group_num",
             "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
             "type_vocab_size", "initializer_range")
VENV_HINT = ("python3 -m venv /tmp/hfvenv && /tmp/hfvenv/bin/pip install torch transformers "
             "numpy, then --hf_python=/tmp/hfvenv/bin/python")


class UsageError(ValueError):
  """A flag that cannot work; main() prints it as one `error:` line, exit status 2."""


def config_path(name_or_path):
  """The albert_config.json of a preset name (base, large, ...) or a path.

  Raises:
    UsageError: naming --config, for a name that is neither a file nor a preset.
  """
  if os.path.isfile(name_or_path):
    return name_or_path
  path = os.path.join(PRESET_DIR, f"albert_{name_or_path}_v2.json")
  if os.path.isfile(path):
    return path
  known = sorted(f[len("albert_"):-len("_v2.json")] for f in os.listdir(PRESET_DIR)
                 if f.startswith("albert_") and f.endswith("_v2.json"))
  raise UsageError(f"--config={name_or_path}: no such albert_config.json nor preset; give a path "
                   f"or one of {', '.join(known)}")


def hf_config_values(path):
  """transformers.AlbertConfig's keyword arguments for our albert_config.json at `path`: the
  same model as albert_tf.checkpoints.hf_config.to_hf_config() writes, without importing
  albert_tf.

  Raises:
    UsageError: naming the file, for an activation or a parameter sharing HF's ALBERT has not.
  """
  with open(path, encoding="utf-8") as f:
    ours = json.load(f)
  values = {k: ours[k] for k in HF_FIELDS if k in ours}
  act = ours.get("hidden_act", "gelu").lower()
  if act not in HF_ACTIVATIONS:
    raise UsageError(f"{path}: hidden_act {act!r} has no transformers counterpart here; use one "
                     f"of {', '.join(HF_ACTIVATIONS)}")
  sharing = ours.get("parameter_sharing", "all-shared")
  if sharing == "not-shared":
    values["num_hidden_groups"] = ours["num_hidden_layers"]  # one group per layer: HF's terms
  elif sharing != "all-shared":
    raise UsageError(f"{path}: parameter_sharing {sharing!r}: transformers' ALBERT shares whole "
                     f"layers only (all-shared or not-shared); time another config")
  values.update(hidden_act=HF_ACTIVATIONS[act], layer_norm_eps=LAYER_NORM_EPS,
                position_embedding_type="absolute",
                # The sentence-order head's dropout, as the rest of the model's.
                classifier_dropout_prob=values.get("hidden_dropout_prob", 0.0))
  return values


def synthetic_batch(vocab_size, batch_size, seq_length, num_predictions, seed=0):
  """Random pretraining features (torch int64): input_ids, attention_mask, token_type_ids
  [B, T]; masked_lm_positions, masked_lm_ids, masked_lm_weights (float32) [B, P];
  sentence_order_label [B]."""
  import torch
  g = torch.Generator().manual_seed(seed)
  ints = lambda high, shape: torch.randint(0, high, shape, generator=g)
  b, t, p = batch_size, seq_length, num_predictions
  return {
      "input_ids": ints(vocab_size, (b, t)), "attention_mask": torch.ones(b, t, dtype=torch.long),
      "token_type_ids": ints(2, (b, t)), "masked_lm_positions": ints(t, (b, p)),
      "masked_lm_ids": ints(vocab_size, (b, p)), "masked_lm_weights": torch.ones(b, p),
      "sentence_order_label": ints(2, (b,)),
  }


def pretraining_logits(model, batch, mlm_logits):
  """(masked-LM logits [B, P, V], sentence-order logits [B, 2]) of AlbertForPreTraining.

  Args:
    model: a transformers AlbertForPreTraining.
    batch: synthetic_batch(...).
    mlm_logits: "masked" (the head on the P gathered positions, as the original) or "all" (the
      model's own forward, the head on all T tokens, then gathered).
  """
  import torch
  inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
  positions = batch["masked_lm_positions"]
  if mlm_logits == "all":
    out = model(**inputs)
    index = positions[..., None].expand(-1, -1, out.prediction_logits.shape[-1])
    return torch.gather(out.prediction_logits, 1, index), out.sop_logits
  sequence, pooled = model.albert(**inputs, return_dict=False)[:2]
  index = positions[..., None].expand(-1, -1, sequence.shape[-1])
  return (model.predictions(torch.gather(sequence, 1, index)), model.sop_classifier(pooled))


def pretraining_loss(mlm, sop, batch):
  """Weighted masked-LM cross-entropy plus sentence-order cross-entropy, in float32."""
  import torch.nn.functional as F
  weights = batch["masked_lm_weights"].reshape(-1)
  per_token = F.cross_entropy(mlm.float().reshape(-1, mlm.shape[-1]),
                              batch["masked_lm_ids"].reshape(-1), reduction="none")
  mlm_loss = (per_token * weights).sum() / (weights.sum() + 1e-5)
  return mlm_loss + F.cross_entropy(sop.float(), batch["sentence_order_label"])


def time_steps(fn, warmup, steps):
  """Median seconds of `steps` calls of fn() after `warmup` untimed ones (torch's CPU ops have
  finished when they return)."""
  for _ in range(warmup):
    fn()
  times = []
  for _ in range(steps):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def benchmark(args):
  """Yields one line (dict) per (mode, precision) of `args` (parse_args())."""
  import contextlib
  import functools
  import torch
  import transformers
  if args.threads:
    torch.set_num_threads(args.threads)
  torch.manual_seed(args.seed)
  path = config_path(args.config)
  hf_config = transformers.AlbertConfig(**hf_config_values(path))
  model = transformers.AlbertForPreTraining(hf_config)
  batch = synthetic_batch(hf_config.vocab_size, args.batch_size, args.seq_length,
                          args.num_predictions, args.seed)
  params = [p for p in model.parameters() if p.requires_grad]
  optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01)
  fields = {"runtime": "hf_torch", "config": args.config, "batch_size": args.batch_size,
            "seq_length": args.seq_length, "num_predictions": args.num_predictions,
            "torch": torch.__version__, "transformers": transformers.__version__,
            "threads": torch.get_num_threads(),
            "attention": getattr(model.config, "_attn_implementation", None),
            "mlm_logits": args.mlm_logits, "parameters": sum(p.numel() for p in params)}

  def autocast(precision):
    if precision == "mixed_bfloat16":
      return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()

  def forward(precision):
    model.eval()
    with torch.inference_mode(), autocast(precision):
      return pretraining_logits(model, batch, args.mlm_logits)

  def train(precision):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    with autocast(precision):
      loss = pretraining_loss(*pretraining_logits(model, batch, args.mlm_logits), batch)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, CLIP_NORM)
    optimizer.step()
    return loss

  for precision in args.mixed_precision:
    for mode in args.mode:
      step = forward if mode == "forward" else train
      seconds = time_steps(functools.partial(step, precision), args.warmup_steps, args.steps)
      line = {"mode": mode, "mixed_precision": precision,
              "seconds_per_step": float(f"{seconds:.4g}"),
              "examples_per_second": round(args.batch_size / seconds, 2)}
      line.update(fields)
      if mode == "train":
        line["optimizer"] = "adamw"
      line["tensorflow_loaded"] = "tensorflow" in sys.modules
      yield line


def comma_names(allowed, flag):
  """An argparse type: a comma-separated list of `allowed` names (the --`flag` in its error)."""
  def parse(text):
    names = [n for n in text.split(",") if n]
    bad = [n for n in names if n not in allowed]
    if bad or not names:
      raise argparse.ArgumentTypeError(f"--{flag}={text}: choose from {','.join(allowed)} "
                                       f"(comma-separated)")
    return names
  return parse


def shape_parser(description, precision_help):
  """An argparse parser with the flags every peer's benchmark shares (this file's and
  tools/kerashub_bench.py's): --config, the shape, --mode, --mixed_precision, the steps, --seed.

  Args:
    description: the parser's description.
    precision_help: what --mixed_precision=mixed_bfloat16 is in that peer.
  """
  parser = argparse.ArgumentParser(
      description=description, formatter_class=argparse.RawTextHelpFormatter)
  parser.add_argument("--config", default="base",
                      help="Preset name (base, large, ...) or path to an albert_config.json.")
  parser.add_argument("--batch_size", type=int, default=8, help="Examples per step.")
  parser.add_argument("--seq_length", type=int, default=128, help="Tokens per example.")
  parser.add_argument("--num_predictions", type=int, default=20,
                      help="Masked-LM predictions per example.")
  parser.add_argument("--mode", type=comma_names(MODES, "mode"), default=list(MODES),
                      help="What to time: forward,train (default both).")
  parser.add_argument("--mixed_precision", type=comma_names(PRECISIONS, "mixed_precision"),
                      default=list(PRECISIONS),
                      help=f"float32,mixed_bfloat16 (default both); {precision_help}")
  parser.add_argument("--warmup_steps", type=int, default=2, help="Untimed calls first.")
  parser.add_argument("--steps", type=int, default=5, help="Timed calls (the median is kept).")
  parser.add_argument("--seed", type=int, default=0, help="Weights' and batch's seed.")
  return parser


def checked_args(parser, argv):
  """parser's arguments of `argv`, the shape and step counts checked (parser.error otherwise)."""
  args = parser.parse_args(argv)
  for name in ("batch_size", "seq_length", "num_predictions", "steps"):
    if getattr(args, name) < 1:
      parser.error(f"--{name}={getattr(args, name)}: must be at least 1")
  if args.warmup_steps < 0:
    parser.error(f"--warmup_steps={args.warmup_steps}: must be 0 or more")
  return args


def parse_args(argv):
  """The flags (argv without the program name)."""
  parser = shape_parser(__doc__.split("\n\n", 1)[0],
                        "mixed_bfloat16 is torch.autocast('cpu', dtype=torch.bfloat16).")
  parser.add_argument("--mlm_logits", choices=("masked", "all"), default="masked",
                      help="The masked-LM head at the masked positions (as ours) or at all.")
  parser.add_argument("--threads", type=int, default=None,
                      help="torch's intra-op threads (default: torch's own choice).")
  parser.add_argument("--hf_python", default=sys.executable,
                      help="The interpreter with torch and transformers; this file re-runs "
                           "itself there when it is not the one running it.")
  return checked_args(parser, argv)


def command(python, tool=None, **flag_values):
  """The argv that runs `tool` (default: this file) under `python` with `flag_values`
  (--name=value; lists joined by commas), for callers such as tools/cpu_check.py."""
  argv = [python, os.path.abspath(tool or __file__)]
  for name, value in flag_values.items():
    if value is not None:
      argv.append(f"--{name}={','.join(map(str, value)) if isinstance(value, list) else value}")
  return argv


def parse_lines(stdout):
  """The JSON lines of this tool's output (other lines, a library's notices, skipped)."""
  return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def check_interpreter(python, probe="import torch, transformers", flag="--hf_python",
                      needs="torch and transformers", hint=VENV_HINT):
  """Raises UsageError, naming `flag` and the fix, unless `python` runs `probe` (by default:
  imports torch and transformers; tools/kerashub_bench.py asks for keras_hub).

  Args:
    python: the interpreter's path.
    probe: Python source that must run there.
    flag, needs, hint: the error message's flag, what `probe` imports, and how to get it.
  """
  try:
    result = subprocess.run([python, "-c", probe], capture_output=True, text=True,
                            env=dict(os.environ, USE_TF="0"), check=False, timeout=300)
  except OSError as e:
    raise UsageError(f"{flag}={python}: cannot run it ({e}); make one: {hint}") from None
  if result.returncode != 0:
    last = (result.stderr.strip().splitlines() or ["exit status %d" % result.returncode])[-1]
    raise UsageError(f"{flag}={python}: cannot import {needs} ({last}); {hint}")


def _without_hf_python(argv):
  """argv less --hf_python (as --hf_python=X or --hf_python X): the re-run is in X already."""
  rest, skip = [], False
  for arg in argv:
    if skip:
      skip = False
    elif arg == "--hf_python":
      skip = True
    elif not arg.startswith("--hf_python="):
      rest.append(arg)
  return rest


def main(argv):
  # transformers must not load TensorFlow beside torch (where both are installed).
  os.environ.setdefault("USE_TF", "0")
  args = parse_args(argv[1:])
  try:
    config_path(args.config)
    if os.path.abspath(args.hf_python) != os.path.abspath(sys.executable):
      check_interpreter(args.hf_python)
      rerun = [args.hf_python, os.path.abspath(__file__)] + _without_hf_python(argv[1:])
      return subprocess.run(rerun, check=False).returncode
    try:
      import torch  # noqa: F401 -- only whether it imports
      import transformers  # noqa: F401 -- only whether it imports
    except ImportError as e:
      raise UsageError(f"{sys.executable} has no {e.name}: run this file in an interpreter "
                       f"with torch and transformers: {VENV_HINT}") from None
    for line in benchmark(args):
      print(json.dumps(line), flush=True)
  except UsageError as e:
    print(f"error: {e}", file=sys.stderr, flush=True)
    return 2
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
