"""A griffe extension for the API reference (mkdocs.yml): the docstrings' doctests, written after
an `Example:` line at the docstring's own indentation (so that `python -m doctest` and
tests/repo/test_doctests.py read them), are shown as code, not as Markdown text (where `x[:2]`
followed by `['a', 'b']` would read as a link reference)."""

import re

import griffe

_PROMPT = re.compile(r"^(>>>|\.\.\.)( |$)")


class DoctestBlocks(griffe.Extension):

  def on_instance(self, *, obj, **kwargs):
    docstring = obj.docstring
    if docstring is None or ">>>" not in docstring.value:
      return
    out, in_block = [], False
    for line in docstring.value.splitlines():
      if _PROMPT.match(line) and not in_block:
        out.append("```pycon")
        in_block = True
      elif in_block and not line.strip():
        out.append("```")
        in_block = False
      out.append(line)
    if in_block:
      out.append("```")
    docstring.value = "\n".join(out)
