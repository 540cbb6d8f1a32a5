"""A GEMM layout: how one plan cuts the operands over the tiles, and the rules every plan obeys.

One strategy object per layout, keyed by its `DispatchKind` (the only tag a layout has; the
registry is `planning.gemm_selection.LAYOUTS`):

| dispatch      | strategy                              | lowering                                         |
|---------------|---------------------------------------|--------------------------------------------------|
| `gemm_blocks` | `planning/gemm_rows.py` `RowsLayout`     | `passes/operators/gemm_rows_lowering.py`   |
| `gemm_grid`   | `planning/gemm_grid.py` `GridLayout`     | `passes/operators/gemm_grid_lowering.py`   |
| `gemm_ksplit` | `planning/gemm_ksplit.py` `KSplitLayout` | `passes/operators/gemm_ksplit_lowering.py` |
| `gemm_grid3d` | `planning/gemm_grid3d.py` `Grid3DLayout` | `passes/operators/gemm_grid3d_lowering.py` |

A strategy answers, for a catalog entry and a problem: how each operand is cut (`cuts`,
from which `assemble_plan` builds the complete `#mid.plan`, and `cut_options`, every cut
worth costing with the conversions of the operands); whether a plan's formats are the
layout's (`check`, a step of the rules below); which buffers its busiest tile holds
(`buffers`) and how many bytes of row slots its exchange ops need (`row_slot_bytes`), which
`planning/gemm_memory.py` fits into tile memory; the cycles the device model charges for its
tile work (`cycles`); and, for a plan that does not fit on any tile count, why
(`no_tile_count_helps`). Its lowering to tile work lives in the operators layer, one module
per layout, registered by the same dispatch kind (`passes/operators/gemm.py`, `LOWERINGS`):
lowering imports planning, not the reverse.

The rules every GEMM plan obeys, checked against the concrete operand types and asking the
plan's layout what it alone knows: `check_plan` runs them in order and raises `InvalidPlan`
with the first reason: transposed operands stored transposed (and read by the layout), a GEMM
dispatch with 64/64 blocks over (lhs, rhs, out), kernels that exist and keep the plan's
partials, the AMP's roles, orders, alignment and block structure (with the layout's own cuts,
`GemmLayout.check`), tile groups within the tile count, padding where the tiling rejects it,
and tile memory (`planning/gemm_memory.py`) for the buffers and row slots the layout says its
tiles hold.

Another operator with several plans takes the same shape: a protocol over its own problem
and catalog entry, one strategy per dispatch kind in a registry its selector iterates, and
one lowering per kind in its operator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

from device.kernels import UnknownKernelError, get_kernel
from device.layouts import AMP_BLOCK, AMP_ROWS
from device.target import Target
from ipu_dialects.mid import (
    AxisTilingAttr,
    DispatchKind,
    ElementOrder,
    MemoryClass,
    OperandPlanAttr,
    OperatorDispatchAttr,
    OperatorPlanAttr,
    TensorFormatAttr,
)
from planning.gemm_memory import (
    RowTileBuffer,
    check_capacity,
    check_placement,
    check_row_slots,
    farthest_latency,
    kept_apart,
)
from planning.gemm_problem import (
    GEMM_OPERANDS,
    KERNEL_PRECISION,
    ORDER_OF,
    OUTPUT_PRECISION,
    ROLE_OF,
    TRANSPOSED_ORDER,
    UNTRANSPOSED_ORDER,
    GemmCandidate,
    GemmProblem,
    InvalidPlan,
    effective_format,
    effective_plan,
    kernel_family,
    swap_matrix_axes,
)
from planning.shard_geometry import ShardGeometry

# The provenance of every op that sums the layers of a layered plan (the K-split's, the 3-D
# grid's) starts so: their number depends on the layer count, which depends on the tiles.
REDUCTION = "reduction round"
ShapeT = TypeVar("ShapeT")


def rank_shapes(shapes: Sequence[ShapeT], fits: Callable[[ShapeT], bool],
                size: Callable[[ShapeT], int], cycles: Callable[[ShapeT], int],
                tiles: Callable[[ShapeT], int]) -> list[ShapeT]:
    """A layout's shapes that fit a tile, cheapest first (then the fewest tiles); when none
    fits, only the smallest (validation then says why); empty when there are none."""
    if not shapes:
        return []
    fitting = [s for s in shapes if fits(s)]
    if not fitting:
        return [min(shapes, key=size)]
    return sorted(fitting, key=lambda s: (cycles(s), tiles(s)))


@dataclass(frozen=True)
class OperandCuts:
    """(row, column) partition counts of each operand's matrix axes, and how many copies of
    rhs and of lhs the layout keeps."""

    lhs: tuple[int, int]
    rhs: tuple[int, int]
    out: tuple[int, int]
    rhs_replication: int = 1
    lhs_replication: int = 1

    def of(self, operand: str) -> tuple[int, int]:
        return {"lhs": self.lhs, "rhs": self.rhs, "out": self.out}[operand]


@dataclass(frozen=True)
class CycleBreakdown:
    """A plan's modeled cycles by kind of step (what `run_package` charges, summed)."""

    exchange: int  # syncs + exchange events of the broadcasts
    copies: int  # home tiles copying their own block into their slot
    amp: int  # the GEMM kernel calls
    rounding: int  # convert_shard of the f32 partials panels (FP32 partials of FP16 inputs);
    # for the K-split, the reduction: the partials' exchange and the add that rounds

    @property
    def total(self) -> int:
        return self.exchange + self.copies + self.amp + self.rounding


