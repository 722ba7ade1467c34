"""Times Hugging Face transformers' ALBERT in PyTorch as tools/benchmark.py times ours: the
peer of tools/cpu_check.py (and of tools/amx_check.py, its alias), run in an
interpreter of its own.

  /tmp/hfvenv/bin/python tools/hf_torch_bench.py --config=base
  python3 tools/hf_torch_bench.py --hf_python=/tmp/hfvenv/bin/python   # re-runs itself there

torch and transformers are not albert_tf's dependencies: make a virtual environment for them,
  python3 -m venv /tmp/hfvenv && \\
      /tmp/hfvenv/bin/pip install torch transformers numpy onnxruntime onnx
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

--mode=serving (never among the defaults) times what a user would serve instead of our
SavedModel's `tokens` signature: transformers' AlbertModel (random weights of --config; its
sequence output and pooled output, as that signature returns), one request of
--serving_batch_size (1) x each of --serving_tokens (8,128) token ids (attention mask all ones,
one segment), p50 and p99 ms of --serving_requests (30) requests after --serving_warmup (5), in
--serving_threads threads (default: every CPU), in each of --serving_runtimes:

  torch       torch eager, float32, under torch.inference_mode().
  torch_bf16  the same under torch.autocast("cpu", dtype=torch.bfloat16), where the CPU has bf16
              units (avx512_bf16 or amx_bf16 in /proc/cpuinfo's flags); elsewhere its lines say
              "skipped": oneDNN would emulate bf16 in float32, a figure no one would serve.
  torch_int8  torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8).
  onnx        the model exported to ONNX, in ONNX Runtime (ORT_ENABLE_ALL graph optimizations,
              --serving_threads intra-op threads). Hugging Face's own exporter (optimum-onnx,
              0.1.0) requires transformers<4.58 and cannot be installed beside transformers 5: the
              export is torch.onnx.export with the settings of optimum-onnx's ALBERT
              feature-extraction export (inputs input_ids, attention_mask and token_type_ids, int64,
              axes 0 and 1 dynamic as batch_size and sequence_length; opset 18; the TorchScript
              exporter with constant folding), plus pooler_output, which that task leaves out and
              our signature returns. The line's "exporter" says so.
  onnx_int8   that file after onnxruntime.quantization.quantize_dynamic as optimum's dynamic
              quantization for avx512_vnni does it (AutoQuantizationConfig.avx512_vnni: QInt8
              symmetric weights per tensor, uint8 activations, full range, every operator ORT
              quantizes dynamically), in ONNX Runtime as onnx.

One line per (runtime, token count): mode="serving", runtime (hf_torch or hf_onnxruntime),
precision (float32, bfloat16 or int8), tokens, batch_size, p50_ms, p99_ms, requests, warmup,
threads, max_abs_diff (the largest absolute difference of its sequence_output and of its
pooled_output from torch eager float32's on the same request), config, attention, the versions
(torch, transformers; onnxruntime and onnx on ONNX Runtime's lines), exporter or quantization
where they apply, tensorflow_loaded. A runtime that cannot run has "skipped" (why) or "error" (what
failed; for a missing package, what to install) instead of the timings, and the others still run.
tools/cpu_check.py builds the command with serving_command() and reads the lines with
parse_lines() (serving_results() keys them).

The command line is argparse's, not absl's as elsewhere in the project: the interpreter this
runs in has torch and transformers, and need not have absl or anything else of ours.
"""

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

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
             "numpy onnxruntime onnx, then --hf_python=/tmp/hfvenv/bin/python")
