"""What an importer returns, and the naming rule the importers share (no framework imports)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import SSAValue

if TYPE_CHECKING:
    from frontend.builder import GraphValue


@dataclass(frozen=True)
class RepeatedRun:
    """What one `graph.repeat` of repeated layers replaced: `count` blocks of `block_ops` ops;
    `sequences` maps each stacked weight's name to the per-block weight names it holds, in
    block order."""

    count: int
    block_ops: int
    sequences: dict[str, list[str]]


@dataclass
class ImportedModel:
    """A verified module holding one graph `func.func`, and the arrays of its weight arguments
    by argument name (in the argument's storage dtype), ready for `numpy.savez`; `repeats`
    describes the `graph.repeat`s that repeated layers became (`RepeatedRun`s of
    frontend/repeat_layers.py; empty unless asked for)."""

    module: ModuleOp
    weights: dict[str, np.ndarray]
    repeats: list[RepeatedRun] = field(default_factory=list)


def shape_of(value: SSAValue | GraphValue) -> tuple[int, ...]:
    """The shape of a graph value (every graph value is a ranked tensor: the builder checks)."""
    value_type = value.type
    assert isinstance(value_type, TensorType), value_type
    return value_type.get_shape()


def ssa_name(name: str) -> str:
    """A framework's value name as an SSA name (letters, digits, _$.-, not starting with a digit).

    A trailing `_<digits>` becomes `.<digits>`: xDSL drops such a suffix from a name hint (it
    reads as its own disambiguation), so `onnx::MatMul_121` and `onnx::MatMul_141` would both
    print as `%onnx__MatMul...` and parse back as one name."""
    cleaned = re.sub(r"[^A-Za-z0-9_$.\-]", "_", name)
    cleaned = re.sub(r"_(\d+)$", r".\1", cleaned)
    return cleaned if (cleaned and cleaned[0].isalpha()) or cleaned.startswith("_") else f"v{cleaned}"


class UniqueNames:
    """Hands out distinct SSA names for framework names."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def __call__(self, name: str) -> str:
        base = ssa_name(name)
        unique, n = base, 1
        while unique in self.taken:
            unique, n = f"{base}.{n}", n + 1
        self.taken.add(unique)
        return unique


def matrix_product(builder, a: GraphValue, b: GraphValue,
                   transpose_rhs: bool = False) -> GraphValue:
    """`a @ b` (`b` transposed with `transpose_rhs`) as both importers write it: `[..., 1, K] @
    [K, N]` is one `[(...), K] @ [K, N]` GEMM over every row, viewed back, instead of a batch
    of one-row GEMMs each reading the whole weight (torch's TransformerEncoderLayer runs its
    projections on `[seq, batch=1, width]`)."""
    lead = shape_of(a)[:-2]
    if len(shape_of(b)) == 2 and shape_of(a)[-2] == 1 and int(np.prod(lead, dtype=np.int64)) > 1:
        rows = builder.reshape(a, [int(np.prod(shape_of(a)[:-1])), shape_of(a)[-1]])
        product = builder.gemm(rows, b, transpose_rhs=transpose_rhs)
        return builder.reshape(product, [*shape_of(a)[:-1], shape_of(product)[-1]])
    return builder.gemm(a, b, transpose_rhs=transpose_rhs)


def remove_unused(module: ModuleOp, weights: dict[str, np.ndarray]) -> None:
    """Drop ops whose results nothing reads (a transpose whose only reader was a folded Shape, a
    reshape another reshape replaced), then weight arguments nothing reads, from the module's
    function and from `weights`."""
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    block = func.body.block
    for op in reversed(list(block.ops)):
        if not isinstance(op, ReturnOp) and all(not r.uses for r in op.results):
            block.erase_op(op)
    for arg in reversed(list(block.args)):
        if not arg.uses and arg.name_hint in weights:
            del weights[arg.name_hint]
            block.erase_arg(arg)
    func.update_function_type()