class GemmLayout(Protocol):
    """What a GEMM layout decides. The plan and problem a method gets are the effective ones
    (`effective_plan`, `GemmProblem.effective`: transposed operands read untransposed), except
    in `cuts`, which sees the problem as the user wrote it."""

    dispatch: DispatchKind
    name: str  # how diagnostics and `--explain` name its plans and tiles: "output-row"
    reads_transposed: bool  # whether it runs transposed operands (amp_left_t/amp_right_t)
    replicates_an_operand: bool  # whether it stores an operand more than once
    last_step: str  # what `--explain` calls `CycleBreakdown.rounding`: "rounding"

    def cuts(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
             target: Target) -> OperandCuts:
        """How the plan of `candidate` cuts each operand on `tiles` tiles: the first of
        `cut_options`, the cheapest in itself."""
        ...

    def cut_options(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                    target: Target) -> list[OperandCuts]:
        """Every cut worth costing with the program around the op (what converting its
        operands costs depends on the cut), the cheapest in itself first."""
        ...

    def check(self, plan: OperatorPlanAttr, problem: GemmProblem) -> None:
        """Raise `InvalidPlan` when the plan's cuts are not this layout's."""
        ...

    def buffers(self, plan: OperatorPlanAttr, problem: GemmProblem,
                target: Target) -> dict[str, RowTileBuffer]:
        """The buffers of tile 0 (it holds every kind of buffer of the plan), in the order
        `mid-to-tile` declares them."""
        ...

    def row_slot_bytes(self, plan: OperatorPlanAttr, problem: GemmProblem,
                       farthest: np.ndarray) -> list[int]:
        """Bytes of row slots of each exchange op of the plan on more than one tile."""
        ...

    def cycles(self, plan: OperatorPlanAttr, problem: GemmProblem, tiles: int,
               target: Target) -> CycleBreakdown:
        """The cycles the device model charges for the plan's tile work."""
        ...

    def no_tile_count_helps(self, problem: GemmProblem, out: TensorFormatAttr,
                            target: Target) -> str:
        """Why the plan fits no tile count (`out`: its output's format on every tile)."""
        ...


def tile_name(layout: GemmLayout) -> str:
    """"an output-row tile", "a grid tile", "a K-split tile": the subject of memory
    diagnostics."""
    return f"{'an' if layout.name[0] in 'aeiou' else 'a'} {layout.name} tile"


