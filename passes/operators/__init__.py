"""The registry of operators: one module per operator kind, one `Operator` each.

`graph-to-mid` and `mid-to-tile` look operators up here by the op they handle and name none
of them; adding an operator is one module, its kernel and its tests, plus one line below.
"""

from __future__ import annotations

from functools import cache

from xdsl.ir import Operation

from passes.operators.base import Operator


@cache
def get_all_operators() -> tuple[Operator, ...]:
    from passes.operators.add import AddOperator
    from passes.operators.attention import AttentionOperator
    from passes.operators.conversions import CastOperator, RearrangeOperator
    from passes.operators.embedding import EmbeddingOperator
    from passes.operators.gelu import GeluOperator
    from passes.operators.gemm import GemmOperator
    from passes.operators.layer_norm import LayerNormOperator
    from passes.operators.layout import (
        ConcatOperator,
        ReshapeOperator,
        SliceOperator,
        TransposeOperator,
    )
    from passes.operators.repeat import RepeatOperator

    return (GemmOperator(), AddOperator(), GeluOperator(), AttentionOperator(), CastOperator(),
            RearrangeOperator(), LayerNormOperator(), ReshapeOperator(), TransposeOperator(),
            SliceOperator(), ConcatOperator(), EmbeddingOperator(), RepeatOperator())


def operator_for_graph(op: Operation) -> Operator | None:
    return next((o for o in get_all_operators() if o.graph_op is type(op)), None)


def operator_for_mid(op: Operation) -> Operator | None:
    return next((o for o in get_all_operators() if o.mid_op is type(op)), None)