SERVING_MODE = "serving"
# --serving_runtimes' names -> the line's (runtime, precision).
SERVING_RUNTIMES = {
    "torch": ("hf_torch", "float32"),
    "torch_bf16": ("hf_torch", "bfloat16"),
    "torch_int8": ("hf_torch", "int8"),
    "onnx": ("hf_onnxruntime", "float32"),
    "onnx_int8": ("hf_onnxruntime", "int8"),
}
# /proc/cpuinfo flags of units that run bf16 matmuls; without one, oneDNN emulates bf16.
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")
# optimum-onnx's ALBERT feature-extraction export (AlbertOnnxConfig, a BertOnnxConfig): its
# inputs, each with these dynamic axes, its opset, and the dummy shape it traces at (its
# DEFAULT_DUMMY_SHAPES: batch 2, sequence 16).
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
ONNX_AXES = {0: "batch_size", 1: "sequence_length"}
ONNX_OPSET = 18
ONNX_DUMMY_SHAPE = (2, 16)
ONNX_EXPORTER = ("torch.onnx.export (TorchScript exporter) with optimum-onnx's ALBERT "
                 "feature-extraction settings (opset 18, dynamic batch_size and sequence_length) "
                 "plus pooler_output; not optimum itself: optimum-onnx requires transformers<4.58")
ONNX_INT8_METHOD = ("onnxruntime.quantization.quantize_dynamic: QInt8 symmetric weights per "
                    "tensor, uint8 activations, full range (optimum's avx512_vnni dynamic config)")
TORCH_INT8_METHOD = "torch.ao.quantization.quantize_dynamic({torch.nn.Linear}, dtype=torch.qint8)"
ORT_HINT = "pip install onnxruntime onnx"


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
  return statistics.median(latencies(fn, warmup, steps)[0])


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
    for mode in (m for m in args.mode if m in MODES):
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


# -- --mode=serving -------------------------------------------------------------------------------
class Unavailable(Exception):
  """A serving runtime that cannot run here: its lines carry `key` ("skipped" or "error") with
  the message instead of timings."""

  def __init__(self, key, message):
    super().__init__(message)
    self.key = key


def bf16_units(cpuinfo="/proc/cpuinfo"):
  """The BF16_CPU_FLAGS that the flags lines of `cpuinfo` (a path) list.

  Returns:
    A sorted list, empty for a CPU without bf16 units.

  Raises:
    Unavailable: "skipped", where the file cannot be read (not Linux): no way to tell.
  """
  try:
    with open(cpuinfo, encoding="utf-8", errors="replace") as f:
      text = f.read()
  except OSError as e:
    raise Unavailable("skipped", f"cannot read {cpuinfo} ({e.strerror}) to tell whether the CPU "
                                 f"has bf16 units ({' or '.join(BF16_CPU_FLAGS)})") from None
  flags = set()
  for line in text.splitlines():
    name, _, value = line.partition(":")
    if name.strip() == "flags":
      flags.update(value.split())
  return sorted(flags & set(BF16_CPU_FLAGS))


def serving_request(vocab_size, batch_size, tokens, seed=0):
  """One request's token ids as numpy int64 [batch_size, tokens] arrays named as ONNX_INPUTS:
  random ids, every position attended, one segment."""
  import numpy as np
  rng = np.random.default_rng(seed + tokens)
  shape = (batch_size, tokens)
  return {"input_ids": rng.integers(0, vocab_size, shape, dtype=np.int64),
          "attention_mask": np.ones(shape, np.int64),
          "token_type_ids": np.zeros(shape, np.int64)}


def as_float32(outputs):
  """(sequence_output, pooled_output) as float32 numpy arrays, from torch tensors (any dtype)
  or numpy arrays."""
  import numpy as np
  return [np.asarray(o.float().numpy() if hasattr(o, "float") else o, dtype=np.float32)
          for o in outputs[:2]]


def max_abs_diff(outputs, reference):
  """{"sequence_output": ..., "pooled_output": ...}: the largest absolute difference of each of
  `outputs` from `reference` (as_float32's pairs), 4 significant digits."""
  import numpy as np
  return {name: float(f"{float(np.max(np.abs(o - r))):.4g}")
          for name, o, r in zip(("sequence_output", "pooled_output"), outputs, reference)}


