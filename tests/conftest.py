"""Fixtures shared by several test files."""

import pytest

import installed_package


@pytest.fixture(scope="session")
def installed_bin(tmp_path_factory):
  """bin/ of a venv holding this checkout's wheel (tests/installed_package.py), built once."""
  root = tmp_path_factory.mktemp("installed")
  wheel = installed_package.build_wheel(root / "dist")
  return installed_package.install_in_venv(wheel, root / "venv")
