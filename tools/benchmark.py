"""Times ALBERT's forward pass, pretraining step and exported SavedModel on synthetic data.

  python tools/benchmark.py --config=base --batch_size=8 --seq_length=128 --mode=all

Prints one JSON line per measurement. `--config` is a preset name (base, large, xlarge, xxlarge)
or a path to an albert_config.json; `--parameter_sharing` times one of the paper's variants of it
(all-shared, shared-attention, shared-FFN, not-shared: the same FLOPs, other parameter counts,
which forward and train lines report as `parameters`, the pretrainer's heads included).

forward and train lines: seconds_per_step (median after warm-up), examples_per_second,
peak_rss_mb, the model FLOPs (`pretraining_flops`: flops_per_forward_pass,
flops_per_training_step), achieved_tflops (the step's FLOPs / seconds_per_step) and mfu
(achieved_tflops / peak_tflops). The peak (peak_tflops, peak_source says which) is
--peak_tflops; else on a GPU or TPU the dense peak in `PEAKS` of the accelerator TensorFlow
reports, at the precision --mixed_precision computes in; else, on a CPU, the GEMM probe's
(`gemm_probe`: a square matmul timed in TensorFlow at the step's compute dtype, float32, bfloat16
under mixed_bfloat16 or float16 under mixed_float16, "GEMM probe: 1024^3 float32 matmul,
measured"): mfu there is against what TensorFlow's matmul reaches on this CPU, not a datasheet
figure. With no peak (--nogemm_probe on a CPU, a device missing from PEAKS) mfu is null and
mfu_note says why. On a CPU, `cpu` names it and its matrix units
(albert_tf.core.hardware.describe(): "AMD EPYC (2 threads): avx2; no AMX, no bf16 units, no VNNI").

`--mode=train` times what run_pretraining runs: the pretraining Runner's train_steps (one
device, as --strategy=one_device), --iterations_per_loop updates per call, on one synthetic batch
repeated by tf.data, or with --input_file on create_pretraining_data's records, read as
run_pretraining reads them (pretraining_dataset, seeded by --data_seed, training order), each
timed update on a batch of its own; --pack_sequences / --max_sequences_per_row pack them as
run_pretraining's flags do. Train lines say what they trained on (`data`: records or synthetic,
`packed`) and count the timed updates' rows, sequences and real tokens (sum of input_mask; the
batches the timed calls consumed, counted afresh from the same seeded stream afterwards):
rows_per_second, sequences_per_second, real_tokens_per_second (over the timed calls' total time)
and padding_fraction. On synthetic batches every token is real (padding_fraction 0).
--recompute_activations recomputes each transformer layer in the backward pass, as
run_pretraining's flag. A train line's peak_rss_mb is read right after its timed steps.

`--compare=packing` (with --input_file) times the train step unpacked, then packed, on the same
records; `--compare=recompute` without and with --recompute_activations: each in a child process
of its own (the same threads and flags, warm-up excluded; peak RSS is per process), both train
lines, then a compare line: packed_speedup (packed real tokens/s over unpacked) or
memory_saving (1 - peak RSS with recompute / without) and step_time_ratio, against the goals
in TARGETS (`target`, `meets_target`).

The defaults are run_pretraining's: --jit_compile off, and with it on, --jit_compile_fast_path
compiles without XLA where XLA is the slower path (mixed_bfloat16 on CPUs with bf16 units only:
XLA's CPU backend does not reach oneDNN's bf16 kernels; albert_tf/training/fast_path.py, logged);
the forward is compiled by the same rule. Lines report jit_compile_requested (the flag) and
jit_compile (what the step was compiled with). As the training binaries, forward and
train run TensorFlow's CPU kernels in oneDNN on AVX2 CPUs where TensorFlow's default would not
(albert_tf.core.onednn; TF_ENABLE_ONEDNN_OPTS=0 keeps Eigen); lines report `onednn`, and the
serving children run with TensorFlow's default.

Where the time goes: --profile=DIR writes a TensorFlow profiler trace of the timed steps into
DIR/forward and DIR/train (TensorBoard's profile plugin opens it: `tensorboard --logdir=DIR`);
the lines name it (profile_dir) and list the op types of most self time (profile_top_ops, from
TensorFlow's own trace converter; null where it cannot read the trace). The timed steps then
carry the profiler's overhead. ONEDNN_VERBOSE=1 in the environment makes oneDNN print a line per
kernel it runs (`onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_amx,undef,
src_bf16::blocked:ab:f0 ...,128x768:768x768,0.05`: the primitive, its implementation and
instruction set, dtypes, shapes, ms): which ops reach oneDNN and how (ops absent from it ran in
Eigen or XLA; `gemm_api ... src_f32` lines are Eigen's matmuls calling oneDNN's sgemm).
TensorFlow's oneDNN bf16 kernels need AVX512-BF16 or AMX (`cpu` says whether the CPU has them);
without them a bfloat16 matmul is converted to float32 (on an AVX2 EPYC its oneDNN lines are
f32 sgemm), no faster than float32. The probe runs once per run, after the first line's timed
steps, on the same cores: on a shared machine its rate and the steps' vary apart with the load,
and mfu can exceed 1.

serving lines: the pretrainer exported as export_saved_model writes it (--serving_precision),
then loaded and called in a child process that does not import albert_tf, as TF Serving runs it.
For each of --serving_tokens (a request's length, [CLS] and [SEP] included): the text signature
on a text SentencePiece cuts into that many tokens, and the tokens signature on [B, tokens] ids;
at batch 1 (p50_ms / p99_ms latency) and at each of --serving_batch_sizes (examples_per_second).
--serving_runtimes adds the portable exports (tflite, tflite_int8, tflite_int8_no_xnnpack: LiteRT;
onnx, onnx_int8: ONNX Runtime, dynamic int8 after its BERT fusions; onnx_int8_static and
onnx_int8_static_qoperator: static int8 calibrated on synthetic ids) of a random-weight encoder,
a fresh one per file (so the lines say nothing of accuracy), on the same [B, tokens] ids,
each in its own child process without TensorFlow, --serving_threads threads; every line names
its `runtime`. --serving_checkpoint exports one model of those weights instead (its head:
--serving_head).

fidelity lines (--serving_fidelity, with portable runtimes): every file is of one model (random,
or --serving_checkpoint's), and each runtime's outputs on the same ids (--fidelity_data's
examples, or FIDELITY_BATCH synthetic rows of the longest --serving_tokens with padding) are
compared with that model's float32 Keras outputs: pooled_cosine and sequence_cosine (the lowest
cosine over the rows, and over the real tokens), and for a classifier or tagger argmax_agreement
(the share of rows, or real tokens, whose argmax is the float model's) and argmax_changed.

The functions here are also tools/device_check.py's. Importing this module defines no flags and
loads neither TensorFlow nor albert_tf: the serving child must run without albert_tf, and the
FLOP count and peak table need neither, so TensorFlow and albert_tf are imported where used.
"""

import collections
import functools
import glob
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app, flags
import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)

FLAGS = flags.FLAGS

DEFAULT_SPM_MODEL = os.path.join(REPO_ROOT, "tests", "testdata", "original_pretraining_data",
                                 "30k-clean-tiny.model")
# Words for the serving texts: ordinary English prose, so that SentencePiece cuts it as it cuts
# requests (the synthetic "aaaa..." of a fixed length would be a few long pieces).
SERVING_CORPUS = os.path.join(REPO_ROOT, "data", "sample", "corpus.txt")

# Portable exports: runtime -> (file name, exporter module, the exporter's options, the runner's
# options: export.portable_runtime.runner_for's).
# onnx_int8 is dynamic int8 after ORT's BERT fusions (its fastest dynamic path); the static ones
# are calibrated on synthetic ids (export_portable: the model's weights are random too, so no
# task data would represent its activations better). tflite_int8 runs with the runner's default
# XNNPACK settings; tflite_int8_no_xnnpack with LiteRT's own kernels, for the comparison.
PORTABLE_RUNTIMES = {
    "tflite": ("tflite.tflite", "tflite", {"quantize": "none"}, {}),
    "tflite_int8": ("tflite_int8.tflite", "tflite", {"quantize": "dynamic_range"}, {}),
    "tflite_int8_no_xnnpack": ("tflite_int8.tflite", "tflite", {"quantize": "dynamic_range"},
                               {"xnnpack": "off"}),
    "onnx": ("onnx.onnx", "onnx", {"quantize": "none"}, {}),
    "onnx_int8": ("onnx_int8.onnx", "onnx", {"quantize": "dynamic_range", "optimize": True}, {}),
    "onnx_int8_static": ("onnx_int8_static.onnx", "onnx",
                         {"quantize": "static", "quant_format": "qdq"}, {}),
    "onnx_int8_static_qoperator": ("onnx_int8_static_qoperator.onnx", "onnx",
                                   {"quantize": "static", "quant_format": "qoperator"}, {}),
}
# The static exports' calibration: this many synthetic examples (export.calibration).
PORTABLE_CALIBRATION_EXAMPLES = 32
# The fidelity lines' inputs: synthetic rows (portable.sample_features: padding in all but the
# first), or at most this many examples of --fidelity_data.
FIDELITY_BATCH = 8
FIDELITY_EXAMPLES = 64
# The outputs whose argmax is a prediction (export.portable's names): a classifier's, a tagger's.
ARGMAX_OUTPUTS = ("probabilities", "logits")

# The goals --compare measures against: (the compare line's field, the least it should reach,
# what the goal is of).
Target = collections.namedtuple("Target", ["field", "at_least", "goal"])
TARGETS = {
    "packing": Target("packed_speedup", 1.6,
                      "packed real tokens/s over unpacked, on a short-document corpus"),
    "recompute": Target("memory_saving", 0.4,
                        "peak memory 1 - recompute / plain, ALBERT-base at batch 16 x 512"),
}
# The shape the recompute goal is of: (preset, batch size, sequence length).
RECOMPUTE_TARGET_SHAPE = ("base", 16, 512)

