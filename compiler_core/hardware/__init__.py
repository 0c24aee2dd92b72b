"""Hardware models: targets as cited data files, roofline arithmetic, per-op cost, a
systolic-array simulator and a memory planner.

    from compiler_core.hardware import get_target, graph_cost, plan_memory, schedule_gemm
"""

from compiler_core.hardware.cost import CostComparison, GraphCost, OpCost, compare_costs, \
    graph_cost, node_cost
from compiler_core.hardware.gemm_shapes import GemmProblem, gemm_problems, has_gemm
from compiler_core.hardware.memory import MemoryPlan, plan_memory
from compiler_core.hardware.node_schedule import schedule_node
from compiler_core.hardware.roofline import attainable_ops_per_s, classify, estimate_seconds, \
    ridge_point
from compiler_core.hardware.systolic import schedule_conv, schedule_gemm
from compiler_core.hardware.targets import DEFAULT_TARGET, Target, TargetError, get_target, \
    list_targets

__all__ = [
    "DEFAULT_TARGET", "CostComparison", "GemmProblem", "GraphCost", "MemoryPlan", "OpCost",
    "Target", "TargetError", "attainable_ops_per_s", "classify", "compare_costs",
    "estimate_seconds", "gemm_problems", "get_target", "graph_cost", "has_gemm",
    "list_targets", "node_cost", "plan_memory", "ridge_point", "schedule_conv",
    "schedule_gemm", "schedule_node",
]
