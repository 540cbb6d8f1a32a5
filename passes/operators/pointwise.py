"""What the pointwise operators (add, gelu) share: candidates that follow an operand's format
or cut one axis, their validation, cost and lowering to one local kernel call per shard."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from ipu_dialects import mid
from ipu_dialects.locations import value_label
from ipu_dialects.tile import BufferOp, KernelOp, WorkProvenanceAttr
from passes.operators.base import (
    STARVES_A_CONSUMER,
    Assumed,
    Candidate,
    GivenFormatsOperator,
    SelectionContext,
    TileLowering,
    consumers_cycles,
    format_of,
    tensor_type,
    unless_every_one_starves,
)
from passes.operators.costs import conversion_cycles, plan_kernel_cycles, shard_memory_reason
from passes.operators.formats import (
    current_format,
    descriptor,
    split_format,
    tensor_format_of,
    with_storage,
)
from passes.operators.resident import selection_room
from passes.operators.tile_maps import scalar_map, tiles_of
from planning.plan_reasons import MemoryReason
from planning.shard_geometry import geometry

# The mid ops lowered to one kernel call per output shard: the elementwise ops (add, gelu, ...),
# attention, layer norm and gather.
PointwiseOp = (mid.BinaryElementwiseOp | mid.UnaryElementwiseOp | mid.AttentionOp
               | mid.LayerNormOp | mid.GatherOp)

# operand formats for an output format, or the reason there are none
OperandFormats = Callable[[mid.TensorFormatAttr], dict[str, mid.TensorFormatAttr] | str]


def pointwise_plan(name: str, symbol: str, formats: dict[str, mid.TensorFormatAttr],
                   alignment: int, alias: str = "none") -> mid.OperatorPlanAttr:
    operands = [
        mid.OperandPlanAttr(operand, mid.OperandRole.OUTPUT if operand == "out"
                            else mid.OperandRole.INPUT, fmt, alignment, 0)
        for operand, fmt in formats.items()
    ]
    return mid.OperatorPlanAttr(
        name, mid.OperatorDispatchAttr(mid.DispatchKind.POINTWISE, init=symbol),
        mid.StoragePrecision.F32, "", operands, [], alias,
    )


class PointwiseOperator(GivenFormatsOperator):
    """An operator whose candidates `evaluate` builds (add, gelu, layer norm, embedding)."""


def output_formats(op: Operation, ctx: SelectionContext,
                   assumed: Assumed | None = None) -> list[tuple[str, mid.TensorFormatAttr]]:
    """Candidate output formats: each operand's current (or `assumed`) format (if it has the
    output's shape), then every axis cut across the tiles."""
    out_type = tensor_type(op.results[0])
    shape = tuple(out_type.get_shape())
    found: list[tuple[str, mid.TensorFormatAttr]] = []
    for index, value in enumerate(op.operands):
        fmt = format_of(value, assumed or {})
        if fmt is not None and tuple(tensor_type(value).get_shape()) == shape:
            found.append((f"follow{index}", with_storage(fmt, out_type)))
    for axis in range(len(shape)):
        if shape[axis] > 1 or axis == len(shape) - 1:
            found.append((f"split{axis}", split_format(shape, axis, ctx.tiles, out_type,
                                                      ctx.indivisible)))
    unique: dict[mid.TensorFormatAttr, str] = {}
    for name, fmt in found:
        unique.setdefault(fmt, name)
    return [(name, fmt) for fmt, name in unique.items()]


