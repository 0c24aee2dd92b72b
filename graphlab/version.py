"""The package version, apart from graphlab/__init__ (which reaches the notebook API), so a
module that prints it imports nothing else."""

__version__ = "0.1.0"
