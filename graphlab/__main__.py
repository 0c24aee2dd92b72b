"""`python -m graphlab` is the same as the `graphlab` command."""

import sys

from .cli import program

sys.exit(program())
