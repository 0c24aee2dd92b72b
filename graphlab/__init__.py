"""GraphLab: the CLI and the Dash app that show what each compiler pass does to a model.

All compiler logic lives in ``compiler_core``; this package only renders its records.
"""

__version__ = "0.1.0"
