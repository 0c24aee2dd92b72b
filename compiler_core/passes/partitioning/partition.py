"""The partition pass: accelerator regions become AcceleratorPartition nodes, the rest stays on
the host CPU."""

from __future__ import annotations

from collections import Counter

from ...hardware.targets import Target, get_target
from ...hardware.tensor_sizes import SizeResolver
from ...ir import Graph, Node
from ...wording import plural
from ..framework.base import Pass, PassContext, PassResult
from ..framework.pass_registry import register_pass
from ..framework.rewrite import fuse_nodes, open_fused_node
from .benefit import OffloadEstimate, estimate_offload, transfer_bytes
from .regions import grow_regions
from .support import unsupported_reason
from .unfuse import worth_opening

PARTITION_OP = "AcceleratorPartition"
RULE = "partition"


@register_pass
class Partition(Pass):
    """Split the model between the accelerator and the host CPU: each maximal connected region
    of ops the target runs becomes one AcceleratorPartition node (its body is the region), and
    every other op stays on the CPU with the reason.

    An accelerator runs only some ops (its compiler's supported-operator list), only some
    element types, and only fixed tensor sizes; the rest falls back to the CPU, and every
    tensor crossing between the two pays for the trip over the link.  So the compiler groups
    supported ops into regions as large as possible — without creating a cycle, which would
    make a partition wait for its own output — and offloads a region only if its estimated
    time on the chip plus the transfer of its inputs and outputs beats running it on the CPU.
    A lone Add between two CPU ops usually loses that race.
    """

    name = "partition"
    family = "partitioning"
    reads_target = True
    needs_fixed_sizes = True

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        target = get_target(ctx.target)
        sizes = SizeResolver(ctx.bindings)
        result = PassResult()
        supported = _place_nodes(graph, ctx, target, result)
        chosen: list[tuple[list[Node], OffloadEstimate | None]] = []
        for region in grow_regions(graph, supported):
            estimate = None
            if target.host is not None:
                estimate = estimate_offload(region, target, target.host, sizes)
                if not estimate.worth_it:
                    _decline_region(result, region, (
                        f"stays on the CPU: its region of {plural(len(region), 'op')} is not worth "
                        f"offloading, the transfer costs more than it saves "
                        f"({estimate.describe()})"))
                    continue
            chosen.append((region, estimate))
        crossing = 0
        for region, estimate in chosen:
            moved = transfer_bytes(region, sizes)
            if fuse_nodes(graph, ctx, region, PARTITION_OP, RULE,
                          attrs={"target": target.name}) is None:
                _decline_region(result, region, "stays on the CPU: fused, its region would "
                                                "form a cycle through an earlier partition")
                continue
            result.rewrites += 1
            crossing += moved
            kinds = Counter(node.op_type for node in region)
            result.notes.append(
                f"partition {result.rewrites}: {plural(len(region), 'op')} ("
                + ", ".join(f"{n} {op}" for op, n in kinds.most_common())
                + f"), {moved:,} bytes cross its boundary"
                + (f"; {estimate.describe()}" if estimate is not None else ""))
        offloaded = sum(len(region) for region, _ in chosen)
        stay = "stays" if len(result.declined) == 1 else "stay"
        result.notes.insert(0, f"{plural(result.rewrites, 'partition')} on {target.name} "
                               f"holding {plural(offloaded, 'op')}; "
                               f"{plural(len(result.declined), 'op')} {stay} on the CPU; "
                               f"{crossing:,} bytes cross the cuts per run")
        if target.host is None:
            result.notes.append(f"{target.name} describes no host CPU, so every supported "
                                f"region is offloaded without weighing the transfer")
        return result


def _place_nodes(graph: Graph, ctx: PassContext, target: Target, result: PassResult
                 ) -> set[int]:
    """Ids of the nodes the target can run; a decline for each other one.  Fused nodes the
    target can run only in part are opened first (see ``unfuse``)."""
    supported: set[int] = set()
    opened: Counter = Counter()
    pending = list(graph.nodes)
    while pending:
        node = pending.pop(0)
        if node.op_type == "Constant" and node.domain == "":
            continue  # compile-time data, placed wherever it is read
        if worth_opening(node, target):
            opened[node.op_type] += 1
            pending[:0] = open_fused_node(graph, ctx, node)
            continue
        reason = unsupported_reason(node, target)
        if reason is None:
            supported.add(node.id)
        else:
            result.decline(node, RULE, f"stays on the CPU: {reason}")
    if opened:
        result.notes.append("opened fused nodes the accelerator can run only in part, so "
                            "their Conv/Gemm/MatMul can go to it: " +
                            ", ".join(f"{n} {op}" for op, n in opened.most_common()))
    return supported


def _decline_region(result: PassResult, region: list[Node], reason: str) -> None:
    for node in region:
        result.decline(node, RULE, reason)
