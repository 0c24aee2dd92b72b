"""GraphLab's compiler core: IR, pattern language, passes, cost models and simulators.

This package is a library: it never imports UI code, so a notebook or another tool can use it.
"""
