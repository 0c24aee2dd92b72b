"""Hardware models: targets as cited data files, roofline arithmetic, per-op cost, a
systolic-array simulator and a memory planner.

    from compiler_core.hardware import get_target, graph_cost, plan_memory, schedule_gemm

Each name is imported from its module when first asked for (``lazy_exports``): a pass that
reads only the targets does not import the simulator and the planner with them.
"""

from compiler_core.lazy_exports import lazy_exports

_MODULE_OF = {
    "CostComparison": "cost", "GraphCost": "cost", "OpCost": "cost", "compare_costs": "cost",
    "graph_cost": "cost", "node_cost": "cost",
    "GemmProblem": "gemm_shapes", "gemm_problems": "gemm_shapes", "has_gemm": "gemm_shapes",
    "MemoryPlan": "memory", "plan_memory": "memory",
    "schedule_node": "node_schedule",
    "attainable_ops_per_s": "roofline", "classify": "roofline", "estimate_seconds": "roofline",
    "ridge_point": "roofline",
    "schedule_conv": "systolic", "schedule_gemm": "systolic",
    "DEFAULT_TARGET": "targets", "Target": "targets", "TargetError": "targets",
    "get_target": "targets", "list_targets": "targets",
}

__all__ = sorted(_MODULE_OF)
__getattr__ = lazy_exports(__name__, _MODULE_OF, globals())
