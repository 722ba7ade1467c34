"""The documentation site builds: `mkdocs build --strict` (mkdocs.yml: mkdocs-material, the API
reference from the docstrings by mkdocstrings) exits 0, with the topic pages and an API page
that shows the docstrings."""

import os
import subprocess
import sys

from helpers import REPO_ROOT


def test_site_builds_strictly_with_pages_and_api_reference(tmp_path):
  site = tmp_path / "site"
  result = subprocess.run(
      [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
      env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
  assert result.returncode == 0, result.stderr[-4000:]
  for page in ("index.html", "pretraining/index.html", "fine-tuning/index.html",
               "exports/index.html", "portable/index.html", "variants/index.html",
               "api/index.html"):
    assert (site / page).is_file(), page
  with open(site / "portable" / "index.html", encoding="utf-8") as f:
    assert "ai_edge_litert" in f.read()
  with open(site / "api" / "index.html", encoding="utf-8") as f:
    api = f.read()
  # AlbertModel's and load_checkpoint's docstrings, rendered from albert_tf's sources.
  assert "The ALBERT encoder: factorized embeddings" in api
  assert "load_checkpoint" in api and "AlbertConfig" in api
  # The doctests are shown as code (docs/doctest_blocks.py), not as text.
  # (Pygments' prompt token: a doctest read as Markdown text has no such span.)
  assert '<span class="gp">&gt;&gt;&gt; </span>' in api
