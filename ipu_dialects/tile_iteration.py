"""Iteration spaces of `tile.loop` nests, evaluated with NumPy (no IR needed).

The tile level keeps loops as loops; per-iteration quantities (home tile of a block, byte
offsets) are `affine_map`s of the loop indices. Verifiers, `schedule-exchange` and the
emitters need those quantities for *every* iteration of a nest, so this module evaluates a
map over a whole iteration space at once, as integer arrays.

Iterations are ordered row-major over the loops, outermost first: the *linearized
iteration* `n` of a nest with bounds `[(lb0, ub0), (lb1, ub1)]` is
`(i0 - lb0) * (ub1 - lb1) + (i1 - lb1)`. `tile.exchange`'s `sender_rows`/`receiver_rows`
are indexed by it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)

Bounds = Sequence[tuple[int, int]]
DIVISIONS = (AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.CeilDiv, AffineBinaryOpKind.Mod)


def iteration_count(bounds: Bounds) -> int:
    """Number of iterations of a nest (1 for the empty nest: straight-line code runs once)."""
    return math.prod(max(0, ub - lb) for lb, ub in bounds)


def iteration_vectors(bounds: Bounds) -> np.ndarray:
    """All iteration vectors of a nest, shape (iterations, depth), in linearized order."""
    if not bounds:
        return np.zeros((1, 0), dtype=np.int64)
    # axis by axis, not np.meshgrid: a nest may be deeper than NumPy's 32 dimensions
    extents = [max(ub - lb, 0) for lb, ub in bounds]
    total = math.prod(extents)
    ivs = np.empty((total, len(bounds)), dtype=np.int64)
    inner = total
    for axis, ((lb, _), extent) in enumerate(zip(bounds, extents, strict=True)):
        inner = inner // extent if extent else 0
        outer = total // (extent * inner) if extent and inner else 0
        ivs[:, axis] = np.tile(np.repeat(np.arange(lb, lb + extent, dtype=np.int64), inner), outer)
    return ivs


def linearized_iteration(bounds: Bounds, ivs: Sequence[int]) -> int:
    """Index of the iteration vector `ivs` in `iteration_vectors(bounds)`."""
    index = 0
    for (lb, ub), iv in zip(bounds, ivs, strict=True):
        index = index * (ub - lb) + (iv - lb)
    return index


def evaluate_expr(expr: AffineExpr, ivs: np.ndarray) -> np.ndarray:
    """One affine expression over many iteration vectors (`ivs`: (iterations, depth))."""
    if isinstance(expr, AffineConstantExpr):
        return np.full(ivs.shape[0], expr.value, dtype=np.int64)
    if isinstance(expr, AffineDimExpr):
        return ivs[:, expr.position].astype(np.int64, copy=False)
    if isinstance(expr, AffineBinaryOpExpr):
        lhs = evaluate_expr(expr.lhs, ivs)
        rhs = evaluate_expr(expr.rhs, ivs)
        match expr.kind:
            case AffineBinaryOpKind.Add:
                return lhs + rhs
            case AffineBinaryOpKind.Mul:
                return lhs * rhs
            case AffineBinaryOpKind.Mod:
                return np.mod(lhs, rhs)
            case AffineBinaryOpKind.FloorDiv:
                return np.floor_divide(lhs, rhs)
            case AffineBinaryOpKind.CeilDiv:
                return -np.floor_divide(-lhs, rhs)
    raise ValueError(f"cannot evaluate affine expression {expr} (symbols are not used here)")


def evaluate_map(affine_map: AffineMap, ivs: np.ndarray) -> np.ndarray:
    """A map over many iteration vectors: shape (iterations, results)."""
    if affine_map.num_dims != ivs.shape[1]:
        raise ValueError(
            f"map {affine_map} takes {affine_map.num_dims} indices, iterations have {ivs.shape[1]}"
        )
    columns = [evaluate_expr(e, ivs) for e in affine_map.results]
    if not columns:
        return np.zeros((ivs.shape[0], 0), dtype=np.int64)
    return np.stack(columns, axis=1)


def expr_source(expr: AffineExpr) -> str | None:
    """Python source of `expr` over the index sequence `d`, with `AffineExpr.eval`'s integer
    arithmetic (floor division and modulo of Python ints; ceildiv as `-(-a // b)`); None for
    what it does not cover (symbols)."""
    if isinstance(expr, AffineConstantExpr):
        return f"({int(expr.value)})"
    if isinstance(expr, AffineDimExpr):
        return f"d[{int(expr.position)}]"
    if isinstance(expr, AffineBinaryOpExpr):
        lhs, rhs = expr_source(expr.lhs), expr_source(expr.rhs)
        if lhs is None or rhs is None:
            return None
        match expr.kind:
            case AffineBinaryOpKind.Add:
                return f"({lhs} + {rhs})"
            case AffineBinaryOpKind.Mul:
                return f"({lhs} * {rhs})"
            case AffineBinaryOpKind.Mod:
                return f"({lhs} % {rhs})"
            case AffineBinaryOpKind.FloorDiv:
                return f"({lhs} // {rhs})"
            case AffineBinaryOpKind.CeilDiv:
                return f"(-(-{lhs} // {rhs}))"
    return None


@functools.lru_cache(maxsize=4096)
def map_evaluator(affine_map: AffineMap) -> Callable[[Sequence[int]], tuple[int, ...]]:
    """`lambda ivs: affine_map.eval(ivs, [])` compiled once per map into one Python function
    (the package writer evaluates maps once per kernel run and exchange of every unrolled
    iteration; walking the expression tree each time is most of that). Same results, and the
    same `AssertionError` for a wrong number of indices."""
    results = [expr_source(e) for e in affine_map.results]
    if affine_map.num_symbols or any(r is None for r in results):
        return lambda ivs: affine_map.eval(list(ivs), [])
    dims = affine_map.num_dims
    body = ", ".join(r for r in results if r is not None)
    source = (f"def evaluate(d):\n"
              f"    assert len(d) == {dims}, f'{{len(d)}}, {dims}'\n"
              f"    return ({body}{',' if affine_map.results else ''})\n")
    namespace: dict = {}
    exec(source, namespace)
    return namespace["evaluate"]


def evaluate_scalar_map(affine_map: AffineMap, bounds: Bounds) -> np.ndarray:
    """A single-result map over every iteration of a nest: shape (iterations,)."""
    return evaluate_map(affine_map, iteration_vectors(bounds))[:, 0]


def expr_dims(expr: AffineExpr) -> set[int]:
    """The loop indices (dimension positions) an affine expression reads."""
    if isinstance(expr, AffineDimExpr):
        return {expr.position}
    if isinstance(expr, AffineBinaryOpExpr):
        return expr_dims(expr.lhs) | expr_dims(expr.rhs)
    return set()


def map_dims(affine_map: AffineMap) -> set[int]:
    """The loop indices any result of `affine_map` reads."""
    return set().union(*(expr_dims(e) for e in affine_map.results))


def magnitude_bound(expr: AffineExpr, bounds: Sequence[tuple[int, int]]) -> int:
    """An upper bound of |expr| over the nest, in Python integers: the maps are evaluated in
    int64 arrays, which would wrap silently past 2**63."""
    if isinstance(expr, AffineConstantExpr):
        return abs(expr.value)
    if isinstance(expr, AffineDimExpr):
        return max(abs(bounds[expr.position][0]), abs(bounds[expr.position][1]))
    assert isinstance(expr, AffineBinaryOpExpr)
    lhs, rhs = magnitude_bound(expr.lhs, bounds), magnitude_bound(expr.rhs, bounds)
    if expr.kind == AffineBinaryOpKind.Mul:
        return lhs * rhs
    if expr.kind == AffineBinaryOpKind.Mod:
        return rhs
    return lhs + rhs  # add, and floordiv/ceildiv by a positive constant (|q| <= |lhs| + 1)


def divisors(expr: AffineExpr) -> list[AffineExpr]:
    """Right-hand sides of every floordiv, ceildiv and mod in `expr`."""
    if not isinstance(expr, AffineBinaryOpExpr):
        return []
    own = [expr.rhs] if expr.kind in DIVISIONS else []
    return own + divisors(expr.lhs) + divisors(expr.rhs)


def linear_in(expr: AffineExpr, position: int) -> bool:
    """Whether `expr` is `a * d_position + (terms without d_position)`: the index enters only
    through additions and multiplications by constants, never through mod or a division."""
    if not isinstance(expr, AffineBinaryOpExpr):
        return True
    if expr.kind is AffineBinaryOpKind.Add:
        return linear_in(expr.lhs, position) and linear_in(expr.rhs, position)
    if expr.kind is AffineBinaryOpKind.Mul:
        return linear_in(expr.lhs, position) and linear_in(expr.rhs, position)
    return position not in expr_dims(expr)


def selected_iteration(bounds: Bounds, ivs: Sequence[int], selected: Sequence[int]) -> int:
    """The linearized iteration over only the loops at positions `selected` (outermost
    first): what a quantity that does not vary with the other loops is indexed by."""
    return linearized_iteration([bounds[p] for p in selected], [ivs[p] for p in selected])


def under_outer_loop(affine_map: AffineMap, stride: int = 0) -> AffineMap:
    """`affine_map` under one more, outermost loop: a new d0, the other dimensions one
    position up; the first result advanced by `d0 * stride` (a base-pointer increment)."""
    dims = [AffineExpr.dimension(j + 1) for j in range(affine_map.num_dims)]
    results = [e.replace_dims_and_symbols(dims, []) for e in affine_map.results]
    if stride:
        results = [results[0] + AffineExpr.dimension(0) * stride, *results[1:]]
    return AffineMap(affine_map.num_dims + 1, 0, tuple(results))
