"""The memory planner: tensor lifetimes, in-place reuse and offsets in one arena.

    from compiler_core.hardware.memory import plan_memory
    plan = plan_memory(graph, bindings={"batch": 1})
    plan.peak_bytes, plan.lower_bound_bytes, to_json(plan)["buffers"]
"""

from compiler_core.hardware.memory.plan import DEFAULT_ALIGNMENT, BufferRecord, MemoryPlan, \
    plan_memory

__all__ = ["DEFAULT_ALIGNMENT", "BufferRecord", "MemoryPlan", "plan_memory"]
