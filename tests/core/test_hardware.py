"""albert_tf.core.hardware reads the CPU's units from /proc/cpuinfo, without TensorFlow."""

import subprocess
import sys

from albert_tf.core import hardware

SAPPHIRE_RAPIDS = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
flags\t\t: fpu sse avx2 avx512f avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8

processor\t: 1
model name\t: ignored
flags\t\t: fpu
"""
ZEN3 = """processor\t: 0
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse avx avx2 fma
"""


def _cpuinfo(tmp_path, text, name):
  path = tmp_path / name
  path.write_text(text)
  return str(path)


def test_amx_cpu_is_read_from_the_first_processor(tmp_path):
  path = _cpuinfo(tmp_path, SAPPHIRE_RAPIDS, "spr")
  assert hardware.cpu_name(path) == "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"
  assert hardware.has_amx(path) and hardware.has_native_bf16(path)
  units = hardware.matrix_units(path)
  assert units == {"amx_bf16": True, "amx_int8": True, "avx512_bf16": True, "avx512_vnni": True,
                   "avx_vnni": False, "avx512f": True, "avx2": True}
  assert hardware.describe(path).endswith(
      "amx_bf16, amx_int8, avx512_bf16, avx512_vnni, avx512f, avx2")


def test_avx2_cpu_says_what_it_lacks(tmp_path):
  path = _cpuinfo(tmp_path, ZEN3, "zen3")
  assert not hardware.has_amx(path) and not hardware.has_native_bf16(path)
  assert hardware.describe(path).endswith(": avx2; no AMX, no bf16 units, no VNNI")
  assert hardware.describe(path).startswith("AMD EPYC 7B13 (")


def test_no_cpuinfo_means_no_units(tmp_path):
  missing = str(tmp_path / "absent")
  assert hardware.cpu_flags(missing) == frozenset()
  assert not any(hardware.matrix_units(missing).values())
  assert "no AMX" in hardware.describe(missing)


def test_reading_the_units_imports_no_tensorflow():
  code = ("import sys, albert_tf.core.hardware as h; h.describe(); "
          "print('tensorflow' in sys.modules)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
  assert out.stdout.strip() == "False"
