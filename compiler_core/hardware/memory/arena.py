"""Offsets in one arena for buffers with known lifetimes: the offline planning problem.

Each buffer is live over the steps [first, last] (inclusive) and needs `size` bytes; two
buffers live at a common step may not share a byte. Finding the smallest arena is NP-hard
(dynamic storage allocation), so planners use heuristics. This one is the greedy-by-size
planner of TFLite (Pisarchyk & Lee, "Efficient Memory Management for Deep Neural Net
Inference", 2020) plus a short repair loop:
1. take the buffers largest first (equal sizes: the longest-lived first) and put each into the
   smallest gap (best fit) between the already placed buffers whose lifetimes overlap its
   own, or on top of them when no gap fits;
2. the buffers that reach the peak were usually squeezed out by smaller-gapped neighbours:
   place them first and run step 1 again, keeping the best plan, until the plan meets the lower
   bound or REPAIR_ROUNDS have passed;
3. if the plan still misses the bound, place the buffers once more in the order they come to
   life (best fit again): on long chains of similar sizes, such as a quantized network's
   codes beside their float twins, size order strands a large buffer above a gap that the
   order of first use fills.  The smaller plan wins.

No arena can be smaller than the bytes live at its busiest step (`lower_bound`), which is how
a plan's quality is judged.
"""

from __future__ import annotations

from dataclasses import dataclass

REPAIR_ROUNDS = 16


@dataclass(frozen=True)
class Interval:
    """A buffer to place: `size` bytes live from step `first` to step `last` inclusive."""

    key: str
    size: int
    first: int
    last: int

    def overlaps(self, other: "Interval") -> bool:
        return self.first <= other.last and other.first <= self.last


def assign_offsets(buffers: list[Interval],
                   repair_rounds: int = REPAIR_ROUNDS) -> dict[str, int]:
    """key -> offset: greedy by size with best-fit gaps, repaired (see the module docstring).

    ``repair_rounds=1`` is TFLite's plain greedy by size (no repair, no second order).
    """
    order = sorted(buffers, key=lambda b: (-b.size, b.first - b.last, b.key))
    bound = lower_bound(buffers)
    promoted: dict[str, Interval] = {}
    best: dict[str, int] = {}
    best_peak = None
    for _ in range(max(1, repair_rounds)):
        offsets = _place(list(promoted.values())
                         + [b for b in order if b.key not in promoted])
        peak = _peak(buffers, offsets)
        if best_peak is None or peak < best_peak:
            best, best_peak = offsets, peak
        if peak <= bound:
            break
        offenders = [b for b in order
                     if offsets[b.key] + b.size == peak and b.key not in promoted]
        if not offenders:
            break
        promoted.update((b.key, b) for b in offenders)
    if repair_rounds > 1 and best_peak is not None and best_peak > bound:
        in_order_of_use = _place(sorted(buffers, key=lambda b: (b.first, -b.size, b.key)))
        if _peak(buffers, in_order_of_use) < best_peak:
            best = in_order_of_use
    return best


def _place(order: list[Interval]) -> dict[str, int]:
    """Best fit, in the given order."""
    placed: list[tuple[int, Interval]] = []
    offsets: dict[str, int] = {}
    for buffer in order:
        neighbours = sorted(((offset, other) for offset, other in placed
                             if other.overlaps(buffer)), key=lambda pair: pair[0])
        best_offset, best_gap = None, None
        top = 0
        for offset, other in neighbours:
            gap = offset - top
            if gap >= buffer.size and (best_gap is None or gap < best_gap):
                best_offset, best_gap = top, gap
            top = max(top, offset + other.size)
        offset = top if best_offset is None else best_offset
        offsets[buffer.key] = offset
        placed.append((offset, buffer))
    return offsets


def _peak(buffers: list[Interval], offsets: dict[str, int]) -> int:
    return max((offsets[b.key] + b.size for b in buffers), default=0)


def live_bytes(buffers: list[Interval], steps: int | None = None) -> list[int]:
    """Bytes live at each step 0 .. steps - 1 (default: up to the last buffer's last step)."""
    if steps is None:
        steps = max((b.last + 1 for b in buffers), default=0)
    change = [0] * (steps + 1)
    for buffer in buffers:
        change[buffer.first] += buffer.size
        change[buffer.last + 1] -= buffer.size
    live, running = [], 0
    for step in range(steps):
        running += change[step]
        live.append(running)
    return live


def lower_bound(buffers: list[Interval]) -> int:
    """The most bytes live at any one step: no placement can use less."""
    return max(live_bytes(buffers), default=0)