def missing_package(e):
  """Unavailable("error") for an ImportError of a serving runtime: what to install, and where."""
  name = e.name or str(e)
  install = ORT_HINT if name.startswith("onnx") else f"pip install {name}"
  return Unavailable("error", f"no module {name!r} in {sys.executable}: {sys.executable} -m "
                              f"{install}")


def torch_runtime(model, precision):
  """A torch serving runtime: (feeds, call, fields), where feeds(request) makes call's input
  (untimed) and call(inputs) answers one request (timed).

  Args:
    model: the float32 AlbertModel, in eval mode.
    precision: "float32", "bfloat16" (autocast) or "int8" (dynamic int8 Linear layers).

  Raises:
    Unavailable: bf16 without bf16 units, or int8 where torch has no dynamic quantization.
  """
  import contextlib
  import torch
  fields = {}
  autocast = contextlib.nullcontext
  if precision == "bfloat16":
    units = bf16_units()
    if not units:
      raise Unavailable("skipped", f"this CPU has no bf16 units (neither of "
                                   f"{', '.join(BF16_CPU_FLAGS)} in /proc/cpuinfo's flags): "
                                   "autocast would time bf16 emulated in float32")
    fields["bf16_units"] = units
    autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16)
  elif precision == "int8":
    quantize = getattr(getattr(torch.ao, "quantization", None), "quantize_dynamic", None)
    if quantize is None:
      raise Unavailable("error", f"torch {torch.__version__} has no "
                                 "torch.ao.quantization.quantize_dynamic (removed in favour of "
                                 "torchao): use a torch that has it")
    with warnings.catch_warnings():
      # torch.ao.quantization announces its deprecation; the call is what is asked for.
      warnings.simplefilter("ignore")
      model = quantize(model, {torch.nn.Linear}, dtype=torch.qint8)
    fields["quantization"] = TORCH_INT8_METHOD

  def call(inputs):
    with torch.inference_mode(), autocast():
      return model(**inputs, return_dict=False)[:2]

  feeds = lambda request: {k: torch.from_numpy(v) for k, v in request.items()}
  return feeds, call, fields


def export_onnx(model, path, max_positions):
  """Writes `model` (an AlbertModel) to `path` as optimum-onnx's ALBERT feature-extraction
  export does (ONNX_EXPORTER), pooler_output added.

  Args:
    model: the float32 AlbertModel, in eval mode.
    path: the .onnx file to write.
    max_positions: the config's max_position_embeddings (the traced length's bound).
  """
  import torch
  batch, tokens = ONNX_DUMMY_SHAPE[0], min(ONNX_DUMMY_SHAPE[1], max_positions)
  dummy = {name: torch.from_numpy(v) for name, v in
           serving_request(model.config.vocab_size, batch, tokens).items()}
  axes = {name: ONNX_AXES for name in ONNX_INPUTS}
  axes.update(last_hidden_state=ONNX_AXES, pooler_output={0: ONNX_AXES[0]})
  with warnings.catch_warnings():
    # The TorchScript exporter's deprecation notice, and its tracer's warnings on transformers'
    # mask code, which takes the traceable branch while tracing (max_abs_diff checks the file).
    warnings.simplefilter("ignore")
    torch.onnx.export(model, (), path, kwargs=dummy, input_names=list(ONNX_INPUTS),
                      output_names=["last_hidden_state", "pooler_output"], dynamic_axes=axes,
                      opset_version=ONNX_OPSET, do_constant_folding=True, dynamo=False)


