"""What tile 0 already holds when graph-to-mid selects an op's plan: the memory-aware part of
selection.

Every format starts at tile 0, so tile 0 holds a shard of every stored value and is the
fullest tile; a plan's own buffers are checked against tile memory by its operator, and this
module counts what else is live on tile 0 at the op's position, from the formats chosen so
far (program order):

- graph inputs (function arguments) already given a format by an earlier consumer: live
  together at the start (the host writes them before the program runs) and each until its
  last use (`place-memory`'s rule), the op's own operands excepted;
- inside a `graph.repeat`'s body, its carried values and invariants once, and its sequences
  whole: `count` elements of each (the sequence is stored as its elements' formats, every
  element on the same tiles), an operand of the op itself `count - 1` times beside the element
  its plan holds (`ResidentMemory.sequence_counts`).

Values computed by the program (activations) are not counted: they are small next to a
layer's weights, and their lifetimes are `place-memory`'s to find. A plan that fits with the
resident bytes is preferred to a cheaper one that does not (`planning.gemm_selection`,
`select_gemm_plan`'s `fits`); where none fits, the cheapest valid plan is kept and the
pipeline's memory fallbacks answer (`passes/ipu_pipeline.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from device.target import Target
from ipu_dialects import graph, mid
from passes.operators.formats import whole_bytes
from planning.shard_geometry import geometry


@dataclass(frozen=True)
class ResidentMemory:
    """Tile 0's bytes besides an op's plan, from the formats chosen so far. A graph input is
    live from the start (the host writes every input before the program runs) to its last
    use, so a plan must fit twice: at the op, its buffers beside what is `live` there; and
    at every earlier op, whose fullest moment was `earlier_peak`, the inputs the plan gives a
    format for the first time (operand i when `new_inputs[i]`), which are live there too. An
    operand is an element of a sequence of `sequence_counts[i]` elements when that is above 1
    (the other elements are stored beside it, and are inputs too)."""

    live: int = 0
    earlier_peak: int = 0
    new_inputs: tuple[bool, ...] = ()
    sequence_counts: tuple[int, ...] = ()
    reserved: int = 0  # of `earlier_peak`, what it reserved for the new inputs (`least_bytes`)

    def shards(self, formats: Sequence[mid.TensorFormatAttr],
               shapes: Sequence[Sequence[int]]) -> list[int]:
        return [geometry(shape, fmt).shard_bytes()
                for fmt, shape in zip(formats, shapes, strict=True)]

    def other_elements(self, shards: Sequence[int]) -> int:
        """Bytes of the elements of the operands' sequences besides the ones the plan holds."""
        return sum((count - 1) * shard
                   for count, shard in zip(self.sequence_counts, shards, strict=True))

    def newly_stored(self, shards: Sequence[int]) -> int:
        """Bytes of the graph inputs that the plan's formats store for the first time."""
        return sum(count * shard for count, shard, new
                   in zip(self.sequence_counts, shards, self.new_inputs, strict=True) if new)

    def fits(self, plan_bytes: int, formats: Sequence[mid.TensorFormatAttr],
             shapes: Sequence[Sequence[int]], room: int) -> bool:
        """Whether a plan holding `plan_bytes` on its busiest tile, with operands in
        `formats`, fits `room` bytes beside what tile 0 holds."""
        if not self.sequence_counts:  # nothing known: only the plan's own buffers
            return plan_bytes <= room
        shards = self.shards(formats, shapes)
        return (plan_bytes + self.live + self.other_elements(shards) <= room
                and self.earlier_peak - self.reserved + self.newly_stored(shards) <= room)


def selection_room(target: Target) -> int:
    """The bytes a plan and what tile 0 holds beside it may take together: the memory outside
    the code region, less one memory element left for placement's own constraints (buffers
    kept in distinct elements, exchanged buffers away from the rows' elements)."""
    return target.sram_bytes - target.code_region_bytes - target.element_bytes