def evaluate(op: Operation, ctx: SelectionContext, kind: str, symbol: str,
             operand_names: Sequence[str], operand_formats: OperandFormats,
             aliasable: Sequence[str] = (), named: Sequence[int] = (),
             outputs: list[tuple[str, mid.TensorFormatAttr]] | None = None,
             assumed: Assumed | None = None,
             kernel_cost: Callable[[list[TensorType]], int] | None = None) -> list[Candidate]:
    """Candidates for each output format (default `output_formats`); `named`: the kernel's
    named scalars, for its cost; `aliasable`: the operands (in order of preference) the
    kernel may write its output over, which a plan allows when the operand has the output's
    shape and format (`alias_of`); `assumed`: formats taken for operands not lowered yet;
    `kernel_cost`: the plan's kernel cycles from its types (out first), where the kernel
    takes more than them (default: `plan_kernel_cycles` of `symbol` on the types)."""

    def candidate(plan_name: str, out_fmt: mid.TensorFormatAttr) -> Candidate:
        formats = operand_formats(out_fmt)
        if isinstance(formats, str):
            placeholder = pointwise_plan(plan_name, symbol, {"out": out_fmt},
                                         ctx.target.vector_alignment)
            return Candidate(placeholder, formats, None)
        formats["out"] = out_fmt
        alias = alias_of(op, operand_names, formats, aliasable)
        plan = pointwise_plan(plan_name, symbol, formats, ctx.target.vector_alignment, alias)
        types = plan_types(op, operand_names, formats)
        reason = tiles_reason(op, formats, ctx.tiles) or shard_memory_reason(types, ctx.target)
        cycles, consumers = None, 0
        if reason is None:
            cycles = (plan_kernel_cycles(symbol, types, ctx.target, extra=named)
                      if kernel_cost is None else kernel_cost(types))
            for value, operand in zip(op.operands, operand_names, strict=True):
                cycles += conversion_cycles(value, formats[operand], ctx, assumed)
            priced = consumers_cycles(ctx, op.results[0], out_fmt)
            if priced is None:
                reason = STARVES_A_CONSUMER
            else:
                consumers = priced
                cycles += consumers
        return Candidate(plan, reason, cycles, consumers)

    def moved_candidate(name: str, fmt: mid.TensorFormatAttr) -> Candidate:
        return candidate(f"{kind}_{name}_at{fmt.first_tile.data}", fmt)

    candidates = []
    for name, out_fmt in output_formats(op, ctx, assumed) if outputs is None else outputs:
        moved = spread_candidate(op, out_fmt, ctx, functools.partial(moved_candidate, name))
        if moved is not None:  # first: it wins the ties with its twin from tile 0
            candidates.append(moved)
        candidates.append(candidate(f"{kind}_{name}", out_fmt))
    return unless_every_one_starves(fitting_first(op, operand_names, candidates, ctx))


def fitting_first(op: Operation, operand_names: Sequence[str], candidates: list[Candidate],
                  ctx: SelectionContext) -> list[Candidate]:
    """The candidates, those valid ones that do not fit beside what their tiles already hold
    (`ctx.resident`) refused when another valid one does, as GEMM selection prefers them: an
    embedding table gathered whole on tile 0 (a vocabulary's rows in one shard) is cheapest
    until the layers' weights are stored there too."""
    room = selection_room(ctx.target)
    shapes = [tensor_type(v).get_shape() for v in op.operands]
    names = (*operand_names, "out")
    all_shapes = [*shapes, tensor_type(op.results[0]).get_shape()]

    def fits(found: Candidate) -> bool:
        formats = [found.plan.operand_plan(n).format for n in names]
        held = sum(geometry(shape, fmt).shard_bytes()
                   for shape, fmt in zip(all_shapes, formats, strict=True))
        return ctx.resident.fits(held, formats[:-1], shapes, room, (all_shapes[-1], formats[-1]))

    verdicts = [c.reason is None and fits(c) for c in candidates]
    if not any(verdicts):
        return candidates
    beside = "does not fit beside what its tiles already hold (earlier inputs and weights)"
    return [replace_reason(c, MemoryReason(beside)) if c.reason is None and not fit else c
            for c, fit in zip(candidates, verdicts, strict=True)]


def replace_reason(found: Candidate, reason: str) -> Candidate:
    return dataclasses.replace(found, reason=reason, cycles=None)


def spread_candidate(op: Operation, out_fmt: mid.TensorFormatAttr, ctx: SelectionContext,
                     build: Callable[[mid.TensorFormatAttr], Candidate]) -> Candidate | None:
    """The candidate of `out_fmt` moved to the least-loaded tiles (`ctx.spreading`), when it
    uses fewer tiles than the chip: a pointwise plan computes on its output's tiles and its
    operands come to it, so it may start anywhere. It is priced as the others (its operands'
    conversions) plus what its consumers pay more to take the moved result, so that it wins
    only where it costs no more than its twin from tile 0."""
    spreading = ctx.spreading
    if spreading is None or pins_twin(op, out_fmt):
        return None
    geom = geometry(tensor_type(op.results[0]).get_shape(), out_fmt)
    if geom.tiles_used >= ctx.tiles:
        return None
    start = spreading.least_loaded_start(geom.tiles_used)
    if start == geom.first_tile:
        return None
    moved = out_fmt.with_changes(first_tile=start)
    extra = spreading.consumers_extra_cycles(op.results[0], moved, out_fmt)
    if extra is None:  # its consumers are not known to take it there
        return None
    found = build(moved)
    if found.cycles is None:
        return None
    return dataclasses.replace(found, cycles=found.cycles + extra,
                               consumers=found.consumers + extra)


