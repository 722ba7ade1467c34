"""Times keras-hub's ALBERT as tools/benchmark.py times ours: a peer of tools/cpu_check.py,
run in an interpreter of its own (cpu_check's --kerashub_python).

  python3 tools/kerashub_bench.py --config=base --batch_size=8 --seq_length=128

keras-hub is not albert_tf's dependency: any interpreter with keras-hub (and the TensorFlow it
runs on) will do (`pip install keras-hub`; 0.32 was tried, on albert_tf's own TensorFlow).

The model: keras_hub.models.AlbertMaskedLM (AlbertBackbone and its masked-LM head) with random
weights, built from our albert_config.json (--config: a preset name, base by default, or a
path; read as a file, so that albert_tf is not imported here). keras-hub's ALBERT has no
sentence-order head: its step lacks ours' [B, H] x [H, 2] logits, a negligible share. At
--batch_size x --seq_length (8 x 128) with --num_predictions masked positions (20), under each
--mixed_precision as a Keras dtype policy (float32, or mixed_bfloat16 as ours), for each --mode:

  forward  Keras' predict_on_batch: the masked-LM logits at the masked positions.
  train    Keras' train_on_batch: forward, the masked-LM cross-entropy weighted as ours,
           backward, gradients clipped at a global norm of 1.0 (as run_pretraining) and Keras'
           AdamW step.

compiled as Keras compiles them: --jit_compile=auto (Keras' default: XLA where Keras finds the
model supports it), true or false. Prints one JSON line per (mode, precision), as
tools/hf_torch_bench.py's: mode, mixed_precision, seconds_per_step (median of --steps after
--warmup_steps), examples_per_second, batch_size, seq_length, num_predictions,
runtime="keras_hub", keras_hub, keras, tensorflow, threads (the CPU's: TensorFlow's default),
jit_compile (what Keras compiled with), optimizer, parameters.

Imports neither albert_tf nor absl: the interpreter needs keras-hub only.
"""

import functools
import json
import os
import sys

import hf_torch_bench  # the peers' shared command line, config reading and timing (stdlib only)

JIT_CHOICES = ("auto", "true", "false")
# keras_hub's names for our albert_config.json fields.
KERAS_HUB_FIELDS = {"vocab_size": "vocabulary_size", "num_hidden_layers": "num_layers",
                    "num_attention_heads": "num_heads", "embedding_size": "embedding_dim",
                    "hidden_size": "hidden_dim", "intermediate_size": "intermediate_dim",
                    "num_hidden_groups": "num_groups", "inner_group_num": "num_inner_repetitions",
                    "hidden_dropout_prob": "dropout",
                    "max_position_embeddings": "max_sequence_length",
                    "type_vocab_size": "num_segments"}
INSTALL_HINT = "an interpreter with keras-hub (pip install keras-hub)"


def backbone_values(path):
  """keras_hub.models.AlbertBackbone's keyword arguments for our albert_config.json at `path`.

  Raises:
    hf_torch_bench.UsageError: naming the file, for what keras-hub's ALBERT cannot build (a
      sharing other than all-shared or not-shared; an activation other than gelu, which keras-hub
      fixes to the tanh approximation the original's gelu is).
  """
  with open(path, encoding="utf-8") as f:
    ours = json.load(f)
  values = {theirs: ours[mine] for mine, theirs in KERAS_HUB_FIELDS.items() if mine in ours}
  if ours.get("hidden_act", "gelu").lower() != "gelu":
    raise hf_torch_bench.UsageError(f"{path}: hidden_act {ours['hidden_act']!r}: keras-hub's "
                                    f"ALBERT computes gelu only; time another config")
  sharing = ours.get("parameter_sharing", "all-shared")
  if sharing == "not-shared":
    values["num_groups"] = ours["num_hidden_layers"]  # one group per layer, as HF's
  elif sharing != "all-shared":
    raise hf_torch_bench.UsageError(f"{path}: parameter_sharing {sharing!r}: keras-hub's ALBERT "
                                    f"shares whole layers only; time another config")
  return values


