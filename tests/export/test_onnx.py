"""albert_tf.export.onnx beyond the exports themselves (tests/export/test_portable_exports.py):
what loading tf2onnx leaves in the process."""

import subprocess

import pytest

import warm_binaries

# Run in a process that has not loaded tf2onnx yet (a test process may have): the variable as
# given, or unset, then the export's dependencies checked and its converter loaded.
_LOADS_TF2ONNX = """
import os, sys
if sys.argv[1] == "unset":
  os.environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
else:
  os.environ["TF_CPP_MIN_LOG_LEVEL"] = sys.argv[1]
assert "tf2onnx" not in sys.modules
from albert_tf.export import onnx
onnx.require_dependencies()
onnx._converter()  # what onnx.convert calls first
assert "tf2onnx.convert" in sys.modules
print(os.environ.get("TF_CPP_MIN_LOG_LEVEL", "unset"))
"""


@pytest.mark.parametrize("given", ["0", "unset"])
def test_loading_tf2onnx_leaves_tensorflows_log_level_as_given(given):
  """tf2onnx sets TF_CPP_MIN_LOG_LEVEL=3 while it loads: left so, it would hide TensorFlow's
  errors in every process started afterwards."""
  process = warm_binaries.start_python(["-c", _LOADS_TF2ONNX, given], "serving",
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
  out, err = process.communicate(timeout=120)
  assert process.returncode == 0, err[-3000:]
  assert out.split() == [given]
