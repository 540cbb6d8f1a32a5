"""What the tiles already hold when graph-to-mid selects an op's plan: the memory-aware part of
selection.

A plan's own buffers are checked against tile memory by its operator; this module counts,
tile by tile, what else is live at the op's position, from the formats chosen so far (program
order), so that a plan is checked on the tiles it uses against what those tiles hold:

- graph inputs (function arguments) already given a format by an earlier consumer, on that
  format's tiles: live together at the start (the host writes them before the program runs)
  and each until its last use (`place-memory`'s rule), the op's own operands excepted; an
  input no plan has stored yet counts at the least it can take, its bytes over every tile;
- inside a `graph.repeat`'s body, its carried values and invariants once, and its sequences
  whole: `count` elements of each (the sequence is stored as its elements' formats, every
  element on the same tiles), an operand of the op itself `count - 1` times beside the element
  its plan holds (`ResidentMemory.sequence_counts`); a sequence no plan has stored yet
  nowhere (its consumer's plan stores it where it fits beside every earlier op's peak, in
  place or spread on the tiles that hold least: counted over every tile, it made GPT-2-small
  x12's tile 0 hold 77 KB of MLP weights that went elsewhere), one a plan took stored spread
  where its storage puts it (`ResidentTracker.spread`, `sequence_spread.spread_storage`);
- values computed by earlier ops (activations) that a later op still uses, on their tiles,
  from the op that computed them (`ResidentTracker.computed`) to their last use.

A plan that fits with the resident bytes is preferred to a cheaper one that does not (`planning.gemm_selection`,
`select_gemm_plan`'s `fits`); where none fits, the cheapest valid plan is kept and the
pipeline's memory fallbacks answer (`passes/ipu_pipeline.py`). While every format started at
tile 0, tile 0 held a shard of every stored value and counting it alone was enough; with
first tiles (moved pointwise results, inputs stored spread) the fullest tile is anywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType, UnrealizedConversionCastOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from device.target import Target
from ipu_dialects import graph, mid
from passes.operators.formats import whole_bytes
from planning.shard_geometry import ShardGeometry, geometry
from planning.tile_loads import on_tiles

Shape = Sequence[int]
NOTHING = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class SpreadStorage:
    """How a sequence that a plan takes stored spread is stored: its bytes on each tile, and,
    where it is stored as whole pieces of the plan's shards on a window of tiles
    (`sequence_spread.whole_shard_window`), that element format and the fetch cycles it
    saves over the cheapest spread's."""

    tile_bytes: np.ndarray
    whole_shards: tuple[mid.TensorFormatAttr, int] | None = None


