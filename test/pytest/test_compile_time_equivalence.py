"""The compile-time shortcuts compute what the plain code computes.

Each shortcut (a compiled affine map, NumPy-packed dense arrays, the iterations a grouped
exchange's verifier screens together, the gather planner's interval arithmetic) is checked
against the straightforward formulation, kept here as the reference, on random inputs.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from xdsl.dialects.builtin import DenseArrayBase, i32, i64
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineExpr, AffineMap

from ipu_dialects.shared_attrs import dense_ints
from ipu_dialects.tile import suspect_group_iterations
from ipu_dialects.tile_iteration import map_evaluator
from passes.operators import gather


def random_expr(rng: random.Random, dims: int, depth: int) -> AffineExpr:
    if depth == 0 or rng.random() < 0.3:
        if rng.random() < 0.6:
            return AffineExpr.dimension(rng.randrange(dims))
        return AffineExpr.constant(rng.randint(-20, 20))
    lhs = random_expr(rng, dims, depth - 1)
    constant = rng.choice([v for v in range(-7, 8) if v])
    kind = rng.choice(["add", "mul", "mod", "floordiv", "ceildiv", "raw"])
    if kind == "add":
        return lhs + random_expr(rng, dims, depth - 1)
    if kind == "mul":
        return lhs * constant
    if kind == "mod":
        return lhs % abs(constant)
    if kind == "floordiv":
        return lhs // abs(constant)
    if kind == "ceildiv":
        return lhs.ceil_div(abs(constant))
    # unsimplified, with negative divisors too
    return AffineBinaryOpExpr(rng.choice(list(AffineBinaryOpKind)), lhs, AffineExpr.constant(constant))


def test_a_compiled_map_evaluates_as_the_map_does():
    rng = random.Random(1)
    for _ in range(1500):
        dims = rng.randint(1, 4)
        results = tuple(random_expr(rng, dims, 4) for _ in range(rng.randint(0, 3)))
        affine_map = AffineMap(dims, 0, results)
        evaluate = map_evaluator(affine_map)
        for _ in range(4):
            ivs = [rng.randint(-50, 50) for _ in range(dims)]
            assert evaluate(ivs) == affine_map.eval(ivs, [])
        with pytest.raises(AssertionError):
            evaluate([0] * (dims + 1))


def test_dense_ints_is_from_list():
    rng = random.Random(2)
    cases = [[], [0], [-1, 5, 2**31 - 1], [-(2**31)], [2**40, -(2**40)], [2**63 - 1, -(2**63)],
             [2**63], [1.5], [np.int64(3)]]
    cases += [[rng.randint(-(2**31), 2**31 - 1) for _ in range(rng.randint(0, 40))]
              for _ in range(100)]
    for elt_type in (i64, i32):
        for values in cases:
            try:
                expected = DenseArrayBase.from_list(elt_type, values)
            except Exception as error:  # the same error, from from_list itself
                with pytest.raises(type(error)):
                    dense_ints(elt_type, values)
                continue
            assert dense_ints(elt_type, values) == expected


def flagged_iterations(senders, shifts, base, holders) -> list[int]:
    """verify_group_tiles' checks, iteration by iteration."""
    flagged = []
    for n in range(senders.shape[0]):
        destinations = base[None, :] + shifts[n][:, None]
        receivers = destinations[destinations != senders[n][:, None]]
        outside = destinations[~np.isin(destinations, holders)]
        if (outside.size or len(set(senders[n].tolist())) != senders.shape[1]
                or len(set(receivers.tolist())) != receivers.size):
            flagged.append(n)
    return flagged


