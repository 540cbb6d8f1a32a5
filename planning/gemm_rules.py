"""The rules every GEMM plan obeys, checked against the concrete operand types.

`check_plan` runs them in order and raises `InvalidPlan` with the first reason: transposed
operands stored transposed (and read by the layout), a GEMM dispatch with 64/64 blocks over
(lhs, rhs, out), kernels that exist and keep the plan's partials, the AMP's roles, orders,
alignment and block structure (with the layout's own cuts, `GemmLayout.check`), tile groups
within the tile count, padding where the tiling rejects it, and tile memory
(`planning/gemm_memory.py`) for the buffers and row slots the layout says its tiles hold.
"""

from __future__ import annotations

from device.kernels import UnknownKernelError, get_kernel
from device.layouts import AMP_BLOCK, AMP_ROWS
from device.target import Target
from ipu_dialects.mid import MemoryClass, OperatorPlanAttr
from planning.gemm_layout import GemmLayout, tile_name
from planning.gemm_memory import (
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
    UNTRANSPOSED_ORDER,
    GemmProblem,
    InvalidPlan,
    effective_format,
    effective_plan,
    kernel_family,
)
from planning.shard_geometry import ShardGeometry

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
