"""The shape rules of the ops graph and mid both define, once (no IR definitions).

A `graph.gemm` and the `mid.gemm` it lowers to obey the same rule; each verifier calls the
rule here with its own op name, so that a diagnostic names the op it is about. Every rule
raises a `VerifyException` in the user's terms (shapes, axes). A `..._result_shape` rule
returns the shape it derives (the builders type their results with it); the `check_..._shapes`
rule of the same op is what both verifiers call: it checks the operands and the result.
"""

import math
from collections.abc import Sequence

from xdsl.utils.exceptions import VerifyException


def fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def broadcast_shapes(
    lhs: Sequence[int], rhs: Sequence[int], describe: str
) -> tuple[int, ...]:
    """NumPy broadcasting of two shapes; `describe` names them in the error message."""
    rank = max(len(lhs), len(rhs))
    a = (1,) * (rank - len(lhs)) + tuple(lhs)
    b = (1,) * (rank - len(rhs)) + tuple(rhs)
    out: list[int] = []
    for axis, (x, y) in enumerate(zip(a, b)):
        if x != y and 1 not in (x, y):
            raise VerifyException(
                f"{describe} {fmt_shape(lhs)} and {fmt_shape(rhs)} do not broadcast: "
                f"extents {x} and {y} at axis {axis - rank} (counted from the last axis)"
            )
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(out)


def check_result_shape(op_name: str, result: Sequence[int], expected: Sequence[int],
                       why: str) -> None:
    """The result has the shape the op's rule derives (`why` says how it is derived)."""
    if tuple(result) != tuple(expected):
        raise VerifyException(
            f"{op_name}: result shape {fmt_shape(result)} does not match "
            f"{fmt_shape(expected)} ({why})"
        )


def check_positive(op_name: str, what: str, value: float) -> None:
    """A float property that must be finite and positive (attention's scale, layer_norm's eps)."""
    if not (math.isfinite(value) and value > 0):
        raise VerifyException(f"{op_name}: {what} must be a finite positive number, got {value}")


# ---- the computing ops --------------------------------------------------------------------------


def add_result_shape(op_name: str, lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...]:
    """`lhs + rhs` with full NumPy broadcasting."""
    return broadcast_shapes(lhs, rhs, f"{op_name}: lhs and rhs")


def gemm_result_shape(
    op_name: str, lhs: Sequence[int], rhs: Sequence[int], transpose_lhs: bool,
    transpose_rhs: bool,
) -> tuple[int, ...]:
    """Shape of `lhs @ rhs` after the transposes: batch axes broadcast, then [M, N]."""
    for name, shape in (("lhs", lhs), ("rhs", rhs)):
        if len(shape) < 2:
            raise VerifyException(
                f"{op_name}: {name} has shape {fmt_shape(shape)} of rank {len(shape)}; "
                "gemm operands need rank >= 2 (the last two axes are the matrix)"
            )
    m, k_lhs = (lhs[-1], lhs[-2]) if transpose_lhs else (lhs[-2], lhs[-1])
    k_rhs, n = (rhs[-1], rhs[-2]) if transpose_rhs else (rhs[-2], rhs[-1])
    if k_lhs != k_rhs:
        lhs_axis = "-2 (transposed)" if transpose_lhs else "-1"
        rhs_axis = "-1 (transposed)" if transpose_rhs else "-2"
        raise VerifyException(
            f"{op_name}: contraction extents differ: lhs {fmt_shape(lhs)} axis {lhs_axis} is "
            f"{k_lhs}, rhs {fmt_shape(rhs)} axis {rhs_axis} is {k_rhs}"
        )
    batch = broadcast_shapes(lhs[:-2], rhs[:-2], f"{op_name}: batch axes of lhs and rhs")
    return (*batch, m, n)


def check_add_shapes(op_name: str, lhs: Sequence[int], rhs: Sequence[int],
                     result: Sequence[int]) -> None:
    """The result of `lhs + rhs` has their broadcast shape."""
    check_result_shape(op_name, result, add_result_shape(op_name, lhs, rhs),
                       "the broadcast shape of lhs and rhs")


def check_gemm_shapes(
    op_name: str, lhs: Sequence[int], rhs: Sequence[int], result: Sequence[int],
    transpose_lhs: bool, transpose_rhs: bool,
) -> None:
    """The result of `lhs @ rhs` (after the transposes) has the shape `gemm_result_shape` derives."""
    expected = gemm_result_shape(op_name, lhs, rhs, transpose_lhs, transpose_rhs)
    check_result_shape(
        op_name, result, expected,
        f"batch axes broadcast, then [M, N] of {fmt_shape(lhs)} x {fmt_shape(rhs)}",
    )


