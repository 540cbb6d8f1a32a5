"""Consecutive identical blocks of an imported graph as one `graph.repeat` (`ipu-import
--repeat-layers`).

A run of k >= 2 consecutive blocks of a function's body becomes
`graph.repeat k carried(...) invariant(...) sequence(...)` whose body is the first block when
the blocks have the same structure:

- the same op sequence: op names, properties, attributes, operand and result types;
- the same wiring: an operand made inside the block comes from the same op (and result) in
  every block; the values from outside a block repeat in the same pattern;
- one carried activation: each block reads exactly one value of the block before it (the
  first block reads the value in that place from before the run), and exactly one value of
  each block is used outside it — by the next block only, or after the run for the last;
- every other value from outside is either the same value in every block (an invariant) or,
  in block i, a weight argument that only block i reads (per-block weights: a sequence); a
  layer has weights of its own, so a block reads at least one such sequence (two gelus in a
  row are not layers). An i32 value is never an invariant (graph ops read i32 tensors, a key
  mask, only as the function's own arguments): layers that read one stay as they are.

The per-block weights of one place become one function argument holding them stacked, `[k] +
the weight's shape`, block i at index i. Its name (`stacked_name`): when the k weight names
differ only in one run of digits that counts up by one from block to block (the layer index of
`v0.ln_1.weight` .. `v3.ln_1.weight`), that run becomes the range (`v0-3.ln_1.weight`);
otherwise it is the first block's name followed by `.x<k>` (`onnx__MatMul.478.x4`).

Among the runs with this structure the one that covers the most ops wins (then the one with
the shorter block, then the earliest); runs are replaced until none is left, so a model with
two different stacks gets two repeats. Nothing in the function changes when no run is found.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue

from device.limits import MAX_REPEAT_ELEMENTS, MAX_REPEAT_VISITS
from frontend.imported import ImportedModel, RepeatedRun
from ipu_dialects.graph import RepeatOp, YieldOp, is_index_type


@dataclass(frozen=True)
class RunMatch:
    """A run of `count` structurally identical blocks of `length` ops from `start`, with its
    external values classified (indices into each block's external values)."""

    start: int
    length: int
    count: int
    externals: list[list[SSAValue]]  # per block, external values in first-use order
    carried: int
    invariants: list[int]
    sequences: list[int]
    output: tuple[int, int]  # (op index in the block, result index) of the carried result


def repeat_layers(imported: ImportedModel) -> list[RepeatedRun]:
    """Replace every run of identical consecutive blocks in the model's function by one
    `graph.repeat`, in place (module and weights); returns what was replaced."""
    func = next(op for op in imported.module.ops if isinstance(op, FuncOp))
    runs = []
    while (match := best_run(func.body.block, imported.weights)) is not None:
        runs.append(replace_run(func, match, imported.weights))
    if runs:
        func.update_function_type()
        reorder_weights(func, imported)
        imported.module.verify()
    return runs


# -- finding runs -------------------------------------------------------------------------------


def best_run(block: Block, weights: dict[str, np.ndarray]) -> RunMatch | None:
    """The first run, in the order of the module docstring (most ops covered, then the
    shorter block, then the earliest), that `match_run` accepts. Runs are generated lazily in
    that order: per block length one heap entry, its copy counts computed in NumPy when first
    needed (`run_counts`), so a model whose first run matches costs little more than its
    signatures, and the work of a search that finds nothing is bounded (`SearchBudget`)."""
    ops = [op for op in block.ops if not isinstance(op, ReturnOp)]
    n = len(ops)
    signatures = np.asarray(signature_ids(ops), dtype=np.int64)
    readers = np.concatenate([[0], np.cumsum([reads_weight(op, block, weights) for op in ops])])
    edges = def_use_edges(ops, block)
    budget = SearchBudget()
    # (-ops covered, length, copies or 0 for "not computed": -covered is then a bound)
    heap = [(-length * (n // length), length, 0) for length in range(1, n // 2 + 1)]
    heapq.heapify(heap)
    counts: dict[int, np.ndarray] = {}
    while heap:
        _, length, copies = heapq.heappop(heap)
        if not copies:
            budget.spend(elements=n)
            counts[length] = run_counts(signatures, readers, edges, length)
            copies = int(counts[length].max(initial=0))
        else:
            for start in np.flatnonzero(counts[length] >= copies).tolist():
                budget.spend(visits=length * copies)
                if (match := match_run(ops, start, length, copies, block, weights)) is not None:
                    return match
            copies -= 1
        if copies >= 2:
            heapq.heappush(heap, (-length * copies, length, copies))
    return None


@dataclass
class SearchBudget:
    """What the run search has looked at: NumPy elements (`run_counts`) and IR ops
    (`match_run`), each bounded (`MAX_REPEAT_ELEMENTS`, `MAX_REPEAT_VISITS`)."""

    elements: int = 0
    visits: int = 0

    def spend(self, elements: int = 0, visits: int = 0) -> None:
        self.elements, self.visits = self.elements + elements, self.visits + visits
        for spent, limit, name, what in ((self.elements, MAX_REPEAT_ELEMENTS, "MAX_REPEAT_ELEMENTS",
                                          "signature elements"),
                                         (self.visits, MAX_REPEAT_VISITS, "MAX_REPEAT_VISITS",
                                          "ops of candidate runs")):
            if spent > limit:
                raise RepeatSearchError(
                    f"--repeat-layers: the search for repeated blocks would look at more than "
                    f"{limit} {what} ({name}, device/limits.py); import the model without "
                    "--repeat-layers")


class RepeatSearchError(ValueError):
    """The run search would exceed its budget (`SearchBudget`)."""


def reads_weight(op: Operation, block: Block, weights: dict[str, np.ndarray]) -> bool:
    return any(isinstance(v, BlockArgument) and v.block is block and v.name_hint in weights
               for v in op.operands)


def def_use_edges(ops: list[Operation], block: Block) -> np.ndarray:
    """(producer, user) index pairs of the top-level ops, an edge per operand."""
    index = {op: i for i, op in enumerate(ops)}
    pairs = [(index[top_level(v.op, block)], j) for j, op in enumerate(ops)
             for inner in op.walk() for v in inner.operands
             if isinstance(v, OpResult) and top_level(v.op, block) in index]
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2)


def strided_good(good: np.ndarray, starts: np.ndarray, length: int) -> np.ndarray:
    """Per start s, how many of the positions s, s + length, ... are good in a row."""
    n = len(good)
    bad = np.flatnonzero(~good)
    order = np.sort((bad % length) * (n + 1) + bad)  # the bad positions, by residue
    query = (starts % length) * (n + 1) + starts
    found = np.searchsorted(order, query)
    found_key = np.append(order, -1)[found]
    same_residue = (found < len(order)) & (found_key // (n + 1) == starts % length)
    next_bad = np.where(same_residue, found_key % (n + 1), n + length)  # none: past the end
    return (next_bad - starts) // length


def run_counts(signatures: np.ndarray, readers: np.ndarray, edges: np.ndarray,
               length: int) -> np.ndarray:
    """Per start, how many consecutive blocks of `length` ops from there could be layers:
    the signatures of the first, each reading a weight (a block reading none reads no
    sequence), each after the first reading a value of the one before (the carried value).
    `readers` counts weight readers before each op; `edges` are `def_use_edges`."""
    n = len(signatures)
    starts = np.arange(n - 2 * length + 1)
    same = signatures[:n - length] == signatures[length:]
    breaks = np.append(np.flatnonzero(~same), n - length)  # copies end at the first mismatch
    copies = 1 + (breaks[np.searchsorted(breaks, starts)] - starts) // length
    blocks = np.arange(n - length + 1)
    reads = strided_good(readers[blocks + length] > readers[blocks], starts, length)
    # boundary b is fed when an edge runs from [b - length, b) into [b, b + length)
    producer, user = edges[:, 0], edges[:, 1]
    low, high = np.maximum(producer + 1, user - length + 1), np.minimum(producer + length, user)
    low, high = low[low <= high], high[low <= high]
    marks = np.zeros(n + 2, np.int64)
    np.add.at(marks, low, 1)
    np.add.at(marks, high + 1, -1)
    fed = np.cumsum(marks)[:n + 1] > 0
    fed_after = strided_good(fed[np.minimum(blocks + length, n)], starts, length)
    return np.minimum(np.minimum(copies, reads), 1 + fed_after)


def signature_ids(ops: Sequence[Operation]) -> list[int]:
    """Equal ids for ops equal in name, properties, attributes, operand and result types; an
    op with regions (a repeat already there) gets an id of its own."""
    ids: dict[Hashable, int] = {}
    result = []
    for op in ops:
        key: Hashable = (
            op.name,
            tuple(sorted(op.properties.items())),
            tuple(sorted(op.attributes.items())),
            tuple(o.type for o in op.operands),
            tuple(r.type for r in op.results),
        ) if not op.regions else ("op with regions", id(op))
        result.append(ids.setdefault(key, len(ids)))
    return result


def match_run(ops: list[Operation], start: int, length: int, count: int, block: Block,
              weights: dict[str, np.ndarray]) -> RunMatch | None:
    blocks = [ops[start + i * length : start + (i + 1) * length] for i in range(count)]
    position = {op: (i, j) for i, ops_i in enumerate(blocks) for j, op in enumerate(ops_i)}
    wirings, externals = [], []
    for i, ops_i in enumerate(blocks):
        wiring, external = block_wiring(ops_i, i, position)
        wirings.append(wiring)
        externals.append(external)
    if any(w != wirings[0] for w in wirings[1:]):
        return None
    output = single_output(blocks, position, block)
    if output is None:
        return None
    kinds = [slot_kind([ext[e] for ext in externals], blocks, output, position, block, weights)
             for e in range(len(externals[0]))]
    if None in kinds or kinds.count("carried") != 1 or "sequence" not in kinds:
        return None
    return RunMatch(
        start, length, count, externals, kinds.index("carried"),
        [e for e, k in enumerate(kinds) if k == "invariant"],
        [e for e, k in enumerate(kinds) if k == "sequence"],
        output,
    )


def block_wiring(ops_i: list[Operation], i: int, position: dict[Operation, tuple[int, int]]):
    """Each operand as ("inside", op index, result index) or ("outside", n): the n-th distinct
    value from outside block i, in first-use order; and those outside values."""
    wiring: list[tuple[str, int, int] | tuple[str, int]] = []
    external: list[SSAValue] = []
    index: dict[SSAValue, int] = {}
    for op in ops_i:
        for operand in op.operands:
            if isinstance(operand, OpResult) and position.get(operand.op, (-1, 0))[0] == i:
                wiring.append(("inside", position[operand.op][1], operand.index))
            else:
                if operand not in index:
                    index[operand] = len(external)
                    external.append(operand)
                wiring.append(("outside", index[operand]))
    return wiring, external


def top_level(op: Operation, block: Block) -> Operation:
    """The op of `block` that is `op` or holds it."""
    while op.parent_block() is not block:
        parent = op.parent_op()
        assert parent is not None, "a use of a function value lies inside the function"
        op = parent
    return op


def single_output(blocks: list[list[Operation]], position: dict[Operation, tuple[int, int]],
                  block: Block) -> tuple[int, int] | None:
    """The (op, result) place of the one value each block gives away, if every block gives
    away exactly one, in the same place, and all but the last give it to the next block only."""
    places = set()
    for i, ops_i in enumerate(blocks):
        given = []
        for j, op in enumerate(ops_i):
            for result in op.results:
                users = {position.get(top_level(u.operation, block), (-1, 0))[0]
                         for u in result.uses}
                if users - {i}:
                    given.append(((j, result.index), users - {i}))
        if len(given) != 1:
            return None
        (place, users), = given
        if i + 1 < len(blocks) and users != {i + 1}:
            return None
        places.add(place)
    return places.pop() if len(places) == 1 else None


def slot_kind(values: list[SSAValue], blocks: list[list[Operation]], output: tuple[int, int],
              position: dict[Operation, tuple[int, int]], block: Block,
              weights: dict[str, np.ndarray]) -> str | None:
    """How the values one outside place takes in the k blocks enter the repeat, if they can."""
    j, r = output
    if all(v is blocks[i - 1][j].results[r] for i, v in enumerate(values) if i > 0):
        return "carried"
    if all(v is values[0] for v in values):
        # an i32 tensor (a key mask) is read only as an argument of the function itself
        return None if is_index_type(values[0].type) else "invariant"
    per_block_weights = all(
        isinstance(v, BlockArgument) and v.block is block and v.name_hint in weights
        and all(position.get(top_level(u.operation, block), (-1, 0))[0] == i for u in v.uses)
        for i, v in enumerate(values)
    )
    return "sequence" if per_block_weights and len(set(values)) == len(values) else None


# -- replacing a run ----------------------------------------------------------------------------


def stacked_name(names: Sequence[str], taken: set[str]) -> str:
    """The name of the stacked weights `names` (see the module docstring)."""
    count = len(names)
    for m in re.finditer(r"\d+", names[0]):
        first = int(m.group())
        spelled = [names[0][: m.start()] + str(first + i) + names[0][m.end() :] for i in range(count)]
        if spelled == list(names):
            candidate = f"{names[0][: m.start()]}{first}-{first + count - 1}{names[0][m.end() :]}"
            break
    else:
        candidate = f"{names[0]}.x{count}"
    unique, n = candidate, 1
    while unique in taken:
        unique, n = f"{candidate}.{n}", n + 1
    return unique


def replace_run(func: FuncOp, match: RunMatch, weights: dict[str, np.ndarray]) -> RepeatedRun:
    block = func.body.block
    ops = [op for op in block.ops if not isinstance(op, ReturnOp)]
    run_ops = ops[match.start : match.start + match.length * match.count]
    first_block = run_ops[: match.length]
    outside = match.externals
    taken = {a.name_hint for a in block.args if a.name_hint}
    stacked, sequences = [], {}
    for e in match.sequences:
        per_block = [outside[i][e] for i in range(match.count)]
        names = [v.name_hint or "" for v in per_block]
        name = stacked_name(names, taken)
        taken.add(name)
        sequences[name] = names
        stacked.append(stacked_argument(block, per_block, name, weights))
    carried_in = outside[0][match.carried]
    invariants = [outside[0][e] for e in match.invariants]
    repeat = RepeatOp(match.count, [carried_in], invariants, stacked,
                      Region(repeat_body(first_block, match, carried_in, invariants, stacked)))
    repeat.res[0].name_hint = "layers"
    block.insert_op_before(repeat, run_ops[0])
    j, r = match.output
    run_ops[-match.length + j].results[r].replace_all_uses_with(repeat.res[0])
    for op in reversed(run_ops):
        block.erase_op(op)
    for names in sequences.values():
        for name in names:
            arg = next(a for a in block.args if a.name_hint == name)
            del weights[name]
            block.erase_arg(arg)
    return RepeatedRun(match.count, match.length, sequences)


def stacked_argument(block: Block, per_block: list[SSAValue], name: str,
                     weights: dict[str, np.ndarray]) -> BlockArgument:
    """A new function argument holding the per-block weights stacked, placed before the first."""
    element = per_block[0].type
    assert isinstance(element, TensorType) and isinstance(per_block[0], BlockArgument)
    weights[name] = np.stack([weights[v.name_hint or ""] for v in per_block])
    stacked_type: Attribute = TensorType(element.element_type,
                                         [len(per_block), *element.get_shape()])
    arg = block.insert_arg(stacked_type, per_block[0].index)
    arg.name_hint = name
    return arg


def repeat_body(first_block: list[Operation], match: RunMatch, carried_in: SSAValue,
                invariants: list[SSAValue], stacked: list[BlockArgument]) -> Block:
    """The first block's ops on the repeat's block arguments, ended by the carried result."""
    body = Block(arg_types=RepeatOp.body_arg_types(
        [carried_in.type], [v.type for v in invariants], [v.type for v in stacked]))
    first_sequence_values = [match.externals[0][e] for e in match.sequences]
    outer = [carried_in, *invariants, *stacked]
    mapping: dict[SSAValue, SSAValue] = {}
    for arg, outer_value, first_value in zip(body.args, outer, [carried_in, *invariants,
                                                                *first_sequence_values]):
        arg.name_hint = outer_value.name_hint
        mapping[first_value] = arg
    for op in first_block:
        body.add_op(op.clone(value_mapper=mapping))
    j, r = match.output
    body.add_op(YieldOp(mapping[first_block[j].results[r]]))
    return body


def reorder_weights(func: FuncOp, imported: ImportedModel) -> None:
    """weights.npz in argument order, like a plain import."""
    order = [a.name_hint for a in func.body.block.args if a.name_hint in imported.weights]
    imported.weights = {name: imported.weights[name] for name in order if name is not None}
