"""Cycle costs for selection, from the functions the device model charges.

A plan's kernel cycles are `device.kernels.kernel_cycles` of the very call the
lowering emits (same symbol, same scalars), on the tiles where it costs most, so the
selector and the model agree on them. A conversion's cost is estimated from the same
functions and the exchange model: when it gathers, one phase per round of the concurrent
gather (`passes/operators/gather.py`), or per input shard where the gather stays serial.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from device import kernels
from device.model import cycles as device_cycles
from device.model.kernel_shards import (
    ROUND_SCALARS,
    round_boxes,
    round_sources,
    round_takers,
)
from device.model.view_steps import view_step
from device.model.view_steps import view_words as cached_view_words
from device.target import WORD_BYTES, Target
from ipu_dialects import mid
from passes.operators.base import (
    Assumed,
    SelectionContext,
    format_of,
    tensor_type,
)
from passes.operators.formats import geometry_of, shard_words, split_format
from passes.operators.gather import GatherRounds, piece_plan, plan_rounds
from planning.plan_reasons import MemoryReason
from planning.shard_geometry import ShardGeometry, geometry
from planning.target_memo import TargetMemo


def plan_kernel_cycles(symbol: str, types: Sequence[TensorType], target: Target,
                       extra: Sequence[int] = ()) -> int:
    """Cycles of one call of a descriptor kernel on `types` (out first, then the operands in
    pointer order), after its named scalars `extra`: the device model's own cycle function
    on the tiles where it costs most (the first and the last shard)."""
    return shard_kernel_cycles(symbol, [geometry_of(t) for t in types], target, extra)


def shard_kernel_cycles(symbol: str, shards: Sequence[ShardGeometry], target: Target,
                        extra: Sequence[int] = ()) -> int:
    """`plan_kernel_cycles` of the pointers' descriptors as geometries: also a scratch
    buffer's (a layer norm's statistics), which has no mid type."""
    scalars = [*extra, *(w for shard in shards for w in shard.encode())]
    out = shards[0]
    return max(kernels.kernel_cycles(symbol, scalars, tile, target)
               for tile in {out.first_tile, out.tile_stop - 1})


def conversion_cycles(value: SSAValue, wanted: mid.TensorFormatAttr,
                      ctx: SelectionContext, assumed: Assumed | None = None) -> int:
    """Estimated cycles to bring `value` (stored as `assumed` says, if it does) into format
    `wanted` (0 when it already is, when an earlier consumer's conversion made it (`ctx.converted`),
    or when the host writes it straight into `wanted`)."""
    if wanted in ctx.converted.get(value, {}) and value not in (assumed or {}):
        return 0
    value_type = tensor_type(value)
    have = format_of(value, assumed or {})
    if have is None:
        if ctx.inputs == mid.InputPolicy.CONSUMER:
            return 0
        have = split_format(value_type.get_shape(), None, ctx.tiles, value_type, ctx.indivisible)
    if have == wanted:
        return 0
    src = TensorType(value_type.get_element_type(), value_type.get_shape(), have)
    dst = TensorType(value_type.get_element_type(), value_type.get_shape(), wanted)
    return conversion_type_cycles(src, dst, ctx.target)


def conversion_type_cycles(src: TensorType, dst: TensorType, target: Target) -> int:
    """What converting a `src` value into `dst` costs, as the device model charges the
    conversion's steps; remembered (selection asks the same conversions of every candidate,
    and graph-to-mid lowers a function more than once)."""
    return KNOWN_CONVERSIONS.get((src, dst), target,
                                 lambda: priced_conversion(src, dst, target))


# `conversion_type_cycles` by source type, destination type and target
KNOWN_CONVERSIONS: TargetMemo[int] = TargetMemo(8192)


def priced_conversion(src: TensorType, dst: TensorType, target: Target) -> int:
    from passes.operators.conversions import CONVERT_KERNEL, GATHER_KERNEL, is_local

    if is_local(src, dst):
        return plan_kernel_cycles(CONVERT_KERNEL, [dst, src], target)
    src_fmt, dst_fmt = src.encoding, dst.encoding
    assert isinstance(src_fmt, mid.TensorFormatAttr) and isinstance(dst_fmt, mid.TensorFormatAttr)
    a, b = geometry(src.get_shape(), src_fmt), geometry(dst.get_shape(), dst_fmt)
    sources, receivers = a.partition_count, b.tiles_used
    words = shard_words(src)
    # the gather writes real elements only: a padded result is zeroed first (`lower_gather`)
    zero = (device_cycles.fill_zero_cycles(shard_words(dst), target)
            if b.padded_shape != b.shape else 0)
    pieces = piece_plan(a, b)
    if pieces is not None:  # a phase per piece, no take
        return zero + round_phases_cycles(pieces, words, target)
    rounds = plan_rounds(a, b)
    if rounds is not None and rounds.takes_once:  # each round's take as the model charges it
        return (zero + round_phases_cycles(rounds, words, target)
                + round_takes_cycles(rounds, b, a, target))
    # the serial gather's phase: to the farthest of the tiles the shards leave from and
    # arrive at (all from tile 0 on)
    span = max(a.first_tile + sources, b.tile_stop)
    latency = target.max_latency(span) if receivers > 1 or a.first_tile != b.first_tile else 0
    phase = device_cycles.exchange_step_cycles(words + latency, target)
    copy = device_cycles.copy_cycles(words * WORD_BYTES, target)
    take = plan_kernel_cycles(GATHER_KERNEL, [dst, src], target, extra=(a.first_tile,))
    return zero + gather_cycles(rounds, sources, phase, copy, take, target, words)


def round_takes_cycles(rounds: GatherRounds, out: ShardGeometry, staged: ShardGeometry,
                       target: Target, view: tuple[int, ...] | None = None) -> int:
    """The round-kernel steps of a gather that takes once per round (`ConcurrentGather`: one
    per round on the result tiles, from the received shard, and one for the copiers' own
    shards), each its slowest tile's call as the model charges it (`gather_round`, or with
    `view` the view kernel's words `gather_view_round`): every round's moves at once, from
    the model's own move functions."""
    steps = rounds.round_steps()
    first_source, first_dest = rounds.round_maps()
    tiles = np.arange(out.first_tile, out.tile_stop, dtype=np.int64)
    r = range(rounds.rounds)
    starts = [np.repeat([m.eval([i], [])[0] for i in r], tiles.size) for m in (first_source,
                                                                              first_dest)]
    scalars: dict = dict(zip(ROUND_SCALARS, [*starts, *steps], strict=True))
    moved = round_moves(scalars, np.tile(tiles, rounds.rounds), out, staged, view)
    most = moved.reshape(rounds.rounds, tiles.size).max(axis=1)
    total = sum(moved_cycles(int(m), out, staged, target, view) for m in most)
    total += rounds.rounds * target.round_select_cycles
    if rounds.copiers:
        copiers = np.asarray([rounds.tile_base + t for t in rounds.copiers], np.int64)
        own = dict(zip(ROUND_SCALARS, rounds.own_scalars(), strict=True))
        total += (moved_cycles(int(round_moves(own, copiers, out, staged, view).max()), out,
                               staged, target, view) + target.round_select_cycles)
    return total


