"""`mid-to-tile`: lower each mid function to logical per-tile work (`tile` dialect).

Every function becomes a function without arguments whose body declares one `tile.buffer` per
value (arguments -> `input N`, returned values -> `output N`, other values and the operators'
staging slots -> `scratch`) followed by the work, in program order (`MidToTileLowering`). Each
mid op is lowered by its operator (`passes/operators/`), which sees this lowering through
`passes.operators.base.TileLowering` and asks it for the buffers of its operands: for example
`mid.gemm` by its layout's lowering (`passes/operators/gemm.py`, `LOWERINGS`),
`mid.repeat` by one `tile.loop` around its lowered body (`passes/operators/repeat.py`). The op
count is a constant per op: it grows neither with the tile count, nor with the number of
blocks, nor with a repeat's count.

A buffer serves every op that uses its value, so its alignment and access tail are the largest
any of those ops' plans asks for.

Locations: a value's buffer has the location of the op defining the value (an argument's: the
function's); every tile op and staging slot an operator creates without a location of its
own gets its mid op's location (a conversion's is `fused[consumer, producer]`); the copy of a
returned value that has a buffer already gets `fused[func.return, producer]`.

The tile count comes from the module's `ipu.config` (`#mid.config`), never from an option.
An op no operator lowers gives a `PassFailedException` naming the op.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, TensorType, i64
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from device.target import Target
from ipu_dialects import mid
from ipu_dialects.locations import (
    fused_location,
    is_known,
    located,
    located_value,
    value_label,
    value_location,
)
from ipu_dialects.tile import BufferOp, KernelOp, TileSetAttr, WorkProvenanceAttr
from passes.operators import operator_for_mid
from passes.operators.base import tensor_type
from passes.operators.conversions import CONVERT_KERNEL
from passes.operators.formats import descriptor
from passes.operators.repeat import unify_carried_requirements
from passes.operators.tile_maps import refuse_first_tiles, scalar_map
from planning.pipeline_config import configured_target, pipeline_config
from planning.program_estimate import op_estimates
from planning.shard_geometry import geometry


@dataclass
class MidToTileLowering:
    function: func.FuncOp
    tile_count: int
    target: Target
    buffers: dict[SSAValue, BufferOp] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    outputs: dict[SSAValue, int] = field(default_factory=dict)
    # largest (alignment, access tail) any plan asks of each value (at least what the
    # descriptor kernels of conversions need: the target's vector alignment)
    requirements: dict[SSAValue, tuple[int, int]] = field(default_factory=dict)
    # the mid ops being lowered, innermost last (a repeat's body ops inside the repeat)
    lowering_ops: list[Operation] = field(default_factory=list)
    # the cycles of the work lowerings add beside the selected plans (a repeat's copies),
    # counted into the function's estimate
    added_cycles: int = 0

    def unique_name(self, wanted: str) -> str:
        name, suffix = wanted, 0
        while name in self.names:
            suffix += 1
            name = f"{wanted}_{suffix}"
        self.names.add(name)
        return name

    def require(self, op: Operation) -> None:
        """Record what `op`'s plan asks of the buffers of its operands and result."""
        plan = getattr(op, "plan", None)
        if not isinstance(plan, mid.OperatorPlanAttr):
            return
        operator = operator_for_mid(op)
        assert operator is not None  # every mid op with a plan has its operator
        names = (*operator.plan_operand_names(op), "out")
        for value, name in zip((*op.operands, *op.results), names, strict=True):
            entry = plan.operand_plan(name)
            align, tail = self.requirements.get(value, (self.target.vector_alignment, 0))
            self.requirements[value] = (max(align, entry.alignment.data), max(tail, entry.tail.data))

    def buffer_for(self, value: SSAValue, kind: str, index: int | None) -> BufferOp:
        if value not in self.buffers:
            self.buffers[value] = self.new_buffer(value, kind, index)
        return self.buffers[value]

    def new_buffer(self, value: SSAValue, kind: str, index: int | None,
                   name: str | None = None) -> BufferOp:
        value_type = value.type
        assert isinstance(value_type, TensorType)
        fmt = value_type.encoding
        assert isinstance(fmt, mid.TensorFormatAttr)
        geom = geometry(value_type.get_shape(), fmt)
        if geom.tile_stop > self.tile_count:
            where = (f"{geom.tiles_used} tiles" if not geom.first_tile
                     else f"{geom.tile_span()} (first_tile = {geom.first_tile})")
            raise PassFailedException(located_value(
                value,
                f"mid-to-tile: {value_label(value)} is stored on {where}, but the "
                f"module is configured for {self.tile_count}"
            ))
        wanted = name or value.name_hint or (f"{kind}{index}" if index is not None else "value")
        buffer = BufferOp(
            self.unique_name(wanted),
            kind,
            TileSetAttr.range(geom.first_tile, geom.tile_stop),
            geom.shard_shape,
            fmt.precision.data,
            fmt.order.data,
            fmt.memory.data,
            *self.requirements.get(value, (self.target.vector_alignment, 0)),
            index=index,
            origin=value_type,
        )
        buffer.buffer.name_hint = buffer.sym_name.data
        buffer.location = value_location(value)
        return buffer

    def lower(self) -> func.FuncOp:
        body = self.function.body.block
        terminator = body.last_op
        if not isinstance(terminator, func.ReturnOp):
            raise PassFailedException(
                f"mid-to-tile: function @{self.function.sym_name.data} does not end with func.return"
            )
        copies: list[tuple[SSAValue, int]] = []
        for position, value in enumerate(terminator.arguments):
            if value in self.outputs or not isinstance(value.owner, Operation):
                copies.append((value, position))  # an argument, or a result returned twice
            else:
                self.outputs[value] = position
        work: list[Operation] = []
        ops = [op for op in body.ops if op is not terminator]
        for op in ops:
            for nested in op.walk():
                self.require(nested)
        unify_carried_requirements(self, ops)
        for arg in self.function.args:  # the host writes every argument, used or not
            self.buffer_for(arg, "input", arg.index)
        for op in ops:
            work.extend(self.lower_op(op))
        for value, position in copies:
            work.append(self.copy_to_output(value, position, terminator))
        buffers = self.ordered_buffers()
        new_return = func.ReturnOp()
        new_return.location = terminator.location
        new_body = Block([*buffers, *work, new_return])
        lowered = func.FuncOp.from_region(
            self.function.sym_name.data, [], [], Region(new_body)
        )
        lowered.location = self.function.location
        # the selector's estimate of the whole function, kept for the package (`ipu-run`
        # prints it beside the modeled cycles); a hand-written mid function has none
        if estimates := op_estimates(self.function):
            lowered.attributes[mid.ESTIMATE_ATTR_NAME] = IntegerAttr(
                sum(e.total for e in estimates) + self.added_cycles, i64)
        return lowered

    def copy_to_output(self, value: SSAValue, position: int, terminator: Operation) -> Operation:
        """Result `position` returns `value`, which has a buffer of its own already (an
        argument, or a result also returned at another position): copy it into an output
        buffer of the same format (the host reads each result from its own buffer)."""
        if value in self.buffers:
            source = self.buffers[value]
        else:  # an argument that is only returned
            assert isinstance(value, BlockArgument)
            source = self.buffer_for(value, "input", value.index)
        output = self.new_buffer(value, "output", position, name=f"result{position}")
        self.buffers[SSAValue.get(output)] = output
        words = descriptor(tensor_type(value))
        zero = scalar_map(0, 0)
        copy = KernelOp(
            CONVERT_KERNEL, [(output, zero), (source, zero)], [*words, *words], output.tiles, [],
            WorkProvenanceAttr("func.return", value_label(value),
                               f"result {position} returns a value that has a buffer already"),
        )
        output.location = copy.location = fused_location(terminator.location,
                                                         value_location(value))
        return copy

    def source_of(self, op: Operation) -> str:
        """The graph op a mid op's work comes from, for provenance: `graph.gemm %c`; a
        conversion names the consumer it was inserted for (`ipu.for`, from graph-to-mid)."""
        consumer = op.attributes.get(mid.CONSUMER_ATTR_NAME)
        if isinstance(consumer, StringAttr):
            return consumer.data
        return f"graph.{op.name.split('.', 1)[1]} {value_label(op.results[0])}"

    def source_of_repeat(self, op: Operation) -> str:
        return f"graph.repeat {value_label(op.results[0])}" if op.results else "graph.repeat"

    def lower_op(self, op: Operation) -> list[Operation]:
        if op.dialect_name() == "tile":
            raise PassFailedException(located(
                op,
                f"mid-to-tile: the function is at the tile level already ({op.name} "
                f"{', '.join(value_label(r) for r in op.results)}); run mid-to-tile once"
            ))
        operator = operator_for_mid(op)
        if operator is None:
            raise PassFailedException(located(
                op,
                f"mid-to-tile: cannot lower {op.name} (result "
                f"{', '.join(value_label(r) for r in op.results) or 'none'}): no operator of "
                "passes/operators lowers it"
            ))
        if not operator.honours_first_tile:
            refuse_first_tiles(op, f"{op.name} plans")
        self.lowering_ops.append(op)
        try:
            work = operator.lower(op, self)
        finally:
            self.lowering_ops.pop()
        # every tile op points at the user's source line of its graph op; ops that have a
        # location already keep it (a repeat's body ops, copies located by their operator)
        for top in work:
            for nested in top.walk():
                if not is_known(nested.location):
                    nested.location = op.location
        return work

    def ordered_buffers(self) -> list[BufferOp]:
        """Inputs first (by index), then outputs (by index), then scratch in creation order."""
        buffers = list(dict.fromkeys(self.buffers.values()))  # a repeat's values share some
        rank = {"input": 0, "output": 1, "scratch": 2}
        return sorted(
            buffers,
            key=lambda b: (rank[b.kind.data], b.index.value.data if b.index is not None else 0),
        )

    def operand_buffer(self, op: Operation, value: SSAValue) -> BufferOp:
        if value in self.buffers:
            return self.buffers[value]
        if isinstance(value, BlockArgument):
            return self.buffer_for(value, "input", value.index)
        raise PassFailedException(
            f"mid-to-tile: {op.name} uses {value_label(value)} before it is computed"
        )

    def result_buffer(self, value: SSAValue) -> BufferOp:
        if value in self.outputs:
            return self.buffer_for(value, "output", self.outputs[value])
        return self.buffer_for(value, "scratch", None)

    def scratch(self, wanted: str, tiles: TileSetAttr, shard: tuple[int, ...], precision: str,
                order: str, memory: str, alignment: int, tail: int = 0) -> BufferOp:
        """A staging buffer of an operator's lowering (no value of the program); `tail`:
        bytes a kernel's stream may read beyond it (the AMP left operand's)."""
        slot = BufferOp(self.unique_name(wanted), "scratch", tiles, shard, precision, order,
                        memory, alignment, tail)
        slot.buffer.name_hint = slot.sym_name.data
        if self.lowering_ops:  # the op whose work stages data in it
            slot.location = self.lowering_ops[-1].location
        self.buffers[SSAValue.get(slot)] = slot
        return slot


@dataclass(frozen=True)
class MidToTilePass(ModulePass):
    """Lower `mid` functions to `tile` work lists (see the module docstring)."""

    name = "mid-to-tile"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = pipeline_config(op, self.name)
        target = configured_target(config, self.name)
        for function in [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]:
            if function.is_declaration:
                continue
            lowered = MidToTileLowering(function, config.tiles.data, target).lower()
            op.body.block.insert_op_before(lowered, function)
            op.body.block.erase_op(function)

