"""The documentation site builds: `mkdocs build --strict` (mkdocs.yml: mkdocs-material, the API
reference from the docstrings by mkdocstrings) exits 0, with the topic pages and an API page
that shows the docstrings."""

import os
import re
import subprocess
import sys
import tomllib

import yaml

from helpers import REPO_ROOT


def _read(*path):
  with open(os.path.join(REPO_ROOT, *path), encoding="utf-8") as f:
    return f.read()


def _section(text, heading):
  """The lines of a Markdown document from `heading` (a `## ` line) to the next one."""
  start = text.index(f"\n{heading}\n")
  end = text.find("\n## ", start + 1)
  return text[start:end if end >= 0 else len(text)]


def _nav_pages(nav):
  for item in nav:
    value = next(iter(item.values())) if isinstance(item, dict) else item
    if isinstance(value, list):
      yield from _nav_pages(value)
    else:
      yield value


def test_command_lists_name_every_console_script():
  """README's "As a package" and the docs home's "The package" list the `albert-*` commands of
  pyproject.toml's [project.scripts], every one and no other."""
  scripts = set(tomllib.loads(_read("pyproject.toml"))["project"]["scripts"])
  assert len(scripts) > 10 and all(s.startswith("albert-") for s in scripts), scripts
  for document, heading in (("README.md", "## As a package"),
                            (os.path.join("docs", "index.md"), "## The package")):
    listed = set(re.findall(r"`(albert-[a-z0-9-]+)`", _section(_read(document), heading)))
    assert listed == scripts, (document, "missing:", sorted(scripts - listed),
                               "not a command:", sorted(listed - scripts))


def test_page_lists_link_every_page_of_the_nav():
  """The docs home's "Pages" list and the README's "Read next" table link every page of
  mkdocs.yml's nav (the home page aside)."""
  with open(os.path.join(REPO_ROOT, "mkdocs.yml"), encoding="utf-8") as f:
    nav = set(_nav_pages(yaml.safe_load(f)["nav"])) - {"index.md"}
  assert len(nav) > 10, nav
  pages = set(re.findall(r"\]\(([a-z0-9-]+\.md)\)", _section(_read("docs", "index.md"),
                                                            "## Pages")))
  assert nav <= pages, ("docs/index.md's Pages list lacks", sorted(nav - pages))
  read_next = set(re.findall(r"\]\(docs/([a-z0-9-]+\.md)\)",
                             _section(_read("README.md"), "## Read next")))
  assert nav <= read_next, ("README.md's Read next table lacks", sorted(nav - read_next))


def test_site_builds_strictly_with_pages_and_api_reference(tmp_path):
  site = tmp_path / "site"
  result = subprocess.run(
      [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
      cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
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