# Training = forward + backward, and the backward pass of a matmul is two matmuls of the same
# size (gradients of both operands): 3x the forward FLOPs.
TRAIN_FLOPS_PER_FORWARD_FLOP = 3


def define_flags():
  """The command line's flags (only when run as a program: importing this module defines none,
  so tools/device_check.py and tests can use its functions beside their own flags)."""
  from albert_tf.core.settings import PRECISION_POLICIES  # no TensorFlow behind it
  flags.DEFINE_string("config", "base", "Preset name or path to an albert_config.json.")
  from albert_tf.core.config import PARAMETER_SHARING  # no TensorFlow behind it either
  flags.DEFINE_enum("parameter_sharing", None, list(PARAMETER_SHARING),
                    "The paper's cross-layer sharing variant to time (default: the config's). "
                    "The variants have the same FLOPs; not-shared has ~8x the parameters of "
                    "all-shared at base size.")
  flags.DEFINE_integer("batch_size", 8, "Examples per step.")
  flags.DEFINE_integer("seq_length", 128, "Tokens per example.")
  flags.DEFINE_integer("num_predictions", 20, "Masked-LM predictions per example.")
  flags.DEFINE_multi_enum("mode", ["all"], ["forward", "train", "serving", "all"],
                          "What to time: forward, train, serving (an exported SavedModel's text "
                          "and tokens signatures), or all of them; repeat the flag for several "
                          "(--mode=forward --mode=train).")
  flags.DEFINE_float("peak_tflops", None,
                     "Peak TFLOP/s of the device the step runs on, for mfu. Default: the dense "
                     "peak in tools/benchmark.py's PEAKS table of the accelerator TensorFlow "
                     "reports, at the precision --mixed_precision computes in; on a CPU, the "
                     "GEMM probe's (--gemm_probe).", lower_bound=0.0)
  flags.DEFINE_string("spm_model_file", DEFAULT_SPM_MODEL,
                      "SentencePiece model for the serving export and its texts.")
  flags.DEFINE_list("serving_tokens", ["8", "32", "128"],
                    "Serving: request lengths in tokens, [CLS] and [SEP] included (the text "
                    "signature gets texts that tokenize to that many, the tokens signature "
                    "[B, tokens] ids). The export's max_seq_length is the largest.")
  flags.DEFINE_list("serving_batch_sizes", ["8", "32"],
                    "Serving: batch sizes of the throughput measurements (batch 1, for latency, "
                    "is always timed).")
  flags.DEFINE_enum("serving_precision", "float32", ["float32", "bfloat16"],
                    "Serving: the export's precision (bfloat16: export_saved_model's, bfloat16 "
                    "weights but LayerNorm's, float32 outputs).")
  flags.DEFINE_list("serving_runtimes", ["saved_model"],
                    "Serving: what to time, each in its own process: saved_model (the "
                    "SavedModel's text and tokens signatures in TensorFlow), and the portable "
                    "exports on token ids: " + ", ".join(PORTABLE_RUNTIMES) + " (LiteRT and "
                    "ONNX Runtime, --serving_threads threads, without TensorFlow).")
  flags.DEFINE_integer("serving_threads", 2, "Serving: LiteRT's / ONNX Runtime's CPU threads.",
                       lower_bound=1)
  flags.DEFINE_string("serving_export_cache", None,
                      "Serving: a directory to keep the portable exports in and reuse them from "
                      "(<runtime>.tflite / .onnx; a base-shape conversion takes minutes). The "
                      "files must be of --config.")
  flags.DEFINE_string("serving_checkpoint", None,
                      "Serving: the portable exports' weights, a checkpoint of --config (any "
                      "layout export_tflite takes); default: random weights.")
  flags.DEFINE_enum("serving_head", "auto", ["auto", "none", "classifier", "squad_v1",
                                             "token_classifier"],
                    "Serving: --serving_checkpoint's head, as export_tflite's --head.")
  flags.DEFINE_bool("serving_fidelity", False,
                    "Serving: the portable runtimes also print a fidelity line: the cosine of "
                    "their outputs against the float32 Keras model's on the same ids (and the "
                    "argmax agreement of a classifier's or tagger's).")
  flags.DEFINE_string("fidelity_data", None,
                      "Serving fidelity: a TFRecord of input_ids/input_mask/segment_ids features "
                      "(run_classifier's cached features) to compare on, its first "
                      f"{FIDELITY_EXAMPLES}; default: synthetic ids.")
  flags.DEFINE_integer("serving_requests", 30, "Timed requests per batch-1 serving measurement "
                       "(a sixth of them, at least 3, for the larger batches).", lower_bound=1)
  flags.DEFINE_integer("warmup_steps", 2, "Untimed calls first (tracing, compilation).")
  flags.DEFINE_integer("steps", 5, "Timed calls (train: each runs --iterations_per_loop updates).")
  flags.DEFINE_integer("iterations_per_loop", 1,
                       "Train: updates per compiled call, as run_pretraining's flag.",
                       lower_bound=1)
  flags.DEFINE_enum("optimizer", "lamb", ["lamb", "adamw"], "Optimizer of the training step.")
  from albert_tf.core.settings import TrainSettings  # the binaries' defaults, no TensorFlow either
  flags.DEFINE_bool("jit_compile", TrainSettings.jit_compile,
                    "Compile the step with XLA (default: the binaries' --jit_compile default).")
  flags.DEFINE_bool("jit_compile_fast_path", TrainSettings.jit_compile_fast_path,
                    "As the binaries' flag: with --jit_compile, compile without XLA where it is "
                    "the slower path (mixed_bfloat16 on CPUs only, with bf16 units; albert_tf/"
                    "training/fast_path.py). Lines report jit_compile_requested and jit_compile.")
  flags.DEFINE_bool("gemm_probe", True,
                    "On a CPU (no GPU/TPU) without --peak_tflops: time a square matmul at the "
                    "step's precision and take its TFLOP/s as the peak of mfu.")
  flags.DEFINE_string("profile", None,
                      "Forward and train: write a TensorFlow profiler trace of the timed steps "
                      "into <profile>/forward and <profile>/train (open with TensorBoard's "
                      "profile plugin); the lines name it as profile_dir and give the top ops "
                      "by self time. The timed steps then carry the profiler's overhead.")
  flags.DEFINE_enum("mixed_precision", "float32", list(PRECISION_POLICIES),
                    "Keras precision policy, as run_pretraining's flag (mixed_float16 adds its "
                    "dynamic loss scale to the training step).")
  flags.DEFINE_string("input_file", None,
                      "Forward and train: create_pretraining_data's TFRecords (comma-separated "
                      "files or globs), written with --seq_length and --num_predictions, read "
                      "as run_pretraining reads them (train: a new batch every update; forward: "
                      "the first batch). Default: synthetic batches, every token real.")
  flags.DEFINE_integer("data_seed", 12345, "The order --input_file's records are read in.")
  flags.DEFINE_bool("pack_sequences", False,
                    "With --input_file: pack several of the records' sequences into each row, "
                    "as run_pretraining's flag (--batch_size counts rows).")
  flags.DEFINE_integer("max_sequences_per_row", 4,
                       "With --pack_sequences: the most sequences one row holds, as "
                       "run_pretraining's flag.", lower_bound=1)
  flags.DEFINE_bool("recompute_activations", False,
                    "Train: recompute each transformer layer's activations in the backward "
                    "pass, as run_pretraining's flag (less memory, more compute).")
  flags.DEFINE_enum("compare", None, list(TARGETS),
                    "Train only: time two variants, each in a child process, and print both "
                    "lines and a compare line against the goal in TARGETS: packing (unpacked, "
                    "then --pack_sequences, on --input_file's records; packed_speedup) or "
                    "recompute (without, then with --recompute_activations; memory_saving).")


# -- model FLOPs ----------------------------------------------------------------------------------
Flops = collections.namedtuple("Flops", ["forward", "train"])


def pretraining_flops(config, batch_size, seq_length, num_predictions, sequences_per_row=1):
  """Model FLOPs of AlbertPretrainer on one batch: matmuls only, 2 FLOPs per multiply-add.

  With B = batch_size, T = seq_length, P = num_predictions, K = sequences_per_row,
  E = embedding_size, H = hidden_size,
  I = intermediate_size, V = vocab_size, and blocks = num_hidden_layers x inner_group_num (every
  layer computes, however many share parameters):

    embedding projection (E != H)   2 B T E H
    each block: Q, K, V, output     4 x 2 B T H H
                scores QK^T         2 B T T H    ([B, heads, T, H/heads] x [.., H/heads, T])
                context  PV         2 B T T H
                FFN in and out      2 x 2 B T H I
    pooler (each sequence's first)  2 B K H H
    MLM transform of the P masked   2 B P H E
    MLM logits, tied table          2 B P E V
    sentence-order logits           2 B K H 2

  A packed row computes attention over all T x T pairs of its tokens (the mask keeps each
  sequence to itself), so its encoder FLOPs are an unpacked row's.

  Embedding gathers, LayerNorm, softmax, activations and the optimizer's update are left out,
  as in the usual MFU count (elementwise work, small beside the matmuls).

  Args:
    config: an AlbertConfig (or anything with its size attributes).
    batch_size, seq_length, num_predictions: B, T and P (a row's, all its sequences').
    sequences_per_row: K, the sequences a packed row holds at most (1 unpacked).

  Returns:
    Flops(forward, train): one forward pass, and one training step, 3x the forward pass (the
    backward pass of each matmul is two matmuls of its size).
  """
  b, t, p = batch_size, seq_length, num_predictions
  e, h = config.embedding_size, config.hidden_size
  i, v = config.intermediate_size, config.vocab_size
  blocks = config.num_hidden_layers * config.inner_group_num
  projection = 2 * b * t * e * h if e != h else 0
  block = 4 * 2 * b * t * h * h + 2 * (2 * b * t * t * h) + 2 * (2 * b * t * h * i)
  k = sequences_per_row
  heads = 2 * b * k * h * h + 2 * b * p * h * e + 2 * b * p * e * v + 2 * b * k * h * 2
  forward = projection + blocks * block + heads
  return Flops(forward, TRAIN_FLOPS_PER_FORWARD_FLOP * forward)


