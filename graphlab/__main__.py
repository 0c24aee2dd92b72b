"""`python -m graphlab` is the same as the `graphlab` command."""

import sys

from .cli import main

sys.exit(main())
