"""Shared test set-up.

The repository root goes at the *end* of the import path: test helpers can import the
benchmark scripts' generators (``benchmarks.*``), while ``graphlab`` and ``compiler_core``
still come from the installed package, so the suite tests what users install.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.append(ROOT)