# -- accelerator peaks ----------------------------------------------------------------------------
Peak = collections.namedtuple("Peak", ["pattern", "bf16", "fp16", "tf32", "fp32", "source"])

# Dense (no 2:4 sparsity) peak TFLOP/s of one device, by a pattern searched in the name TensorFlow
# reports: tf.config.experimental.get_device_details(gpu)["device_name"] for GPUs, "TPU <version>"
# for TPUs (see accelerator_name). The first matching row wins, so specific names come first.
# NVIDIA datasheets give tensor-core figures "with sparsity"; the dense figure is half of it.
# tf32: the tensor-core rate of float32 matmuls when TF32 is on (TensorFlow's default on Ampere
# and later); None where the chip has no TF32, and bf16 None where it has no bfloat16 units.
# TPUs: Google publishes the bf16 peak per chip only (TensorFlow runs float32 matmuls on TPUs
# through bf16 passes, at no published rate). A v2/v3 chip is two TensorFlow devices (cores),
# v4 and later one.
PEAKS = (
    # NVIDIA H100 datasheet (nvidia.com/en-us/data-center/h100): SXM FP32 67, TF32 989*,
    # BF16/FP16 1,979*; PCIe 51, 756*, 1,513*; NVL 60, 835*, 1,671* (* with sparsity).
    Peak(r"H100 NVL", 835.5, 835.5, 417.5, 60.0, "NVIDIA H100 NVL datasheet"),
    Peak(r"H100 PCIe", 756.5, 756.5, 378.0, 51.0, "NVIDIA H100 PCIe datasheet"),
    Peak(r"H100", 989.5, 989.5, 494.5, 67.0, "NVIDIA H100 SXM datasheet"),
    # NVIDIA H200 datasheet (nvidia.com/en-us/data-center/h200): SXM FP32 67, TF32 989*,
    # BF16/FP16 1,979*; NVL 60, 835*, 1,671*.
    Peak(r"H200 NVL", 835.5, 835.5, 417.5, 60.0, "NVIDIA H200 NVL datasheet"),
    Peak(r"H200", 989.5, 989.5, 494.5, 67.0, "NVIDIA H200 SXM datasheet"),
    # NVIDIA A100 datasheet (nvidia.com/en-us/data-center/a100): FP32 19.5, TF32 156,
    # BF16/FP16 312 dense (SXM4 and PCIe, 40 and 80 GB alike).
    Peak(r"A100", 312.0, 312.0, 156.0, 19.5, "NVIDIA A100 datasheet"),
    # NVIDIA L4 datasheet (nvidia.com/en-us/data-center/l4): FP32 30.3, TF32 120*,
    # BF16/FP16 242*.
    Peak(r"\bL4\b", 121.0, 121.0, 60.0, 30.3, "NVIDIA L4 datasheet"),
    # NVIDIA V100 datasheet (images.nvidia.com/content/technologies/volta/pdf/
    # volta-v100-datasheet-update-us-1165301-r5.pdf): Tensor (FP16) 125 / 112 / 130, FP32 15.7 /
    # 14 / 16.4 for SXM2 / PCIe / V100S PCIe. Volta has no bfloat16 nor TF32.
    Peak(r"V100S", None, 130.0, None, 16.4, "NVIDIA V100S datasheet"),
    Peak(r"V100-SXM", None, 125.0, None, 15.7, "NVIDIA V100 SXM2 datasheet"),
    Peak(r"V100", None, 112.0, None, 14.0, "NVIDIA V100 PCIe datasheet"),
    # NVIDIA T4 datasheet (nvidia.com/en-us/data-center/tesla-t4): mixed FP16/FP32 65, FP32 8.1.
    Peak(r"\bT4\b", None, 65.0, None, 8.1, "NVIDIA T4 datasheet"),
    # Cloud TPU system architecture (cloud.google.com/tpu/docs/v3, /v4, /v5e, /v5p): peak compute
    # per chip (bf16) 123, 275, 197 and 459.
    Peak(r"^TPU v3\b", 123.0, None, None, None, "Cloud TPU v3 docs, per chip"),
    Peak(r"^TPU v4\b", 275.0, None, None, None, "Cloud TPU v4 docs, per chip"),
    Peak(r"^TPU v5e\b", 197.0, None, None, None, "Cloud TPU v5e docs, per chip"),
    Peak(r"^TPU v5p\b", 459.0, None, None, None, "Cloud TPU v5p docs, per chip"),
)

# Cloud TPU VMs name their accelerator in TPU_ACCELERATOR_TYPE ("v4-8", "v5litepod-8", "v5p-8").
_TPU_VERSIONS = {"v5litepod": "v5e", "v5lite": "v5e"}


def peak_tflops_for(device_name, mixed_precision, tf32=True):
  """The table's dense peak of `device_name` at the precision a policy computes its matmuls in.

  Args:
    device_name: str, as accelerator_name() gives it.
    mixed_precision: a Keras policy name: mixed_bfloat16 -> bf16, mixed_float16 -> fp16,
      float32 -> tf32 when `tf32` and the chip has TF32, else fp32.
    tf32: bool. Whether TensorFlow runs float32 matmuls in TF32 (tf32_enabled()).

  Returns:
    (peak TFLOP/s, "<row source>, <precision> dense"), or (None, why there is none).
  """
  for row in PEAKS:
    if re.search(row.pattern, device_name):
      if mixed_precision == "mixed_bfloat16":
        precision = "bf16"
      elif mixed_precision == "mixed_float16":
        precision = "fp16"
      else:
        precision = "tf32" if tf32 and row.tf32 else "fp32"
      peak = getattr(row, precision)
      if peak is None:
        return None, (f"{row.source} gives no {precision} peak for {device_name!r} (no such "
                      f"units); pass --peak_tflops for mfu")
      return peak, f"{row.source}, {precision} dense"
  return None, (f"no peak for {device_name!r} in tools/benchmark.py's PEAKS table; pass "
                f"--peak_tflops for mfu (or add the device's dense datasheet figures to PEAKS)")


def accelerator_name():
  """What TensorFlow runs on: the first GPU's device_name ("NVIDIA H100 80GB HBM3"), "TPU <v>"
  when TPU devices are initialised (the version from TPU_ACCELERATOR_TYPE), else None (CPU)."""
  import tensorflow as tf
  gpus = tf.config.list_physical_devices("GPU")
  if gpus:
    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
  if tf.config.list_logical_devices("TPU"):
    kind = os.environ.get("TPU_ACCELERATOR_TYPE", "").split("-")[0]
    return f"TPU {_TPU_VERSIONS.get(kind, kind)}" if kind else "TPU"
  return None


def tf32_enabled():
  """Whether float32 matmuls run in TF32 on an Ampere or later GPU: TensorFlow's switch, unless
  NVIDIA_TF32_OVERRIDE=0 turns TF32 off in cuBLAS and cuDNN beneath it."""
  import tensorflow as tf
  return (tf.config.experimental.tensor_float_32_execution_enabled()
          and os.environ.get("NVIDIA_TF32_OVERRIDE") != "0")


