"""`insert-conversions`: make every format change explicit.

`graph-to-mid` bridges a consumer that wants another format than its producer's with a
`builtin.unrealized_conversion_cast` between two mid tensor types. This pass replaces each
bridge with the explicit mid ops:

- same storage precision: one `mid.rearrange`;
- only the precision differs: one `mid.cast_precision`;
- both differ: a `mid.cast_precision` and a `mid.rearrange`, ordered so that the data moved by
  the rearrangement is the narrower of the two precisions (narrowing casts first, widening
  casts last);
- identical types: the bridge is dropped.

The explicit ops keep the bridge's `ipu.for` (the consumer) and its location, the
`loc(fused[consumer, producer])` graph-to-mid gave it.

A bridge between non-mid types is left alone (it is not ours); a bridge from or to a mid
tensor whose shape differs is a diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType, UnrealizedConversionCastOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from device.layouts import element_bytes
from ipu_dialects import mid
from ipu_dialects.locations import located


def mid_tensor(value_type: object) -> tuple[TensorType, mid.TensorFormatAttr] | None:
    if isinstance(value_type, TensorType) and isinstance(
        value_type.encoding, mid.TensorFormatAttr
    ):
        return value_type, value_type.encoding
    return None


def conversion_ops(value: SSAValue, dst: TensorType) -> list[Operation]:
    """The explicit ops turning `value` (a mid tensor) into type `dst`, chained in order."""
    src = value.type
    assert isinstance(src, TensorType)
    src_fmt, dst_fmt = src.encoding, dst.encoding
    assert isinstance(src_fmt, mid.TensorFormatAttr) and isinstance(dst_fmt, mid.TensorFormatAttr)
    if src == dst:
        return []
    same_precision = (src_fmt.precision, src_fmt.scale) == (dst_fmt.precision, dst_fmt.scale)
    if same_precision and src.get_element_type() == dst.get_element_type():
        return [mid.RearrangeOp(value, dst)]
    if src_fmt.with_changes(precision=dst_fmt.precision.data, scale=dst_fmt.scale.data) == dst_fmt:
        return [mid.CastPrecisionOp(value, dst)]
    narrowing = element_bytes(dst_fmt.precision.data) < element_bytes(src_fmt.precision.data)
    if narrowing:  # cast where the data is, then move the narrower data
        cast_fmt = src_fmt.with_changes(precision=dst_fmt.precision.data, scale=dst_fmt.scale.data)
        middle = TensorType(dst.get_element_type(), dst.get_shape(), cast_fmt)
        cast = mid.CastPrecisionOp(value, middle)
        return [cast, mid.RearrangeOp(cast.result, dst)]
    moved_fmt = dst_fmt.with_changes(precision=src_fmt.precision.data, scale=src_fmt.scale.data)
    middle = TensorType(src.get_element_type(), src.get_shape(), moved_fmt)
    move = mid.RearrangeOp(value, middle)
    return [move, mid.CastPrecisionOp(move.result, dst)]


@dataclass
class MaterializeBridge(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnrealizedConversionCastOp, rewriter: PatternRewriter, /):
        if len(op.inputs) != 1 or len(op.outputs) != 1:
            return
        src, dst = mid_tensor(op.inputs[0].type), mid_tensor(op.outputs[0].type)
        if src is None or dst is None:
            return
        src_type, dst_type = src[0], dst[0]
        if src_type.get_shape() != dst_type.get_shape():
            raise PassFailedException(located(
                op,
                f"insert-conversions: cannot convert %{op.inputs[0].name_hint or '?'} of shape "
                f"{list(src_type.get_shape())} to shape {list(dst_type.get_shape())}"
            ))
        ops = conversion_ops(op.inputs[0], dst_type)
        for new_op in ops:  # consumer and producer, kept for provenance and diagnostics
            new_op.attributes.update(op.attributes)
            new_op.location = op.location
        result = ops[-1].results[0] if ops else op.inputs[0]
        rewriter.replace(op, ops, [result])


@dataclass(frozen=True)
class InsertConversionsPass(ModulePass):
    name = "insert-conversions"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(MaterializeBridge(), apply_recursively=False).rewrite_module(op)
