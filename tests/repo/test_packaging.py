"""pyproject.toml is the package: its pins are requirements.txt's, every binary has an entry
point, and the wheel installs and runs outside the checkout."""

import os
import re
import subprocess
import tomllib

import pytest

import installed_package
from helpers import REPO_ROOT


def _pyproject():
  with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)


def _pins(lines):
  """{normalised name: version} of `name==version` lines (comments, extras of albert_tf and
  environment markers left out)."""
  pins = {}
  for line in lines:
    match = re.match(r"\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?==([^;\s#]+)", line)
    if match:
      pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(3)
  return pins


def _requirements_pins():
  with open(os.path.join(REPO_ROOT, "requirements.txt"), encoding="utf-8") as f:
    return _pins(f)


def _binaries():
  """albert_tf/<name>.py modules that are binaries (they end in a run() entry point)."""
  names = []
  for file in sorted(os.listdir(os.path.join(REPO_ROOT, "albert_tf"))):
    if file.endswith(".py"):
      with open(os.path.join(REPO_ROOT, "albert_tf", file), encoding="utf-8") as f:
        if re.search(r'^if __name__ == "__main__":\n  run\(\)$', f.read(), re.M):
          names.append(file[:-3])
  return names


def test_every_pin_is_requirements_txts():
  project = _pyproject()["project"]
  declared = list(project["dependencies"])
  for extra in project["optional-dependencies"].values():
    declared += extra
  pinned = _pins(declared)
  unpinned = [r for r in declared if "==" not in r and not r.startswith("albert_tf[")]
  assert not unpinned, f"pin these in pyproject.toml as requirements.txt does: {unpinned}"
  requirements = _requirements_pins()
  disagree = {name: (version, requirements.get(name)) for name, version in pinned.items()
              if name in requirements and requirements[name] != version}
  assert not disagree, (
      f"pyproject.toml vs requirements.txt pins (name: (pyproject, req)): {disagree}")
  # Each requirements.txt pin is the package's too: tests and CI run what users install.
  missing = sorted(set(requirements) - set(pinned))
  assert not missing, f"requirements.txt pins that pyproject.toml lacks: {missing}"


def test_every_binary_has_an_entry_point():
  scripts = _pyproject()["project"]["scripts"]
  expected = {"albert-" + name.replace("_", "-"): f"albert_tf.{name}:run" for name in _binaries()}
  assert len(expected) >= 8, expected
  assert scripts == expected


def test_the_beam_worker_setup_installs_no_tensorflow():
  with open(os.path.join(REPO_ROOT, "beam_worker", "setup.py"), encoding="utf-8") as f:
    source = f.read()
  workers = re.search(r"WORKER_REQUIREMENTS = \(([^)]*)\)", source).group(1)
  assert "tensorflow" not in workers and "sentencepiece" in workers
  for link, target in (("albert_tf", "albert_tf"), ("requirements.txt", "requirements.txt")):
    assert os.path.realpath(os.path.join(REPO_ROOT, "beam_worker", link)) == os.path.join(
        os.path.realpath(REPO_ROOT), target)


@pytest.mark.slow
def test_the_worker_sdist_holds_albert_tf_and_its_pins(tmp_path):
  # What Dataflow's --setup_file does: `python setup.py sdist` where the file lies.
  subprocess.run(["python3", "setup.py", "-q", "sdist", "--dist-dir", str(tmp_path)],
                 cwd=os.path.join(REPO_ROOT, "beam_worker"), check=True, capture_output=True,
                 timeout=300)
  (sdist,) = os.listdir(tmp_path)
  listing = subprocess.run(["tar", "tzf", str(tmp_path / sdist)], capture_output=True, text=True,
                           check=True).stdout.split()
  assert any(p.endswith("albert_tf/data/beam_generation.py") for p in listing)
  assert any(p.endswith("/requirements.txt") for p in listing)


@pytest.mark.slow
def test_the_installed_wheel_imports_and_answers_help(installed_bin, tmp_path):
  python = os.path.join(installed_bin, "python")
  where = subprocess.run(
      [python, "-c", "import albert_tf; print(albert_tf.__file__); "
       "print(albert_tf.AlbertConfig.from_preset('base').hidden_size)"],
      cwd=tmp_path, capture_output=True, text=True, timeout=300, check=True).stdout.split()
  assert os.path.dirname(installed_bin) in where[0] and where[1] == "768", where
  for script in _pyproject()["project"]["scripts"]:
    result = subprocess.run([os.path.join(installed_bin, script), "--help"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    # cli.help_text: the binary's flags and the shared ones (tests/repo/test_help.py), status 0.
    assert result.returncode == 0 and "\n  --verbose: " in result.stdout.replace("[no]", ""), (
        script, result.stdout[-2000:], result.stderr[-2000:])


@pytest.mark.slow
def test_a_venv_over_the_running_packages_sees_them_when_they_are_a_venvs(wheel, tmp_path):
  # The README's set-up runs the tests in a venv: a venv made from there over the running
  # packages must see that venv's own site-packages (where requirements.txt went), not its base
  # interpreter's. Outer: a venv over this interpreter's packages, with a module of its own;
  # inner: made from outer's python as the fixture makes one.
  outer_bin = installed_package.install_in_venv(wheel, tmp_path / "outer")
  outer_python = os.path.join(outer_bin, "python")
  outer_site = subprocess.run([outer_python, "-c", "import site; print(site.getsitepackages()[0])"],
                              capture_output=True, text=True, check=True).stdout.strip()
  with open(os.path.join(outer_site, "only_in_the_outer_venv.py"), "w", encoding="utf-8") as f:
    f.write("")
  make_inner = (f"import sys; sys.path.insert(0, {os.path.join(REPO_ROOT, 'tests')!r}); "
                "import installed_package; "
                f"print(installed_package.install_in_venv({wheel!r}, {str(tmp_path / 'inner')!r}))")
  made = subprocess.run([outer_python, "-c", make_inner], cwd=tmp_path, capture_output=True,
                        text=True, timeout=900)
  assert made.returncode == 0, made.stderr[-3000:]
  inner_python = os.path.join(made.stdout.split()[-1], "python")
  where = subprocess.run(
      [inner_python, "-c", "import albert_tf, only_in_the_outer_venv as m; "
       "print(albert_tf.__file__); print(m.__file__)"],
      cwd=tmp_path, capture_output=True, text=True, timeout=300)
  assert where.returncode == 0, where.stderr[-2000:]
  albert_tf_file, module_file = where.stdout.split()
  assert albert_tf_file.startswith(str(tmp_path / "inner")), albert_tf_file
  assert module_file == os.path.join(outer_site, "only_in_the_outer_venv.py"), module_file