# -- a CPU's peak: the GEMM probe ------------------------------------------------------------------
# The dtype a Keras policy computes its matmuls in.
COMPUTE_DTYPES = {"float32": "float32", "mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}

# The probe's sizes: it starts at 1024 (2.1 GFLOP: 0.05-0.08 s on 2 AVX2 cores, where 2048 is no
# faster: 0.027-0.036 TFLOP/s against 0.027-0.031 in float32, measured) and doubles while one
# matmul takes under GEMM_PROBE_MIN_SECONDS, up to 4096, so that a many-core or AMX CPU gets
# enough work per call to reach its rate (a Xeon's 0.37 TFLOP/s float32 takes 6 ms at 1024 and
# stops at 2048; its 1.4 TFLOP/s bf16 goes on to 4096, 0.1 s). The probe takes well under a
# second on 2 cores, about as long on a large CPU.
GEMM_PROBE_START_SIZE = 1024
GEMM_PROBE_MAX_SIZE = 4096
GEMM_PROBE_MIN_SECONDS = 0.02


def gemm_peak_tflops(precision, size=GEMM_PROBE_START_SIZE, repeats=3, device=None):
  """TFLOP/s of a [size, size] x [size, size] matmul in TensorFlow: one untimed call, then the
  median of `repeats` timed ones (2 size^3 FLOPs each).

  Args:
    precision: the matmul's dtype, "float32", "bfloat16" or "float16" (COMPUTE_DTYPES of the
      step's policy).
    size: the matrices' side.
    repeats: timed calls.
    device: where to run it ("/CPU:0"), None for TensorFlow's placement (the first GPU, if any).

  Returns:
    float, TFLOP/s.
  """
  import contextlib
  import tensorflow as tf
  with tf.device(device) if device else contextlib.nullcontext():
    rng = tf.random.Generator.from_seed(0)
    a, b = (tf.cast(rng.normal([size, size]), precision) for _ in range(2))
    # One element of the product comes back: the whole matmul runs, nothing large is copied.
    matmul = tf.function(lambda a, b: tf.linalg.matmul(a, b)[0, 0])
    seconds = time_steps(lambda: matmul(a, b), 1, repeats)
  return 2 * size ** 3 / seconds / 1e12


@functools.lru_cache(maxsize=None)
def gemm_probe(mixed_precision, device="/CPU:0"):
  """The GEMM probe of a step under `mixed_precision`, as utilization() takes it: the matmul
  rate at the policy's compute dtype, at the first size (from GEMM_PROBE_START_SIZE, doubling)
  whose matmul takes GEMM_PROBE_MIN_SECONDS. Measured once per process and policy, so that the
  forward and train lines of a run share their peak.

  Returns:
    (TFLOP/s, "GEMM probe: 2048^3 bfloat16 matmul, measured").
  """
  dtype = COMPUTE_DTYPES[mixed_precision]
  size = GEMM_PROBE_START_SIZE
  tflops = gemm_peak_tflops(dtype, size, device=device)
  while size < GEMM_PROBE_MAX_SIZE and 2 * size ** 3 / (tflops * 1e12) < GEMM_PROBE_MIN_SECONDS:
    size *= 2
    tflops = gemm_peak_tflops(dtype, size, device=device)
  return _significant(tflops), f"GEMM probe: {size}^3 {dtype} matmul, measured"


def _significant(x, digits=4):
  return float(f"{x:.{digits}g}")


def utilization(flops, seconds, mixed_precision, peak_tflops=None, device_name=None, tf32=True,
                cpu_peak=None):
  """Achieved TFLOP/s and MFU of a step of `flops` model FLOPs that took `seconds`.

  Args:
    flops: model FLOPs of the step (pretraining_flops).
    seconds: seconds per step.
    mixed_precision: the Keras policy of the step (picks the table's peak).
    peak_tflops: the device's peak TFLOP/s, or None to look `device_name` up in PEAKS (a GPU or
      TPU) or to take `cpu_peak` (a CPU).
    device_name: accelerator_name(), None for a CPU.
    tf32: tf32_enabled().
    cpu_peak: (TFLOP/s, source) of gemm_probe(), or None (no probe: no mfu on a CPU).

  Returns:
    {accelerator, achieved_tflops, peak_tflops, peak_source, mfu, mfu_note}, and on a CPU
    `cpu` (albert_tf.core.hardware.describe(): its name and matrix units): peak_tflops, peak_source
    and mfu are None where no peak is known, and mfu_note then says why.
  """
  achieved = flops / seconds / 1e12
  fields = {"accelerator": device_name or "CPU", "achieved_tflops": _significant(achieved)}
  if device_name is None:
    from albert_tf.core import hardware  # no TensorFlow behind it
    fields["cpu"] = hardware.describe()
  note = None
  if peak_tflops:
    source = "--peak_tflops"
  elif device_name is None and cpu_peak:
    peak_tflops, source = cpu_peak
  elif device_name is None:
    source = None
    note = ("no accelerator: TensorFlow sees no GPU or TPU, a CPU's peak is not in the table, "
            "and the GEMM probe is off (--nogemm_probe); pass --peak_tflops for mfu")
  else:
    peak_tflops, source = peak_tflops_for(device_name, mixed_precision, tf32)
    if peak_tflops is None:
      source, note = None, source
  fields.update(peak_tflops=peak_tflops, peak_source=source,
                mfu=_significant(achieved / peak_tflops) if peak_tflops else None, mfu_note=note)
  return fields


# -- timing ---------------------------------------------------------------------------------------
def load_config(name_or_path):
  """An AlbertConfig from a preset name (base, large, ...) or an albert_config.json path."""
  import albert_tf
  if os.path.exists(name_or_path):
    return albert_tf.AlbertConfig.from_json_file(name_or_path)
  return albert_tf.AlbertConfig.from_preset(name_or_path)


def build_pretrainer(config, mixed_precision):
  """(strategy, model): the Keras policy set first, as run_pretraining does, then an
  AlbertPretrainer of `config` under the one-device strategy."""
  import albert_tf
  from albert_tf.training import precision, strategy as strategies
  precision.set_policy(mixed_precision)
  strategy = strategies.create_strategy("one_device")
  with strategy.scope():
    model = albert_tf.AlbertPretrainer(config)
  return strategy, model


def synthetic_batch(config, batch_size, seq_length, num_predictions, seed=0):
  """Random pretraining features: ids int32 [B, T], masked_lm_* [B, P], labels [B, 1]."""
  import tensorflow as tf
  rng = np.random.default_rng(seed)
  ints = lambda high, shape: tf.constant(rng.integers(0, high, size=shape), tf.int32)
  return {
      "input_ids": ints(config.vocab_size, (batch_size, seq_length)),
      "input_mask": tf.ones((batch_size, seq_length), tf.int32),
      "segment_ids": ints(2, (batch_size, seq_length)),
      "masked_lm_positions": ints(seq_length, (batch_size, num_predictions)),
      "masked_lm_ids": ints(config.vocab_size, (batch_size, num_predictions)),
      "masked_lm_weights": tf.ones((batch_size, num_predictions), tf.float32),
      "next_sentence_labels": ints(2, (batch_size, 1)),
  }


def time_steps(fn, warmup, steps, profile_dir=None):
  """Median seconds of `steps` calls of fn() after `warmup` untimed ones (timed_calls)."""
  return statistics.median(timed_calls(fn, warmup, steps, profile_dir))


def timed_calls(fn, warmup, steps, profile_dir=None):
  """Seconds of each of `steps` calls of fn() after `warmup` untimed ones, each waited for; with
  `profile_dir`, the timed calls are traced by TensorFlow's profiler into that directory.
  Returns a list of `steps` floats."""
  for _ in range(warmup):
    _block(fn())
  if profile_dir:
    import tensorflow as tf
    tf.profiler.experimental.start(profile_dir)
  try:
    times = []
    for _ in range(steps):
      start = time.perf_counter()
      _block(fn())
      times.append(time.perf_counter() - start)
  finally:
    if profile_dir:
      tf.profiler.experimental.stop()
  return times


def profile_fields(profile_dir, count=8):
  """The line's fields of a trace time_steps wrote: profile_dir, and profile_top_ops, the
  `count` op types of most self time, [{"op", "where" (Host/Device), "self_ms", "share"}] summed
  over the timed steps (idle time left out), or None where TensorFlow's profiler plugin cannot
  read the trace (the summary is a convenience; the trace is there for TensorBoard either way).
  """
  return {"profile_dir": profile_dir, "profile_top_ops": _top_ops(profile_dir, count)}


def _top_ops(profile_dir, count):
  traces = sorted(glob.glob(os.path.join(profile_dir, "plugins", "profile", "*", "*.xplane.pb")))
  if not traces:
    return None
  try:
    # TensorFlow's own converter, as TensorBoard's profile plugin calls it: a private module,
    # hence the fallback below.
    from tensorflow.python.profiler.internal import _pywrap_profiler_plugin
    data, ok = _pywrap_profiler_plugin.xspace_to_tools_data(traces, "framework_op_stats", {})
    table = json.loads(data)[0] if ok else None
  except Exception:  # noqa: BLE001 -- a profile is optional: none when TensorFlow cannot give it
    return None
  if not table:
    return None
  columns = [c["id"] for c in table["cols"]]
  self_us = collections.Counter()
  for row in table["rows"]:
    values = dict(zip(columns, (c.get("v") for c in row["c"])))
    if values["type"] != "IDLE":
      self_us[(values["type"], values["host_or_device"])] += values["total_self_time"]
  total = sum(self_us.values()) or 1.0
  return [{"op": op, "where": where, "self_ms": round(us / 1000.0, 2),
           "share": round(us / total, 4)} for (op, where), us in self_us.most_common(count)]


def _block(result):
  if isinstance(result, dict) and all(isinstance(v, np.ndarray) for v in result.values()):
    return  # the portable runtimes' numpy outputs are ready, and they run without TensorFlow
  import tensorflow as tf
  for t in tf.nest.flatten(result):
    if hasattr(t, "numpy"):
      t.numpy()


def peak_rss_mb():
  """This process's peak resident memory in MB. /proc's VmHWM where there is one: getrusage's
  ru_maxrss survives exec, so a child process would report its parent's peak if larger."""
  try:
    with open("/proc/self/status", encoding="ascii") as f:
      for line in f:
        if line.startswith("VmHWM:"):
          return int(line.split()[1]) / 1024.0
  except OSError:
    pass
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measurement(mode, seconds, batch_size, peak_rss=None, **extra):
  """A result line: mode, batch_size, seconds_per_step, examples_per_second, peak_rss_mb
  (`peak_rss`, else this process's peak now), then `extra`."""
  # Seconds to 4 significant digits: a tiny model's update takes well under a millisecond.
  line = {"mode": mode, "batch_size": batch_size, "seconds_per_step": _significant(seconds),
          "examples_per_second": round(batch_size / seconds, 2),
          "peak_rss_mb": round(peak_rss_mb() if peak_rss is None else peak_rss, 1)}
  line.update(extra)
  return line


def report(line):
  print(json.dumps(line), flush=True)
  return line


def pretraining_runner(strategy, model, settings, mixed_precision):
  """run_pretraining's Runner for `model` (made under `strategy`): the optimizer `settings`
  names, its schedule and clipping, and mixed_float16's loss scale."""
  from albert_tf.optimization import create_optimizer
  from albert_tf.training import precision
  from albert_tf.training.pretraining import PretrainingRunner
  with strategy.scope():
    optimizer = create_optimizer(settings.optimizer)
    loss_scale = precision.loss_scale_for(mixed_precision)
  return PretrainingRunner(strategy, model, optimizer, settings, loss_scale)


def step_utilization(flops, seconds, mixed_precision, peak_tflops, gemm_probe_on,
                     cpu_peak=None):
  """utilization() of a step that ran here: the accelerator TensorFlow reports, and on a CPU
  without --peak_tflops `cpu_peak` ((TFLOP/s, source), another process's probe) or the GEMM
  probe's peak (unless `gemm_probe_on` is False)."""
  device = accelerator_name()
  if device is None and not peak_tflops and gemm_probe_on and cpu_peak is None:
    cpu_peak = gemm_probe(mixed_precision)
  elif not gemm_probe_on:
    cpu_peak = None
  return utilization(flops, seconds, mixed_precision, peak_tflops, device, tf32_enabled(),
                     cpu_peak)


def benchmark_forward(model, config, batch, *, jit_compile=False, jit_compile_fast_path=True,
                      mixed_precision="float32", warmup_steps=2, steps=5, peak_tflops=None,
                      gemm_probe_on=True, profile_dir=None, fields=None):
  """The forward line: model(batch) (masked-LM logits) timed, with its FLOPs and MFU, compiled
  with XLA as the training Runner would (fast_path.choose_jit_compile); `fields` are added to
  the line. Arguments as benchmark_train's."""
  import tensorflow as tf
  from albert_tf.training import fast_path
  # Where TensorFlow places the forward outside a strategy: the first GPU, else the CPU.
  compiled = fast_path.jit_compile_for(model, tf.distribute.get_strategy(), jit_compile,
                                       jit_compile_fast_path)
  forward = tf.function(lambda b: model(b)["masked_lm_logits"], jit_compile=compiled)
  seconds = time_steps(lambda: forward(batch), warmup_steps, steps, profile_dir)
  b, t = batch["input_ids"].shape
  k = batch["sequence_weights"].shape[1] if "sequence_weights" in batch else 1  # packed: [B, K]
  flops = pretraining_flops(config, b, t, batch["masked_lm_positions"].shape[1], k)
  return measurement(
      "forward", seconds, b, flops_per_forward_pass=flops.forward,
      **step_utilization(flops.forward, seconds, mixed_precision, peak_tflops, gemm_probe_on),
      jit_compile_requested=jit_compile, jit_compile=compiled,
      mixed_precision=mixed_precision, **(profile_fields(profile_dir) if profile_dir else {}),
      **(fields or {}))


# -- training data: records ---------------------------------------------------------------------
# The records a train measurement reads: files, T, P, rows per batch B, K (None: unpacked) and
# the order's seed, as pretraining_dataset takes them.
Records = collections.namedtuple(
    "Records", ["input_files", "seq_length", "num_predictions", "batch_size",
                "max_sequences_per_row", "seed"])


def check_records(input_file, seq_length, num_predictions):
  """The files of --input_file, their first record checked against --seq_length and
  --num_predictions (imports TensorFlow).

  Raises:
    ValueError: one line naming the flag and the fix (FileNotFoundError for a pattern that
      matches nothing; albert_tf's DataFormatError, a ValueError, for other lengths).
  """
  from albert_tf.core.io import expand_input_patterns
  from albert_tf.data.feature_check import check_first_record
  try:
    files = expand_input_patterns(input_file)
  except FileNotFoundError as e:
    raise ValueError(f"--input_file={input_file}: {e}: give create_pretraining_data's "
                     "TFRecords") from None
  check_first_record(files[0], {"input_ids": (seq_length, "--seq_length"),
                                "masked_lm_positions": (num_predictions, "--num_predictions")},
                     "set the flag to the value create_pretraining_data was run with")
  return files


def records_dataset(records):
  """run_pretraining's training stream of `records` (a Records): batches of B rows, packed
  (position_ids, sequence_ids, ... [B, T]; masked_lm_* [B, K P]; sequence_weights [B, K]) when
  max_sequences_per_row is set, else input_ids [B, T], masked_lm_* [B, P]."""
  from albert_tf.data.pipeline import pretraining_dataset
  packing = ({"max_sequences_per_row": records.max_sequences_per_row}
             if records.max_sequences_per_row else {})
  return pretraining_dataset(list(records.input_files), records.seq_length,
                             records.num_predictions, records.batch_size, is_training=True,
                             seed=records.seed, **packing)


def first_batch(records):
  """The first batch of `records`' stream (the forward line's)."""
  return next(iter(records_dataset(records)))


def consumed_counts(records, skip, take):
  """What batches skip .. skip + take - 1 of `records`' stream hold: the seeded stream read
  afresh, as the timed updates consumed it.

  Returns:
    (rows, sequences, real tokens): rows B per batch; sequences the real ones (sum of
    sequence_weights [B, K] packed, B unpacked); real tokens sum of input_mask [B, T].
  """
  rows = sequences = tokens = 0
  for batch in records_dataset(records).skip(skip).take(take):
    mask = batch["input_mask"].numpy()
    rows += mask.shape[0]
    tokens += int(mask.sum())
    sequences += (int(round(float(batch["sequence_weights"].numpy().sum())))
                  if "sequence_weights" in batch else mask.shape[0])
  return rows, sequences, tokens


def data_fields(data, seq_length, rows, sequences, tokens, timed_seconds):
  """The train line's fields of what the timed updates trained on.

  Args:
    data: the Records, or None for synthetic batches.
    seq_length: T.
    rows, sequences, tokens: counts over the timed updates (consumed_counts).
    timed_seconds: the timed calls' total time.

  Returns:
    {data, packed, max_sequences_per_row, rows, sequences, real_tokens, timed_seconds,
     rows_per_second, sequences_per_second, real_tokens_per_second, padding_fraction}.
  """
  k = data.max_sequences_per_row if data else None
  return {"data": "records" if data else "synthetic", "packed": bool(k),
          "max_sequences_per_row": k, "rows": rows, "sequences": sequences,
          "real_tokens": tokens, "timed_seconds": _significant(timed_seconds),
          "rows_per_second": _significant(rows / timed_seconds),
          "sequences_per_second": _significant(sequences / timed_seconds),
          "real_tokens_per_second": _significant(tokens / timed_seconds),
          "padding_fraction": round(1.0 - tokens / (rows * seq_length), 6)}


def benchmark_train(strategy, model, config, batch, *, optimizer="lamb", iterations_per_loop=1,
                    jit_compile=False, jit_compile_fast_path=True, mixed_precision="float32",
                    recompute_activations=False, warmup_steps=2, steps=5, peak_tflops=None,
                    gemm_probe_on=True, cpu_peak=None, profile_dir=None, fields=None):
  """The train line: run_pretraining's Runner.train_steps, per update.

  Args:
    strategy, model: from build_pretrainer (the policy set).
    config: the model's AlbertConfig.
    batch: synthetic_batch(...) (input_ids [B, T], masked_lm_positions [B, P], ...), repeated;
      or a Records, whose stream gives every update a batch of its own.
    optimizer, iterations_per_loop, jit_compile, jit_compile_fast_path, recompute_activations:
      as run_pretraining's flags (the Runner decides whether XLA compiles the step:
      albert_tf/training/fast_path.py).
    mixed_precision: the policy the model was built under.
    warmup_steps, steps: untimed and timed calls (each of iterations_per_loop updates).
    peak_tflops: the device's peak, or None for the PEAKS table (GPU, TPU) or the GEMM probe
      (CPU).
    gemm_probe_on: bool, whether a CPU's peak is probed (gemm_probe) when peak_tflops is None.
    cpu_peak: (TFLOP/s, source) of a probe already made, instead of probing again; or None.
    profile_dir: a directory for a profiler trace of the timed calls, or None.
    fields: more fields for the line (dict).

  Returns:
    The line: seconds_per_step (per update, the median), flops_per_training_step,
    flops_per_forward_pass, achieved_tflops, peak_tflops, peak_source, mfu, mfu_note,
    accelerator (cpu on a CPU), jit_compile_requested, jit_compile (what the step was compiled
    with), recompute_activations, peak_rss_mb (read after the timed calls), data_fields()'s,
    profile_dir and profile_top_ops with a profile_dir, ... FLOPs and mfu are the model's: what
    recompute_activations computes again is not counted.
  """
  import tensorflow as tf
  from albert_tf.core.settings import TrainSettings
  records = batch if isinstance(batch, Records) else None
  if records:
    b, t, k = records.batch_size, records.seq_length, records.max_sequences_per_row or 1
    p = records.num_predictions * k
    make_dataset = lambda _: records_dataset(records)
  else:
    (b, t), k, p = batch["input_ids"].shape, 1, batch["masked_lm_positions"].shape[1]
    make_dataset = lambda _: tf.data.Dataset.from_tensors(batch).repeat()
  settings = TrainSettings(optimizer=optimizer, learning_rate=1e-4, num_train_steps=1000,
                           num_warmup_steps=10, train_batch_size=b,
                           iterations_per_loop=iterations_per_loop, jit_compile=jit_compile,
                           jit_compile_fast_path=jit_compile_fast_path,
                           recompute_activations=recompute_activations)
  runner = pretraining_runner(strategy, model, settings, mixed_precision)
  iterator = iter(strategy.distribute_datasets_from_function(make_dataset))
  n = iterations_per_loop
  # train_steps returns Python floats: each call has finished its n updates when it returns.
  times = timed_calls(lambda: runner.train_steps(iterator, n), warmup_steps, steps, profile_dir)
  peak_rss = peak_rss_mb()  # the steps' peak, before the counting and the probe below
  seconds = statistics.median(times) / n
  if records:
    counts = consumed_counts(records, warmup_steps * n, steps * n)
  else:
    counts = (b * steps * n,) * 2 + (b * t * steps * n,)
  flops = pretraining_flops(config, b, t, p, k)
  return measurement(
      "train", seconds, b, peak_rss, flops_per_training_step=flops.train,
      flops_per_forward_pass=flops.forward,
      **step_utilization(flops.train, seconds, mixed_precision, peak_tflops, gemm_probe_on,
                         cpu_peak),
      optimizer=optimizer, iterations_per_loop=n, jit_compile_requested=jit_compile,
      jit_compile=runner.jit_compile, mixed_precision=mixed_precision,
      recompute_activations=recompute_activations,
      **data_fields(records, t, *counts, sum(times)),
      **(profile_fields(profile_dir) if profile_dir else {}), **(fields or {}))


# -- serving --------------------------------------------------------------------------------------
def serving_texts(spm_model_file, token_counts, corpus=SERVING_CORPUS):
  """{n: text} whose tokenization (the export's: lower-cased SentencePiece) is n - 2 pieces, so
  that the packed request, [CLS] and [SEP] added, is n tokens."""
  from albert_tf.tokenization import FullTokenizer
  tokenizer = FullTokenizer(spm_model_file=spm_model_file, do_lower_case=True)
  count = lambda words: len(tokenizer.tokenize(" ".join(words)))
  with open(corpus, encoding="utf-8") as f:
    corpus_words = f.read().split()
  texts = {}
  for n in token_counts:
    words = []
    for word in corpus_words:
      if count(words + [word]) > n - 2:
        break
      words.append(word)
    # Whatever a word of the corpus would overshoot, one-piece words make up exactly.
    filler = next(w for w in ("the", "a", "of") if count([w]) == 1)
    while count(words) < n - 2:
      words.append(filler)
    texts[n] = " ".join(words)
  return texts


def export_for_serving(config, spm_model_file, max_seq_length, serving_precision, base_dir):
  """Exports a fresh AlbertPretrainer as export_saved_model writes it, built under the policy of
  `serving_precision`; returns the version folder <base_dir>/1."""
  import albert_tf
  from albert_tf.core.settings import TokenizerSettings
  from albert_tf.export.saved_model import ServingModule, export_saved_model
  from albert_tf.training import precision
  model = precision.serving_model(serving_precision, lambda: albert_tf.AlbertPretrainer(config))
  module = ServingModule(model, TokenizerSettings(spm_model_file=spm_model_file), max_seq_length)
  return export_saved_model(module, base_dir, 1)


def check_serving_tokens(config, token_counts):
  """Raises ValueError, naming --serving_tokens, for a request length the export cannot take:
  under 3 ([CLS], a token, [SEP]) or over the config's max_position_embeddings."""
  limit = config.max_position_embeddings
  bad = [n for n in token_counts if not 3 <= n <= limit]
  if bad:
    raise ValueError(f"--serving_tokens={','.join(map(str, token_counts))}: each length must be "
                     f"between 3 ([CLS], a token, [SEP]) and the config's max_position_embeddings "
                     f"({limit}); {bad} are not (use shorter lengths, or a config with more "
                     f"positions)")


def benchmark_serving(config, spm_model_file, token_counts, batch_sizes, requests, warmup,
                      serving_precision="float32"):
  """Exports the pretrainer, then times it in a child process that does not import albert_tf
  (serving_child), which prints one line per (tokens, batch size, signature).

  Args:
    config: the AlbertConfig to export.
    spm_model_file: the export's SentencePiece model (also cuts the texts).
    token_counts: request lengths, [CLS] and [SEP] included; the largest is the export's
      max_seq_length.
    batch_sizes: batch sizes of the throughput measurements (1 is timed first in any case).
    requests: timed batch-1 requests (a sixth, at least 3, for larger batches).
    warmup: untimed requests first.
    serving_precision: float32 or bfloat16.

  Raises:
    ValueError: naming --serving_tokens, for a length under 3 or over max_position_embeddings.
    RuntimeError: when the child fails (its stderr's end in the message).
  """
  check_serving_tokens(config, token_counts)
  base = tempfile.mkdtemp(prefix="albert_serving_bench_")
  try:
    saved_model = export_for_serving(config, spm_model_file, max(token_counts),
                                     serving_precision, os.path.join(base, "export"))
    plan = {"saved_model": saved_model,
            "texts": {str(n): t for n, t in serving_texts(spm_model_file, token_counts).items()},
            "token_counts": list(token_counts),
            "batch_sizes": [1] + [b for b in batch_sizes if b != 1],
            "requests": requests, "warmup": warmup, "vocab_size": config.vocab_size,
            "fields": {"serving_precision": serving_precision,
                       "export_max_seq_length": max(token_counts)}}
    _run_child("serving_child", plan, base,
               f"the serving measurement (a child process loading {saved_model})")
  finally:
    shutil.rmtree(base, ignore_errors=True)


def _percentile_ms(seconds, q):
  return round(float(np.percentile(np.asarray(seconds) * 1000.0, q)), 2)


def _timed_line(call, warmup, count, batch, **fields):
  """Calls `call` warmup times, then times `count` calls: a serving line with p50_ms, p99_ms,
  examples_per_second (batch per call) and `fields`. Returns (line, the last outputs)."""
  for _ in range(warmup):
    outputs = call()
  times = []
  for _ in range(count):
    start = time.perf_counter()
    outputs = call()
    _block(outputs)
    times.append(time.perf_counter() - start)
  line = dict({"mode": "serving"}, **fields)
  line.update(p50_ms=_percentile_ms(times, 50), p99_ms=_percentile_ms(times, 99),
              examples_per_second=round(batch * len(times) / sum(times), 2), requests=count)
  return line, outputs


def _request_count(requests, batch):
  return requests if batch == 1 else max(3, requests // 6)


def export_portable(config, runtime, max_seq_length, directory, model=None):
  """The portable export of `model` (default: a fresh random-weight AlbertModel) timed as
  `runtime` (PORTABLE_RUNTIMES), written under `directory` unless it is there already. Returns
  its path."""
  file_name, exporter, options, _ = PORTABLE_RUNTIMES[runtime]
  path = os.path.join(directory, file_name)
  if os.path.exists(path):
    return path
  if model is None:
    import albert_tf
    model = albert_tf.AlbertModel(config)
  if exporter == "tflite":
    from albert_tf.export.tflite import export_tflite
    export_tflite(model, path, max_seq_length, **options)
  else:
    from albert_tf.export.calibration import synthetic_examples
    from albert_tf.export.onnx import export_onnx
    if options["quantize"] == "static":
      # Requests of several lengths, the ids the timed requests draw from (portable_child).
      lengths = sorted({min(n, max_seq_length) for n in (8, 32, 64, max_seq_length)})
      options = dict(options, calibration=synthetic_examples(
          min(config.vocab_size, 900), lengths, PORTABLE_CALIBRATION_EXAMPLES))
    export_onnx(model, path, max_seq_length, **options)
  return path


def benchmark_portable(config, runtimes, token_counts, batch_sizes, requests, warmup, threads,
                       export_cache=None, model=None, fidelity_features=None):
  """Exports each of `runtimes` (PORTABLE_RUNTIMES) and times it in its own child process
  without TensorFlow (portable_child): one line per (tokens, batch size), on [B, tokens] ids.

  Args:
    config, token_counts, batch_sizes, requests, warmup: as benchmark_serving's.
    runtimes: names in PORTABLE_RUNTIMES.
    threads: the runtimes' CPU threads.
    export_cache: a directory to keep and reuse the files in, or None.
    model: the model every file exports, or None for a fresh random one per file.
    fidelity_features: None, or features [B, T] (numpy int32) on which each runtime's outputs
      are compared with `model`'s float32 Keras outputs: a fidelity line per runtime.

  Raises:
    RuntimeError: when a child fails (its stderr's end in the message).
  """
  base = export_cache or tempfile.mkdtemp(prefix="albert_portable_bench_")
  os.makedirs(base, exist_ok=True)
  reference = None
  if fidelity_features is not None:
    from albert_tf.export import portable
    reference = {k: np.asarray(v) for k, v in
                 portable.serving_outputs(model, fidelity_features).items()}
    np.savez(os.path.join(base, "fidelity_features.npz"), **fidelity_features)
  try:
    for runtime in runtimes:
      path = export_portable(config, runtime, max(token_counts), base, model)
      plan = {"runtime": runtime, "path": path, "threads": threads,
              "runner_options": PORTABLE_RUNTIMES[runtime][3],
              "token_counts": list(token_counts),
              "batch_sizes": [1] + [b for b in batch_sizes if b != 1],
              "requests": requests, "warmup": warmup, "vocab_size": config.vocab_size,
              "file_bytes": os.path.getsize(path)}
      if reference is not None:
        plan["fidelity"] = {"features": os.path.join(base, "fidelity_features.npz"),
                            "outputs": os.path.join(base, f"fidelity_{runtime}.npz")}
      _run_child("portable_child", plan, base, f"the {runtime} measurement ({path})")
      if reference is not None:
        with np.load(plan["fidelity"]["outputs"]) as outputs:
          report(fidelity_line(runtime, reference, dict(outputs),
                               fidelity_features["input_mask"]))
  finally:
    if export_cache is None:
      shutil.rmtree(base, ignore_errors=True)


def fidelity_line(runtime, reference, outputs, input_mask):
  """How close a runtime's outputs are to the float32 model's on the same features.

  Args:
    runtime: the runtime's name (PORTABLE_RUNTIMES).
    reference: {output name: numpy array} of the float32 Keras model (export.portable's names).
    outputs: the runtime's, the same names.
    input_mask: [B, T], 1 on the real tokens.

  Returns:
    {mode: "fidelity", runtime, examples, tokens, reference, pooled_cosine (the lowest cosine of
    a row's pooled_output), sequence_cosine (the lowest of a real token's sequence_output)}, and
    for a classifier's probabilities or a tagger's logits: argmax_output, argmax_agreement (the
    share of rows, or of real tokens, whose argmax is the float model's) and argmax_changed.
  """
  from albert_tf.export.portable_runtime import worst_cosine  # numpy only
  mask = np.asarray(input_mask)
  rows = np.ones(mask.shape[0])
  line = {"mode": "fidelity", "runtime": runtime, "examples": int(mask.shape[0]),
          "tokens": int(mask.shape[1]), "reference": "float32 Keras model, the same weights",
          "pooled_cosine": round(worst_cosine(outputs["pooled_output"],
                                              reference["pooled_output"], rows), 6),
          "sequence_cosine": round(worst_cosine(outputs["sequence_output"],
                                                reference["sequence_output"], mask), 6)}
  for name in ARGMAX_OUTPUTS:
    if name in reference:
      ours, theirs = outputs[name].argmax(-1), reference[name].argmax(-1)
      real = rows > 0 if ours.ndim == 1 else mask > 0  # a tagger's: its real tokens
      same = ours[real] == theirs[real]
      line.update(argmax_output=name, argmax_agreement=round(float(same.mean()), 6),
                  argmax_changed=int((~same).sum()))
  return line


def fidelity_features_of(config, max_seq_length, data_file=None):
  """The fidelity lines' features (numpy int32 [B, T]): the first FIDELITY_EXAMPLES of
  `data_file` (a TFRecord, export.calibration's reading), padded to their longest; else
  FIDELITY_BATCH synthetic rows of `max_seq_length` tokens (portable.sample_features)."""
  from albert_tf.export import portable
  if data_file is None:
    return portable.sample_features(config, FIDELITY_BATCH, max_seq_length)
  from albert_tf.export.calibration import read_calibration_examples
  examples = read_calibration_examples(data_file, config, max_seq_length, FIDELITY_EXAMPLES,
                                       flag="--fidelity_data")
  longest = max(e["input_ids"].shape[1] for e in examples)
  return {name: np.concatenate([np.pad(e[name], ((0, 0), (0, longest - e[name].shape[1])))
                                for e in examples]).astype(np.int32)
          for name in portable.INPUT_NAMES}


def _run_child(function, plan, directory, what):
  """Runs benchmark.<function>(plan file) in a child process; its stdout streams to ours.

  Returns:
    The JSON lines it printed, as dicts.

  Raises:
    RuntimeError: when it fails (its stderr's end in the message).
  """
  plan_file = os.path.join(directory, f"plan-{os.getpid()}.json")
  with open(plan_file, "w", encoding="utf-8") as f:
    json.dump(plan, f)
  code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
          f"import benchmark; benchmark.{function}({plan_file!r})")
  from albert_tf.core import onednn
  # The child's stderr (TensorFlow's start-up notices) is shown only if it fails.
  sys.stdout.flush()
  lines = []
  try:
    with tempfile.TemporaryFile("w+", encoding="utf-8") as stderr:
      with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=stderr,
                            text=True, env=onednn.child_environment()) as child:
        for text in child.stdout:
          sys.stdout.write(text)
          sys.stdout.flush()
          if text.startswith("{"):
            lines.append(json.loads(text))
      if child.returncode != 0:
        stderr.seek(0)
        raise RuntimeError(f"{what} failed: {_exit_reason(child.returncode)}:\n"
                           f"{stderr.read()[-3000:]}")
  finally:
    os.remove(plan_file)
  return lines


