"""The concurrent gather of a non-local `mid.rearrange`: rounds of shards sent at once.

Input shard `s` (on tile `s`, replica 0) holds real elements for the result tiles `D(s)`
(its box, the result tile's box and the logical extent meet; `shard_receivers`). Its
elements need only go to `D(s)`, and shards whose receivers differ can travel in the same
exchange phase. `plan_rounds` looks, in NumPy at compile time, for a split of the P shard
indices into R rounds of G groups, with the group index a digit of the shard index whose
`inner` (L, dividing R) less significant shards are rounds:

    s(r, g) = (r // L) * G * L + g * L + r % L

(L = R: groups outer, s = g * R + r; L = 1: groups inner, s = r * G + g; in between, the
group digit sits in the middle: a `[B, 12 x 32, 12 x 64]` GEMM output gathered into rows
has 12 row blocks that can go at once, and they are the middle digit of s = 144 b + 12 i +
j), such that the first tile of `D(s)` is an affine shift `c + ko * (r // L) + ki * (r % L)
+ kg * g` (or, when no such shift matches every shard, `c + kg * g`, the rounds' differences
taken into BASE), and such that, with BASE the union of every `D(s)` moved back by its shift,
no tile receives for two groups of one round (a group's sender among its own destinations
receives nothing; it may receive for another group: full duplex). The group may also be two
digits around the round's (`group_inner` Gi, dividing G):

    s(r, g) = (g // Gi) * R * Gi + r * Gi + g % Gi

with the first destination c + ko * r + ki * (g // Gi) + kg * (g % Gi), each digit of the
group with its own step: a head split's transpose of Q, K or V (`[b, t, h, d]` cut on batch,
row blocks and heads, into `[b, h, t, d]`) sends shard (b, i, h) whole to tile (b, h, i),
and its batches and heads go at once, one round per row block (BERT-base at batch 8: 12
rounds of 96 shards, not 96 of 12); at batch 1 the row blocks and heads are the two digits
and go at once too: shard 12 t + h of `[384, 12, 64]` cut 24 x 12 to tile 24 h + t (one
round of 288, not 12 of 24), and into K's 64-row blocks, 4 row blocks to each, shard
48 q + 12 r + h to tile 24 h + q (4 rounds of 72, not 24 of 12). A shard without real
elements (all padding) takes the shift the formula gives it and is taken by nobody. The
split with the fewest rounds wins, then the one with the smallest BASE. Failing all, one
shard per round to the union of all `D(s)` (shift 0) is a split. Shards past the last one
with real elements (the all-padding tail of a padded cut) are not sent at all.

E.g. on 64 tiles the row-major `[64, 256]` activation (one row per tile) into the grid GEMM's
`amp_left` format (8 tiles: 4 row blocks x 2 column halves): D(s) = {2 (s // 16),
2 (s // 16) + 1}, so s = 16 g + r, 4 groups, shift 2 g, BASE {0, 1}: 16 phases instead of 64.

The lowering (a constant op count, whatever the tile count):

    fill_zero on the result's padding (as the serial gather)
    tile.loop %r = 0 to R:
      tile.exchange shard s(r, g) from tile s(r, g) to the slot on BASE, groups G shift
        SHIFT(r, g)
      gather_round(out, slot) on the result tiles: each from the shard it received
    gather_round(out, input) on the COPIERS: each its own shard's elements

The one take per round needs each tile to find its group from its id (`takes_once`,
`decoders`): group g's destinations are BASE moved by its shift, so with d = t - first_dest(r)
a tile's group is found from its two digits, the inner one (d mod group_span) floordiv
dest_step and the outer one (d mod outer_span) floordiv outer_dest_step (a one-digit group:
the inner digit is g, dest_step = kg, outer_span = 1; a split group: g % Gi with step kg and
g // Gi with step ki). Each span is the digit's extent times its step when BASE spans fewer
tiles than the step; a replicated result's replicas lie a replica's tiles apart, and the span
is then one under which every tile of BASE lies within the step past a multiple of it
(`digit_decoders`, checked on every tile of every window). `gather_round` gets
first_source(r), first_dest(r) (affine in r), source_step = L, dest_step, G, takes_own 0 (a
tile whose source is itself skips the round's take; the copiers take their own shards from
their input after the rounds), group_inner = G, outer_step = 0 (for a split group: source_step
1, group_inner Gi, outer_step R * Gi), group_span, outer_dest_step and outer_span. E.g. a
K-split GEMM weight of the GPT-2-small stack, replicated twice (the replicas 384 tiles
apart), fetched from its spread store: 8 rounds of 144 groups, kg 1, BASE {0, 384}, so
group_span 192 (144 = G * kg would put tile 384 in group 96).
Otherwise the take is in a group loop:

      tile.loop %g = 0 to G:
        copy_words slot <- input on the COPIERS, only on tile s(r, g)
        gather_shard(out, slot) source_tile s(r, g) on the result tiles

G steps a round that each cost a call where they move nothing, and a copy per copier. A
layout op's view gather takes the same two forms (`gather_view_round`, `gather_view`).

COPIERS are the senders whose result shard holds elements of their own shard (when both
formats start at one tile, that tile always is one: shard 0 and result shard 0 both start at
the origin; when their tiles do not meet, there are none): they copy their shard into
their slot, in the iterations where they send, and the split is refused if one of them also
receives for another group in that round (its slot would hold that shard). Every other tile
of `D(s)` received shard `s` in its slot in round r, and a tile outside `D(s)` finds an empty
intersection and reads nothing: so each call reads only what was put there for it.

Tiles. The planning numbers tiles from the lower of the two formats' first tiles (`tile_base`):
shard `s` leaves from tile `sender_offset + s` and result shard `t` is on tile
`receiver_offset + t`, one of the offsets 0 (both 0 when both formats start at tile 0, the
case the examples above describe). The lowering adds `tile_base` back.

Not covered, the serial gather of `conversions.lower_gather` runs: a layout op whose view is
neither one source axis per result axis nor a reshape (`read_ranges` None: what its tiles read
is no box). An irregular structure (no split
whose rounds' receivers are disjoint, e.g. every shard needed on every result tile) takes the
one-shard-per-round split above.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.ir import Operation
from xdsl.ir.affine import AffineExpr, AffineMap

from device.index_views import IndexView, row_major_strides
from device.layouts import to_order
from device.target import WORD_BYTES, Target
from ipu_dialects.tile import (
    BufferOp,
    ExchangeOp,
    KernelOp,
    LoopOp,
    TileSetAttr,
    WorkProvenanceAttr,
)
from passes.operators.tile_maps import scalar_map
from planning.shard_geometry import ShardGeometry

COPY_KERNEL = "copy_words"
# the take of one source shard, and its one-call-per-round form (`GatherRounds.takes_once`)
ROUND_KERNELS = {"gather_shard": "gather_round", "gather_view": "gather_view_round"}


def round_digits(r, rounds: int, inner: int):
    """(r // inner, r % inner) for ints, NumPy arrays or affine exprs; a digit that is always
    0 (inner = 1 or inner = rounds) is the int 0, so no map holds a `floordiv 1`."""
    outer = 0 if inner == rounds else (r if inner == 1 else r // inner)
    return outer, (0 if inner == 1 else (r if inner == rounds else r % inner))


def scaled(term, k: int):
    """`term * k`, without a `* 1` in a map."""
    return term if k == 1 else term * k


def shard_index(r, g, rounds: int, groups: int, inner: int, group_inner: int = 0):
    """The input shard group `g` sends in round `r` (module doc), for ints, NumPy arrays or
    affine exprs; with a `group_inner` (Gi, inner = 1) the group is two digits around the
    round's: s = (g // Gi) * rounds * Gi + r * Gi + g % Gi."""
    if group_inner:  # with one round, s = g (its digits then differ only in their steps)
        return scaled(r, group_inner) + g // group_inner * (rounds * group_inner) + g % group_inner
    outer, low = round_digits(r, rounds, inner)
    terms = [scaled(term, k) for term, k, used in ((outer, groups * inner, inner < rounds),
                                                   (g, inner, groups > 1), (low, 1, inner > 1))
             if used]
    if not terms:
        return r  # one round of one group: shard 0, which r is
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total


@dataclass(frozen=True)
class GatherRounds:
    """A split of the P input shards into `rounds` phases of `groups` concurrent sends."""

    rounds: int
    groups: int
    inner: int  # L: s = (r // L) * groups * L + g * L + r % L (L = rounds: groups outer)
    shift: tuple[int, int, int, int]  # c, ko, ki, kg: group g's first destination tile in
    # round r is c + ko * (r // L) + ki * (r % L) + kg * g; for a split group (group_inner
    # Gi, L = 1) c + ko * r + ki * (g // Gi) + kg * (g % Gi), each digit its own step
    base: tuple[int, ...]  # destination tiles of a group with shift 0
    copiers: tuple[int, ...]  # the senders that hold elements of their own shard
    has_traffic: bool  # some receiver other than its sender
    tile_base: int = 0  # the tile the numbers above count from
    sender_offset: int = 0  # shard s leaves from tile tile_base + sender_offset + s
    group_inner: int = 0  # Gi (inner = 1): s = (g // Gi) * rounds * Gi + r * Gi + g % Gi;
    # 0: the group is one digit

    # -- affine maps of (r, g) -------------------------------------------------------------
    @property
    def groups_outer(self) -> bool:
        """s = g * rounds + r (the group is the most significant digit)."""
        return self.inner == self.rounds

    def shard_expr(self) -> AffineExpr:
        r, g = AffineExpr.dimension(0), AffineExpr.dimension(1)
        return shard_index(r, g, self.rounds, self.groups, self.inner, self.group_inner)

    def sent_shards(self) -> np.ndarray:
        """[rounds, groups]: the shard sent by each group in each round."""
        r, g = np.meshgrid(np.arange(self.rounds), np.arange(self.groups), indexing="ij")
        return shard_index(r, g, self.rounds, self.groups, self.inner, self.group_inner)

    def shard_map(self) -> AffineMap:
        return AffineMap(2, 0, (self.shard_expr(),))

    def shift_terms(self, r, g) -> list[tuple[Any, int]]:
        """The (digit, step) terms of the shift beside c, for ints, NumPy arrays or affine
        exprs (a digit that is always 0 is the int 0: `round_digits`)."""
        _, ko, ki, kg = self.shift
        if self.group_inner:
            return [(r, ko), (g // self.group_inner, ki), (g % self.group_inner, kg)]
        outer, low = round_digits(r, self.rounds, self.inner)
        return [(outer, ko), (low, ki), (g, kg)]

    def group_digits(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """((extent, step) of the group's inner digit, of its outer digit) in the destination
        tiles: one digit (extent G, step kg; the outer digit extent 1), or a split group's
        g % Gi and g // Gi with their own steps."""
        _, _, ki, kg = self.shift
        if self.group_inner:
            return (self.group_inner, kg), (self.groups // self.group_inner, ki)
        return (self.groups, kg), (1, 1)

    # -- one take per round (`gather_round`) -----------------------------------------------
    @functools.cached_property
    def decoders(self) -> tuple[int, int, int, int] | None:
        """(dest_step, group_span, outer_dest_step, outer_span) when each result tile can find
        the group it received for in a round from its own id, so that one take per round
        replaces one per group (module doc): with d = tile - first_dest(r), the group's inner
        digit is (d mod group_span) floordiv dest_step and its outer digit (d mod outer_span)
        floordiv outer_dest_step, for every tile of every group's window (BASE moved by the
        group's shift). None when no such scalars exist (`digit_decoders`)."""
        if self.groups == 1:
            return None
        (inner, inner_step), (outer, outer_step) = self.group_digits()
        return digit_decoders(np.asarray(self.base, np.int64) - min(self.base),
                              inner, inner_step, outer, outer_step)

    @property
    def takes_once(self) -> bool:
        """One take per round (`decoders`)."""
        return self.decoders is not None

    def round_maps(self) -> tuple[AffineMap, AffineMap]:
        """(first_source, first_dest) of round r (`ROUND_SCALARS`): group 0's sender, and the
        first tile of group 0's window."""
        r = AffineExpr.dimension(0)
        outer, low = round_digits(r, self.rounds, self.inner)
        c, ko, ki, _ = self.shift
        # s(r, 0) = (r // L) * G * L + r % L, or r * Gi
        source = self.affine_sum(self.tile_base + self.sender_offset,
                                 ((outer, self.group_inner or self.groups * self.inner),
                                  (low, 1)))
        dest = self.affine_sum(c + self.tile_base + min(self.base), ((outer, ko), (low, ki)))
        return AffineMap(1, 0, (source,)), AffineMap(1, 0, (dest,))

    @staticmethod
    def affine_sum(constant: int, terms) -> AffineExpr:
        """constant + sum of index * k over the (index, k) terms whose index is not a
        constant 0 digit (`round_digits`) and whose k is not 0."""
        expr = AffineExpr.constant(constant)
        for index, k in terms:
            if k and not isinstance(index, int):
                expr = expr + scaled(index, k)
        return expr

    def round_steps(self) -> list[int]:
        """(source_step, dest_step, groups, takes_own, group_inner, outer_step, group_span,
        outer_dest_step, outer_span) of `ROUND_SCALARS`: consecutive groups' shards are
        `inner` shards apart, or, for a split group, consecutive inner digits 1 and outer
        digits rounds * Gi; the destination digits as `decoders` finds them; a copier takes
        its own shard after the rounds."""
        assert self.decoders is not None  # only a plan that takes once has round scalars
        dest_step, span, outer_dest_step, outer_span = self.decoders
        if self.group_inner:
            inner = self.group_inner
            return [1, dest_step, self.groups, 0, inner, self.rounds * inner, span,
                    outer_dest_step, outer_span]
        return [self.inner, dest_step, self.groups, 0, self.groups, 0, span,
                outer_dest_step, outer_span]

    def own_scalars(self) -> list[int]:
        """`ROUND_SCALARS` under which every copier's source is itself: one group per tile
        (g = t mod group_span floordiv 1 = t, the outer digit t mod 1 = 0), taking its own
        shard (takes_own 1)."""
        tiles = self.tile_base + max(self.copiers) + 1
        return [0, 0, 1, 1, tiles, 1, tiles, 0, tiles, 1, 1]

    def sender_map(self) -> AffineMap:
        """The tile that sends in round r for group g."""
        first = self.tile_base + self.sender_offset
        return AffineMap(2, 0, (self.shard_expr() + first if first else self.shard_expr(),))

    def copier_tiles(self) -> TileSetAttr:
        return TileSetAttr.of([self.tile_base + t for t in self.copiers])

    def shift_map(self) -> AffineMap:
        c = self.shift[0]
        r, g = AffineExpr.dimension(0), AffineExpr.dimension(1)
        terms: list[AffineExpr] = [index * k for index, k in self.shift_terms(r, g)
                                   if k and not isinstance(index, int)]
        terms += [AffineExpr.constant(c)] if c or not terms else []
        expr = terms[0]
        for term in terms[1:]:
            expr = expr + term
        return AffineMap(2, 0, (expr,))

    def destinations(self) -> TileSetAttr:
        return TileSetAttr.of([self.tile_base + t for t in self.base])

    def round_tiles(self) -> tuple[np.ndarray, np.ndarray]:
        """([rounds, groups], [rounds, groups, |BASE|]): the tile each group sends from in
        each round, and the tiles its shard goes to."""
        r, g = np.meshgrid(np.arange(self.rounds), np.arange(self.groups), indexing="ij")
        senders = self.tile_base + self.sender_offset + self.sent_shards()
        first = self.shift[0] + sum(digit * k for digit, k in self.shift_terms(r, g))
        receivers = (self.tile_base + np.broadcast_to(first, r.shape)[..., None]
                     + np.asarray(self.base, np.int64)[None, None, :])
        return senders, receivers

    def round_arrivals(self, target: Target) -> np.ndarray:
        """[rounds] The latest arrival of a round's phase, the largest L(sender, receiver)
        over its groups' receivers other than their senders, what its rows wait for after the
        words (-1: a round in which no tile receives, which has no phase)."""
        senders, receivers = self.round_tiles()
        latency = target.latencies(senders[..., None], receivers)
        latency = np.where(receivers == senders[..., None], -1, latency)
        return latency.reshape(self.rounds, -1).max(axis=1)


SPANS_TRIED = 8  # `digit_decoders`: spans by the offsets alone, smallest first


def digit_decoders(offsets: np.ndarray, inner: int, inner_step: int, outer: int,
                   outer_step: int) -> tuple[int, int, int, int] | None:
    """(dest_step, group_span, outer_dest_step, outer_span) under which every tile
    d = inner_step * i + outer_step * o + b (i < inner, o < outer, b in `offsets`: BASE from
    its first) decodes to its digits, i = (d mod group_span) floordiv dest_step and o =
    (d mod outer_span) floordiv outer_dest_step: the first of each digit's `candidate_spans`
    that decodes it on every tile of every window; None when the steps are not positive or no
    candidate does."""
    if inner_step <= 0 or outer_step <= 0:
        return None
    i, o = (digit.reshape(-1, 1) for digit in
            np.meshgrid(np.arange(inner), np.arange(outer), indexing="ij"))
    d = i * inner_step + o * outer_step + offsets[None, :]
    found: list[int] = []
    for extent, step, other_extent, other_step, want in (
            (inner, inner_step, outer, outer_step, i), (outer, outer_step, inner, inner_step, o)):
        if extent == 1:  # the digit is always 0: any d mod 1 floordiv 1
            found += [1, 1]
            continue
        spans = candidate_spans(offsets, extent, step, other_extent, other_step)
        span = next((m for m in spans if np.array_equal(d % m // step, np.broadcast_to(
            want, d.shape))), None)
        if span is None:
            return None
        found += [step, span]
    dest_step, group_span, outer_dest_step, outer_span = found
    return dest_step, group_span, outer_dest_step, outer_span


def candidate_spans(offsets: np.ndarray, extent: int, step: int, other_extent: int,
                    other_step: int) -> list[int]:
    """The spans `digit_decoders` tries for one digit, in order: its extent times its step
    (right when the other digit's step is a multiple of it), the other digit's step (when it
    is the major one), then the first `SPANS_TRIED` under which every offset lies within the
    step (less the minor digit's part, for the major digit) past a multiple of the span: a
    replicated result's replicas lie a multiple of it apart."""
    least = extent * step
    spans = [least, other_step] if other_step > least else [least]
    room = step - (other_extent - 1) * other_step if other_step < step else step
    if offsets.max() >= room > 0:
        wide = np.arange(least, offsets.max() + 1, dtype=np.int64)
        fits = (offsets[None, :] % wide[:, None] < room).all(axis=1)
        spans += [int(m) for m in wide[fits][:SPANS_TRIED]]
    return spans


def shard_receivers(a: ShardGeometry, b: ShardGeometry) -> np.ndarray:
    """[P, T] bool: result tile t holds a real element of input shard s (s on tile s)."""
    starts_a = a.all_origins()
    starts_b = np.tile(b.all_origins(), (b.replication, 1))
    meets = np.ones((a.partition_count, b.tiles_used), dtype=bool)
    for axis in range(a.rank):  # per axis, between the few distinct starts, then spread
        from_a, at_a = np.unique(starts_a[:, axis], return_inverse=True)
        from_b, at_b = np.unique(starts_b[:, axis], return_inverse=True)
        low = np.maximum(from_a[:, None], from_b[None, :])
        high = np.minimum(np.minimum(from_a[:, None] + a.chunk[axis],
                                     from_b[None, :] + b.chunk[axis]), a.shape[axis])
        meets &= (high > low)[at_a.reshape(-1)][:, at_b.reshape(-1)]
    return meets


AxisMap = tuple[tuple[int, int, int, int], ...]  # per result axis: (source axis or -1,
# scale, source coordinate at the window's start, window start); see `separable_axes`


def separable_axes(view: IndexView, src_shape: tuple[int, ...]) -> AxisMap | None:
    """The view as one source axis per result axis, when it is one: result coordinate r_i
    reads source coordinate `base_j + scale * (r_i - start_i)` along its own source axis j
    (a transpose permutes the axes, a slice scales them by its steps and moves them by its
    corner, a concat input's window is moved along the joined axis), the source axes no
    result axis reads fixed at the offset's coordinates. None for any other view (a reshape
    that merges or splits axes): its receivers are not box intersections."""
    strides = row_major_strides(src_shape)
    base = np.unravel_index(view.offset, src_shape) if src_shape else ()
    mapped: list[tuple[int, int, int, int]] = []
    used: set[int] = set()
    for stride, start, stop in zip(view.strides, view.starts, view.stops, strict=True):
        if stop - start == 1:  # one coordinate: no source axis of its own
            mapped.append((-1, 0, 0, start))
            continue
        axis = next((j for j in range(len(src_shape)) if j not in used and strides[j]
                     and stride % strides[j] == 0 and stride // strides[j] > 0
                     and (stride // strides[j]) * (stop - start - 1) + int(base[j])
                     < src_shape[j]), None)
        if axis is None:
            return None
        used.add(axis)
        mapped.append((axis, stride // strides[axis], int(base[axis]), start))
    # no coordinate reaches its axis' extent, so none carries into the next axis: the
    # source element is the one the linear index names
    return tuple(mapped)


# what each result tile reads through a view: per source axis, [T] low and [T] high
# (exclusive) source coordinates; and whether that is exact or may cover more (`read_ranges`)
ReadRanges = tuple[list[tuple[np.ndarray, np.ndarray]], bool]


def read_ranges(view: IndexView, a: ShardGeometry, b: ShardGeometry) -> ReadRanges | None:
    """The source box each result tile of `b` reads from `a` through `view`: a separable view
    (`separable_axes`; exact with unit steps, with a slice's step above 1 it may cover skipped
    elements) or a reshape (`reshape_groups`; the box bounding the source elements); None for
    any other view."""
    axes = separable_axes(view, a.shape)
    if axes is not None:
        return separable_ranges(view, a, b, axes)
    groups = reshape_groups(view, a.shape, b.shape)
    if groups is not None:
        return reshape_ranges(a, b, groups), False
    return None


def real_boxes(b: ShardGeometry) -> tuple[np.ndarray, np.ndarray]:
    """[T, rank] low and high (exclusive) of each result tile's real elements, replicas
    included (a padding-only tile's box is empty on some axis)."""
    origins = np.tile(b.all_origins(), (b.replication, 1))
    return origins, np.minimum(origins + np.asarray(b.chunk), np.asarray(b.shape))


def separable_ranges(view: IndexView, a: ShardGeometry, b: ShardGeometry,
                     axes: AxisMap) -> ReadRanges:
    lows, highs = real_boxes(b)
    base = np.unravel_index(view.offset, a.shape) if a.shape else ()
    tiles = b.tiles_used
    ranges = [(np.full(tiles, int(base[j])), np.full(tiles, int(base[j]) + 1))
              for j in range(a.rank)]  # the axes no result axis reads: the offset's
    empty = np.zeros(tiles, dtype=bool)
    for i, (axis, scale, at, start) in enumerate(axes):
        # the tile's real elements in the window
        low = np.maximum(lows[:, i], view.starts[i])
        high = np.minimum(highs[:, i], view.stops[i])
        empty |= high <= low
        if axis >= 0:
            ranges[axis] = (at + scale * (low - start), at + scale * (high - 1 - start) + 1)
    ranges = [(low, np.where(empty, low, high)) for low, high in ranges]
    return ranges, all(scale <= 1 for _, scale, _, _ in axes)


Groups = list[tuple[list[int], list[int]]]  # (result axes, source axes) of equal extent


def reshape_groups(view: IndexView, src_shape: tuple[int, ...],
                   out_shape: tuple[int, ...]) -> Groups | None:
    """A reshape's view (the whole result, its own row-major strides, offset 0) as groups of
    consecutive result and source axes with equal extents, each group re-linearized in
    row-major order; None for any other view."""
    if (view.offset or view.starts != (0,) * len(out_shape) or view.stops != out_shape
            or view.strides != row_major_strides(out_shape)
            or math.prod(src_shape) != math.prod(out_shape)):
        return None
    groups: Groups = []
    i = j = 0
    while i < len(out_shape) or j < len(src_shape):
        result, source = [], []
        out_size = src_size = 1
        while True:
            if out_size <= src_size and i < len(out_shape):
                result.append(i)
                out_size *= out_shape[i]
                i += 1
            elif j < len(src_shape):
                source.append(j)
                src_size *= src_shape[j]
                j += 1
            else:
                break
            if out_size == src_size and (i == len(out_shape) or out_shape[i] != 1) and (
                    j == len(src_shape) or src_shape[j] != 1):
                break
        groups.append((result, source))
    return groups


def reshape_ranges(a: ShardGeometry, b: ShardGeometry,
                   groups: Groups) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per group, the result box's first and last element (its row-major corners) in the
    group's linear order, then the source box bounding every element between them: an axis
    spans its whole extent once the axes before it differ."""
    lows, highs = real_boxes(b)
    empty = (highs <= lows).any(axis=1)
    top = np.asarray(b.shape) - 1
    lows, lasts = np.minimum(lows, top), np.clip(highs - 1, 0, top)  # an empty box: any corner
    ranges: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros(0), np.zeros(0))] * a.rank
    for result, source in groups:
        out_extents = [b.shape[i] for i in result]
        src_extents = [a.shape[j] for j in source]
        if not source:
            continue
        first = np.ravel_multi_index(tuple(lows[:, i] for i in result), out_extents) \
            if result else np.zeros(len(lows), dtype=np.int64)
        last = np.ravel_multi_index(tuple(np.maximum(lasts[:, i], lows[:, i])
                                          for i in result), out_extents) \
            if result else first
        low_at = np.unravel_index(first, src_extents)
        high_at = np.unravel_index(last, src_extents)
        same = np.ones(len(lows), dtype=bool)  # the axes before this one agree
        for k, j in enumerate(source):
            low = np.where(same, low_at[k], 0)
            high = np.where(same, high_at[k] + 1, a.shape[j])
            ranges[j] = (low, np.where(empty, low, high))
            same &= low_at[k] == high_at[k]
    return ranges


def view_receivers(a: ShardGeometry, b: ShardGeometry, ranges: ReadRanges) -> np.ndarray:
    """[P, T] bool for a layout op's gather: result tile t reads (when `ranges` is not exact,
    may read) an element of source shard s, where its read box meets the shard's. An inexact
    count has a tile receive a shard it takes nothing of, never the reverse."""
    origins = a.all_origins()
    meets = np.ones((a.partition_count, b.tiles_used), dtype=bool)
    for j, (low_b, high_b) in enumerate(ranges[0]):
        low = np.maximum(origins[:, j][:, None], low_b[None, :])
        high = np.minimum(np.minimum(origins[:, j] + a.chunk[j], a.shape[j])[:, None],
                          high_b[None, :])
        meets &= high > low
    return meets


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


Shift = tuple[int, int, int, int]  # c, ko, ki, kg (GatherRounds.shift)


def fit_shift(outer: np.ndarray, low: np.ndarray, g: np.ndarray,
              first: np.ndarray) -> Shift | None:
    """Integers (c, ko, ki, kg) with c + ko * outer + ki * low + kg * g == first at every
    point, or None."""
    if first.size == 0:
        return 0, 0, 0, 0
    design = np.stack([np.ones_like(g), outer, low, g], axis=1).astype(np.float64)
    solution = least_squares(design, first.astype(np.float64))
    if solution is None:
        return None
    c, ko, ki, kg = (round(float(v)) for v in solution)
    if np.array_equal(c + ko * outer + ki * low + kg * g, first):
        return c, ko, ki, kg
    return None


def least_squares(design: np.ndarray, values: np.ndarray) -> np.ndarray | None:
    """The least-squares solution of design @ x = values (minimum-norm, as NumPy's `lstsq`
    gives it), or None when it is certainly no exact one. The selector fits thousands of
    splits, and `lstsq`'s SVD of the whole design takes a hundred microseconds: where the
    design's nonzero columns have full rank, the solution is unique (0 for a zero column: a
    digit that is always 0) and comes from the small normal equations, and a residual far above
    rounding says no exact solution exists; otherwise (a rank-deficient design, or a small
    residual that rounding could explain) `lstsq` answers."""
    used = np.flatnonzero(design.any(axis=0))
    nonzero = design[:, used]
    normal = nonzero.T @ nonzero
    scale = np.prod(np.diag(normal))
    if used.size and np.linalg.det(normal) > FULL_RANK * scale:
        solution = np.zeros(design.shape[1])
        solution[used] = np.linalg.solve(normal, nonzero.T @ values)
        residual = values - design @ solution
        if float(residual @ residual) > INEXACT_RESIDUAL:
            return None
        return solution
    return np.linalg.lstsq(design, values, rcond=None)[0]


# det(N) / prod(diag N) of a normal matrix N: 1 for orthogonal columns, 0 when singular; above
# this, its solve is accurate to far better than the 0.5 that rounding to integers allows
FULL_RANK = 1e-9
# a squared residual above this is not rounding error of an exact integer fit
INEXACT_RESIDUAL = 1e-3


def group_shift(g: np.ndarray, first: np.ndarray) -> Shift | None:
    """A shift by the group alone, `c + kg * g`, for receivers whose first tile is no affine
    function of the round's digits (e.g. 64-column blocks into 3-column shards: tile
    floor(64 j / 3)): the rounds' differences go into BASE. `kg` is the least-squares slope,
    `c` keeps every shard's receivers at or after its shift; None for one group (where the
    one-shard-per-round split already covers it)."""
    if first.size == 0 or g.min() == g.max():
        return None
    x = g - g.mean()
    slope = float(x @ (first - first.mean())) / float(x @ x)
    kg = round(slope)
    return int((first - kg * g).min()), 0, 0, kg


def choose_shift(outer: np.ndarray, low: np.ndarray, g: np.ndarray, first: np.ndarray,
                 group: np.ndarray | None = None, group_inner: int = 0) -> list[Shift]:
    """The shifts `try_split` tries, best first: the exact affine one when there is one, else
    the one by the group alone. For a split group (`group_inner` Gi) `low` and `g` are its
    outer and inner digits and `group` the whole group index (Gi * outer + inner): the
    group-only shift c + kg * group is then (c, 0, kg * Gi, kg)."""
    exact = fit_shift(outer, low, g, first)
    if exact is not None:
        return [exact]
    if not group_inner:
        by_group = group_shift(g, first)
        return [] if by_group is None else [by_group]
    assert group is not None
    by_group = group_shift(group, first)
    return [] if by_group is None else [(by_group[0], 0, by_group[3] * group_inner, by_group[3])]


@dataclass
class ShardNeeds:
    """What every split reads of `need` ([P, T]: result tile t holds a real element of input
    shard s), per shard, computed once for all the splits `plan_rounds` tries."""

    need: np.ndarray
    tiles: int
    real: np.ndarray  # [P] the shard has real elements
    first: np.ndarray  # [P] its first receiver (0 when it has none)
    last: np.ndarray  # [P] its last receiver
    own: np.ndarray  # [P] its sender (tile s) is among its receivers
    intervals: bool  # every shard's receivers are consecutive tiles, first to last
    results: tuple[int, int] = (0, 0)  # the result tiles (low, high); (0, 0): all the tiles

    @classmethod
    def of(cls, need: np.ndarray, sender_offset: int = 0,
           results: tuple[int, int] = (0, 0)) -> ShardNeeds:
        """`need`'s columns are tiles, of which `results` hold the result; shard s is sent
        from tile `sender_offset + s`."""
        shards, tiles = need.shape
        index = np.arange(shards)
        sender = index + sender_offset
        real = np.asarray(need.any(axis=1))
        first = need.argmax(axis=1)
        last = tiles - 1 - need[:, ::-1].argmax(axis=1)
        counts = need.sum(axis=1)
        return cls(need, tiles, real, first, last,
                   (sender < tiles) & need[index, np.minimum(sender, tiles - 1)],
                   bool(np.all(~real | (counts == last - first + 1))),
                   results if results != (0, 0) else (0, tiles))

    def rounds_overlap(self, shard: np.ndarray) -> bool:
        """Two shards of one round ([R, G] shard indices) whose receivers, both intervals,
        share three tiles or more: one of those is neither shard's sender, and receives for
        both groups, whatever the shift (no split of these rounds is valid). False when that
        cannot be told at once (receivers that are no intervals, or overlaps of one or two
        tiles: `try_split` checks them tile by tile)."""
        if not self.intervals or shard.shape[1] < 2:
            return False
        real = self.real[shard]
        first = np.where(real, self.first[shard], self.tiles)  # an empty interval sorts last
        last = np.where(real, self.last[shard], -1)
        order = np.argsort(first, axis=1, kind="stable")
        first = np.take_along_axis(first, order, axis=1)
        last = np.take_along_axis(last, order, axis=1)
        reach = np.maximum.accumulate(last, axis=1)
        # each interval against the one before it that reaches farthest
        shared = np.minimum(reach[:, :-1], last[:, 1:])
        return bool((shared - first[:, 1:] + 1 >= 3).any())

    @functools.cached_property
    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The (shard, tile) pairs of `need`, shard-major."""
        shard_at, tile_at = np.nonzero(self.need)
        return shard_at, tile_at

    def base(self, shard_shift: np.ndarray) -> np.ndarray:
        """Sorted: every shard's receivers moved back by its shift, together."""
        if not self.intervals:
            shard_at, tile_at = self.pairs
            return sorted_unique(tile_at - shard_shift[shard_at])
        # unions of intervals [first - shift, last - shift], by a difference array
        low = (self.first - shard_shift)[self.real]
        high = (self.last - shard_shift)[self.real]
        if low.size == 0:
            return np.unique(low)
        origin = int(low.min())
        steps = np.zeros(int(high.max()) - origin + 2, dtype=np.int64)
        np.add.at(steps, low - origin, 1)
        np.add.at(steps, high - origin + 1, -1)
        return (np.flatnonzero(np.cumsum(steps)[:-1] > 0) + origin).astype(low.dtype, copy=False)


def try_split(need: np.ndarray | ShardNeeds, rounds: int, groups: int, inner: int,
              fixed_shift: Shift | None = None, sender_offset: int = 0,
              group_inner: int = 0) -> GatherRounds | None:
    """The split (rounds x groups, `inner` rounds per group digit, or the group split around
    the round digit with `group_inner`) of the shards if its receivers are a valid plan; the
    shift is fitted to the first receivers (`choose_shift`) unless `fixed_shift` is given.
    `sender_offset` must be the one `need` was made with."""
    needs = need if isinstance(need, ShardNeeds) else ShardNeeds.of(need, sender_offset)
    r, g = np.meshgrid(np.arange(rounds), np.arange(groups), indexing="ij")
    shard = shard_index(r, g, rounds, groups, inner, group_inner)  # [R, G]
    if needs.rounds_overlap(shard):
        return None
    if group_inner:  # the round, the group's outer digit, its inner digit: each its step
        outer, low, digit = r, g // group_inner, g % group_inner
    else:
        outer, low = (np.broadcast_to(np.asarray(d), r.shape)
                      for d in round_digits(r, rounds, inner))
        digit = g
    if fixed_shift is not None:
        candidates = [fixed_shift]
    else:
        real = needs.real[shard]
        candidates = choose_shift(outer[real], low[real], digit[real], needs.first[shard][real],
                                  g[real], group_inner)
    for shift in candidates:
        plan = split_with_shift(needs, rounds, groups, inner, shard, (outer, low, digit), shift,
                                sender_offset)
        if plan is not None:
            return dataclasses.replace(plan, group_inner=group_inner) if group_inner else plan
    return None


def split_with_shift(needs: ShardNeeds, rounds: int, groups: int, inner: int,
                     shard: np.ndarray, digits: tuple[np.ndarray, np.ndarray, np.ndarray],
                     shift: Shift, sender_offset: int = 0) -> GatherRounds | None:
    """`try_split`'s checks of one shift: destinations inside the tiles, no tile receiving for
    two groups of a round, copiers whose slot no other group fills."""
    tiles = needs.tiles
    c, ko, ki, kg = shift
    outer, low, g = digits
    shifts = c + ko * outer + ki * low + kg * g
    s = shard + sender_offset  # the sending tiles
    shard_shift = np.empty(shard.size, dtype=shifts.dtype)  # the shift of each shard
    shard_shift[shard.reshape(-1)] = shifts.reshape(-1)
    base = needs.base(shard_shift)
    first_result, end_result = needs.results  # every group's destinations hold the result
    if base.min() + shifts.min() < first_result or base.max() + shifts.max() >= end_result:
        return None
    if int(base[-1]) - int(base[0]) + 1 == base.size:  # every group sends to an interval
        disjoint = disjoint_split(base, shifts, s, needs.own[shard], tiles)
        if disjoint is not None:
            own, has_traffic = disjoint
            if own is None:
                return None
            return GatherRounds(rounds, groups, inner, shift,
                                tuple(int(t) for t in base), own, has_traffic,
                                sender_offset=sender_offset)
    destinations = base[None, None, :] + shifts[..., None]  # [R, G, |BASE|]
    receives = destinations != s[..., None]
    keys = (np.arange(rounds)[:, None, None] * tiles + destinations)[receives]
    if keys.size and np.bincount(keys).max() > 1:  # a tile receiving for two groups of a round
        return None
    own = copiers(needs.own[shard], s, keys, tiles)
    if own is None:
        return None
    return GatherRounds(rounds, groups, inner, shift, tuple(int(t) for t in base),
                        own, bool(receives.any()), sender_offset=sender_offset)


def disjoint_split(base: np.ndarray, shifts: np.ndarray, s: np.ndarray, own: np.ndarray,
                   tiles: int) -> tuple[tuple[int, ...] | None, bool] | None:
    """`try_split`'s last checks when BASE is an interval, so that every group of a round sends
    to the interval BASE + its shift (inside [0, tiles)): when no two of one round's intervals
    meet, no tile receives for two groups, and (`copiers`, whether any tile receives at all)
    follow from the intervals alone. Two intervals of a round that share three tiles or more
    share one that neither sender excludes: a tile receives for two groups, and the split is
    refused (no copiers). None when intervals share one or two tiles (`try_split` then checks
    tile by tile)."""
    length = base.size
    order = np.argsort(shifts, axis=1, kind="stable")
    starts = np.take_along_axis(shifts, order, axis=1) + int(base[0])  # [R, G], sorted
    gaps = np.diff(starts, axis=1)  # consecutive intervals share length - gap tiles
    if (gaps <= length - 3).any():
        return None, False
    if (gaps < length).any():
        return None
    has_traffic = bool(length > 1 or (starts != np.take_along_axis(s, order, axis=1)).any())
    if not own.any():  # the formats' tiles do not meet: every receiver takes what it got
        return (), has_traffic
    # a copier whose tile another group of its round receives in: its slot is taken
    rounds = np.broadcast_to(np.arange(s.shape[0])[:, None], s.shape)
    stride = tiles + 1
    flat = (starts + rounds * stride).reshape(-1)  # sorted, round by round
    queries = s[own] + rounds[own] * stride
    at = np.searchsorted(flat, queries, side="right") - 1  # the interval starting at or before
    senders = np.take_along_axis(s, order, axis=1).reshape(-1)
    inside = (at >= 0) & (at // s.shape[1] == rounds[own])
    inside &= queries - flat[np.maximum(at, 0)] < length
    if (inside & (senders[np.maximum(at, 0)] != s[own])).any():
        return None, has_traffic
    return tuple(int(t) for t in np.unique(s[own])), has_traffic


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """`np.unique` of integers spanning a small range (tile numbers): a presence table
    instead of a sort or hash of every value (the receivers of a gather to a replicated format
    number shards x tiles)."""
    if values.size == 0:
        return np.unique(values)
    low = int(values.min())
    present = np.zeros(int(values.max()) - low + 1, dtype=bool)
    present[values - low] = True
    return (np.flatnonzero(present) + low).astype(values.dtype, copy=False)


def copiers(own: np.ndarray, s: np.ndarray, received: np.ndarray, tiles: int
            ) -> tuple[int, ...] | None:
    """The senders that hold elements of their own shard (`own`, [R, G]: they copy it into
    their slot), or None when one of them receives another group's shard in that round (its
    slot is taken). None of them does when the two formats' tiles do not meet (when both
    start at the same tile, the tile of shard 0 always does: shard 0 and result shard 0 both
    start at the origin)."""
    r = np.broadcast_to(np.arange(s.shape[0])[:, None], s.shape)
    if np.isin(r[own] * tiles + s[own], received).any():
        return None
    return tuple(int(t) for t in np.unique(s[own]))


@functools.lru_cache(maxsize=4096)
def plan_rounds(a: ShardGeometry, b: ShardGeometry,
                view: IndexView | None = None) -> GatherRounds | None:
    """The split with the fewest rounds (then the fewest destinations), or None; with a
    layout op's `view`, of what its result tiles read through it (`view_receivers`; None
    when the view has no `read_ranges`).

    Shards past the last one with real elements (the all-padding tail of a padded cut) are
    not sent at all. Once per pair of geometries and view (a pure function of them, its result
    immutable): the selector prices a conversion for many candidates, and the lowering plans
    the chosen one again."""
    if view is None:
        need = shard_receivers(a, b)
    else:
        ranges = read_ranges(view, a, b)
        if ranges is None:
            return None
        need = view_receivers(a, b, ranges)
    real = np.flatnonzero(need.any(axis=1))
    if real.size == 0:
        return None
    need = need[:real[-1] + 1]
    shards = need.shape[0]
    base = min(a.first_tile, b.first_tile)
    senders, receivers = a.first_tile - base, b.first_tile - base
    if senders or receivers:  # number the tiles of both formats from `base` (module doc)
        wide = np.zeros((shards, max(senders + shards, receivers + need.shape[1])), dtype=bool)
        wide[:, receivers:receivers + need.shape[1]] = need
        need = wide
    needs = ShardNeeds.of(need, senders, (receivers, receivers + b.tiles_used))
    fewest = fewest_rounds(need, senders)
    # a group's destinations hold every tile its shard goes to: no split has fewer
    fewest_destinations = int(need.sum(axis=1).max())
    best: GatherRounds | None = None
    for groups in reversed(divisors(shards)):
        rounds = shards // groups
        if best is not None and rounds > best.rounds:
            break
        if rounds < fewest:  # some tile would receive two shards in one round
            continue
        splits = [(inner, 0) for inner in inner_extents(rounds, groups)]
        splits += [(1, gi) for gi in split_group_inners(rounds, groups)]
        for inner, group_inner in splits:
            if best is not None and len(best.base) <= fewest_destinations:
                break  # none after it can do better (the first of equal plans wins)
            plan = try_split(needs, rounds, groups, inner, sender_offset=senders,
                             group_inner=group_inner)
            if plan is not None and (best is None or (plan.rounds, len(plan.base))
                                     < (best.rounds, len(best.base))):
                best = plan
    # one shard per round to every tile that needs any: no affine shift needed
    best = best or try_split(needs, shards, 1, shards, fixed_shift=(0, 0, 0, 0),
                             sender_offset=senders)
    if best is None or not (senders or receivers or base):
        return best
    # numbered from `base`, which the lowering adds back (also when both formats start there)
    return dataclasses.replace(with_base_received(best), tile_base=base)


def with_base_received(plan: GatherRounds) -> GatherRounds:
    """The same plan with BASE moved by the smallest shift of any group (and the shifts back
    by it): BASE is then the destinations of that group, result tiles all (a `tile.exchange`
    must name tiles that hold its destination)."""
    c, ko, ki, kg = plan.shift
    if plan.group_inner:  # the round, the group's outer digit, its inner digit
        extents = (plan.rounds, plan.groups // plan.group_inner, plan.group_inner)
    else:
        extents = (plan.rounds // plan.inner, plan.inner, plan.groups)
    least = c + sum(min(0, k * (n - 1)) for k, n in zip((ko, ki, kg), extents, strict=True))
    return dataclasses.replace(plan, shift=(c - least, ko, ki, kg),
                               base=tuple(t + least for t in plan.base))


def inner_extents(rounds: int, groups: int) -> list[int]:
    """The `inner` extents a split of `rounds` x `groups` can have, in the order `plan_rounds`
    tries them (the first of equal plans wins): groups outer, groups inner, then the group
    digit in the middle, from the least significant position up."""
    if groups == 1 or rounds == 1:  # every extent gives the same shards
        return [rounds]
    return [rounds, 1, *(d for d in divisors(rounds) if 1 < d < rounds)]


def split_group_inners(rounds: int, groups: int) -> list[int]:
    """The inner extents Gi of a group split around the round digit that the one-digit forms
    do not cover (Gi = groups is groups inner, Gi = 1 groups outer): a head-split transpose's
    shards [b, row block, head] go to [b, head, row block], and the heads and batches (two
    digits around the row block's) can go at once. With one round the shards are the
    one-digit ones, but each digit has its own step in the destination tiles: BERT's
    [t, h, d] -> [h, t, d] with one shard per tile on both sides sends shard 12 t + h to
    tile 24 h + t, all at once."""
    if groups == 1:
        return []
    return [d for d in divisors(groups) if 1 < d < groups]


def fewest_rounds(need: np.ndarray, sender_offset: int = 0) -> int:
    """A lower bound on any split's rounds: a tile receives one shard per round, and every
    shard it needs but its own (a sender copies its own shard, it does not receive it; shard
    s leaves from tile `sender_offset + s`)."""
    shards, tiles = need.shape
    received = need.sum(axis=0)
    own = np.arange(max(0, min(shards, tiles - sender_offset)))
    received[own + sender_offset] -= need[own, own + sender_offset]
    return int(received.max(initial=0))


@dataclass
class ConcurrentGather:
    """The tile work of one planned gather (module doc)."""

    plan: GatherRounds
    out: BufferOp
    inp: BufferOp
    slot: BufferOp
    words: int
    result_tiles: TileSetAttr
    kernel: str
    scalars: list[int]

    def emit(self, provenance) -> list[Operation]:
        plan = self.plan
        rounds = LoopOp(0, plan.rounds, provenance("rounds of input shards sent at once"))
        rounds.induction_var.name_hint = "r"
        if plan.has_traffic:
            rounds.body.block.add_op(self.exchange(rounds, provenance(
                "input shards of round r, each to the result tiles that hold its elements")))
        if plan.takes_once:
            rounds.body.block.add_op(self.take_round(rounds, provenance(
                "take the elements of the shard this tile received in round r")))
            if not plan.copiers:
                return [rounds]
            return [rounds, self.take_own(provenance(
                "a sender that holds elements of its own shard takes them from its input"))]
        groups = LoopOp(0, plan.groups, provenance("the shards of round r"))
        groups.induction_var.name_hint = "g"
        if plan.copiers:
            groups.body.block.add_op(self.copy(rounds, groups, provenance(
                "a sender that holds elements of its own shard copies it into its slot")))
        groups.body.block.add_op(self.take(rounds, groups, provenance(
            "take the elements of shard s(r, g) this tile holds")))
        rounds.body.block.add_op(groups)
        return [rounds]

    def exchange(self, rounds: LoopOp, provenance: WorkProvenanceAttr) -> ExchangeOp:
        zero = scalar_map(1, 0)
        return ExchangeOp(
            self.words, self.inp, zero, self.plan.sender_map(), self.slot, zero,
            self.plan.destinations(), [rounds.induction_var], provenance,
            (self.plan.groups, self.plan.shift_map()),
        )

    def take(self, rounds: LoopOp, groups: LoopOp, provenance: WorkProvenanceAttr) -> KernelOp:
        zero = scalar_map(2, 0)
        return KernelOp(
            self.kernel, [(self.out, zero), (self.slot, zero)], self.scalars,
            self.result_tiles, [rounds.induction_var, groups.induction_var], provenance,
            iv_scalars=[self.plan.sender_map()],
        )

    def take_round(self, rounds: LoopOp, provenance: WorkProvenanceAttr) -> KernelOp:
        """One take per round on every result tile, each from the shard it received
        (`gather_round`, `gather_view_round`)."""
        zero = scalar_map(1, 0)
        return KernelOp(
            ROUND_KERNELS[self.kernel], [(self.out, zero), (self.slot, zero)],
            [*self.plan.round_steps(), *self.scalars], self.result_tiles,
            [rounds.induction_var], provenance, iv_scalars=list(self.plan.round_maps()),
        )

    def take_own(self, provenance: WorkProvenanceAttr) -> KernelOp:
        """The copiers' own shards, each from its input, in one call after the rounds (their
        round takes skipped them): no copy into a slot, no step per group."""
        zero = scalar_map(0, 0)
        return KernelOp(
            ROUND_KERNELS[self.kernel], [(self.out, zero), (self.inp, zero)],
            [*self.plan.own_scalars(), *self.scalars], self.plan.copier_tiles(), [],
            provenance,
        )

    def copy(self, rounds: LoopOp, groups: LoopOp, provenance: WorkProvenanceAttr) -> KernelOp:
        zero = scalar_map(2, 0)
        return KernelOp(
            COPY_KERNEL, [(self.slot, zero), (self.inp, zero)], [self.words],
            self.plan.copier_tiles(), [rounds.induction_var, groups.induction_var],
            provenance, on_tile=self.plan.sender_map(),
        )


def piece_plan(a: ShardGeometry, b: ShardGeometry) -> GatherRounds | None:
    """The gather of `a` into `b` as whole pieces sent where they go, when `a` is `b` with
    each shard's leading axis cut into k contiguous pieces (the same trailing chunks, order,
    precision and partitions; one copy; the all-padding tail of leading partitions left out)
    where no tile is sent its own piece: k rounds, in round r every input shard that is piece r of
    a result shard to the result tiles that hold it (its replicas), straight into the result
    at piece r's bytes: no slot, no take (`lower_pieces`). None otherwise."""
    plan = piece_rounds(a, b)
    return None if plan is None or sends_to_itself(plan) else plan


def piece_rounds(a: ShardGeometry, b: ShardGeometry) -> GatherRounds | None:
    """`piece_plan`'s rounds, whether or not a tile is sent its own piece."""
    if not (a.replication == 1 and a.rank == b.rank >= 1 and a.shape == b.shape
            and (a.order, a.precision, a.pads, a.scale) == (b.order, b.precision, b.pads,
                                                            b.scale)
            and a.chunk[1:] == b.chunk[1:] and a.partitions[1:] == b.partitions[1:]
            and b.chunk[0] % a.chunk[0] == 0):
        return None
    pieces = b.chunk[0] // a.chunk[0]
    if a.partitions[0] % pieces or a.partitions[0] > b.partitions[0] * pieces:
        return None
    if not pieces_contiguous(b.shard_shape, pieces, b.order, b.precision):
        return None
    trailing = a.partition_count // a.partitions[0]
    base = min(a.first_tile, b.first_tile)
    plan = GatherRounds(
        rounds=pieces, groups=a.partition_count // pieces, inner=1,
        shift=(0, 0, trailing, 1),
        base=tuple(b.first_tile - base + copy * b.partition_count
                   for copy in range(b.replication)), copiers=(),
        has_traffic=True, tile_base=base, sender_offset=a.first_tile - base,
        group_inner=trailing)
    return plan


def sends_to_itself(plan: GatherRounds) -> bool:
    """Whether some round's sender is one of the tiles its shard goes to (it would have to
    copy it instead: `piece_plan` leaves such gathers to the slot and take)."""
    senders, receivers = plan.round_tiles()
    return bool((receivers == senders[..., None]).any())


@functools.cache
def pieces_contiguous(shape: tuple[int, ...], pieces: int, order: str, precision: str) -> bool:
    """Whether cutting a shard of `shape` along its leading axis into `pieces` equal parts
    gives parts whose bytes, each laid out in `order` on its own, are consecutive ranges of
    the shard's bytes in `order` (`device.layouts.to_order`, checked on element indices)."""
    if pieces == 1:
        return True
    if shape[0] % pieces:
        return False
    index = np.arange(math.prod(shape)).reshape(shape)
    rows = shape[0] // pieces
    try:
        parts = [to_order(index[p * rows:(p + 1) * rows], order, precision)
                 for p in range(pieces)]
    except ValueError:  # a piece the order cannot lay out (amp_right rows of 64)
        return False
    return bool(np.array_equal(np.concatenate(parts), to_order(index, order, precision)))


def lower_pieces(plan: GatherRounds, out: BufferOp, inp: BufferOp, words: int,
                 provenance) -> list[Operation]:
    """The phases of a `piece_plan` gather: one exchange, in a loop over the pieces when there
    is more than one, each piece into its bytes of the result."""
    reason = "every input shard whole to the result tiles that hold it, at its piece's bytes"
    if plan.rounds == 1:
        first_round = AffineMap(1, 0, (AffineExpr.constant(0), AffineExpr.dimension(0)))
        return [ExchangeOp(words, inp, scalar_map(0, 0), plan.sender_map().compose(first_round),
                           out, scalar_map(0, 0), plan.destinations(), [], provenance(reason),
                           (plan.groups, plan.shift_map().compose(first_round)))]
    rounds = LoopOp(0, plan.rounds, provenance("the pieces of every result shard, one a round"))
    rounds.induction_var.name_hint = "r"
    piece_bytes = words * WORD_BYTES
    rounds.body.block.add_op(ExchangeOp(
        words, inp, scalar_map(1, 0), plan.sender_map(), out,
        AffineMap(1, 0, (AffineExpr.dimension(0) * piece_bytes,)), plan.destinations(),
        [rounds.induction_var], provenance(reason), (plan.groups, plan.shift_map())))
    return [rounds]


def lower_concurrent(plan: GatherRounds, out: BufferOp, inp: BufferOp, slot: BufferOp,
                     words: int, result_tiles: TileSetAttr, kernel: str, scalars: list[int],
                     provenance) -> list[Operation]:
    return ConcurrentGather(plan, out, inp, slot, words, result_tiles, kernel,
                            scalars).emit(provenance)