def tile0_bytes(value: SSAValue) -> int:
    """Bytes of `value`'s shard on tile 0, 0 while it has no format yet or when it is stored
    past tile 0 (a graph input's home moved by `graph-to-mid{spread-inputs}`)."""
    value_type = value.type
    if not isinstance(value_type, TensorType):
        return 0
    fmt = value_type.encoding
    if not isinstance(fmt, mid.TensorFormatAttr) or fmt.first_tile.data:
        return 0
    return geometry(value_type.get_shape(), fmt).shard_bytes()


@dataclass
class ResidentTracker:
    """The positions of one function's graph ops and the last use of each argument (by its
    index: retyping an argument replaces it), taken before lowering, to answer `at(op)`."""

    function: func.FuncOp
    positions: dict[Operation, int]
    last_use: dict[int, int]  # argument index -> position of its last use
    tiles: int
    earlier_peak: int = 0  # the fullest tile 0 was at an op lowered so far (`record`)

    @classmethod
    def of(cls, function: func.FuncOp, tiles: int) -> ResidentTracker:
        positions = {op: n for n, op in enumerate(function.body.walk())}
        last_use: dict[int, int] = {}
        for index, arg in enumerate(function.args):
            if not any(stored_as_sequence(use.operation, use.index) for use in arg.uses):
                last_use[index] = max((positions.get(u.operation, -1) for u in arg.uses),
                                      default=-1)
        return cls(function, positions, last_use, tiles)

    def at(self, op: Operation) -> ResidentMemory:
        """What tile 0 holds besides `op`'s plan, at `op` and before it."""
        position = self.positions.get(op, -1)
        operands = set(op.operands)
        args = self.function.args
        # an input no op has given a format yet is counted at the least it can hold on a tile
        live = sum(tile0_bytes(args[index]) or self.least_bytes(args[index])
                   for index, last in self.last_use.items()
                   if last > position and args[index] not in operands)
        reserved = sum(self.least_bytes(v) for v in set(op.operands)
                       if v in self.tracked() and tile0_bytes(v) == 0)
        tracked = self.tracked()
        new_inputs = [operand in tracked and tile0_bytes(operand) == 0 for operand in op.operands]
        counts = [1] * len(op.operands)
        for repeat in enclosing_repeats(op):
            count = repeat.count.value.data
            for arg in (*repeat.carried_args, *repeat.invariant_args):
                live += 0 if arg in operands else tile0_bytes(arg)
            for arg in repeat.sequence_args:  # a graph input, stored whole as its elements
                live += 0 if arg in operands else count * tile0_bytes(arg)
            for index, operand in enumerate(op.operands):
                if operand in repeat.sequence_args:
                    counts[index] *= count
                    new_inputs[index] = tile0_bytes(operand) == 0
        return ResidentMemory(live, self.earlier_peak, tuple(new_inputs), tuple(counts), reserved)

    def tracked(self) -> set[SSAValue]:
        """The graph inputs counted (the function's arguments; not those stored as a repeat's
        sequence, counted inside its body)."""
        return {self.function.args[index] for index in self.last_use}

    def least_bytes(self, value: SSAValue) -> int:
        """The fewest bytes an input not yet given a format can hold on tile 0: its bytes
        spread evenly over every tile."""
        value_type = value.type
        assert isinstance(value_type, TensorType)
        return -(-whole_bytes(value_type) // self.tiles)

    def record(self, resident: ResidentMemory, plan_bytes: int,
               formats: Sequence[mid.TensorFormatAttr], shapes: Sequence[Sequence[int]]) -> None:
        """The op `resident` was taken for chose a plan of `plan_bytes` whose operands take
        `formats`: the inputs it stored are live at every earlier op, and its own fullest
        moment is one more earlier peak for the ops after it."""
        shards = resident.shards(formats, shapes)
        here = plan_bytes + resident.live + resident.other_elements(shards)
        stored = resident.newly_stored(shards) - resident.reserved
        self.earlier_peak = max(self.earlier_peak + stored, here)


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
