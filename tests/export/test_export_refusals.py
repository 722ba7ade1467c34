"""No export overwrites anything or fails late on its output path: export_onnx and
export_tflite refuse an --output_file that exists (unless --overwrite), is a directory or lies
under a file, and export_tfhub an --export_path it cannot write, each in one `error:` line naming
the flag, before any model is built; a file is written through a temporary in its directory that
a failure removes; export_tfhub's --default_seq_length must fit the encoder's positions."""

import os
import pathlib
import tempfile

import pytest

import albert_tf
from albert_tf.core import errors
from albert_tf.export import staging, tflite
from helpers import ORIGINAL_MODEL, TESTDATA, run_binary

CONFIG = os.path.join(ORIGINAL_MODEL, "albert_config.json")
VOCAB = os.path.join(TESTDATA, "original_wordpiece", "vocab.txt")
PORTABLE = ["export_onnx", "export_tflite"]


def _one_error_line(result):
  lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
  assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
  return lines[0]


def _portable(binary, output, *extra):
  """`binary` on a checkpoint that cannot be read (an empty index file: it passes the check of
  the flags and fails when the model loads): a refusal of the output must come before the model
  is built, or the checkpoint would be the error."""
  unreadable = tempfile.mkdtemp()
  open(os.path.join(unreadable, "model.ckpt-1.index"), "wb").close()
  return run_binary(binary, [f"--albert_config_file={CONFIG}", f"--output_file={output}",
                             f"--init_checkpoint={unreadable}/model.ckpt-1", *extra],
                    check=False)


def _unwritable_dir(tmp_path):
  """A directory this process cannot create anything in."""
  if os.geteuid() != 0:
    directory = tmp_path / "read-only"
    directory.mkdir()
    directory.chmod(0o500)
    return directory
  if os.path.isdir("/sys"):  # root writes anywhere but in sysfs
    return pathlib.Path("/sys")
  pytest.skip("no directory root cannot write in")


# ---- export_onnx, export_tflite: --output_file --------------------------------------------------
@pytest.mark.parametrize("binary", PORTABLE)
def test_an_existing_output_file_is_refused_before_the_model(tmp_path, binary):
  output = tmp_path / "model.out"
  output.write_bytes(b"an earlier export")
  result = _portable(binary, output)
  assert result.returncode == errors.FAILED_RUN_EXIT_CODE
  line = _one_error_line(result)
  assert f"--output_file={output} exists already" in line and "--overwrite" in line, line
  assert output.read_bytes() == b"an earlier export"
  assert os.listdir(tmp_path) == ["model.out"]


@pytest.mark.slow
@pytest.mark.parametrize("binary", PORTABLE)
def test_an_unreadable_checkpoint_is_one_line(tmp_path, binary):
  # _portable's checkpoint: an empty index, read when the export looks for the checkpoint's head.
  result = _portable(binary, tmp_path / "model.out", "--max_seq_length=64")
  assert result.returncode == errors.FAILED_RUN_EXIT_CODE
  line = _one_error_line(result)
  assert "cannot read checkpoint" in line and "model.ckpt-1.index or .data-* file" in line, line
  assert not os.listdir(tmp_path)


@pytest.mark.parametrize("binary", PORTABLE)
def test_a_directory_as_output_file_is_refused(tmp_path, binary):
  (tmp_path / "dir").mkdir()
  for output in (tmp_path / "dir", f"{tmp_path / 'new'}/"):
    result = _portable(binary, output, "--overwrite")  # a directory is never replaced
    assert result.returncode == errors.FAILED_RUN_EXIT_CODE
    line = _one_error_line(result)
    assert f"--output_file={output} names a directory; give a file name" in line, line
  assert sorted(os.listdir(tmp_path)) == ["dir"] and not os.listdir(tmp_path / "dir")


@pytest.mark.parametrize("binary", PORTABLE)
def test_an_output_file_under_a_file_is_refused(tmp_path, binary):
  (tmp_path / "plain").write_text("x")
  output = tmp_path / "plain" / "sub" / "model.out"
  result = _portable(binary, output)
  assert result.returncode == errors.FAILED_RUN_EXIT_CODE
  line = _one_error_line(result)
  assert f"--output_file={output}: {tmp_path / 'plain'} is a file, not a directory" in line, line


def test_an_output_file_in_an_unwritable_directory_is_refused(tmp_path):
  """Locally, where the permission says so (root is refused by the write, see below)."""
  if os.geteuid() == 0:
    pytest.skip("root may write in any directory the permissions name")
  output = _unwritable_dir(tmp_path) / "model.onnx"
  with pytest.raises(staging.OutputPathError, match="cannot write in .*permission denied"):
    staging.check_output_file(output, flag="--output_file")


