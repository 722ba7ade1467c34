"""What the host CPU can compute fast: its name and its matrix/vector units, read without
TensorFlow (the benchmark, the binaries' fast-path choice and the tests all ask before, or
without, importing it).

Linux reports the instruction-set extensions as the `flags` line of /proc/cpuinfo; elsewhere
(macOS, Windows) nothing is read and every unit counts as absent, which only costs the fast path,
never a wrong result.

The units that matter for ALBERT's matmuls:
  amx_bf16, amx_int8   Intel AMX tiles (Sapphire Rapids and later): bf16 and int8 GEMMs at
                       several times the AVX-512 rate. oneDNN (TensorFlow's CPU kernels) and ONNX
                       Runtime's MLAS use them.
  avx512_bf16          bf16 dot products in AVX-512 (Cooper Lake, Zen 4 and later).
  avx512_vnni, avx_vnni  int8 dot products (VNNI) in AVX-512 or AVX2 registers.
  avx512f, avx2        the float32 vector widths.
Without avx512_bf16 or AMX, oneDNN has no bf16 kernels and TensorFlow computes bfloat16 in Eigen,
converting element by element: slower than float32.
"""

import functools
import os
import platform

_CPUINFO = "/proc/cpuinfo"

MATRIX_UNITS = ("amx_bf16", "amx_int8", "avx512_bf16", "avx512_vnni", "avx_vnni", "avx512f",
                "avx2")


@functools.lru_cache(maxsize=None)
def _cpuinfo_fields(path=_CPUINFO):
  """{field: value} of the first processor in /proc/cpuinfo, {} where there is none."""
  fields = {}
  try:
    with open(path, encoding="utf-8", errors="replace") as f:
      for line in f:
        if not line.strip():
          if fields:
            break  # the first processor's block is enough: they are alike
          continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
  except OSError:
    pass
  return fields


def cpu_flags(path=_CPUINFO):
  """The CPU's instruction-set flags (lower case), an empty frozenset where unknown."""
  return frozenset(_cpuinfo_fields(path).get("flags", "").lower().split())


def cpu_name(path=_CPUINFO):
  """The CPU's model name ("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"), or what Python's
  platform module knows, or "unknown CPU"."""
  return (_cpuinfo_fields(path).get("model name") or platform.processor()
          or platform.machine() or "unknown CPU")


def matrix_units(path=_CPUINFO):
  """{unit: bool} for each of MATRIX_UNITS."""
  flags = cpu_flags(path)
  return {unit: unit in flags for unit in MATRIX_UNITS}


def has_amx(path=_CPUINFO):
  """Whether the CPU has both AMX-BF16 and AMX-INT8 tiles."""
  units = matrix_units(path)
  return units["amx_bf16"] and units["amx_int8"]


def has_native_bf16(path=_CPUINFO):
  """Whether bfloat16 matmuls have hardware here (AMX-BF16 or AVX512-BF16), so that oneDNN
  computes them faster than float32."""
  units = matrix_units(path)
  return units["amx_bf16"] or units["avx512_bf16"]


def describe(path=_CPUINFO):
  """One line naming the CPU and its matrix units, for logs and benchmark lines:
  "AMD EPYC (2 threads): avx2; no AMX, no bf16 units, no VNNI"."""
  units = matrix_units(path)
  present = [unit for unit in MATRIX_UNITS if units[unit]]
  missing = []
  if not (units["amx_bf16"] or units["amx_int8"]):
    missing.append("no AMX")
  if not has_native_bf16(path):
    missing.append("no bf16 units")
  if not (units["avx512_vnni"] or units["avx_vnni"] or units["amx_int8"]):
    missing.append("no VNNI")
  text = f"{cpu_name(path)} ({os.cpu_count()} threads): {', '.join(present) or 'no known units'}"
  return text + (f"; {', '.join(missing)}" if missing else "")
