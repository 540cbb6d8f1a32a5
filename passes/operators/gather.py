"""The concurrent gather of a non-local `mid.rearrange`: rounds of shards sent at once.

Input shard `s` (on tile `s`, replica 0) holds real elements for the result tiles `D(s)`
(its box, the result tile's box and the logical extent meet). Its elements need only go to
`D(s)`, and shards whose receiver sets do not meet can travel in the same exchange phase.
`plan_rounds` looks, in NumPy at compile time, for a split of the shard index into a round
`r` and a group `g`,

    s = g * R + r   (groups outer)   or   s = r * G + g   (groups inner),   G * R = P shards,

such that the first tile of `D(s)` is an affine function `c + kr * r + kg * g` (the shift)
and, with `BASE` the union of every `D(s)` moved back by its shift, no tile receives for two
groups of one round (a group's sender among its own destinations receives nothing; it may
receive for another group: full duplex). A shard without real elements (all padding) is a
wildcard: it travels with the shift the formula gives it, and takes nothing. The split with
the fewest rounds wins (then the smallest `BASE`). `G = 1`, shift 0 and `BASE` the union of
all `D(s)` is always a split, so the detection fails only where the sender's own read cannot
be expressed (below).

The lowering (constant op count, whatever the tile count):

    fill_zero on the result's padding (as the serial gather)
    tile.loop %r = 0 to R:
      tile.exchange shard s(r, g) from tile s(r, g) to the slot on BASE, groups G shift
        SHIFT(r, g)
      tile.loop %g = 0 to G:
        gather_shard(out, slot) source_tile s(r, g) on the result tiles, with a home view:
          on tile HOME(r, g) the staged pointer reads the input shard in place

The sender reads its own shard where it lives (no `copy_words` into its slot). HOME is
`s` when every input tile holds a result shard (P <= result tiles); otherwise `s mod T`,
accepted only when, for every sender past the result tiles, tile `s mod T` takes nothing of
shard `s` (its call then reads nothing). Tiles outside `D(s)` find an empty intersection
and read nothing either: only the tiles of `D(s)` read their slot, and each of them received
shard `s` in this round. Not covered (the serial gather of `conversions.lower_gather` runs):
layout ops (`gather_view` with an index view), and a HOME that the check above refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
from xdsl.ir import Operation
from xdsl.ir.affine import AffineExpr, AffineMap

from ipu_dialects.tile import (
    BufferOp,
    ExchangeOp,
    HomeView,
    KernelOp,
    LoopOp,
    TileSetAttr,
    WorkProvenanceAttr,
)
from passes.operators.tile_maps import scalar_map
from planning.shard_geometry import ShardGeometry

COPY_KERNEL = "copy_words"


class OwnRead(Enum):
    """How a sender that holds elements of its own shard reads them."""

    NONE = "no sender holds elements of its own shard"
    HOME = "a home view: the sender reads its input shard in place"
    COPY = "the sender copies its shard into its slot (it receives nothing that round)"


@dataclass(frozen=True)
class GatherRounds:
    """A split of the P input shards into `rounds` phases of `groups` concurrent sends."""

    rounds: int
    groups: int
    groups_outer: bool  # s = g * rounds + r; else s = r * groups + g
    shift: tuple[int, int, int]  # c, kr, kg: the first destination tile of group g in round r
    base: tuple[int, ...]  # destination tiles of a group with shift 0
    own: OwnRead
    home_modulus: int | None  # HOME = s mod this (None: HOME = s)
    copiers: tuple[int, ...]  # OwnRead.COPY: the senders that hold elements of their shard
    has_traffic: bool  # some receiver other than its sender

    # -- affine maps of (r, g) -------------------------------------------------------------
    def shard_expr(self) -> AffineExpr:
        r, g = AffineExpr.dimension(0), AffineExpr.dimension(1)
        return g * self.rounds + r if self.groups_outer else r * self.groups + g

    def shard_map(self) -> AffineMap:
        return AffineMap(2, 0, (self.shard_expr(),))

    def shift_map(self) -> AffineMap:
        c, kr, kg = self.shift
        r, g = AffineExpr.dimension(0), AffineExpr.dimension(1)
        return AffineMap(2, 0, (r * kr + g * kg + c,))

    def home_map(self) -> AffineMap:
        expr = self.shard_expr()
        return AffineMap(2, 0, (expr if self.home_modulus is None else expr % self.home_modulus,))

    def destinations(self) -> TileSetAttr:
        return TileSetAttr.of(self.base)


def shard_receivers(a: ShardGeometry, b: ShardGeometry) -> np.ndarray:
    """[P, T] bool: result tile t holds a real element of input shard s (s on tile s)."""
    starts_a = a.all_origins()
    starts_b = np.tile(b.all_origins(), (b.replication, 1))
    meets = np.ones((a.partition_count, b.tiles_used), dtype=bool)
    for axis in range(a.rank):
        low = np.maximum(starts_a[:, axis, None], starts_b[None, :, axis])
        high = np.minimum(np.minimum(starts_a[:, axis, None] + a.chunk[axis],
                                     starts_b[None, :, axis] + b.chunk[axis]), a.shape[axis])
        meets &= high > low
    return meets


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def fit_shift(r: np.ndarray, g: np.ndarray, first: np.ndarray) -> tuple[int, int, int] | None:
    """Integers (c, kr, kg) with c + kr * r + kg * g == first at every point, or None."""
    design = np.stack([np.ones_like(r), r, g], axis=1).astype(np.float64)
    solution = np.linalg.lstsq(design, first.astype(np.float64), rcond=None)[0]
    c, kr, kg = (int(round(v)) for v in solution)
    if np.array_equal(c + kr * r + kg * g, first):
        return c, kr, kg
    return None


def try_split(need: np.ndarray, rounds: int, groups: int, groups_outer: bool
              ) -> GatherRounds | None:
    """The split (rounds x groups) of the shards if its receivers are a valid plan."""
    shards, tiles = need.shape
    r, g = np.meshgrid(np.arange(rounds), np.arange(groups), indexing="ij")
    s = g * rounds + r if groups_outer else r * groups + g
    wanted = need[s]  # [R, G, T]
    real = wanted.any(axis=2)
    first = wanted.argmax(axis=2)
    shift = fit_shift(r[real], g[real], first[real])
    if shift is None:
        return None
    c, kr, kg = shift
    shifts = c + kr * r + kg * g
    round_at, group_at, tile_at = np.nonzero(wanted)
    base = np.unique(tile_at - shifts[round_at, group_at])
    destinations = base[None, None, :] + shifts[..., None]  # [R, G, |BASE|]
    if destinations.min() < 0 or destinations.max() >= tiles:
        return None
    receives = destinations != s[..., None]
    keys = (np.arange(rounds)[:, None, None] * tiles + destinations)[receives]
    if np.unique(keys).size != keys.size:  # a tile receiving for two groups of a round
        return None
    own = own_read(wanted, s, keys, tiles)
    if own is None:
        return None
    return GatherRounds(rounds, groups, groups_outer, shift, tuple(int(t) for t in base),
                        *own, bool(receives.any()))


def own_read(wanted: np.ndarray, s: np.ndarray, received: np.ndarray, tiles: int
             ) -> tuple[OwnRead, int | None, tuple[int, ...]] | None:
    """How a sender that holds elements of its own shard reads it (module doc), or None."""
    shards = s.size
    r, g = np.indices(s.shape)
    own = (s < tiles) & wanted[r, g, np.minimum(s, tiles - 1)]  # the sender is in D(s)
    if not own.any():
        return OwnRead.NONE, None, ()
    if shards <= tiles:
        return OwnRead.HOME, None, ()
    far = s >= tiles
    if not wanted[r[far], g[far], s[far] % tiles].any():  # tile s mod T takes nothing of s
        return OwnRead.HOME, tiles, ()
    receiving = np.isin(r[own] * tiles + s[own], received)
    if receiving.any():  # its slot holds another group's shard in that round
        return None
    return OwnRead.COPY, None, tuple(sorted(int(t) for t in np.unique(s[own])))


def plan_rounds(a: ShardGeometry, b: ShardGeometry) -> GatherRounds | None:
    """The split with the fewest rounds (then the fewest destinations), or None."""
    need = shard_receivers(a, b)
    if not need.any():
        return None
    best: GatherRounds | None = None
    for groups in reversed(divisors(a.partition_count)):
        rounds = a.partition_count // groups
        if best is not None and rounds > best.rounds:
            break
        for outer in (True, False) if 1 < groups < a.partition_count else (True,):
            plan = try_split(need, rounds, groups, outer)
            if plan is not None and (best is None or (plan.rounds, len(plan.base))
                                     < (best.rounds, len(best.base))):
                best = plan
    return best


@dataclass
class ConcurrentGather:
    """The tile work of one planned gather (module doc)."""

    plan: GatherRounds
    out: BufferOp
    inp: BufferOp
    slot: BufferOp
    words: int
    result_tiles: int
    kernel: str
    scalars: list[int]

    def emit(self, provenance) -> LoopOp:
        plan = self.plan
        rounds = LoopOp(0, plan.rounds, provenance("rounds of input shards sent at once"))
        rounds.induction_var.name_hint = "r"
        if plan.has_traffic:
            rounds.body.block.add_op(self.exchange(rounds, provenance(
                "input shards of round r, each to the result tiles that hold its elements")))
        groups = LoopOp(0, plan.groups, provenance("the shards of round r"))
        groups.induction_var.name_hint = "g"
        if plan.own is OwnRead.COPY:
            groups.body.block.add_op(self.copy(rounds, groups, provenance(
                "a sender that holds elements of its own shard copies it into its slot")))
        groups.body.block.add_op(self.take(rounds, groups, provenance(
            "take the elements of shard s(r, g) this tile holds")))
        rounds.body.block.add_op(groups)
        return rounds

    def exchange(self, rounds: LoopOp, provenance: WorkProvenanceAttr) -> ExchangeOp:
        zero = scalar_map(1, 0)
        return ExchangeOp(
            self.words, self.inp, zero, self.plan.shard_map(), self.slot, zero,
            self.plan.destinations(), [rounds.induction_var], provenance,
            (self.plan.groups, self.plan.shift_map()),
        )

    def take(self, rounds: LoopOp, groups: LoopOp, provenance: WorkProvenanceAttr) -> KernelOp:
        zero = scalar_map(2, 0)
        homes = []
        if self.plan.own is OwnRead.HOME:
            homes = [HomeView(1, self.inp.buffer, zero, TileSetAttr.of([0]),
                              self.plan.home_map())]
        return KernelOp(
            self.kernel, [(self.out, zero), (self.slot, zero)], self.scalars,
            TileSetAttr.range(0, self.result_tiles),
            [rounds.induction_var, groups.induction_var], provenance,
            iv_scalars=[self.plan.shard_map()], homes=homes,
        )

    def copy(self, rounds: LoopOp, groups: LoopOp, provenance: WorkProvenanceAttr) -> KernelOp:
        zero = scalar_map(2, 0)
        return KernelOp(
            COPY_KERNEL, [(self.slot, zero), (self.inp, zero)], [self.words],
            TileSetAttr.of(self.plan.copiers), [rounds.induction_var, groups.induction_var],
            provenance, on_tile=self.plan.shard_map(),
        )


def lower_concurrent(plan: GatherRounds, out: BufferOp, inp: BufferOp, slot: BufferOp,
                     words: int, result_tiles: int, kernel: str, scalars: list[int],
                     provenance) -> list[Operation]:
    return [ConcurrentGather(plan, out, inp, slot, words, result_tiles, kernel,
                             scalars).emit(provenance)]