def check_attention_shapes(
    op_name: str, query: Sequence[int], key: Sequence[int], value: Sequence[int],
    result: Sequence[int], causal: bool,
) -> None:
    """The operands fit `[..., H, S, D]` (the error names the operand and axis that do not) and
    the result has the query's shape."""
    for what, shape in (("query", query), ("key", key), ("value", value)):
        if len(shape) < 3:
            raise VerifyException(
                f"{op_name}: {what} has shape {fmt_shape(shape)} of rank {len(shape)}; "
                "attention operands are [..., heads, seq, head_dim] (rank >= 3)"
            )
    if len(key) != len(query) or len(value) != len(query):
        raise VerifyException(
            f"{op_name}: query {fmt_shape(query)}, key {fmt_shape(key)} and value "
            f"{fmt_shape(value)} must have the same rank"
        )
    if tuple(key) != tuple(value):
        raise VerifyException(
            f"{op_name}: key {fmt_shape(key)} and value {fmt_shape(value)} must have the same shape"
        )
    if tuple(query[:-3]) != tuple(key[:-3]):
        raise VerifyException(
            f"{op_name}: batch axes of query {fmt_shape(query[:-3])} and key "
            f"{fmt_shape(key[:-3])} differ"
        )
    if query[-3] != key[-3]:
        raise VerifyException(
            f"{op_name}: heads (axis -3) differ: query has {query[-3]}, key/value have {key[-3]}"
        )
    if query[-1] != key[-1]:
        raise VerifyException(
            f"{op_name}: head_dim (axis -1) differs: query has {query[-1]}, key/value have "
            f"{key[-1]}"
        )
    if causal and query[-2] != key[-2]:
        raise VerifyException(
            f"{op_name}: causal attention needs equal sequence lengths (axis -2), but query has "
            f"{query[-2]} and key/value have {key[-2]}"
        )
    check_result_shape(op_name, result, query, "the query shape")


def check_key_mask_shape(op_name: str, mask: Sequence[int], query: Sequence[int],
                         key: Sequence[int]) -> None:
    """A key padding mask holds one entry per key of each leading (batch) index:
    `query[:-3] + [Sk]`, the same for every head and query row."""
    expected = (*query[:-3], key[-2])
    if tuple(mask) != expected:
        raise VerifyException(
            f"{op_name}: key_mask has shape {fmt_shape(mask)}, expected {fmt_shape(expected)} "
            f"(the batch axes {fmt_shape(query[:-3])} of the query, then one entry per key: a "
            "key padding mask, the same for every head and query row)"
        )


def check_layer_norm_shapes(op_name: str, input: Sequence[int], weight: Sequence[int],
                            bias: Sequence[int], result: Sequence[int]) -> None:
    """Weight and bias hold one element per entry of the input's last axis; the result has the
    input's shape."""
    if not input:
        raise VerifyException(f"{op_name}: the input has shape [] and no axis to normalize")
    for what, shape in (("weight", weight), ("bias", bias)):
        if tuple(shape) != (input[-1],):
            raise VerifyException(
                f"{op_name}: {what} has shape {fmt_shape(shape)}, expected [{input[-1]}] (one "
                f"element per entry of the normalized last axis of {fmt_shape(input)})"
            )
    check_result_shape(op_name, result, input, "the input shape")


def gather_result_shape(op_name: str, table: Sequence[int], indices: Sequence[int]) -> list[int]:
    """`table[indices]`: the indices' shape followed by the table's trailing axes."""
    if not table:
        raise VerifyException(f"{op_name}: the table has shape [] and no rows to gather")
    return [*indices, *table[1:]]


def check_gather_shapes(op_name: str, table: Sequence[int], indices: Sequence[int],
                        result: Sequence[int]) -> None:
    """The result of `table[indices]` has the shape `gather_result_shape` derives."""
    check_result_shape(
        op_name, result, gather_result_shape(op_name, table, indices),
        f"the indices' shape {fmt_shape(indices)} followed by the table's "
        f"trailing axes {fmt_shape(table[1:])}",
    )


# ---- the layout ops -----------------------------------------------------------------------------