def onnx_runtime(model, precision, workdir, threads):
  """An ONNX Runtime serving runtime of `model` exported (float32) or exported and dynamically
  quantized (int8) under `workdir`: (feeds, call, fields) as torch_runtime's.

  Raises:
    Unavailable: "error", naming what to install, where onnxruntime or onnx is missing.
  """
  try:
    import onnxruntime as ort
    import onnx
  except ImportError as e:
    raise missing_package(e) from None
  path = os.path.join(workdir, "model.onnx")
  if not os.path.exists(path):
    export_onnx(model, path, model.config.max_position_embeddings)
  fields = {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "exporter": ONNX_EXPORTER}
  if precision == "int8":
    from onnxruntime.quantization import QuantType, quantize_dynamic
    int8_path = os.path.join(workdir, "model_int8.onnx")
    if not os.path.exists(int8_path):
      quantize_dynamic(path, int8_path, per_channel=False, reduce_range=False,
                       weight_type=QuantType.QInt8,
                       extra_options={"WeightSymmetric": True, "ActivationSymmetric": False})
    path = int8_path
    fields["quantization"] = ONNX_INT8_METHOD
  options = ort.SessionOptions()
  options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
  options.intra_op_num_threads = threads
  session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
  call = lambda feeds: session.run(None, feeds)
  return (lambda request: request), call, fields


def latencies(call, warmup, count):
  """Times call() `count` times after `warmup` untimed calls.

  Returns:
    (the `count` durations in seconds, the last call's result).
  """
  for _ in range(warmup):
    call()
  times = []
  for _ in range(count):
    start = time.perf_counter()
    result = call()
    times.append(time.perf_counter() - start)
  return times, result


def percentile_ms(seconds, q):
  """The q-th percentile (linear interpolation, as numpy's default) of `seconds`, in ms to 4
  significant digits."""
  ordered = sorted(seconds)
  rank = (len(ordered) - 1) * q / 100
  low, high = math.floor(rank), math.ceil(rank)
  value = ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
  return float(f"{value * 1000:.4g}")


def serving(args):
  """The --mode=serving lines, runtime-major: the model is built once, each runtime prepared
  once (the ONNX file exported once, in a temporary folder), each token count timed on it.

  Args:
    args: parse_args()'s namespace.

  Yields:
    One line (dict) per (--serving_runtimes name, --serving_tokens).
  """
  import functools
  import torch
  import transformers
  torch.set_num_threads(args.serving_threads)
  torch.manual_seed(args.seed)
  hf_config = transformers.AlbertConfig(**hf_config_values(config_path(args.config)))
  model = transformers.AlbertModel(hf_config).eval()
  requests = {t: serving_request(hf_config.vocab_size, args.serving_batch_size, t, args.seed)
              for t in args.serving_tokens}
  with torch.inference_mode():
    reference = {t: as_float32(model(**{k: torch.from_numpy(v) for k, v in r.items()},
                                     return_dict=False))
                 for t, r in requests.items()}
  common = {"threads": args.serving_threads, "config": args.config,
            "attention": getattr(model.config, "_attn_implementation", None),
            "torch": torch.__version__, "transformers": transformers.__version__}
  with tempfile.TemporaryDirectory(prefix="hf_serving_") as workdir:
    for name in args.serving_runtimes:
      runtime, precision = SERVING_RUNTIMES[name]
      heads = [{"mode": SERVING_MODE, "runtime": runtime, "precision": precision, "tokens": t,
                "batch_size": args.serving_batch_size} for t in args.serving_tokens]
      try:
        if runtime == "hf_torch":
          feeds, call, fields = torch_runtime(model, precision)
        else:
          feeds, call, fields = onnx_runtime(model, precision, workdir, args.serving_threads)
      except Unavailable as e:
        fields, failure = {}, {e.key: str(e)}
      except ImportError as e:
        fields, failure = {}, {"error": str(missing_package(e))}
      except Exception as e:  # noqa: BLE001 -- one runtime's failure is its lines', not the run's
        fields, failure = {}, {"error": f"{type(e).__name__}: {e}".splitlines()[0]}
      else:
        failure = None
      for line in heads:
        tokens = line["tokens"]
        if failure is None:
          inputs = feeds(requests[tokens])
          try:
            seconds, outputs = latencies(functools.partial(call, inputs),
                                         args.serving_warmup, args.serving_requests)
          except Exception as e:  # noqa: BLE001 -- as above, for one token count
            line["error"] = f"{type(e).__name__}: {e}".splitlines()[0]
          else:
            line.update(p50_ms=percentile_ms(seconds, 50), p99_ms=percentile_ms(seconds, 99),
                        requests=args.serving_requests, warmup=args.serving_warmup,
                        max_abs_diff=max_abs_diff(as_float32(outputs), reference[tokens]))
        else:
          line.update(failure)
        line.update(common)
        line.update(fields)
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


