"""The operator interface: what every operator kind provides to the passes.

One module per operator kind (`passes/operators/<kind>.py`) implements `Operator`; the
registry (`passes/operators/__init__.py`) lists them. `graph-to-mid` asks the operator of a
graph op for its candidate plans, validates and costs them, and builds the mid op of the
cheapest valid one; `mid-to-tile` asks the operator of a mid op for its tile work. The passes
name no operator.

A candidate is a complete `#mid.plan`: every operand's and the result's `TensorFormat`,
alignment and access tail, the pairs that must sit in distinct memory elements, the output's
aliasing permission and the accumulation precision. Its cost is in modeled cycles, computed
by the same functions the device model charges (`device/model/cycles.py`), plus the cost of
the conversions its operand formats make necessary (`conversion_cycles`), so that a plan that
avoids a conversion can win against one that is cheaper in itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, Protocol

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

from device.target import Target
from ipu_dialects import mid
from ipu_dialects.tile import BufferOp, TileSetAttr
from passes.operators.formats import current_format
from passes.operators.resident import ResidentMemory, ResidentTracker, Shape, SpreadStorage
from planning.plan_reasons import NoValidPlan
from planning.shard_geometry import geometry


class Spreading(Protocol):
    """What a pointwise operator asks graph-to-mid before it offers a plan moved off tile 0."""

    def least_loaded_start(self, tiles: int) -> int:
        """The first of `tiles` consecutive tiles that hold the fewest bytes so far."""
        ...

    def consumers_extra_cycles(self, value: SSAValue, moved: mid.TensorFormatAttr,
                               twin: mid.TensorFormatAttr) -> int | None:
        """What `value`'s consumers pay more (or less) to bring it to their formats when it
        is stored `moved` instead of `twin`; None when that cannot be told."""
        ...


class ConsumerPricing(Protocol):
    """What a pointwise or layout operator asks graph-to-mid about its result's consumers."""

    def consumers_cycles(self, value: SSAValue, fmt: mid.TensorFormatAttr) -> int | None:
        """The cycles `value`'s consumers pay for it being stored `fmt`: what its layout
        consumers (slice, reshape, transpose) take at the least (a view of its shards or a
        gather, which its format decides), what each GEMM consumer pays above its cheapest
        plan, and its conversion into the operand format each attention consumer's plan
        wants; None when a layout consumer has no valid plan with `value` stored so."""
        ...

    def wanted_formats(self, value: SSAValue) -> list[mid.TensorFormatAttr]:
        """The formats the plans of `value`'s GEMM and attention consumers want it in (each
        chosen alone, once): where a layout op may put its result so that they take it as
        it is."""
        ...

    def chained_gemm_cycles(self, value: SSAValue, fmt: mid.TensorFormatAttr) -> int:
        """What the GEMMs that take `value`, directly or through pointwise ops that would
        keep its format (a bias add, a gelu), pay above their cheapest plans with it stored
        `fmt`."""
        ...


# A candidate whose result format leaves a layout consumer without a valid plan: refused
# while another candidate is valid (`unless_every_one_starves`)
STARVES_A_CONSUMER = "its result's format leaves a layout consumer with no valid plan"


def consumers_cycles(ctx: SelectionContext, value: SSAValue,
                            fmt: mid.TensorFormatAttr) -> int | None:
    """What `value`'s consumers pay when it is stored `fmt` (`ConsumerPricing`; 0 when
    selection does not price consumers), or None when a layout consumer has no valid plan
    then: the candidate is refused with `STARVES_A_CONSUMER`."""
    if ctx.consumers is None:
        return 0
    return ctx.consumers.consumers_cycles(value, fmt)


def wanted_formats(ctx: SelectionContext, value: SSAValue) -> list[mid.TensorFormatAttr]:
    """`ConsumerPricing.wanted_formats`, or none when selection does not price consumers."""
    return [] if ctx.consumers is None else ctx.consumers.wanted_formats(value)