def _exit_reason(code):
  """A child's exit status in words: a signal's name where one ended it."""
  if code >= 0:
    return f"exit status {code}"
  import signal
  name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
  # The kernel's out-of-memory killer ends a process with SIGKILL, and says so nowhere else.
  hint = (" (the system's out-of-memory killer sends it: try a smaller --batch_size or "
          "--seq_length, or free memory)") if -code == signal.SIGKILL else ""
  return f"killed by {name}{hint}"


def portable_child(plan_file):
  """A portable export's measurement, in a process without TensorFlow (as on a device or an ORT
  server): prints a JSON line per (tokens, batch size)."""
  sys.path.insert(0, REPO_ROOT)
  from albert_tf.export.portable_runtime import runner_for
  with open(plan_file, encoding="utf-8") as f:
    plan = json.load(f)
  run = runner_for(plan["path"], plan["threads"], **plan["runner_options"])
  rng = np.random.default_rng(0)
  for n in plan["token_counts"]:
    for batch in plan["batch_sizes"]:
      features = {"input_ids": rng.integers(5, min(plan["vocab_size"], 900), (batch, n),
                                            dtype=np.int32),
                  "input_mask": np.ones((batch, n), np.int32),
                  "segment_ids": np.zeros((batch, n), np.int32)}
      line, _ = _timed_line(lambda: run(features), plan["warmup"],  # noqa: B023 -- timed within this iteration
                            _request_count(plan["requests"], batch), batch,
                            runtime=plan["runtime"], signature="tokens", tokens=n,
                            batch_size=batch)
      line.update(threads=plan["threads"], file_bytes=plan["file_bytes"],
                  peak_rss_mb=round(peak_rss_mb(), 1),
                  tensorflow_loaded="tensorflow" in sys.modules)
      print(json.dumps(line), flush=True)
  if "fidelity" in plan:
    with np.load(plan["fidelity"]["features"]) as features:
      np.savez(plan["fidelity"]["outputs"], **run(dict(features)))


