"""The checkout's root and the tests' data folder, for test files at any depth under tests/.
Imports nothing heavy: tests that must not load TensorFlow use it instead of helpers.py."""

import os

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(TESTS)
TESTDATA = os.path.join(TESTS, "testdata")
