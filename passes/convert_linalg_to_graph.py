"""`convert-linalg-to-graph`: rewrite the linalg-on-tensors ops that torch-mlir-style flows emit
into graph ops, so that IR from the MLIR ecosystem enters the pipeline.

- `linalg.matmul` and `linalg.batch_matmul` (MLIR's default indexing maps) become a
  `graph.gemm` (leading batch axis for the batched one). Their `outs` operand is the
  accumulator: one that is `tensor.empty` (no defined values; zero is one of them) or a
  `linalg.fill` with 0.0 adds nothing; any other accumulator C becomes `graph.add(gemm, C)`.
- `linalg.add` and an elementwise `linalg.generic` (two inputs and one output, identity
  indexing maps, parallel iterators, a body that is one `arith.addf` of the two inputs) become
  `graph.add`.
- `tensor.empty`, `linalg.fill` and the `arith.constant` a fill reads are erased once nothing
  uses them.

Every new op takes the location of the op it replaces. Anything else of the linalg or tensor
dialects (another named op, a generic with another body, a fill or an empty tensor still used
by what stays) is a diagnostic at the op, naming it and its result; the other passes never see
linalg ops. Other ops are left as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, builtin, tensor
from xdsl.dialects.builtin import AffineMapAttr, FloatAttr
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ipu_dialects import graph
from ipu_dialects.linalg_batch import BatchMatmulOp
from ipu_dialects.locations import located, value_label

NAME = "convert-linalg-to-graph"


def fail(op: Operation, why: str) -> PassFailedException:
    result = f" (result {value_label(op.results[0])})" if op.results else ""
    return PassFailedException(located(op, f"{NAME}: cannot convert {op.name}{result}: {why}"))


def is_zero(value: SSAValue) -> bool:
    """An accumulator that adds nothing: `tensor.empty` or a fill with 0.0 (of an empty)."""
    owner = value.owner
    if isinstance(owner, tensor.EmptyOp):
        return True
    if isinstance(owner, linalg.FillOp) and len(owner.inputs) == 1:
        constant = owner.inputs[0].owner
        return (isinstance(constant, arith.ConstantOp)
                and isinstance(constant.value, FloatAttr) and constant.value.value.data == 0.0)
    return False


def has_default_maps(op: linalg.MatmulOp | BatchMatmulOp) -> bool:
    default = op.properties["indexing_maps"]
    return default == type(op).get_irdl_definition().properties["indexing_maps"].default_value


def convert_matmul(op: linalg.MatmulOp | BatchMatmulOp) -> list[Operation]:
    if len(op.inputs) != 2 or len(op.outputs) != 1 or len(op.results) != 1:
        raise fail(op, "expected two inputs, one output and one tensor result")
    if not has_default_maps(op):
        raise fail(op, "only the default indexing maps (no transposed or broadcast operands) "
                       "are converted")
    lhs, rhs = op.inputs
    gemm = graph.GemmOp(lhs, rhs)
    made: list[Operation] = [gemm]
    if not is_zero(op.outputs[0]):
        made.append(graph.AddOp(gemm.result, op.outputs[0]))
    return made


def is_identity(attr: object, rank: int) -> bool:
    return isinstance(attr, AffineMapAttr) and attr.data == AffineMap.identity(rank)


def convert_generic(op: linalg.GenericOp) -> list[Operation]:
    why = ("only an elementwise addition converts: two inputs, one output, identity indexing "
           "maps, parallel iterators and a body of one arith.addf of the two inputs")
    if len(op.inputs) != 2 or len(op.outputs) != 1 or len(op.results) != 1:
        raise fail(op, why)
    result_type = op.results[0].type
    assert isinstance(result_type, builtin.TensorType)  # a generic on tensors returns tensors
    rank = result_type.get_num_dims()
    if not all(is_identity(m, rank) for m in op.indexing_maps.data):
        raise fail(op, why)
    if any(str(t.data) != "parallel" for t in op.iterator_types.data):
        raise fail(op, why)
    body = list(op.body.block.ops)
    args = op.body.block.args
    if (len(body) != 2 or not isinstance(body[0], arith.AddfOp)
            or not isinstance(body[1], linalg.YieldOp)
            or {body[0].lhs, body[0].rhs} != {args[0], args[1]}
            or list(body[1].operands) != [body[0].result]):
        raise fail(op, why)
    return [graph.AddOp(op.inputs[0], op.inputs[1])]


def convert_add(op: linalg.AddOp) -> list[Operation]:
    if len(op.inputs) != 2 or len(op.results) != 1:
        raise fail(op, "expected two inputs and one tensor result")
    return [graph.AddOp(op.inputs[0], op.inputs[1])]


def convert(op: Operation) -> list[Operation] | None:
    """The graph ops for a linalg op (the last one's result replaces it), or None."""
    if isinstance(op, linalg.MatmulOp | BatchMatmulOp):
        return convert_matmul(op)
    if isinstance(op, linalg.AddOp):
        return convert_add(op)
    if isinstance(op, linalg.GenericOp):
        return convert_generic(op)
    return None


def erase_if_dead(op: Operation) -> None:
    """Erase a tensor.empty, linalg.fill or the constant of a fill with no uses left."""
    if any(result.uses for result in op.results):
        return
    feeds = [operand.owner for operand in op.operands]
    op.detach()
    op.erase()
    for owner in feeds:
        if isinstance(owner, tensor.EmptyOp | linalg.FillOp | arith.ConstantOp):
            erase_if_dead(owner)


@dataclass(frozen=True)
class ConvertLinalgToGraphPass(ModulePass):
    name = NAME

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for linalg_op in [o for o in op.walk() if o.dialect_name() == "linalg"
                          and not isinstance(o.parent_op(), linalg.GenericOp | linalg.MatmulOp
                                             | BatchMatmulOp | linalg.AddOp | linalg.FillOp)]:
            made = convert(linalg_op)
            if made is None:
                continue
            for new in made:
                new.location = linalg_op.location
            block = linalg_op.parent_block()
            assert block is not None  # from a walk of the module
            block.insert_ops_before(made, linalg_op)
            linalg_op.results[0].replace_all_uses_with(made[-1].results[0])
            linalg_op.detach()
            linalg_op.erase()
        for initial in reversed([o for o in op.walk()
                                 if isinstance(o, tensor.EmptyOp | linalg.FillOp)]):
            if initial.parent is not None:  # not erased with a fill that read it
                erase_if_dead(initial)
        left_over = [o for o in op.walk() if o.dialect_name() in ("linalg", "tensor")
                     and not isinstance(o.parent_op(), linalg.GenericOp | linalg.FillOp)]
        # the op nearest to what uses it first: a fill before the empty tensor it fills
        for left in sorted(left_over, key=lambda o: isinstance(o, tensor.EmptyOp)):
            raise fail(left, "it has no graph equivalent"
                       if not isinstance(left, tensor.EmptyOp | linalg.FillOp)
                       else "an initial value is still used by an op that stays (graph "
                            "ops have no constants)")