def serving_child(plan_file):
  """The serving measurement, in a process without albert_tf: loads the SavedModel as TF
  Serving does (tensorflow_text registers the SentencePiece ops) and prints a JSON line per
  (tokens, batch size, signature): p50_ms, p99_ms, examples_per_second, and for the text
  signature text_tokens, the length the served tokenizer gave the text."""
  import tensorflow as tf
  import tensorflow_text  # noqa: F401 -- registers the text ops a SavedModel needs
  if "albert_tf" in sys.modules:
    raise RuntimeError("albert_tf was imported into the serving measurement's process; it must "
                       "load the SavedModel alone, as TF Serving does")
  with open(plan_file, encoding="utf-8") as f:
    plan = json.load(f)
  served = tf.saved_model.load(plan["saved_model"])
  rng = np.random.default_rng(0)
  for n in plan["token_counts"]:
    for batch in plan["batch_sizes"]:
      requests = {
          "text": ("serving_default", {"text": tf.constant([plan["texts"][str(n)]] * batch)}),
          "tokens": ("tokens", {
              "input_ids": tf.constant(rng.integers(5, min(plan["vocab_size"], 900), (batch, n)),
                                       tf.int32),
              "input_mask": tf.ones((batch, n), tf.int32),
              "segment_ids": tf.zeros((batch, n), tf.int32)}),
      }
      for label, (signature, inputs) in requests.items():
        fn = served.signatures[signature]
        line, outputs = _timed_line(lambda: fn(**inputs), plan["warmup"],  # noqa: B023 -- timed within this iteration
                                    _request_count(plan["requests"], batch), batch,
                                    runtime="saved_model", signature=label, tokens=n,
                                    batch_size=batch)
        if label == "text":
          line["text_tokens"] = int(outputs["input_mask"].numpy()[0].sum())
        line.update(plan["fields"], peak_rss_mb=round(peak_rss_mb(), 1), albert_tf_loaded=False)
        print(json.dumps(line), flush=True)