def _matrix_format(
    precision: str,
    order: str,
    batch_rank: int,
    rows: tuple[int, int],
    cols: tuple[int, int],
    mode: str,
    group: int,
    memory: str = MemoryClass.STANDARD,
    scale: int = 0,
    replication: int = 1,
) -> TensorFormatAttr:
    tiling = [AxisTilingAttr(1, 1, mode)] * batch_rank + [
        AxisTilingAttr(rows[0], rows[1], mode),
        AxisTilingAttr(cols[0], cols[1], mode),
    ]
    return TensorFormatAttr(precision, order, tiling, replication, group, memory, scale)


def assemble_plan(layout: GemmLayout, candidate: GemmCandidate, problem: GemmProblem,
                  tiles: int, indivisible: str, target: Target,
                  cuts: OperandCuts | None = None) -> OperatorPlanAttr:
    """The complete plan of `candidate` for `problem` with `cuts` (default: the layout's
    `cuts`), not yet validated. A transposed operand is stored transposed
    (amp_left_t/amp_right_t)."""
    p, mode = candidate.precision, str(indivisible)
    cuts = cuts or layout.cuts(candidate, problem, tiles, target)
    rank_of = {o: len(problem.shape_of(o)) for o in GEMM_OPERANDS}
    formats = {
        "lhs": _matrix_format(
            p, ElementOrder.AMP_LEFT, rank_of["lhs"] - 2,
            (candidate.row_block, cuts.lhs[0]), (AMP_BLOCK, cuts.lhs[1]), mode, tiles,
            scale=problem.lhs_scale if p == problem.precision else 0,
            replication=cuts.lhs_replication,
        ),
        "rhs": _matrix_format(
            p, ElementOrder.AMP_RIGHT, rank_of["rhs"] - 2,
            (AMP_BLOCK, cuts.rhs[0]), (AMP_BLOCK, cuts.rhs[1]), mode, tiles,
            scale=problem.rhs_scale if p == problem.precision else 0,
            replication=cuts.rhs_replication,
        ),
        "out": _matrix_format(
            candidate.output_precision, ElementOrder.AMP_OUTPUT, rank_of["out"] - 2,
            (candidate.row_block, cuts.out[0]), (AMP_BLOCK, cuts.out[1]), mode, tiles,
            MemoryClass.INTERLEAVED,
            scale=problem.partial_scale if p == problem.precision else 0,
        ),
    }
    for o in ("lhs", "rhs"):
        if problem.transposed(o):
            formats[o] = swap_matrix_axes(formats[o], TRANSPOSED_ORDER[ORDER_OF[o]])
    tails = {"lhs": target.amp_left_access_tail_bytes, "rhs": 0, "out": 0}
    operands = [
        OperandPlanAttr(o, ROLE_OF[o], formats[o], target.pace_alignment, tails[o])
        for o in GEMM_OPERANDS
    ]
    prefix = candidate.kernel_prefix(problem.inner_blocks)
    dispatch = OperatorDispatchAttr(layout.dispatch, AMP_BLOCK, AMP_BLOCK, f"{prefix}init",
                                    f"{prefix}accum")
    return OperatorPlanAttr(
        candidate.name,
        dispatch,
        candidate.accumulate,
        candidate.amp,
        operands,
        distinct=[("out", "lhs")],
        alias="none",
    )


# ----------------------------------------------------------------------------------------------
# The rules every GEMM plan obeys
# ----------------------------------------------------------------------------------------------

GEMM_KERNEL_POINTERS = ("out", "left", "right")


def check_transposes(plan: OperatorPlanAttr, problem: GemmProblem,
                     layout: GemmLayout | None) -> None:
    """A transposed operand is stored transposed, an untransposed one is not."""
    for o in ("lhs", "rhs"):
        stored = plan.operand_plan(o).format.order.data in UNTRANSPOSED_ORDER
        if layout is not None and not layout.reads_transposed and problem.transposed(o):
            raise InvalidPlan(f"the {layout.name} plan reads {o} untransposed; {o} is transposed")
        if stored != problem.transposed(o):
            flag = "transposed" if problem.transposed(o) else "not transposed"
            raise InvalidPlan(
                f"{o} is {flag} but stored {plan.operand_plan(o).format.order.data}"
            )
    if problem.transpose_rhs and effective_format(plan.operand_plan("rhs").format).partitions[-2] != 1:
        raise InvalidPlan("a transposed rhs must keep K whole on each tile")