def pins_twin(op: Operation, out_fmt: mid.TensorFormatAttr) -> bool:
    """A consumer of the result already has another operand in `out_fmt`: it would follow
    that operand and convert a moved result (a residual add of two values cut alike)."""
    return any(other is not op.results[0] and current_format(other) == out_fmt
               for use in op.results[0].uses for other in use.operation.operands)


def alias_of(op: Operation, operand_names: Sequence[str],
             formats: dict[str, mid.TensorFormatAttr], aliasable: Sequence[str]) -> str:
    """The first aliasable operand stored exactly as the output (shape and format): element i
    of the output is then computed from element i of it alone, so writing over it is safe."""
    shape = tensor_type(op.results[0]).get_shape()
    for name in aliasable:
        value = op.operands[list(operand_names).index(name)]
        if formats[name] == formats["out"] and tensor_type(value).get_shape() == shape:
            return name
    return "none"


def in_place_buffer(op: PointwiseOp, lowering: TileLowering,
                    operand_names: Sequence[str]) -> BufferOp | None:
    """The operand buffer the output is written over, when the plan allows it (`alias`) and
    the operand dies here: a scratch value computed by an earlier op, used by this op alone,
    whose buffer meets the output's alignment and access tail; the output is not returned."""
    plan = op.plan
    assert isinstance(plan, mid.OperatorPlanAttr)
    out = op.results[0]
    if plan.alias.data == "none" or out in lowering.outputs:
        return None
    value = op.operands[list(operand_names).index(plan.alias.data)]
    if not isinstance(value.owner, Operation) or any(u.operation is not op for u in value.uses):
        return None
    buffer = lowering.buffers.get(value)
    if buffer is None or buffer.kind.data != "scratch":
        return None
    align, tail = lowering.requirements.get(out, (lowering.target.vector_alignment, 0))
    if buffer.alignment_bytes < align or buffer.tail_bytes < tail:
        return None
    return buffer


def plan_types(op: Operation, operand_names: Sequence[str],
               formats: dict[str, mid.TensorFormatAttr]) -> list[TensorType]:
    """The mid tensor types a plan gives its output and operands (the kernel's order)."""
    values = [op.results[0], *op.operands]
    names = ["out", *operand_names]
    return [TensorType(tensor_type(v).get_element_type(), tensor_type(v).get_shape(), formats[n])
            for v, n in zip(values, names, strict=True)]


def tiles_reason(op: Operation, formats: dict[str, mid.TensorFormatAttr], tiles: int) -> str | None:
    shape = tuple(tensor_type(op.results[0]).get_shape())
    out = geometry(shape, formats["out"])
    if out.tiles_used > tiles:
        return f"the output format uses {out.tiles_used} tiles, the pipeline has {tiles}"
    return None


def lower_pointwise(op: PointwiseOp, lowering: TileLowering, values: Sequence[SSAValue],
                    reason: str, named: Sequence[int] = (),
                    operand_names: Sequence[str] = ()) -> list[Operation]:
    """One kernel call per output shard: `out` first, then the operands, each at offset 0;
    the kernel's named scalars, then its operands' descriptors (it is specialized on their
    formats); runs on every tile of the output's format. The output is written over an
    operand's buffer where the plan allows it and the operand dies here (`in_place_buffer`)."""
    out = op.results[0]
    if operand_names and out not in lowering.buffers:
        buffer = in_place_buffer(op, lowering, operand_names)
        if buffer is not None:
            lowering.buffers[out] = buffer
    buffers = [lowering.result_buffer(out), *(lowering.operand_buffer(op, v) for v in values)]
    scalars = [*named, *(w for value in (out, *values) for w in descriptor(tensor_type(value)))]
    fmt = tensor_format_of(out)
    tiles = tiles_of(geometry(tensor_type(out).get_shape(), fmt))
    plan = op.plan
    assert isinstance(plan, mid.OperatorPlanAttr)
    symbol = plan.dispatch.init_symbol
    assert symbol is not None
    provenance = WorkProvenanceAttr(lowering.source_of(op), value_label(out), reason)
    zero = scalar_map(0, 0)
    return [KernelOp(symbol, [(b, zero) for b in buffers], scalars, tiles, [], provenance)]
