"""Layout conversion: convolution regions to channels-last (NHWC).
"""