@dataclass(frozen=True)
class ResidentMemory:
    """What the tiles hold besides an op's plan, per tile, from the formats chosen so far. A
    graph input is live from the start (the host writes every input before the program runs)
    to its last use, so a plan must fit twice: at the op, its buffers beside what is `live`
    there; and at every earlier op, whose fullest moment on each tile was `earlier_peak`, the
    inputs the plan gives a format for the first time (operand i when `new_inputs[i]`), which
    are live there too. An operand is an element of a sequence of `sequence_counts[i]`
    elements when that is above 1 (the other elements are stored beside it, on the same
    tiles, and are inputs too). `tiles` is 0 when nothing is known: then only the plan's own
    buffers are checked."""

    tiles: int = 0
    live: np.ndarray = field(default_factory=lambda: NOTHING)
    earlier_peak: np.ndarray = field(default_factory=lambda: NOTHING)
    new_inputs: tuple[bool, ...] = ()
    sequence_counts: tuple[int, ...] = ()
    reserved: int = 0  # on every tile, of `earlier_peak`: the new graph inputs' `least_bytes`
    # sequence operands the plan must take stored spread (`ResidentTracker.force_spread`)
    forced: tuple[int, ...] = ()

    def geometries(self, formats: Sequence[mid.TensorFormatAttr],
                   shapes: Sequence[Shape]) -> list[ShardGeometry]:
        return [geometry(shape, fmt) for fmt, shape in zip(formats, shapes, strict=True)]

    def other_elements(self, geoms: Sequence[ShardGeometry]) -> np.ndarray:
        """Bytes per tile of the elements of the operands' sequences besides the ones the plan
        holds."""
        total = np.zeros(self.tiles, dtype=np.int64)
        for count, geom in zip(self.sequence_counts, geoms, strict=True):
            if count > 1:
                total += on_tiles(geom, self.tiles, (count - 1) * geom.shard_bytes())
        return total

    def newly_stored(self, geoms: Sequence[ShardGeometry]) -> np.ndarray:
        """Bytes per tile of the graph inputs that the plan's formats store for the first
        time."""
        total = np.zeros(self.tiles, dtype=np.int64)
        for count, geom, new in zip(self.sequence_counts, geoms, self.new_inputs, strict=True):
            if new:
                total += on_tiles(geom, self.tiles, count * geom.shard_bytes())
        return total

    def plan_tiles(self, geoms: Sequence[ShardGeometry]) -> np.ndarray:
        """Where the plan's buffers are: every tile from its values' first tile to past the
        last (its own buffers count at its busiest tile's bytes on each)."""
        on = np.zeros(self.tiles, dtype=bool)
        on[min(g.first_tile for g in geoms):max(g.tile_stop for g in geoms)] = True
        return on

    def here(self, plan_bytes: int, geoms: Sequence[ShardGeometry],
             plan_geoms: Sequence[ShardGeometry]) -> np.ndarray:
        """Bytes per tile at the op: the plan's, beside what is live and the operands' other
        sequence elements."""
        return (np.where(self.plan_tiles(plan_geoms), plan_bytes, 0) + self.live
                + self.other_elements(geoms))

    def sequence_operands(self) -> list[int]:
        """The operands that are elements of a repeat's sequence."""
        return [i for i, count in enumerate(self.sequence_counts) if count > 1]

    def with_spread(self, spread: Mapping[int, SpreadStorage]) -> ResidentMemory:
        """This memory with the sequences of operands `spread` stored spread over the chip
        as each says (its bytes on each tile, from the program's start) and each iteration's
        element fetched into the plan's format: the plan holds one element of each."""
        stored = sum((s.tile_bytes for s in spread.values()),
                     np.zeros(self.tiles, dtype=np.int64))
        counts = [1 if i in spread else c for i, c in enumerate(self.sequence_counts)]
        new = [False if i in spread else n for i, n in enumerate(self.new_inputs)]
        return dataclasses.replace(self, live=self.live + stored,
                                   earlier_peak=self.earlier_peak + stored,
                                   sequence_counts=tuple(counts), new_inputs=tuple(new))

    def fits(self, plan_bytes: int, formats: Sequence[mid.TensorFormatAttr],
             shapes: Sequence[Shape], room: int,
             out: tuple[Shape, mid.TensorFormatAttr] | None = None) -> bool:
        """Whether a plan holding `plan_bytes` on its busiest tile, with operands in `formats`
        (and its result in `out`'s format), fits `room` bytes on every tile it uses beside
        what the tiles hold."""
        if not self.tiles:
            return plan_bytes <= room
        geoms = self.geometries(formats, shapes)
        return (int(self.holding(plan_bytes, formats, shapes, out).max()) <= room
                and int((self.earlier_peak - self.reserved + self.newly_stored(geoms)).max())
                <= room)

    def holding(self, plan_bytes: int, formats: Sequence[mid.TensorFormatAttr],
                shapes: Sequence[Shape],
                out: tuple[Shape, mid.TensorFormatAttr] | None = None) -> np.ndarray:
        """Bytes per tile at the op with a plan holding `plan_bytes` on its busiest tile, its
        operands in `formats` (its result in `out`'s): `here`, from the formats."""
        geoms = self.geometries(formats, shapes)
        plan_geoms = [*geoms, geometry(*out)] if out is not None else geoms
        return self.here(plan_bytes, geoms, plan_geoms)


def selection_room(target: Target) -> int:
    """The bytes a plan and what its tiles hold beside it may take together: the memory
    outside the code region, less one memory element left for placement's own constraints
    (buffers kept in distinct elements, exchanged buffers away from the rows' elements)."""
    return target.sram_bytes - target.code_region_bytes - target.element_bytes


def stored_geometry(value: SSAValue) -> ShardGeometry | None:
    """How `value` is stored, None while it has no format yet."""
    value_type = value.type
    if not isinstance(value_type, TensorType):
        return None
    fmt = value_type.encoding
    if not isinstance(fmt, mid.TensorFormatAttr):
        return None
    return geometry(value_type.get_shape(), fmt)