def synthetic_batch(vocab_size, batch_size, seq_length, num_predictions, seed=0):
  """(inputs, labels, sample weights) of AlbertMaskedLM: numpy int32 token_ids, segment_ids,
  padding_mask [B, T] and mask_positions [B, P]; labels [B, P]; weights float32 [B, P]."""
  import numpy as np
  rng = np.random.default_rng(seed)
  ints = lambda high, shape: rng.integers(0, high, size=shape).astype(np.int32)
  b, t, p = batch_size, seq_length, num_predictions
  inputs = {"token_ids": ints(vocab_size, (b, t)), "segment_ids": ints(2, (b, t)),
            "padding_mask": np.ones((b, t), np.int32), "mask_positions": ints(t, (b, p))}
  return inputs, ints(vocab_size, (b, p)), np.ones((b, p), np.float32)


def masked_lm(values, precision, jit_compile):
  """A compiled AlbertMaskedLM of `values` (backbone_values) under Keras policy `precision`."""
  import keras
  import keras_hub
  keras.config.set_dtype_policy(precision)
  model = keras_hub.models.AlbertMaskedLM(keras_hub.models.AlbertBackbone(**values),
                                          preprocessor=None)
  jit = {"auto": "auto", "true": True, "false": False}[jit_compile]
  model.compile(optimizer=keras.optimizers.AdamW(learning_rate=1e-4, weight_decay=0.01,
                                                 global_clipnorm=hf_torch_bench.CLIP_NORM),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                weighted_metrics=[], jit_compile=jit)
  return model


def benchmark(args):
  """Yields one line (dict) per (mode, precision) of `args` (parse_args())."""
  import keras
  import keras_hub
  import tensorflow as tf
  keras.utils.set_random_seed(args.seed)
  values = backbone_values(hf_torch_bench.config_path(args.config))
  inputs, labels, weights = synthetic_batch(values["vocabulary_size"], args.batch_size,
                                            args.seq_length, args.num_predictions, args.seed)
  steps = {"forward": lambda model: model.predict_on_batch(inputs),
           "train": lambda model: model.train_on_batch(inputs, labels, sample_weight=weights)}
  for precision in args.mixed_precision:
    model = masked_lm(values, precision, args.jit_compile)
    for mode in args.mode:
      step = functools.partial(steps[mode], model)
      seconds = hf_torch_bench.time_steps(step, args.warmup_steps, args.steps)
      line = {"mode": mode, "mixed_precision": precision,
              "seconds_per_step": float(f"{seconds:.4g}"),
              "examples_per_second": round(args.batch_size / seconds, 2),
              "runtime": "keras_hub", "config": args.config, "batch_size": args.batch_size,
              "seq_length": args.seq_length, "num_predictions": args.num_predictions,
              "keras_hub": keras_hub.__version__, "keras": keras.__version__,
              "tensorflow": tf.__version__, "threads": os.cpu_count(),
              # Keras resolves "auto" when it builds the step: what it compiled with.
              "jit_compile": bool(model.jit_compile), "parameters": model.count_params()}
      if mode == "train":
        line["optimizer"] = "adamw"
      yield line


def parse_args(argv):
  """The flags (argv without the program name)."""
  parser = hf_torch_bench.shape_parser(__doc__.split("\n\n", 1)[0],
                                       "mixed_bfloat16 is Keras' mixed_bfloat16 policy.")
  parser.add_argument("--jit_compile", choices=JIT_CHOICES, default="auto",
                      help="Keras' compile(jit_compile=...): auto (Keras' default), true, false.")
  return hf_torch_bench.checked_args(parser, argv)


def main(argv):
  # keras-hub on the TensorFlow backend, as ours; TensorFlow's start-up notices quiet.
  os.environ.setdefault("KERAS_BACKEND", "tensorflow")
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  args = parse_args(argv[1:])
  try:
    hf_torch_bench.config_path(args.config)
    try:
      import keras_hub  # noqa: F401 -- only whether it imports
    except ImportError as e:
      raise hf_torch_bench.UsageError(f"{sys.executable} has no {e.name}: run this file in "
                                      f"{INSTALL_HINT}") from None
    for line in benchmark(args):
      print(json.dumps(line), flush=True)
  except hf_torch_bench.UsageError as e:
    print(f"error: {e}", file=sys.stderr, flush=True)
    return 2
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
