"""`linalg.batch_matmul`, which xDSL 0.74's linalg dialect lacks, and `LINALG`: xDSL's linalg
dialect with it, as `ipu-opt` and `ipu-run` register it (`tools.registry`). Plain `xdsl-opt`
keeps xDSL's own linalg, without `batch_matmul`.

The op is MLIR's: `linalg.batch_matmul ins(%a, %b : tensor<BxMxK>, tensor<BxKxN>)
outs(%c : tensor<BxMxN>) -> tensor<BxMxN>`, C[b] += A[b] @ B[b], with MLIR's default indexing
maps. Only `convert-linalg-to-graph` reads it (as a batched `graph.gemm`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, TensorType
from xdsl.dialects.linalg import Linalg
from xdsl.dialects.linalg.abstract_ops import NamedOperation
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import MatmulOp
from xdsl.ir import Attribute, Dialect, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import irdl_op_definition, prop_def


@irdl_op_definition
class BatchMatmulOp(NamedOperation):
    """C[b, i, j] += A[b, i, k] * B[b, k, j] (MLIR's `linalg.batch_matmul`)."""

    name = "linalg.batch_matmul"

    PRINT_ATTRS_IN_FRONT: ClassVar[bool] = True

    indexing_maps = prop_def(
        ArrayAttr[AffineMapAttr],
        default_value=ArrayAttr(
            [
                AffineMapAttr(AffineMap.from_callable(lambda b, i, _, k: (b, i, k))),
                AffineMapAttr(AffineMap.from_callable(lambda b, _, j, k: (b, k, j))),
                AffineMapAttr(AffineMap.from_callable(lambda b, i, j, _: (b, i, j))),
            ]
        ),
    )


    def __init__(self, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue] = (),
                 res: Sequence[Attribute] | None = None,
                 attributes: dict[str, Attribute] | None = None):
        result_types = res if res is not None else tuple(
            o.type for o in outputs if isinstance(o.type, TensorType))
        super().__init__(ins=inputs, outs=outputs, result_types=result_types,
                         attributes=attributes,
                         hidden_region=self.get_hidden_region(inputs, outputs))

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue],
                          outputs: Sequence[SSAValue]) -> Region:
        return MatmulOp.get_hidden_region(inputs, outputs)  # the same multiply-accumulate

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        return tuple(m.data for m in self.indexing_maps.data)

    def get_indexing_maps(self) -> ArrayAttr[AffineMapAttr]:
        return self.indexing_maps

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        parallel = IteratorTypeAttr.parallel()
        return ArrayAttr([parallel, parallel, parallel, IteratorTypeAttr.reduction()])


LINALG = Dialect("linalg", [*Linalg.operations, BatchMatmulOp], [*Linalg.attributes])
