"""tools/serving_client.py run as a user runs it: with no server at the address, or bad flags, it
prints one `error:` line saying what is wrong (no traceback), as the binaries: exit status 1 for
the server, 2 for the flags. Loopback addresses only."""

import os
import subprocess
import sys

import pytest

from helpers import REPO_ROOT, TF_STARTUP_NOTICES

CLIENT = os.path.join(REPO_ROOT, "tools", "serving_client.py")


def _client(*args):
  result = subprocess.run([sys.executable, CLIENT, "--timeout=20"] + list(args),
                          capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
  return result


def _error_line(result, exit_status=1):
  """The client's one error line; TensorFlow's own warnings (if any) may precede it."""
  assert result.returncode == exit_status, (result.returncode, result.stderr[-3000:])
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  assert result.stdout == ""
  errors = [l for l in result.stderr.splitlines() if l.startswith("error: ")]
  assert len(errors) == 1, result.stderr[-3000:]
  assert result.stderr.rstrip().splitlines()[-1] == errors[0]
  return errors[0]


@pytest.mark.parametrize("protocol,name", [("grpc", "gRPC"), ("rest", "REST")])
def test_no_server_one_line(protocol, name, closed_port):
  result = _client(f"--protocol={protocol}", f"--server=127.0.0.1:{closed_port}",
                   "--text=The cat sat.")
  line = _error_line(result)
  assert f"no {name} server answers at 127.0.0.1:{closed_port}" in line
  assert "refused" in line
  # gRPC imports TensorFlow: the client quiets its start-up notices as the binaries do.
  assert [n for n, notice in TF_STARTUP_NOTICES.items() if notice in result.stderr] == [], (
      result.stderr[-3000:])


@pytest.mark.parametrize("flags,expected", [
    (["--input_ids=[[2, 13"], "--input_ids is not valid JSON (Expecting ',' delimiter at "
                              "character 7): '[[2, 13'"),
    (["--input_ids=[2, 13, 3]"], "input_ids must be [batch, length] ints, a JSON list of "
                                 "equal-length lists such as [[2, 13, 79, 3]]; got shape [3]"),
    (["--input_ids=[[[2, 13, 3]]]"], "input_ids must be [batch, length] ints"),
    (["--input_ids=[[2, 13], [3]]"], "input_ids must be [batch, length] ints, a JSON list of "
                                     "equal-length lists such as [[2, 13, 79, 3]]; got ragged"),
    (["--input_ids=[[2, 1.5]]"], "got shape [1, 2], float64"),
    (["--input_ids=[[2, 13, 3]]", "--input_mask=[[1, 1]]"],
     "input_mask must have the shape of input_ids, [1, 3]; got [1, 2]"),
    (["--input_ids=[[2, 13, 3]]", "--segment_ids={\"a\": 1}"], "segment_ids must be [batch, "
                                                               "length] ints"),
    (["--signature=mlm", "--input_ids=[[2, 13, 3]]", "--mlm_positions=[[1], [2]]"],
     "mlm_positions must have the batch size of input_ids, 1; got shape [2, 1]"),
    (["--signature=serving_text_pair", "--text=a", "--text=b", "--text_b=c"],
     "2 --text but 1 --text_b"),
])
@pytest.mark.parametrize("protocol", ["grpc", "rest"])
def test_bad_inputs_one_line(protocol, flags, expected, closed_port):
  # Checked before connecting: a bad input is reported as such, not as the missing server.
  line = _error_line(_client(f"--protocol={protocol}", f"--server=127.0.0.1:{closed_port}",
                             *flags), exit_status=2)
  assert expected in line, line
  assert "server" not in line
