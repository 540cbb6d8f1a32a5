"""`normalize-repeats`: store every iterated sequence of a `mid.repeat` once, outside the
body, as equal, consecutively placed per-tile blocks.

A sequence `[count, e...]` whose body element has format F is normalized to F with a whole
leading axis (`normalized_format`): every tile of F holds `[count, shard of F]`, leading axis
outermost, so element i of the sequence is block i of that tile's shard, at byte offset
`i * stride` with `stride` = one element's shard bytes. The lowering advances the element's
view by that base-pointer increment (`passes/operators/repeat.py`), never through a pointer
table. The stride must be a multiple of the alignment the body's consumers ask of the
element: when one element's shard is not, the body's element is stored padded
(`padded_element`: the block of an axis of a row-major shard grows until the shard's bytes
are a multiple of the alignment) and a `mid.rearrange` at the start of the body gives the
consumers their format back (a local repack on each tile when the grown axis is not
partitioned, else a gather); with no such block it is a diagnostic. A consumer's access
tail past block i reads block i + 1 (the tails are reads), and past the last block the
buffer's own tail, which carries the largest tail any consumer of the element asks for.

How a sequence gets there, innermost repeats first:
- already normalized: nothing;
- a function argument used by this repeat alone, input policy `consumer`: the argument is
  retyped (the host writes the normalized layout);
- a sequence element of an enclosing repeat used by this repeat alone: that body argument is
  retyped, and the enclosing repeat's own normalization then stores its sequence
  accordingly (blocks of blocks);
- otherwise: explicit `mid.cast_precision` / `mid.rearrange` ops before the repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import BlockArgument, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from ipu_dialects import mid
from ipu_dialects.locations import fused_location, located, value_label, value_location
from passes.insert_conversions import conversion_ops
from passes.operators.repeat import normalized_format
from planning.pipeline_config import configured_target, pipeline_config
from planning.shard_geometry import geometry

MAX_PAD_STEPS = 4  # block sizes tried per axis, in units of the alignment


def padded_element(element_type: TensorType, element: mid.TensorFormatAttr,
                   alignment: int) -> mid.TensorFormatAttr | None:
    """`element` with the block of one axis of its row-major shard grown (outermost axis
    first, each by the least amount) until one shard is a multiple of `alignment` bytes; None
    when no axis gets there. On an unpartitioned axis the tiles keep their boxes of the
    tensor (the shard is padded); on a partitioned one the boxes change too."""
    if element.order.data != "row_major":
        return None
    shape = element_type.get_shape()
    tiling = list(element.tiling.data)
    for axis, entry in enumerate(tiling):
        first = max(entry.block.data, geometry(shape, element).shard_shape[axis])
        if entry.partitions.data != 1:
            first = entry.block.data + 1
        for block in range(first, first + alignment * MAX_PAD_STEPS):
            tiling[axis] = mid.AxisTilingAttr(block, entry.partitions.data, mid.Indivisible.PAD)
            candidate = element.with_changes(tiling=tiling)
            if geometry(shape, candidate).shard_bytes() % alignment == 0:
                return candidate
        tiling[axis] = entry
    return None


def consumer_alignment(arg: SSAValue, least: int) -> int:
    """The largest alignment a body consumer's plan asks of the element (at least `least`,
    the target's vector alignment, which every buffer has)."""
    from passes.operators import operator_for_mid

    alignment = least
    for use in arg.uses:
        plan = getattr(use.operation, "plan", None)
        operator = operator_for_mid(use.operation)
        if isinstance(plan, mid.OperatorPlanAttr) and operator is not None:
            name = operator.operand_names[use.index]
            alignment = max(alignment, plan.operand_plan(name).alignment.data)
    return alignment


