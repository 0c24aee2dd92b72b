"""Folding: constants, BatchNorm into the layer before it, a normalization's scale and shift
into the layer after it, zero Pads into the convolution or pooling op reading them.
"""
