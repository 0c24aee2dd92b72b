"""Heterogeneous partitioning: which ops run on the accelerator and which on the host CPU."""

from . import partition  # noqa: F401 - registers partition
