"""Graph cleaning: Dropout/Identity and no-op elimination, redundant Transpose and Reshape
chains, symbolic-dim specialization, CSE and dead code.
"""
