"""Is a region worth offloading?  The roofline on both sides of the link, and the link itself.

The rule, kept simple so a student can redo it by hand:

    offload  if  accelerator time + transfer time  <  CPU time

- accelerator time: the region as one fused kernel on the target's roofline — its FLOPs at
  the target's peak for the region's dtype, and only the bytes crossing the region's boundary
  (weights included) at the target's memory bandwidth;
- transfer time: the run-time tensors crossing the cut (inputs the CPU side produces,
  results the CPU side or the caller reads) over the host link; weights live on the chip;
- CPU time: the region's ops one after another on the host's roofline (float32 peak, memory
  bandwidth).
A few cheap ops between two unsupported ones lose: shipping their data costs more than the
CPU takes to compute them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...hardware.cost import compute_dtype, node_bytes, node_flops
from ...hardware.roofline import estimate_seconds
from ...hardware.targets import Host, Target
from ...hardware.tensor_sizes import SizeResolver
from ...ir import Node
from ..framework.rewrite import boundary


@dataclass(frozen=True)
class OffloadEstimate:
    """The three times of the rule (seconds) and the bytes crossing the cut."""

    accelerator_seconds: float
    transfer_bytes: int
    transfer_seconds: float
    cpu_seconds: float

    @property
    def worth_it(self) -> bool:
        return self.accelerator_seconds + self.transfer_seconds < self.cpu_seconds

    def describe(self) -> str:
        return (f"accelerator {_us(self.accelerator_seconds)} + transfer of "
                f"{self.transfer_bytes:,} bytes {_us(self.transfer_seconds)} vs CPU "
                f"{_us(self.cpu_seconds)}")


def transfer_bytes(region: list[Node], sizes: SizeResolver) -> int:
    """Bytes of the run-time tensors crossing the region's boundary (weights stay on chip)."""
    inputs, outputs = boundary(region)
    return sum(sizes.nbytes(v) or 0 for v in inputs + outputs if not v.is_constant)


def estimate_offload(region: list[Node], target: Target, host: Host,
                     sizes: SizeResolver) -> OffloadEstimate:
    flops = [node_flops(node, sizes) or 0 for node in region]
    inputs, outputs = boundary(region)
    fused_bytes = sum(sizes.nbytes(v) or 0 for v in inputs + outputs)
    dominant = max(zip(flops, range(len(region))))[1]
    accelerator = estimate_seconds(sum(flops), fused_bytes, target,
                                   compute_dtype(region[dominant]))
    crossing = transfer_bytes(region, sizes)
    cpu = sum(host.seconds(f, node_bytes(node, sizes) or 0) for f, node in zip(flops, region))
    return OffloadEstimate(accelerator, crossing, crossing / host.link_bytes_per_s, cpu)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} us"