def check_dispatch(plan: OperatorPlanAttr, layout: GemmLayout | None) -> GemmLayout:
    dispatch = plan.dispatch
    if layout is None:
        raise InvalidPlan(f"dispatch kind {dispatch.kind.data} does not implement a gemm")
    for what, block in (("inner", dispatch.inner_block), ("column", dispatch.column_block)):
        if block != AMP_BLOCK:
            raise InvalidPlan(f"dispatch {what} block {block} is not the AMP block {AMP_BLOCK}")
    names = tuple(entry.operand.data for entry in plan.operands.data)
    if names != GEMM_OPERANDS:
        raise InvalidPlan(f"plan operands {names} are not the gemm operands {GEMM_OPERANDS}")
    return layout


def check_kernels(plan: OperatorPlanAttr, problem: GemmProblem) -> None:
    """Kernel modes: both kernels exist, take (out, left, right), run this precision and
    keep the plan's partials."""
    dispatch = plan.dispatch
    accumulate = plan.accumulate.data
    family = kernel_family(problem.precision, accumulate, problem.inner_blocks)
    if family is None:
        raise InvalidPlan(
            f"accumulation precision {accumulate} is not supported by the AMP kernels"
        )
    for mode, symbol in (("init", dispatch.init_symbol), ("accum", dispatch.accum_symbol)):
        try:
            abi = get_kernel(symbol or "")
        except UnknownKernelError:
            raise InvalidPlan(f"{mode} kernel @{symbol} is not in the kernel registry") from None
        if not abi.implemented:
            raise InvalidPlan(f"{mode} kernel @{symbol} is {abi.status}, not implemented")
        if abi.pointers != GEMM_KERNEL_POINTERS:
            raise InvalidPlan(
                f"{mode} kernel @{symbol} takes pointers {abi.pointers}, a gemm kernel "
                f"takes {GEMM_KERNEL_POINTERS}"
            )
        if not (symbol or "").startswith(f"amp_gemm_{KERNEL_PRECISION[problem.precision]}"):
            raise InvalidPlan(
                f"{mode} kernel @{symbol} does not run {problem.precision} operands"
            )
        if not (symbol or "").endswith(f"_{mode}"):
            raise InvalidPlan(f"{mode} kernel @{symbol} is not an {mode} kernel")
        if symbol != f"{family}{mode}":
            raise InvalidPlan(
                f"{mode} kernel @{symbol} does not keep {accumulate} partials (the plan's "
                f"accumulation); that is @{family}{mode}"
            )
    for entry in plan.operands.data:
        fmt, o = entry.format, entry.operand.data
        wanted = OUTPUT_PRECISION.get(problem.precision, problem.precision) if o == "out" \
            else problem.precision
        if fmt.precision.data != wanted:
            raise InvalidPlan(
                f"{o} is stored {fmt.precision_text()} but the {o} of these kernels is {wanted}"
            )
        if fmt.scale.data != problem.scale_of(o):
            raise InvalidPlan(f"{o} is stored with FP8 scale {fmt.scale.data}, the operand "
                              f"has scale {problem.scale_of(o)}")


