"""An mkdocs hook (mkdocs.yml): the build prints its own lines only.

mkdocs-material's search plugin segments the Chinese page with jieba when jieba is installed (the
`chinese` extra), and jieba logs its dictionary loading ("Building prefix dict ...", "Loading
model cost ...") to stderr at DEBUG on a handler of its own. The plugin imports jieba before the
hooks load, and jieba's import sets its logger to DEBUG: its level is set here, after that.
"""

import logging


def on_config(config):
  logging.getLogger("jieba").setLevel(logging.WARNING)
  return config
