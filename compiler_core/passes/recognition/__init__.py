"""Recognition: written-out LayerNorm and GELU become the ops they compute.
"""