def check_reshape(op_name: str, input: Sequence[int], result: Sequence[int]) -> None:
    """A reshape keeps the element count."""
    if math.prod(input) != math.prod(result):
        raise VerifyException(
            f"{op_name}: result shape {fmt_shape(result)} holds {math.prod(result)} elements, "
            f"the input {fmt_shape(input)} holds {math.prod(input)}"
        )


def transposed_shape(op_name: str, shape: Sequence[int],
                     permutation: Sequence[int]) -> tuple[int, ...]:
    """Result axis `i` is input axis `permutation[i]` (as numpy.transpose)."""
    rank = len(shape)
    if sorted(permutation) != list(range(rank)):
        raise VerifyException(
            f"{op_name}: permutation {fmt_shape(permutation)} is not a permutation of the "
            f"{rank} axes 0..{rank - 1} of the input"
        )
    return tuple(shape[p] for p in permutation)


def check_transpose_shapes(op_name: str, input: Sequence[int], permutation: Sequence[int],
                           result: Sequence[int]) -> None:
    """The result is the input with its axes permuted."""
    check_result_shape(
        op_name, result, transposed_shape(op_name, input, permutation),
        f"the input {fmt_shape(input)} permuted by {fmt_shape(permutation)}",
    )


def slice_result_shape(
    op_name: str, shape: Sequence[int], starts: Sequence[int], ends: Sequence[int],
    steps: Sequence[int],
) -> tuple[int, ...]:
    """Extents of `x[starts:ends:steps]`, one entry per axis."""
    for what, values in (("starts", starts), ("ends", ends), ("steps", steps)):
        if len(values) != len(shape):
            raise VerifyException(
                f"{op_name}: {what} has {len(values)} entries for an input of rank "
                f"{len(shape)} {fmt_shape(shape)}; give one per axis"
            )
    extents = []
    for axis, (extent, start, end, step) in enumerate(zip(shape, starts, ends, steps)):
        if step < 1:
            raise VerifyException(f"{op_name}: step {step} at axis {axis} must be >= 1")
        if not 0 <= start < end <= extent:
            raise VerifyException(
                f"{op_name}: axis {axis} takes [{start}, {end}) of extent {extent}; slices need "
                f"0 <= start < end <= extent"
            )
        extents.append(-(-(end - start) // step))
    return tuple(extents)


def check_slice_shapes(
    op_name: str, input: Sequence[int], starts: Sequence[int], ends: Sequence[int],
    steps: Sequence[int], result: Sequence[int],
) -> None:
    """The result has the extents of `input[starts:ends:steps]`."""
    check_result_shape(
        op_name, result, slice_result_shape(op_name, input, starts, ends, steps),
        f"starts {fmt_shape(starts)}, ends {fmt_shape(ends)}, steps {fmt_shape(steps)} "
        f"of {fmt_shape(input)}",
    )


def concat_result_shape(op_name: str, shapes: Sequence[Sequence[int]],
                        axis: int) -> tuple[int, ...]:
    """The shape of the inputs joined along `axis`; errors name the input and axis at fault."""
    if not shapes:
        raise VerifyException(f"{op_name}: needs at least one input")
    first = shapes[0]
    if not 0 <= axis < len(first):
        raise VerifyException(
            f"{op_name}: axis {axis} is outside the axes 0..{len(first) - 1} of input #0 "
            f"{fmt_shape(first)}"
        )
    for i, shape in enumerate(shapes[1:], start=1):
        if len(shape) != len(first):
            raise VerifyException(
                f"{op_name}: input #{i} {fmt_shape(shape)} has rank {len(shape)}, input #0 "
                f"{fmt_shape(first)} has rank {len(first)}"
            )
        for a, (x, y) in enumerate(zip(first, shape)):
            if a != axis and x != y:
                raise VerifyException(
                    f"{op_name}: input #{i} {fmt_shape(shape)} differs from input #0 "
                    f"{fmt_shape(first)} at axis {a}; only the concatenation axis {axis} may "
                    "differ"
                )
    return (*first[:axis], sum(s[axis] for s in shapes), *first[axis + 1 :])


def check_concat_shapes(op_name: str, shapes: Sequence[Sequence[int]], axis: int,
                        result: Sequence[int]) -> None:
    """The result has the shape of the inputs joined along `axis`."""
    check_result_shape(op_name, result, concat_result_shape(op_name, shapes, axis),
                       f"the inputs joined along axis {axis}")