def shape_parser(description, precision_help, modes=MODES):
  """An argparse parser with the flags every peer's benchmark shares (this file's and
  tools/kerashub_bench.py's): --config, the shape, --mode, --mixed_precision, the steps, --seed.

  Args:
    description: the parser's description.
    precision_help: what --mixed_precision=mixed_bfloat16 is in that peer.
    modes: the names --mode takes (MODES, its default, and here also SERVING_MODE).

  Returns:
    The parser.
  """
  parser = argparse.ArgumentParser(
      description=description, formatter_class=argparse.RawTextHelpFormatter)
  parser.add_argument("--config", default="base",
                      help="Preset name (base, large, ...) or path to an albert_config.json.")
  parser.add_argument("--batch_size", type=int, default=8, help="Examples per step.")
  parser.add_argument("--seq_length", type=int, default=128, help="Tokens per example.")
  parser.add_argument("--num_predictions", type=int, default=20,
                      help="Masked-LM predictions per example.")
  mode_help = "What to time: forward,train (default both)."
  if tuple(modes) != MODES:
    mode_help = f"What to time: any of {','.join(modes)} (default {','.join(MODES)})."
  parser.add_argument("--mode", type=comma_names(modes, "mode"), default=list(MODES),
                      help=mode_help)
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


def positive_ints(flag):
  """An argparse type: comma-separated positive integers (the --`flag` in its error)."""
  def parse(text):
    try:
      values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
      values = []
    if not values or min(values) < 1:
      raise argparse.ArgumentTypeError(f"--{flag}={text}: give positive integers separated by "
                                       f"commas, e.g. --{flag}=8,128")
    return values
  return parse


def parse_args(argv):
  """The flags (argv without the program name)."""
  parser = shape_parser(__doc__.split("\n\n", 1)[0],
                        "mixed_bfloat16 is torch.autocast('cpu', dtype=torch.bfloat16).",
                        MODES + (SERVING_MODE,))
  parser.add_argument("--mlm_logits", choices=("masked", "all"), default="masked",
                      help="The masked-LM head at the masked positions (as ours) or at all.")
  parser.add_argument("--threads", type=int, default=None,
                      help="torch's intra-op threads (default: torch's own choice).")
  parser.add_argument("--hf_python", default=sys.executable,
                      help="The interpreter with torch and transformers; this file re-runs "
                           "itself there when it is not the one running it.")
  serving = parser.add_argument_group("--mode=serving")
  serving.add_argument("--serving_tokens", type=positive_ints("serving_tokens"),
                       default=[8, 128], help="Each request's token count (default 8,128).")
  serving.add_argument("--serving_batch_size", type=int, default=1,
                       help="Examples per request (default 1).")
  serving.add_argument("--serving_threads", type=int, default=None,
                       help="torch's and ONNX Runtime's intra-op threads (default: every CPU).")
  serving.add_argument("--serving_requests", type=int, default=30,
                       help="Timed requests per line (p50 and p99 of them).")
  serving.add_argument("--serving_warmup", type=int, default=5,
                       help="Untimed requests first, per line.")
  serving.add_argument("--serving_runtimes", type=comma_names(tuple(SERVING_RUNTIMES),
                                                              "serving_runtimes"),
                       default=list(SERVING_RUNTIMES),
                       help=f"Any of {','.join(SERVING_RUNTIMES)} (default all).")
  args = checked_args(parser, argv)
  for name in ("serving_batch_size", "serving_requests"):
    if getattr(args, name) < 1:
      parser.error(f"--{name}={getattr(args, name)}: must be at least 1")
  if args.serving_warmup < 0:
    parser.error(f"--serving_warmup={args.serving_warmup}: must be 0 or more")
  if args.serving_threads is None:
    args.serving_threads = os.cpu_count() or 1
  elif args.serving_threads < 1:
    parser.error(f"--serving_threads={args.serving_threads}: must be at least 1")
  return args


