"""tools/cpu_check.py under its earlier name: the AMX check, which cpu_check generalised to any
x86 CPU. The same flags, bars and lines (the limits are measured on the CPU it runs on); see
tools/cpu_check.py.

  python3 tools/amx_check.py --hf_python=/tmp/hfvenv/bin/python --kerashub_python=python3
"""

import cpu_check  # tools/cpu_check.py

from albert_tf.core import cli

if __name__ == "__main__":
  cpu_check.define_flags()
  cli.run(cpu_check.main)