def unless_every_one_starves(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates; when none is valid but some were refused only for a layout consumer's
    sake, those valid again (the consumer's own selection then says why it has no plan)."""
    if any(c.reason is None for c in candidates):
        return candidates
    return [replace(c, reason=None) if c.reason == STARVES_A_CONSUMER else c
            for c in candidates]


@dataclass(frozen=True)
class SelectionContext:
    """What every candidate of one pipeline is built for (from `#mid.config`)."""

    tiles: int
    indivisible: str
    inputs: str  # graph-input policy: consumer (host writes the plan's format) or row_major
    target: Target
    catalog: tuple[str, ...]  # GEMM catalog names (the other operators have no catalog yet)
    # what the tiles hold besides the op's plan at its position (`passes/operators/resident.py`)
    resident: ResidentMemory = field(default_factory=ResidentMemory)
    # where plans free to start at any tile (pointwise) may go; None: every plan from tile 0
    spreading: Spreading | None = field(default=None, compare=False)
    # what a result's layout consumers pay for its format; None: not priced
    consumers: ConsumerPricing | None = field(default=None, compare=False)
    # the formats each value already has a conversion into, made for an earlier consumer in
    # the op's block: a plan wanting one of them takes that conversion's result, at no cost
    converted: Mapping[SSAValue, Mapping[mid.TensorFormatAttr, SSAValue]] = field(
        default_factory=dict, compare=False)
    # whether a layer norm may keep its input's cut of the last axis (the column split)
    layer_norm_columns: bool = True


@dataclass(frozen=True)
class Candidate:
    """One candidate plan and how it was judged."""

    plan: mid.OperatorPlanAttr
    reason: str | None  # None: valid
    cycles: int | None  # only for valid plans: what selection ranks by
    # the part of `cycles` its result's consumers pay for its format (a look-ahead's price,
    # which their own estimates count again)
    consumers: int = 0

    @property
    def name(self) -> str:
        return self.plan.candidate.data

    @property
    def estimate(self) -> int:
        """The cycles the op itself costs with this plan: its work and its operands'
        conversions into the plan's formats (what `ipu.estimate` records)."""
        return self.valid_cycles - self.consumers

    @property
    def valid_cycles(self) -> int:
        """The cycles of a valid candidate (every valid one was costed)."""
        assert self.cycles is not None, f"valid candidate {self.name} has no cycles"
        return self.cycles


def cheapest(candidates: Sequence[Candidate]) -> Candidate:
    """The valid candidate with the fewest cycles (the first on ties); NoValidPlan if none."""
    valid = [c for c in candidates if c.reason is None]
    if not valid:
        raise NoValidPlan(candidates)
    return min(valid, key=lambda c: c.valid_cycles)


class GraphLowering(Protocol):
    """What an operator's graph-to-mid part uses of the pass lowering its function
    (`passes.graph_to_mid.GraphToMidLowering`): a region op lowers its body with it."""

    config: mid.PipelineConfigAttr
    # store a repeat's large sequences spread over the chip, fetching each iteration's element
    # (graph-to-mid{spread-sequences=true}, the pipeline's last memory fallback)
    spread_sequences: bool
    spread_saving: int  # bytes tile 0 must hold fewer (graph-to-mid{spread-saving}); 0: a budget
    # what memory-aware selection counts on the tiles (None when it counts nothing)
    resident: ResidentTracker | None

    def stores_spread(self, arg: SSAValue) -> bool:
        """Whether a plan chose to take body argument `arg`'s sequence stored spread."""
        ...

    def lower_block(self, block: Block) -> None: ...

    def operand_in_format(self, value: SSAValue, fmt: mid.TensorFormatAttr,
                          before: Operation, share: bool = True) -> SSAValue: ...


class TileLowering(Protocol):
    """What an operator's lowering uses of the pass lowering its function to tile work
    (`passes.mid_to_tile.MidToTileLowering`): the buffers of values and staging slots, and the
    lowering of nested ops (a repeat's body)."""

    target: Target
    buffers: dict[SSAValue, BufferOp]
    outputs: dict[SSAValue, int]  # returned values -> result position
    requirements: dict[SSAValue, tuple[int, int]]  # value -> (alignment, access tail)
    added_cycles: int  # what work beside the selected plans costs (the function's estimate)

    def lower_op(self, op: Operation) -> list[Operation]: ...

    def new_buffer(self, value: SSAValue, kind: str, index: int | None,
                   name: str | None = None) -> BufferOp: ...

    def operand_buffer(self, op: Operation, value: SSAValue) -> BufferOp: ...

    def result_buffer(self, value: SSAValue) -> BufferOp: ...

    def scratch(self, wanted: str, tiles: TileSetAttr, shard: tuple[int, ...], precision: str,
                order: str, memory: str, alignment: int, tail: int = 0) -> BufferOp: ...

    def source_of(self, op: Operation) -> str: ...

    def source_of_repeat(self, op: Operation) -> str: ...


def tensor_type(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


Assumed = Mapping[SSAValue, mid.TensorFormatAttr]  # formats taken for operands not lowered yet


def format_of(value: SSAValue, assumed: Assumed) -> mid.TensorFormatAttr | None:
    """The format `assumed` for `value`, or the one it has."""
    fmt = assumed.get(value)
    return fmt if fmt is not None else current_format(value)


class Operator(ABC):
    """One operator kind: its plans, their validation and cost, its mid op and its lowering."""

    kind: ClassVar[str]
    graph_op: ClassVar[type[Operation] | None] = None  # None: created by a pass (conversions)
    mid_op: ClassVar[type[Operation]]
    # plan operand names of the graph/mid op's operands, in order; the result is "out"
    operand_names: ClassVar[tuple[str, ...]]
    # whether `lower` places work on the tiles of formats that start past tile 0 (`first_tile`);
    # mid-to-tile refuses such formats on the mid ops of an operator that does not
    honours_first_tile: ClassVar[bool] = False

    def plan_operand_names(self, op: Operation) -> tuple[str, ...]:
        """The plan operand names of `op`'s operands, in order (a variadic op's depend on its
        operand count)."""
        return self.operand_names

    # ---- graph-to-mid ---------------------------------------------------------------------
    def candidates(self, op: Operation, ctx: SelectionContext) -> list[Candidate]:
        """Every candidate plan for `op`, validated and (when valid) costed."""
        raise NotImplementedError  # conversions are inserted, never selected

    def select(self, op: Operation, ctx: SelectionContext) -> mid.OperatorPlanAttr:
        return self.choose(op, ctx).plan

    def choose(self, op: Operation, ctx: SelectionContext) -> Candidate:
        """The valid candidate selection takes for `op` (the cheapest), with its cycles."""
        return cheapest(self.candidates(op, ctx))

    def least_cycles_given(self, op: Operation, assumed: Assumed,
                           ctx: SelectionContext) -> int | None:
        """The cycles of `op`'s cheapest valid plan with the operands in `assumed` stored in
        those formats, where the operator can tell (a layout or pointwise op's); None
        otherwise."""
        return None

    def build_mid(self, op: Operation, operands: Sequence[SSAValue], result_type: TensorType,
                  plan: mid.OperatorPlanAttr) -> Operation:
        """The mid op for `op` with its operands already in the plan's formats."""
        raise NotImplementedError  # conversions are inserted, never selected

    def plan_formats(self, op: Operation, plan: mid.OperatorPlanAttr
                     ) -> tuple[list[mid.TensorFormatAttr], list[Shape],
                                tuple[Shape, mid.TensorFormatAttr]]:
        """The formats `plan` gives `op`'s operands, their shapes, and its result's shape and
        format: what the resident memory is asked about a plan."""
        formats = [plan.operand_plan(name).format for name in self.plan_operand_names(op)]
        shapes: list[Shape] = [tensor_type(v).get_shape() for v in op.operands]
        return formats, shapes, (tensor_type(op.results[0]).get_shape(),
                                 plan.operand_plan("out").format)

    def spread_operands(self, op: Operation, plan: mid.OperatorPlanAttr,
                        ctx: SelectionContext) -> dict[int, SpreadStorage]:
        """The operands, elements of a repeat's sequences, whose sequences `plan` takes stored
        spread over the chip (each iteration's element fetched), with how each is stored:
        none unless the operator says so."""
        return {}

    def plan_tile_bytes(self, op: Operation, plan: mid.OperatorPlanAttr, target: Target) -> int:
        """Bytes the plan's busiest tile holds for `op` (what memory-aware selection counts
        it for, `passes/operators/resident.py`): its operands' and result's shards; an
        operator with scratch buffers says more."""
        names = (*self.plan_operand_names(op), "out")
        values = (*op.operands, op.results[0])
        return sum(geometry(tensor_type(v).get_shape(), plan.operand_plan(n).format).shard_bytes()
                   for n, v in zip(names, values, strict=True))

    # ---- mid-to-tile ----------------------------------------------------------------------
    @abstractmethod
    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        """The tile work of one mid op (outermost ops, in order)."""


class GivenFormatsOperator(Operator):
    """An operator that builds its candidates with some operands assumed stored in given
    formats (`candidates_given`): its own selection assumes none, and a look-ahead asks for
    the cheapest valid one's cycles (`least_cycles_given`)."""

    @abstractmethod
    def candidates_given(self, op: Operation, ctx: SelectionContext,
                         assumed: Assumed) -> list[Candidate]:
        """The candidates with the operands in `assumed` taken as stored in those formats."""

    def candidates(self, op: Operation, ctx: SelectionContext) -> list[Candidate]:
        return self.candidates_given(op, ctx, {})

    def least_cycles_given(self, op: Operation, assumed: Assumed,
                           ctx: SelectionContext) -> int | None:
        valid = [c.valid_cycles for c in self.candidates_given(op, ctx, assumed)
                 if c.reason is None]
        return min(valid, default=None)