# -- train measurements from a plan: here, or in a child process of --compare ------------------
# The flags a train measurement is made of (its plan's keys, cpu_peak besides).
TRAIN_PLAN_FLAGS = ("config", "parameter_sharing", "batch_size", "seq_length", "num_predictions",
                    "input_file", "data_seed", "pack_sequences", "max_sequences_per_row",
                    "recompute_activations", "mixed_precision", "jit_compile",
                    "jit_compile_fast_path", "optimizer", "iterations_per_loop", "warmup_steps",
                    "steps", "peak_tflops", "gemm_probe")
# The two train measurements of each --compare: (name, the plan's change).
COMPARE_VARIANTS = {
    "packing": (("unpacked", {"pack_sequences": False}), ("packed", {"pack_sequences": True})),
    "recompute": (("plain", {"recompute_activations": False}),
                  ("recompute", {"recompute_activations": True})),
}


def train_plan(**changes):
  """The train measurement the flags ask for, as a JSON-able dict (TRAIN_PLAN_FLAGS and
  cpu_peak: (TFLOP/s, source) of a GEMM probe made already, or None), with `changes`."""
  plan = {name: FLAGS[name].value for name in TRAIN_PLAN_FLAGS}
  plan["cpu_peak"] = None
  plan.update(changes)
  return plan


def plan_records(plan, files):
  """The Records a plan trains on (`files`: its --input_file expanded), or None for synthetic
  batches."""
  if not plan["input_file"]:
    return None
  k = plan["max_sequences_per_row"] if plan["pack_sequences"] else None
  return Records(tuple(files), plan["seq_length"], plan["num_predictions"], plan["batch_size"],
                 k, plan["data_seed"])


def plan_config(plan):
  config = load_config(plan["config"])
  if plan["parameter_sharing"]:
    config = config.replace(parameter_sharing=plan["parameter_sharing"])
  return config


def line_fields(plan, config, model):
  """The fields forward and train lines share: what was measured, on what."""
  from albert_tf.core import onednn
  return dict(seq_length=plan["seq_length"], num_predictions=plan["num_predictions"],
              config=plan["config"], threads=os.cpu_count(),
              parameter_sharing=config.parameter_sharing, parameters=model.count_params(),
              onednn=onednn.tensorflow_uses_onednn(), input_file=plan["input_file"])


def train_line(plan, strategy, model, config, data, profile_dir=None):
  """benchmark_train of `plan` on `data` (a Records or a synthetic batch)."""
  return benchmark_train(
      strategy, model, config, data, optimizer=plan["optimizer"],
      iterations_per_loop=plan["iterations_per_loop"], jit_compile=plan["jit_compile"],
      jit_compile_fast_path=plan["jit_compile_fast_path"],
      mixed_precision=plan["mixed_precision"],
      recompute_activations=plan["recompute_activations"], warmup_steps=plan["warmup_steps"],
      steps=plan["steps"], peak_tflops=plan["peak_tflops"], gemm_probe_on=plan["gemm_probe"],
      cpu_peak=tuple(plan["cpu_peak"]) if plan["cpu_peak"] else None, profile_dir=profile_dir,
      fields=line_fields(plan, config, model))


def train_child(plan_file):
  """One train measurement of --compare, in a process of its own (as main runs it): prints its
  line."""
  sys.path.insert(0, REPO_ROOT)
  from albert_tf.core import onednn
  from albert_tf.core.io import expand_input_patterns
  from albert_tf.core.startup import quiet_tensorflow_startup
  quiet_tensorflow_startup()
  onednn.turn_on_for_training()
  with open(plan_file, encoding="utf-8") as f:
    plan = json.load(f)
  config = plan_config(plan)
  strategy, model = build_pretrainer(config, plan["mixed_precision"])
  files = expand_input_patterns(plan["input_file"]) if plan["input_file"] else None
  report(train_line(plan, strategy, model, config, plan_records(plan, files)
                    or synthetic_batch(config, plan["batch_size"], plan["seq_length"],
                                       plan["num_predictions"])))


def run_compare(kind, plan, at_target_shape):
  """--compare: COMPARE_VARIANTS[kind]'s two train measurements of `plan`, each in a child
  process (train_child; its line printed), the second with the first's GEMM probe; then the
  compare line (compare_line). Returns the compare line."""
  lines = []
  base = tempfile.mkdtemp(prefix="albert_compare_bench_")
  try:
    for name, change in COMPARE_VARIANTS[kind]:
      child_plan = dict(plan, **change)
      if lines and (lines[0]["peak_source"] or "").startswith("GEMM probe"):
        child_plan["cpu_peak"] = [lines[0]["peak_tflops"], lines[0]["peak_source"]]
      printed = _run_child("train_child", child_plan, base, f"the {name} train measurement")
      lines.append([l for l in printed if l.get("mode") == "train"][-1])
  finally:
    shutil.rmtree(base, ignore_errors=True)
  return report(compare_line(kind, *lines, at_target_shape=at_target_shape))


