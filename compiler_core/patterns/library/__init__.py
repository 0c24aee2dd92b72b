"""Sub-patterns that several rules share; a pattern one rule uses lives in that rule's module.

``common``: small helpers (a scalar constant, an attribute with its default); ``normalization``:
the pieces the LayerNorm, RMSNorm and skip-normalization rules are built from.
"""
