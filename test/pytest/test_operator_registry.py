"""The operator registry (passes/operators/__init__.py): found from the package's modules, one
operator per graph and mid op."""

from __future__ import annotations

import pytest

from passes.operators import check_one_per_op, get_all_operators
from passes.operators.gelu import GeluOperator

# the operators the registry listed by hand before it was derived
LISTED = {"GemmOperator", "AddOperator", "GeluOperator", "AttentionOperator", "CastOperator",
          "RearrangeOperator", "LayerNormOperator", "ReshapeOperator", "TransposeOperator",
          "SliceOperator", "ConcatOperator", "EmbeddingOperator", "RepeatOperator"}


def test_the_registry_finds_every_operator_module_once():
    names = [type(o).__name__ for o in get_all_operators()]
    assert len(names) == len(set(names))
    assert LISTED <= set(names)
    # bases without a mid op are not operators
    assert not {"Operator", "GivenFormatsOperator", "PointwiseOperator", "LayoutOperator"} & set(names)


def test_two_operators_of_one_op_are_refused():
    with pytest.raises(ValueError) as info:
        check_one_per_op([GeluOperator(), GeluOperator()])
    assert str(info.value) == "two operators handle graph.gelu"