def test_the_screened_iterations_are_those_with_a_problem():
    rng = np.random.default_rng(3)
    for _ in range(1500):
        iterations, groups, tiles = int(rng.integers(0, 10)), int(rng.integers(1, 5)), int(rng.integers(1, 40))
        base = np.sort(rng.choice(tiles, size=min(int(rng.integers(0, 8)), tiles),
                                  replace=bool(rng.random() < 0.2))).astype(np.int64)
        if rng.random() < 0.5:  # a range of holders, or any set
            low = int(rng.integers(0, 5))
            holders = np.arange(low, low + int(rng.integers(0, tiles)), dtype=np.int64)
        else:
            holders = np.sort(rng.choice(tiles, size=int(rng.integers(0, tiles)), replace=False))
        senders = rng.integers(0, tiles, size=(iterations, groups)).astype(np.int64)
        shifts = rng.integers(-3, tiles // 2 + 1, size=(iterations, groups)).astype(np.int64)
        assert suspect_group_iterations(senders, shifts, base, holders).tolist() == \
            flagged_iterations(senders, shifts, base, holders)


# ---- the gather planner ---------------------------------------------------------------------
def reference_split(need: np.ndarray, rounds: int, groups: int, inner: int,
                    fixed_shift=None):
    """`gather.try_split` as first written: every (round, group, tile) materialized."""
    r, g = np.meshgrid(np.arange(rounds), np.arange(groups), indexing="ij")
    s = gather.shard_index(r, g, rounds, groups, inner)
    outer, low = r // inner, r % inner
    wanted = need[s]
    real = wanted.any(axis=2)
    first = wanted.argmax(axis=2)
    shifts = ([fixed_shift] if fixed_shift else
              reference_choose_shift(outer[real], low[real], g[real], first[real]))
    for shift in shifts:
        split = reference_split_with(need, rounds, groups, inner, shift)
        if split is not None:
            return split
    return None


def reference_choose_shift(outer, low, g, first):
    """`gather.choose_shift` with NumPy's own least squares and line fit."""
    if first.size == 0:
        return [(0, 0, 0, 0)]
    design = np.stack([np.ones_like(g), outer, low, g], axis=1).astype(np.float64)
    solution = np.linalg.lstsq(design, first.astype(np.float64), rcond=None)[0]
    c, ko, ki, kg = (round(float(v)) for v in solution)
    if np.array_equal(c + ko * outer + ki * low + kg * g, first):
        return [(c, ko, ki, kg)]
    if np.unique(g).size < 2:
        return []
    kg = round(float(np.polyfit(g.astype(np.float64), first.astype(np.float64), 1)[0]))
    return [(int((first - kg * g).min()), 0, 0, kg)]


def test_least_squares_finds_what_numpy_finds():
    rng = np.random.default_rng(7)
    for trial in range(3000):
        n = int(rng.integers(1, 40))
        columns = [np.ones(n), rng.integers(0, 6, n), rng.integers(0, 4, n), rng.integers(0, 9, n)]
        if trial % 3 == 0:  # a digit that is always 0
            columns[int(rng.integers(1, 4))] = np.zeros(n)
        if trial % 5 == 0:  # two digits that move together
            columns[2] = columns[1] * int(rng.integers(1, 3))
        design = np.stack(columns, axis=1).astype(np.float64)
        exact = trial % 2 == 0
        coefficients = rng.integers(-40, 40, 4)
        values = design @ coefficients + (0 if exact else rng.integers(-3, 4, n))
        got = gather.least_squares(design, values.astype(np.float64))
        want = np.linalg.lstsq(design, values.astype(np.float64), rcond=None)[0]
        # what `fit_shift` asks: is there an exact integer fit, found by rounding
        found = got is not None and np.array_equal(design @ np.round(got), values)
        assert found == np.array_equal(design @ np.round(want), values), (design, values)
        if exact and np.linalg.matrix_rank(design[:, design.any(axis=0)]) == design.any(axis=0).sum():
            assert found, (design, values)


def reference_split_with(need: np.ndarray, rounds: int, groups: int, inner: int, shift):
    tiles = need.shape[1]
    r, g = np.meshgrid(np.arange(rounds), np.arange(groups), indexing="ij")
    s = gather.shard_index(r, g, rounds, groups, inner)
    wanted = need[s]
    c, ko, ki, kg = shift
    shifts = c + ko * (r // inner) + ki * (r % inner) + kg * g
    round_at, group_at, tile_at = np.nonzero(wanted)
    base = np.unique(tile_at - shifts[round_at, group_at])
    destinations = base[None, None, :] + shifts[..., None]
    if destinations.min() < 0 or destinations.max() >= tiles:
        return None
    receives = destinations != s[..., None]
    keys = (np.arange(rounds)[:, None, None] * tiles + destinations)[receives]
    if np.unique(keys).size != keys.size:
        return None
    own = (s < tiles) & wanted[r, g, np.minimum(s, tiles - 1)]
    # no sender holding its own shard needs no local copy (formats whose tiles do not meet,
    # `first_tile`): every receiver takes what it got
    if own.any() and np.isin(r[own] * tiles + s[own], keys).any():
        return None
    return (rounds, groups, inner, shift, tuple(int(t) for t in base),
            tuple(int(t) for t in np.unique(s[own])), bool(receives.any()))


def random_need(rng: np.random.Generator, trial: int) -> np.ndarray:
    shards, tiles = int(rng.integers(1, 40)), int(rng.integers(1, 50))
    need = np.zeros((shards, tiles), dtype=bool)
    kind = trial % 5
    if kind == 0:  # anything
        return rng.random((shards, tiles)) < rng.random() * 0.3
    for s in range(shards):
        if kind == 1:  # blocks of a grid
            low = (int(rng.integers(1, 4)) * s) // int(rng.integers(1, 4))
            need[s, low:low + int(rng.integers(1, 4))] = True
        elif kind == 2:  # every shard to every tile, or to a prefix
            need[s, :tiles if trial % 2 else int(rng.integers(1, tiles + 1))] = True
        elif kind == 3:  # near its own tile
            need[s, max(0, s - int(rng.integers(0, 3))):s + int(rng.integers(1, 4))] = True
        else:  # two tiles apart
            group = int(rng.integers(1, 5))
            need[s, (s // group) % tiles] = need[s, (s % group) % tiles] = True
    if rng.random() < 0.3:  # an all-padding tail
        need[int(rng.integers(0, shards)):] = False
    return need


def test_every_split_is_judged_as_the_plain_planner_judges_it():
    rng = np.random.default_rng(4)
    for trial in range(400):
        need = random_need(rng, trial)
        real = np.flatnonzero(need.any(axis=1))
        if real.size == 0:
            continue
        need = need[:real[-1] + 1]
        shards = need.shape[0]
        needs = gather.ShardNeeds.of(need)
        splits = [(shards // groups, groups, inner) for groups in gather.divisors(shards)
                  for inner in gather.inner_extents(shards // groups, groups)]
        for rounds, groups, inner in splits:
            plan = gather.try_split(needs, rounds, groups, inner)
            got = None if plan is None else (plan.rounds, plan.groups, plan.inner,
                                              plan.shift, plan.base, plan.copiers,
                                              plan.has_traffic)
            assert got == reference_split(need, rounds, groups, inner), (need, rounds, groups)
        plan = gather.try_split(needs, shards, 1, shards, fixed_shift=(0, 0, 0, 0))
        assert (plan is None) == (reference_split(need, shards, 1, shards, (0, 0, 0, 0)) is None)