def check_roles(plan: OperatorPlanAttr, problem: GemmProblem, target: Target,
                layout: GemmLayout) -> None:
    """GEMM layout roles, orders, memory class, alignment, batch and block structure."""
    for entry in plan.operands.data:
        o, fmt = entry.operand.data, entry.format
        if entry.role.data != ROLE_OF[o]:
            raise InvalidPlan(f"{o} has role {entry.role.data}, the AMP plan needs {ROLE_OF[o]}")
        if fmt.order.data != ORDER_OF[o]:
            raise InvalidPlan(f"{o} has order {fmt.order.data}, the AMP plan needs {ORDER_OF[o]}")
        if fmt.rank != len(problem.shape_of(o)):
            raise InvalidPlan(
                f"{o} format tiles {fmt.rank} axes, the operand has {len(problem.shape_of(o))}"
            )
        if entry.alignment.data % target.pace_alignment:
            raise InvalidPlan(
                f"{o} alignment {entry.alignment.data} is not a multiple of the PACE alignment "
                f"{target.pace_alignment}"
            )
        for axis, (block, parts) in enumerate(zip(fmt.blocks[:-2], fmt.partitions[:-2])):
            if (block, parts) != (1, 1):
                raise InvalidPlan(f"{o} batch axis {axis} is tiled {block} x {parts}, not 1 x 1")
    lhs, rhs, out = (plan.operand_plan(o).format for o in GEMM_OPERANDS)
    if out.memory.data != MemoryClass.INTERLEAVED:
        raise InvalidPlan("out must live in interleaved memory")
    if plan.operand_plan("lhs").tail.data < target.amp_left_access_tail_bytes:
        raise InvalidPlan(
            f"lhs access tail {plan.operand_plan('lhs').tail.data} is shorter than the left "
            f"stream's {target.amp_left_access_tail_bytes} bytes"
        )
    if ("out", "lhs") not in plan.distinct_pairs and ("lhs", "out") not in plan.distinct_pairs:
        raise InvalidPlan("out and lhs must sit in distinct memory elements")
    if lhs.blocks[-1] != AMP_BLOCK or rhs.blocks[-2:] != (AMP_BLOCK, AMP_BLOCK):
        raise InvalidPlan("the contraction axis must be tiled in 64-blocks on lhs and rhs")
    layout.check(plan, problem)
    if out.blocks[-1] != AMP_BLOCK:
        raise InvalidPlan("out columns must be tiled in 64-blocks")
    if (lhs.blocks[-2], lhs.partitions[-2]) != (out.blocks[-2], out.partitions[-2]):
        raise InvalidPlan("lhs and out must share the row tiling")
    if lhs.blocks[-2] % AMP_ROWS:
        raise InvalidPlan(f"row block {lhs.blocks[-2]} is not a multiple of the AMP {AMP_ROWS} rows")


def check_tile_groups(plan: OperatorPlanAttr, tiles: int) -> None:
    for entry in plan.operands.data:
        fmt = entry.format
        used = fmt.replication.data * fmt.partition_count
        if fmt.group.data > tiles or used > tiles:
            raise InvalidPlan(
                f"{entry.operand.data} needs a tile group of {max(fmt.group.data, used)} "
                f"tiles, only {tiles} available"
            )


def check_divisibility(plan: OperatorPlanAttr, problem: GemmProblem) -> None:
    for entry in plan.operands.data:
        o = entry.operand.data
        shape = problem.shape_of(o)
        g = ShardGeometry.from_format(shape, entry.format)
        for axis in g.rejected_axes():
            raise InvalidPlan(
                f"{o} axis {axis - len(shape)} extent {shape[axis]} is not a multiple of "
                f"block {g.blocks[axis]} and the tiling rejects padding"
            )


def check_memory(plan: OperatorPlanAttr, problem: GemmProblem, tiles: int, target: Target,
                 layout: GemmLayout) -> None:
    """The checks `place-memory` and `schedule-exchange` make, for the buffers of the tile
    the layout names and the row slots of the plan's exchange ops."""
    buffers = layout.buffers(plan, problem, target)
    who = tile_name(layout)
    check_capacity(buffers, target, who)
    allocator = check_placement(buffers, target, kept_apart(buffers, plan.distinct_pairs), who)
    if tiles > 1:  # one tile holds every block: no exchange
        slot_bytes = layout.row_slot_bytes(plan, problem, farthest_latency(tiles, target))
        check_row_slots(allocator, buffers, slot_bytes, target, who)


def check_plan(plan: OperatorPlanAttr, problem: GemmProblem, tiles: int, target: Target,
               layout: GemmLayout | None) -> None:
    """Every rule, in order (`layout`: the strategy of the plan's dispatch kind, None when
    no GEMM layout has it)."""
    check_transposes(plan, problem, layout)
    plan, problem = effective_plan(plan), problem.effective()
    layout = check_dispatch(plan, layout)
    check_kernels(plan, problem)
    check_roles(plan, problem, target, layout)
    check_tile_groups(plan, tiles)
    check_divisibility(plan, problem)
    check_memory(plan, problem, tiles, target, layout)