@dataclass
class ResidentTracker:
    """The positions of one function's graph ops and the last use of each argument (by its
    index: retyping an argument replaces it), taken before lowering, to answer `at(op)`."""

    function: func.FuncOp
    positions: dict[Operation, int]
    last_use: dict[int, int]  # argument index -> position of its last use
    tiles: int
    earlier_peak: np.ndarray = field(default_factory=lambda: NOTHING)  # per tile (`record`)
    computed: list[SSAValue] = field(default_factory=list)  # results of the ops lowered so far
    # the repeat body arguments (block, index) whose sequences are stored spread, with how
    # (their bytes on each tile, whole shards or not: `store_spread`)
    spread: dict[tuple[Block, int], SpreadStorage] = field(default_factory=dict)
    # names of sequences (their body arguments') a plan must take stored spread: a lowering
    # before this one estimated that, kept where their plans read them, they overflow a tile
    force_spread: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not len(self.earlier_peak):
            self.earlier_peak = np.zeros(self.tiles, dtype=np.int64)

    @classmethod
    def of(cls, function: func.FuncOp, tiles: int) -> ResidentTracker:
        positions = {op: n for n, op in enumerate(function.body.walk())}
        last_use: dict[int, int] = {}
        for index, arg in enumerate(function.args):
            if not any(stored_as_sequence(use.operation, use.index) for use in arg.uses):
                last_use[index] = max((positions.get(u.operation, -1) for u in arg.uses),
                                      default=-1)
        return cls(function, positions, last_use, tiles)

    def stored(self, value: SSAValue, times: int = 1) -> np.ndarray:
        """Bytes per tile of `times` shards of `value` where it is stored (none while it has
        no format)."""
        geom = stored_geometry(value)
        if geom is None:
            return np.zeros(self.tiles, dtype=np.int64)
        return on_tiles(geom, self.tiles, times * geom.shard_bytes())

    def at(self, op: Operation) -> ResidentMemory:
        """What the tiles hold besides `op`'s plan, at `op` and before it."""
        position = self.positions.get(op, -1)
        operands = set(op.operands)
        args = self.function.args
        tracked = self.tracked()
        live = np.zeros(self.tiles, dtype=np.int64)
        for index, last in self.last_use.items():
            if last > position and args[index] not in operands:
                # an input no op has given a format yet: the least it can hold on a tile
                live += (self.stored(args[index]) if stored_geometry(args[index]) is not None
                         else self.least_bytes(args[index]))
        held = {source_of(operand) for operand in op.operands}  # the plan counts them
        for value in self.computed:
            if value not in held and self.used_after(value, position):
                live += self.stored(value)
        new_inputs = [operand in tracked and stored_geometry(operand) is None
                      for operand in op.operands]
        reserved = sum(self.least_bytes(v) for v in operands
                       if v in tracked and stored_geometry(v) is None)
        counts = [1] * len(op.operands)
        for repeat in enclosing_repeats(op):
            count = repeat.count.value.data
            for arg in (*repeat.carried_args, *repeat.invariant_args):
                if arg not in operands:
                    live += self.stored(arg)
            for arg in repeat.sequence_args:  # a graph input, stored whole as its elements
                if arg in operands:
                    continue
                if self.is_spread(arg):
                    live += self.spread[(arg.block, arg.index)].tile_bytes
                elif stored_geometry(arg) is not None:
                    live += self.stored(arg, count)
                # a sequence no plan has stored yet counts nowhere: where it goes is its
                # consumer's to find, beside every earlier op's peak (`newly_stored`), on
                # the plan's tiles or spread on a window of tiles that holds least
            for index, operand in enumerate(op.operands):
                if operand in repeat.sequence_args:
                    counts[index] *= count
                    new_inputs[index] = stored_geometry(operand) is None
        forced = tuple(i for i, operand in enumerate(op.operands)
                       if counts[i] > 1 and operand.name_hint in self.force_spread)
        return ResidentMemory(self.tiles, live, self.earlier_peak.copy(), tuple(new_inputs),
                              tuple(counts), reserved, forced)

    def overflow(self, room: int) -> int:
        """By how many bytes the fullest tile's estimated peak exceeds `room` (0: none)."""
        return max(0, int(self.earlier_peak.max(initial=0)) - room)

    def sequences_to_spread(self, room: int) -> frozenset[str]:
        """`force_spread` and the sequences kept where their plans read them that hold the
        most of the fullest tile, enough of them (their stacked bytes there less the element
        each then fetches) to save the estimated overflow; `force_spread` alone when none is
        left."""
        over = self.overflow(room)
        fullest = int(np.argmax(self.earlier_peak))
        kept = []
        for repeat in (o for o in self.function.walk() if isinstance(o, mid.RepeatOp)):
            for arg in repeat.sequence_args:
                geom = stored_geometry(arg)
                if self.is_spread(arg) or geom is None or not geom.holds(fullest) or not arg.name_hint:
                    continue
                count = repeat.count.value.data
                kept.append(((count - 1) * geom.shard_bytes(), arg.name_hint))
        forced = set(self.force_spread)
        for saving, name in sorted(kept, reverse=True):
            if over <= 0:
                break
            if name not in forced:
                forced.add(name)
                over -= saving
        return frozenset(forced)

    def is_spread(self, arg: SSAValue) -> bool:
        """Whether `arg`, a repeat body's sequence argument, is stored spread (`spread`)."""
        return isinstance(arg, BlockArgument) and (arg.block, arg.index) in self.spread

    def store_spread(self, arg: BlockArgument, storage: SpreadStorage) -> None:
        """`arg`'s sequence is stored spread as `storage` says: live from the program's
        start, at every op lowered so far too."""
        self.spread[(arg.block, arg.index)] = storage
        self.earlier_peak = self.earlier_peak + storage.tile_bytes

    def used_after(self, value: SSAValue, position: int) -> bool:
        """Whether an op after `position` (not lowered yet) uses `value`, directly or through
        the bridges graph-to-mid put between them."""
        for use in value.uses:
            user = use.operation
            if isinstance(user, UnrealizedConversionCastOp):
                if self.used_after(user.results[0], position):
                    return True
            elif self.positions.get(user, -1) > position:
                return True
        return False

    def tracked(self) -> set[SSAValue]:
        """The graph inputs counted (the function's arguments; not those stored as a repeat's
        sequence, counted inside its body)."""
        return {self.function.args[index] for index in self.last_use}

    def least_bytes(self, value: SSAValue) -> int:
        """The fewest bytes an input not yet given a format can hold on a tile: its bytes
        spread evenly over every tile."""
        value_type = value.type
        assert isinstance(value_type, TensorType)
        return -(-whole_bytes(value_type) // self.tiles)

    def record(self, resident: ResidentMemory, plan_bytes: int,
               formats: Sequence[mid.TensorFormatAttr], shapes: Sequence[Shape],
               out: tuple[Shape, mid.TensorFormatAttr]) -> None:
        """The op `resident` was taken for chose a plan of `plan_bytes` whose operands take
        `formats` (its result `out`'s): the inputs it stored are live at every earlier op, and
        its own fullest moment is one more earlier peak for the ops after it, tile by tile."""
        here = resident.holding(plan_bytes, formats, shapes, out)
        stored = resident.newly_stored(resident.geometries(formats, shapes)) - resident.reserved
        self.earlier_peak = np.maximum(self.earlier_peak + stored, here)

    def computed_by(self, value: SSAValue) -> None:
        """`value`, a lowered op's result, is live on its tiles until its last use."""
        self.computed.append(value)


def source_of(value: SSAValue) -> SSAValue:
    """The value a chain of graph-to-mid's bridges starts from."""
    while isinstance(value.owner, UnrealizedConversionCastOp):
        value = value.owner.inputs[0]
    return value


def stored_as_sequence(user: Operation, index: int) -> bool:
    """Whether operand `index` of `user` is a repeat's sequence (a row-major placeholder
    format until normalize-repeats stores it: counted in the body instead)."""
    return isinstance(user, graph.RepeatOp | mid.RepeatOp) and user.operands[index] in user.sequences


def enclosing_repeats(op: Operation) -> list[graph.RepeatOp]:
    repeats: list[graph.RepeatOp] = []
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, graph.RepeatOp):
            repeats.append(parent)
        parent = parent.parent_op()
    return repeats
