"""A near miss to learn from: load the teach_conv_bn sample.  Its second Conv's output is
also read by a Relu outside the pattern, so the BatchNormalization cannot fold into it."""


def conv_bn(x):
    """A Conv whose output only a BatchNormalization reads: the BN folds into the Conv."""
    conv = Conv(x, const(), optional(const()))
    return BatchNormalization(conv, const(), const(), const(), const())