@dataclass
class RepeatNormalizer:
    config: mid.PipelineConfigAttr
    function: func.FuncOp

    def run(self) -> None:
        repeats = [op for op in self.function.body.walk() if isinstance(op, mid.RepeatOp)]
        for repeat in reversed(repeats):  # innermost first
            for index in range(len(repeat.sequences)):
                self.normalize(repeat, index)
        self.function.update_function_type()

    def normalize(self, repeat: mid.RepeatOp, index: int) -> None:
        seq, arg = repeat.sequences[index], repeat.sequence_args[index]
        assert isinstance(seq.type, TensorType) and isinstance(arg.type, TensorType)
        element = arg.type.encoding
        assert isinstance(element, mid.TensorFormatAttr)
        if self.misaligned(arg, arg.type, element):
            element = self.pad_element(repeat, index, arg.type, element)
            arg = repeat.sequence_args[index]
        self.check_stride(repeat, index, arg.type, element, self.alignment)
        wanted = TensorType(seq.type.get_element_type(), seq.type.get_shape(),
                            normalized_format(element))
        if seq.type == wanted:
            return
        if self.retypable(seq):
            Rewriter.replace_value_with_new_type(seq, wanted)
            return
        ops = conversion_ops(seq, wanted)
        for op in ops:
            op.attributes[mid.CONSUMER_ATTR_NAME] = StringAttr(
                f"graph.repeat {value_label(repeat.results[0]) if repeat.results else ''}"
                f" (sequence #{index}, normalized once outside the body)")
            op.location = fused_location(repeat.location, value_location(seq))
        Rewriter.insert_op(ops, InsertPoint.before(repeat))
        repeat.operands[len(repeat.carried) + len(repeat.invariants) + index] = (
            ops[-1].results[0])

    def misaligned(self, arg: SSAValue, element_type: TensorType,
                   element: mid.TensorFormatAttr) -> bool:
        stride = geometry(element_type.get_shape(), element).shard_bytes()
        return stride % consumer_alignment(arg, self.alignment) != 0

    def pad_element(self, repeat: mid.RepeatOp, index: int, element_type: TensorType,
                    element: mid.TensorFormatAttr) -> mid.TensorFormatAttr:
        """Store the body's element padded (`padded_element`); its consumers read it back in
        their format through a rearrange at the start of the body. Returns the padded format
        (unchanged when there is nothing to pad, and `check_stride` then says why)."""
        arg = repeat.sequence_args[index]
        padded = padded_element(element_type, element,
                                consumer_alignment(arg, self.alignment))
        if padded is None:
            return element
        uses = [(use.operation, use.index) for use in arg.uses]
        stored = Rewriter.replace_value_with_new_type(
            arg, TensorType(element_type.get_element_type(), element_type.get_shape(), padded))
        ops = conversion_ops(stored, element_type)
        for op in ops:
            op.attributes[mid.CONSUMER_ATTR_NAME] = StringAttr(
                f"graph.repeat {value_label(repeat.results[0]) if repeat.results else ''}"
                f" (sequence #{index}: its element is stored padded to an aligned stride)")
            op.location = repeat.location
        Rewriter.insert_op(ops, InsertPoint.at_start(repeat.block))
        for operation, position in uses:
            operation.operands[position] = ops[-1].results[0]
        return padded

    def retypable(self, seq: SSAValue) -> bool:
        if not isinstance(seq, BlockArgument) or len(list(seq.uses)) != 1:
            return False
        owner = seq.block.parent_op()
        if owner is self.function:
            return self.config.inputs.data == mid.InputPolicy.CONSUMER
        return isinstance(owner, mid.RepeatOp) and seq in owner.sequence_args

    @property
    def alignment(self) -> int:
        return configured_target(self.config, NormalizeRepeatsPass.name).vector_alignment

    @staticmethod
    def check_stride(repeat: mid.RepeatOp, index: int, element_type: TensorType,
                     element: mid.TensorFormatAttr, least: int) -> None:
        stride = geometry(element_type.get_shape(), element).shard_bytes()
        arg = repeat.sequence_args[index]
        alignment = consumer_alignment(arg, least)
        if stride % alignment:
            raise PassFailedException(located(
                repeat, f"normalize-repeats: sequence operand #{index} of the repeat has "
                f"elements of {stride} bytes per tile, not a multiple of the {alignment}-byte "
                "alignment its body's consumer asks for; consecutive blocks cannot be aligned"))


@dataclass(frozen=True)
class NormalizeRepeatsPass(ModulePass):
    """Store each `mid.repeat` sequence once as consecutive per-tile blocks (module doc)."""

    name = "normalize-repeats"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        config = pipeline_config(op, self.name)
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
            if not function.is_declaration:
                RepeatNormalizer(config, function).run()