def compare_line(kind, first, second, at_target_shape=True):
  """The line comparing two train lines of --compare=`kind` (COMPARE_VARIANTS' order).

  Args:
    kind: "packing" or "recompute".
    first, second: the train lines, unpacked then packed, or plain then recompute.
    at_target_shape: whether the run is of the shape TARGETS[kind]'s goal is of (recompute:
      RECOMPUTE_TARGET_SHAPE); meets_target is None where it is not.

  Returns:
    {mode: "compare", compare, config, batch_size, seq_length, the ratio (packing:
     packed_speedup = real tokens/s packed / unpacked, sequences_per_second_ratio; recompute:
     memory_saving = 1 - peak RSS recompute / plain), step_time_ratio (second / first), each
     line's figures by variant, target (">= 1.6"), goal, at_target_shape, meets_target}.
  """
  (a, _), (b, _) = COMPARE_VARIANTS[kind]
  line = {"mode": "compare", "compare": kind, "config": first["config"],
          "batch_size": first["batch_size"], "seq_length": first["seq_length"]}
  if kind == "packing":
    line.update(
        packed_speedup=round(second["real_tokens_per_second"] / first["real_tokens_per_second"],
                             4),
        sequences_per_second_ratio=round(
            second["sequences_per_second"] / first["sequences_per_second"], 4))
    shown = ("real_tokens_per_second", "sequences_per_second", "padding_fraction",
             "seconds_per_step")
  else:
    line["memory_saving"] = round(1.0 - second["peak_rss_mb"] / first["peak_rss_mb"], 4)
    shown = ("peak_rss_mb", "seconds_per_step", "real_tokens_per_second")
  line["step_time_ratio"] = round(second["seconds_per_step"] / first["seconds_per_step"], 4)
  for field in shown:
    line[field] = {a: first[field], b: second[field]}
  target = TARGETS[kind]
  line.update(target=f">= {target.at_least}", goal=target.goal, at_target_shape=at_target_shape,
              meets_target=(line[target.field] >= target.at_least if at_target_shape else None))
  return line


def at_recompute_target_shape(config):
  """Whether `config` at --batch_size x --seq_length is the shape of the recompute goal."""
  name, batch_size, seq_length = RECOMPUTE_TARGET_SHAPE
  sizes = lambda c: (c.hidden_size, c.num_hidden_layers, c.intermediate_size,
                     c.embedding_size, c.num_attention_heads, c.vocab_size)
  return (sizes(config) == sizes(load_config(name)) and FLAGS.batch_size == batch_size
          and FLAGS.seq_length == seq_length)


def check_data_flags():
  """Raises app.UsageError, naming the flag and the fix, for --input_file, --pack_sequences and
  --compare flags that cannot go together (before TensorFlow loads)."""
  if FLAGS.pack_sequences and not FLAGS.input_file:
    raise app.UsageError("--pack_sequences packs the records' sequences: give --input_file "
                         "(create_pretraining_data's TFRecords)")
  if not FLAGS.compare:
    return
  if FLAGS.compare == "packing" and not FLAGS.input_file:
    raise app.UsageError("--compare=packing packs records: give --input_file "
                         "(create_pretraining_data's TFRecords)")
  variant_flag = {"packing": "pack_sequences",
                  "recompute": "recompute_activations"}[FLAGS.compare]
  if FLAGS[variant_flag].value:
    raise app.UsageError(f"--compare={FLAGS.compare} times both with and without "
                         f"--{variant_flag}: leave --{variant_flag} out")
  if FLAGS.profile:
    raise app.UsageError("--profile traces one measurement: leave it out with --compare")
  if set(FLAGS.mode) - {"train", "all"}:
    raise app.UsageError(f"--compare times train steps only: leave out --mode="
                         f"{','.join(FLAGS.mode)} (or give --mode=train)")


def _positive_ints(flag_name, values):
  try:
    ints = [int(v) for v in values]
  except ValueError:
    ints = []
  if not ints or min(ints) < 1:
    raise app.UsageError(f"--{flag_name}={','.join(values)}: give positive integers separated "
                         f"by commas, e.g. --{flag_name}=8,32")
  return ints


def check_step_shape(config):
  """Raises app.UsageError, naming the flag and the fix, for a forward or training step the
  model cannot take: an empty batch or sequence, one longer than the config's positions, or no
  timed step."""
  for name in ("batch_size", "seq_length", "steps"):
    if FLAGS[name].value < 1:
      raise app.UsageError(f"--{name}={FLAGS[name].value}: must be at least 1")
  if FLAGS.seq_length > config.max_position_embeddings:
    raise app.UsageError(
        f"--seq_length={FLAGS.seq_length}: over the config's max_position_embeddings "
        f"({config.max_position_embeddings}): give a length up to it, or a config with more "
        "positions")


def main(_):
  try:
    config = load_config(FLAGS.config)  # no TensorFlow yet: flag errors come at once
  except (FileNotFoundError, ValueError) as e:  # albert_tf's ConfigError is a ValueError
    raise app.UsageError(f"--config={FLAGS.config}: {e}") from None
  if FLAGS.parameter_sharing:
    config = config.replace(parameter_sharing=FLAGS.parameter_sharing)
  modes = set(FLAGS.mode)
  check_data_flags()
  if FLAGS.compare:
    modes = set()  # the compare's train measurements only
  steps = modes & {"forward", "train", "all"} or FLAGS.compare
  token_counts = _positive_ints("serving_tokens", FLAGS.serving_tokens)
  batch_sizes = _positive_ints("serving_batch_sizes", FLAGS.serving_batch_sizes)
  runtimes = FLAGS.serving_runtimes
  unknown = sorted(set(runtimes) - {"saved_model", *PORTABLE_RUNTIMES})
  if unknown:
    raise app.UsageError(f"--serving_runtimes={','.join(runtimes)}: {unknown} are not known; "
                         f"choose from saved_model, {', '.join(PORTABLE_RUNTIMES)}")
  if FLAGS.serving_export_cache and (FLAGS.serving_checkpoint or FLAGS.serving_fidelity):
    raise app.UsageError("--serving_export_cache reuses files of unknown weights: it cannot "
                         "go with --serving_checkpoint or --serving_fidelity, whose files must "
                         "be of one model; leave it out")
  if modes & {"serving", "all"}:
    try:
      check_serving_tokens(config, token_counts)
    except ValueError as e:
      raise app.UsageError(str(e)) from None
  if steps:
    check_step_shape(config)
  from albert_tf.core import onednn
  from albert_tf.core.startup import quiet_tensorflow_startup
  quiet_tensorflow_startup()  # before TensorFlow's first import
  if steps:
    # As the training binaries run (the serving children get TensorFlow's default back:
    # _run_child); before the records' check loads TensorFlow.
    onednn.turn_on_for_training()
  files = None
  if FLAGS.input_file and steps:
    try:
      files = check_records(FLAGS.input_file, FLAGS.seq_length, FLAGS.num_predictions)
    except ValueError as e:
      raise app.UsageError(str(e)) from None
  if FLAGS.compare:
    run_compare(FLAGS.compare, train_plan(),
                at_recompute_target_shape(config) if FLAGS.compare == "recompute" else True)
  if modes & {"forward", "train", "all"}:
    strategy, model = build_pretrainer(config, FLAGS.mixed_precision)
    plan = train_plan()
    records = plan_records(plan, files)
    batch = (first_batch(records) if records else
             synthetic_batch(config, FLAGS.batch_size, FLAGS.seq_length, FLAGS.num_predictions))
    profile = lambda mode: os.path.join(FLAGS.profile, mode) if FLAGS.profile else None
    if modes & {"forward", "all"}:
      report(benchmark_forward(
          model, config, batch, jit_compile=FLAGS.jit_compile,
          jit_compile_fast_path=FLAGS.jit_compile_fast_path,
          mixed_precision=FLAGS.mixed_precision, warmup_steps=FLAGS.warmup_steps,
          steps=FLAGS.steps, peak_tflops=FLAGS.peak_tflops, gemm_probe_on=FLAGS.gemm_probe,
          profile_dir=profile("forward"),
          fields=dict(line_fields(plan, config, model), data="records" if records else
                      "synthetic", packed=bool(records and records.max_sequences_per_row))))
    if modes & {"train", "all"}:
      report(train_line(plan, strategy, model, config, records or batch, profile("train")))
  if modes & {"serving", "all"}:
    if "saved_model" in runtimes:
      benchmark_serving(config, FLAGS.spm_model_file, token_counts, batch_sizes,
                        FLAGS.serving_requests, FLAGS.warmup_steps, FLAGS.serving_precision)
    portable_runtimes = [r for r in runtimes if r != "saved_model"]
    model, features = portable_model(config, portable_runtimes, max(token_counts))
    benchmark_portable(config, portable_runtimes, token_counts, batch_sizes,
                       FLAGS.serving_requests, FLAGS.warmup_steps, FLAGS.serving_threads,
                       FLAGS.serving_export_cache, model, features)


def portable_model(config, runtimes, max_seq_length):
  """(the model every portable export is of, the fidelity features): (None, None) unless
  --serving_checkpoint or --serving_fidelity asks for one model (random, or the checkpoint's)."""
  if not runtimes or not (FLAGS.serving_checkpoint or FLAGS.serving_fidelity):
    return None, None
  from albert_tf.export import portable
  model = portable.load_exportable_model(config, FLAGS.serving_checkpoint, FLAGS.serving_head)
  features = (fidelity_features_of(config, max_seq_length, FLAGS.fidelity_data)
              if FLAGS.serving_fidelity else None)
  return model, features


if __name__ == "__main__":
  define_flags()
  from albert_tf.core import cli  # the binaries' one-line errors; no TensorFlow
  cli.run(main)