def round_moves(scalars: dict, tiles: np.ndarray, out: ShardGeometry, staged: ShardGeometry,
                view: tuple[int, ...] | None) -> np.ndarray:
    """The elements each of `tiles` moves in a round kernel's call (0 where it takes
    nothing); `scalars` may hold a first source and destination per tile."""
    if view is None:
        return round_boxes(out, staged, scalars, tiles).moved
    sources = round_sources(scalars, tiles)
    takes = round_takers(scalars, tiles, sources)
    moved = np.zeros(tiles.size, np.int64)
    if takes.any():
        view_out, view_src, index_view = cached_view_words(view)
        moved[takes] = view_step(view_out, view_src, index_view, tiles[takes],
                                 sources[takes]).moved
    return moved


def moved_cycles(elements: int, out: ShardGeometry, staged: ShardGeometry, target: Target,
                 view: tuple[int, ...] | None) -> int:
    if view is None:
        return device_cycles.gather_moved_cycles(elements, out, staged, target)
    view_out, view_src, _ = cached_view_words(view)
    return device_cycles.view_moved_cycles(elements, view_out, view_src, target)


def round_phases_cycles(rounds: GatherRounds, words: int, target: Target) -> int:
    """The exchange phases of a concurrent gather's rounds as the device model charges them:
    each the words and its latest arrival (`GatherRounds.round_arrivals`), a sync each."""
    if not rounds.has_traffic:
        return 0
    return sum(device_cycles.exchange_step_cycles(words + int(arrival), target)
               for arrival in rounds.round_arrivals(target) if arrival >= 0)


def gather_cycles(rounds: GatherRounds | None, sources: int, phase: int, copy: int,
                  take: int, target: Target, words: int) -> int:
    """A gather of `sources` input shards of `words` words, each serial phase, copy and
    take costing as given: the concurrent gather of `rounds` (`passes/operators/gather.py`:
    a phase per round, a copy where a sender holds elements of its own shard, a take per
    sent shard; or, where each tile finds its shard from its id, `GatherRounds.takes_once`,
    a take per round and one for the copiers' own shards), or with None the serial one (a
    phase, copy and take per input shard)."""
    if rounds is None:
        return sources * (phase + copy + take)
    phases = round_phases_cycles(rounds, words, target)
    if rounds.takes_once:  # a take per round, and the copiers' own shards in one call
        takes = rounds.rounds + (1 if rounds.copiers else 0)
        return phases + takes * (take + target.round_select_cycles)
    sent = rounds.sent_shards()
    copies = int(np.isin(sent + rounds.sender_offset, rounds.copiers).sum())
    return phases + copies * copy + sent.size * take


def shard_memory_reason(types: Sequence[TensorType], target: Target,
                        slot: int = 0) -> str | None:
    """Why a plan whose output and operands have these formats cannot run (None: it may): a
    tile holding a shard of each (a plan's formats share their tiles), and the `slot` bytes a
    gather stages an operand's shard in, needs more bytes than tile memory has outside the
    code region. What else is live there is the placement's concern (`place-memory`); a plan
    that cannot hold even its own shards is never a candidate."""
    needed = slot
    for value_type in types:
        needed += geometry_of(value_type).shard_bytes()
    available = target.usable_bytes
    if needed <= available:
        return None
    staged = f" (a {slot}-byte gather slot included)" if slot else ""
    return MemoryReason(f"a tile holding its shards needs {needed} bytes{staged}, tile memory "
                        f"holds {available} outside the code region")
