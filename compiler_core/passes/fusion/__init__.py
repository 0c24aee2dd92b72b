"""Operator fusion: attention, skip-LayerNorm, linear + bias + activation, sibling MatMuls
(horizontal) and element-wise chains.
"""
