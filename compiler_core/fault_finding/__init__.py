"""Where a model goes wrong: the first wrong value of two models, and failing models shrunk.

    from compiler_core.fault_finding import bisect_models, by_alignment, reduce_model
    report = bisect_models(a, b, by_alignment(a, b), inputs)   # report.first, report.values
    reduction = reduce_model(model_proto, feed, failure_of("crash", data, feed))

``counterparts`` pairs the values of two models (provenance, the model diff's alignment),
``exposed`` runs models with those values as outputs, ``bisect`` compares them in order;
``subgraph`` writes the reducer's candidates, ``failures`` says whether one still fails,
``reduce`` searches, ``repro_script`` writes the reproduction; ``sides`` makes the models a
bisection compares (a pass's input and output, a pipeline's, onnxruntime's).
"""

from .bisect import BisectReport, Divergence, PairError, bisect_models
from .counterparts import Counterpart, by_alignment, by_provenance
from .failures import KINDS, Failure, failure_of
from .reduce import Reduction, reduce_model
from .repro_script import reproduction_script

__all__ = ["KINDS", "BisectReport", "Counterpart", "Divergence", "Failure", "PairError",
           "Reduction", "bisect_models", "by_alignment", "by_provenance", "failure_of",
           "reduce_model", "reproduction_script"]