def _tiny_model():
  config = albert_tf.AlbertConfig(vocab_size=64, embedding_size=8, hidden_size=16,
                                  num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=16)
  return albert_tf.AlbertModel(config)


def test_the_api_refuses_an_existing_file_before_converting(tmp_path, monkeypatch):
  output = tmp_path / "m.tflite"
  output.write_bytes(b"old")

  def no_conversion(*args):
    raise AssertionError("converted before refusing")
  monkeypatch.setattr(tflite, "frozen_serving_function", no_conversion)
  with pytest.raises(staging.OutputPathError, match="exists already.*overwrite=True"):
    tflite.export_tflite(None, output, 16)
  assert output.read_bytes() == b"old"


@pytest.mark.slow
def test_overwrite_replaces_the_file_atomically(tmp_path):
  output = tmp_path / "m.tflite"
  output.write_bytes(b"old")
  size = tflite.export_tflite(_tiny_model(), output, 16, overwrite=True)
  assert output.stat().st_size == size > 1000 and output.read_bytes()[4:8] == b"TFL3"
  assert os.listdir(tmp_path) == ["m.tflite"]  # no temporary left


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
  output = tmp_path / "m.onnx"
  output.write_bytes(b"old")
  with pytest.raises(TypeError):
    staging.write_file_atomically(output, "text, not bytes", overwrite=True)
  assert output.read_bytes() == b"old" and os.listdir(tmp_path) == ["m.onnx"]


def test_a_write_the_directory_refuses_names_the_flag_not_the_temporary(tmp_path):
  output = _unwritable_dir(tmp_path) / "albert-test.onnx"
  with pytest.raises(staging.OutputPathError) as raised:
    # check_output_file is passed where only the write can tell (root in sysfs).
    staging.write_file_atomically(output, b"data", flag="--output_file")
  message = str(raised.value)
  assert message.startswith(f"--output_file={output}: cannot write") and ".tmp-" not in message


# ---- export_tfhub: --export_path, --default_seq_length -------------------------------------------
def _tfhub(export_path, *extra):
  return run_binary("export_tfhub", ["--export_type=preprocessing", f"--vocab_file={VOCAB}",
                                     f"--export_path={export_path}", *extra], check=False)


def test_staging_in_an_unwritable_directory_names_the_export_not_the_staging_dir(tmp_path):
  export_dir = _unwritable_dir(tmp_path) / "albert-test-hub"
  with pytest.raises(staging.OutputPathError) as raised:
    staging.write_directory_atomically(str(export_dir), lambda tmp: None, flag="--export_path")
  message = str(raised.value)
  assert message.startswith(f"--export_path={export_dir}: cannot create a directory in "), message
  assert ".tmp-" not in message and "give a path in a directory you can write" in message


@pytest.mark.slow
def test_export_tfhub_names_export_path_when_its_parent_is_unwritable(tmp_path):
  export_path = _unwritable_dir(tmp_path) / "albert-test-hub"
  result = _tfhub(export_path)
  assert result.returncode == errors.FAILED_RUN_EXIT_CODE
  line = _one_error_line(result)
  assert line.startswith(f"error: --export_path={export_path}: "), line
  assert ".tmp-" not in line and "you can write" in line, line


def test_export_tfhub_refuses_an_export_path_under_a_file_at_once(tmp_path):
  (tmp_path / "plain").write_text("x")
  result = _tfhub(tmp_path / "plain" / "hub")
  assert result.returncode == errors.FAILED_RUN_EXIT_CODE
  line = _one_error_line(result)
  assert f"--export_path={tmp_path / 'plain' / 'hub'}: {tmp_path / 'plain'} is a file" in line


@pytest.mark.slow
@pytest.mark.parametrize("extra,limit,source", [
    ((), 512, "the released models' configs, --albert_config_file not given"),
    ((f"--albert_config_file={CONFIG}",), 64, CONFIG),
])
def test_a_default_seq_length_longer_than_the_encoders_is_refused(tmp_path, extra, limit, source):
  export_path = tmp_path / "hub"
  result = _tfhub(export_path, f"--default_seq_length={limit + 1}", *extra)
  assert result.returncode == errors.USAGE_EXIT_CODE
  line = _one_error_line(result)
  assert (f"--default_seq_length={limit + 1}: cannot use sequence length {limit + 1} because "
          f"the ALBERT model was only trained up to sequence length {limit} "
          f"(max_position_embeddings in {source}); give --default_seq_length={limit} or less"
          ) in line, line
  assert not export_path.exists()
