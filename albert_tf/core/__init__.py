"""The plumbing every layer above stands on, and none of it imports anything above it.

errors (the one-line error types), io (local or any TF file system, atomic writes), config
(AlbertConfig), settings (the jobs' typed settings), cli and common_flags (how a binary parses its
flags and reports a refusal), startup (TensorFlow's start-up notices), import_hooks, hardware
(what this CPU has). Nothing here imports TensorFlow at import time, so the data tools run
without it.
"""
