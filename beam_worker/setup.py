"""Packages albert_tf for Apache Beam workers: Dataflow builds and installs it on each worker with
`--setup_file=./beam_worker/setup.py` (see README, "Corpus scale"). Only what
create_pretraining_data needs is installed there; it runs without TensorFlow. `pip install .`
at the repository root (pyproject.toml) is the full package; this directory has its own setup
because Beam runs `setup.py sdist` where the file lies. albert_tf/ and requirements.txt here are
links to the repository's, so versions are read from requirements.txt: the workers run what the
tests ran."""

import os

import setuptools

# What create_pretraining_data imports (apache-beam itself is already on a Beam worker).
WORKER_REQUIREMENTS = ("absl-py", "google-crc32c", "numpy", "sentencepiece", "jieba")


def pinned(names):
  path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "requirements.txt")
  with open(path, encoding="utf-8") as f:
    pins = dict(line.strip().split("==", 1) for line in f if "==" in line and line[0] != "#")
  return [f"{name}=={pins[name]}" for name in names]


setuptools.setup(
    name="albert_tf",
    version="0.3.1",
    packages=setuptools.find_packages(include=["albert_tf", "albert_tf.*"]),
    install_requires=pinned(WORKER_REQUIREMENTS),
    python_requires=">=3.11",
)