def check_serving_tokens(args):
  """Raises UsageError, naming --serving_tokens, for a count over --config's
  max_position_embeddings (its position embeddings end there)."""
  with open(config_path(args.config), encoding="utf-8") as f:
    positions = json.load(f).get("max_position_embeddings", 512)
  over = [t for t in args.serving_tokens if t > positions]
  if over:
    raise UsageError(f"--serving_tokens={','.join(map(str, args.serving_tokens))}: "
                     f"{','.join(map(str, over))} over --config={args.config}'s "
                     f"max_position_embeddings ({positions})")


def command(python, tool=None, **flag_values):
  """The argv that runs `tool` (default: this file) under `python` with `flag_values`
  (--name=value; lists joined by commas), for callers such as tools/cpu_check.py."""
  argv = [python, os.path.abspath(tool or __file__)]
  for name, value in flag_values.items():
    if value is not None:
      argv.append(f"--{name}={','.join(map(str, value)) if isinstance(value, list) else value}")
  return argv


def serving_command(python, tokens, batch_size=1, threads=None, config=None, runtimes=None,
                    requests=None, warmup=None, tool=None):
  """The argv of this tool's --mode=serving under `python` (command()'s), for callers such as
  tools/cpu_check.py; read its output with parse_lines() and serving_results().

  Args:
    python: the interpreter with torch and transformers (onnxruntime and onnx for the ONNX
      runtimes: without them their lines carry "error").
    tokens: the token counts (--serving_tokens), e.g. [8, 128].
    batch_size: examples per request.
    threads: intra-op threads (None: this tool's default, every CPU).
    config: a preset name or an albert_config.json path (None: base).
    runtimes: names of SERVING_RUNTIMES (None: all).
    requests, warmup: timed and untimed requests per line (None: this tool's defaults).
    tool: the file to run (default: this one).

  Returns:
    The argv, a list of str.
  """
  return command(python, tool, mode=SERVING_MODE, config=config, serving_tokens=list(tokens),
                 serving_batch_size=batch_size, serving_threads=threads,
                 serving_runtimes=list(runtimes) if runtimes else None,
                 serving_requests=requests, serving_warmup=warmup)


def parse_lines(stdout):
  """The JSON lines of this tool's output (other lines, a library's notices, skipped)."""
  return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def serving_results(lines):
  """The --mode=serving lines of `lines` (parse_lines()'s) by (runtime, precision, tokens,
  batch_size); each has p50_ms, or "skipped" or "error" instead.

  Returns:
    A dict of line dicts.
  """
  return {(l["runtime"], l["precision"], l["tokens"], l["batch_size"]): l
          for l in lines if l.get("mode") == SERVING_MODE}


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
    if SERVING_MODE in args.mode:
      check_serving_tokens(args)
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
    runs = []
    if set(args.mode) & set(MODES):
      runs.append(benchmark(args))
    if SERVING_MODE in args.mode:
      runs.append(serving(args))
    for line in itertools.chain(*runs):
      print(json.dumps(line), flush=True)
  except UsageError as e:
    print(f"error: {e}", file=sys.stderr, flush=True)
    return 2
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
