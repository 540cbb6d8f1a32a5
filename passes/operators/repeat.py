"""The repeat operator: `graph.repeat` -> `mid.repeat` (a region lowered with the same
operators) -> one `tile.loop` over the count whose body is the lowered body.

graph-to-mid (`lower_repeat`): the body's ops are lowered first, with the same operators as
the function's; each body argument then has the format of its first consumer's plan (an
unused one: row-major on one tile). Carried values keep that one format for the repeat's
operand, the body argument, the yield and the result (bridges before `mid.yield` and before
the repeat, which `insert-conversions` makes explicit); invariants are bridged into their
argument's format outside the body. Sequence operands are left as they are:
`normalize-repeats` stores them once, outside the body, as consecutive per-tile blocks.

mid-to-tile (`RepeatOperator.lower`): the op count does not depend on the count.
- Carried: the body argument, the yield and the result share one buffer (the result's). The
  initial value is copied into it before the loop unless its buffer can be taken over (a
  scratch value used by the repeat alone). The yielded value's producer writes that buffer
  in place when that is safe (no later body op reads the carried argument, and the producer
  reads it only as a pointwise operand of the output's format, and no other slot yields the
  carried argument); otherwise an explicit `convert_shard` copy (equal descriptors) ends the
  body, with its provenance reason. The copies are one parallel assignment (`yield %y, %x`
  swaps): a copy runs after those that read its destination, and a cycle of them first saves
  one destination in a temporary (`yield_copies`).
- Invariants: the body reads the invariant's own buffer, placed once.
- Sequences: the body's element is a view of the sequence's buffer at byte offset
  `i * stride` (the element's shard bytes), an affine base-pointer increment in every view
  map of the body; never a pointer table. An exchange cannot send from a moving address
  without new rows per iteration, so a sequence that is exchanged is first copied, on its own
  tiles, into a staging buffer of one element that the exchanges send from
  (`stage_sent_sequences`); a kernel's home view of that sequence (a grid GEMM's tiles
  that hold the block) reads the staging buffer too, so every tile's pointers stay put.
- The body's work is nested under the loop: every map gains the loop index as its first
  dimension, every op's `iv(...)` the loop's index, every provenance the repeat's name.
- Locations: the loop has the repeat's, the body's work its own ops'; the carry-in copy is at
  `fused[repeat, initial value's producer]`, the yield copy at `fused[yield, yielded value's
  producer]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from device.kernels import step_cycles
from device.target import Target, get_target
from ipu_dialects import graph, mid
from ipu_dialects.locations import fused_location, located, op_label, value_label, value_location
from ipu_dialects.tile import (
    BufferOp,
    ExchangeOp,
    KernelOp,
    LoopNestInterface,
    LoopOp,
    OuterLoop,
    WorkProvenanceAttr,
)
from passes.operators.base import GraphLowering, Operator, TileLowering, tensor_type
from passes.operators.costs import conversion_type_cycles
from passes.operators.formats import (
    is_graph_tensor,
    row_major_format,
    tensor_format_of,
    with_format,
    with_storage,
)
from passes.operators.resident import source_of
from passes.operators.sequence_spread import cheapest_spread
from passes.operators.tile_maps import scalar_map, tensor_format
from planning.program_estimate import runs_of
from planning.shard_geometry import geometry

YIELD_COPY_REASON = (
    "the yielded value's plan writes a fresh buffer: copy it into the carried buffer")
SWAP_REASON = ("save a carried value that another carried slot takes before its own slot is "
               "overwritten (the yield assigns every slot at once)")
CARRY_IN_REASON = "copy the initial carried value into the repeat's carried buffer"
# Sequences stored in their elements' formats may hold this fraction of tile 0's memory (outside
# the code region); past it the largest are stored spread (`spread_sequences`).
SEQUENCE_BUDGET = 0.25
# on a `graph.repeat` inside graph-to-mid: the formats its carried body arguments take before
# its body is lowered (`hint_yielded_formats`, `carry_in_hinted_formats`)
CARRIED_FORMATS_ATTR = "graph_to_mid.carried_formats"
SEQUENCE_STAGING_REASON = (
    "copy this iteration's element of a sequence that is exchanged into a fixed buffer, so "
    "that the exchange's rows are the same in every iteration")


# ---- graph-to-mid ---------------------------------------------------------------------------


def is_body_argument(value: SSAValue) -> bool:
    return isinstance(value, BlockArgument) and isinstance(
        value.block.parent_op(), (graph.RepeatOp, mid.RepeatOp))


def carried_by_enclosing_repeat(value: SSAValue) -> bool:
    """Is `value` a carried argument of the repeat whose body it belongs to?"""
    if not isinstance(value, BlockArgument):
        return False
    repeat = value.block.parent_op()
    return isinstance(repeat, graph.RepeatOp | mid.RepeatOp) and value in repeat.carried_args


def lower_repeat(lowering: GraphLowering, op: graph.RepeatOp) -> None:
    """`op`'s body lowered, then the `mid.repeat` that replaces it (see the module doc)."""
    block = op.body.block
    carry_in_hinted_formats(op)
    lowering.lower_block(block)
    for arg in block.args:  # unused or only yielded: row-major on one tile
        if is_graph_tensor(arg):
            assert isinstance(arg.type, TensorType)
            fmt = row_major_format(arg.type, lowering.config.indivisible.data)
            Rewriter.replace_value_with_new_type(arg, with_format(arg.type, fmt))
    fetch_chosen_spread(lowering, op)
    if lowering.spread_sequences and lowering.spread_saving == 0:  # the budget: a last resort
        spread_sequences(lowering, op)
    terminator = block.last_op
    assert isinstance(terminator, graph.YieldOp)
    carried_formats = [tensor_format_of(a) for a in op.carried_args]  # every arg has one now
    yielded = [lowering.operand_in_format(terminator.values[i], fmt, terminator, share=False)
               for i, fmt in enumerate(carried_formats)]
    yield_op = mid.YieldOp(*yielded)
    yield_op.location = terminator.location
    Rewriter.replace_op(terminator, yield_op)
    carried = [lowering.operand_in_format(op.carried[i], fmt, op, share=False)
               for i, fmt in enumerate(carried_formats)]
    invariants = [lowering.operand_in_format(op.invariants[i], tensor_format_of(a), op,
                                            share=False)
                  for i, a in enumerate(op.invariant_args)]
    sequences = [typed_sequence(lowering, op, i) for i in range(len(op.sequences))]
    body = op.detach_region(op.body)
    new_op = mid.RepeatOp(op.count.value.data, carried, invariants, sequences, body)
    # what bringing the yielded values into the carried formats costs an iteration, and the
    # initial and invariant values into theirs once: no selected op prices these conversions
    target = get_target(lowering.config.target.data)
    per_iteration = sum(bridge_cycles(v, target) for v in yielded)
    once = sum(bridge_cycles(v, target) for v in (*carried, *invariants))
    new_op.attributes[mid.ESTIMATE_ATTR_NAME] = IntegerAttr(
        op.count.value.data * per_iteration + once, i64)
    for old, new in zip(op.results, new_op.results, strict=True):
        new.name_hint = old.name_hint
    new_op.location = op.location
    Rewriter.replace_op(op, new_op)


def carry_in_hinted_formats(op: graph.RepeatOp) -> None:
    """Give the carried body arguments the formats `CARRIED_FORMATS_ATTR` names (a lowering
    before this one yielded them so) before the body is lowered: their first consumers then
    take them as they come, where without they choose."""
    hints = op.attributes.pop(CARRIED_FORMATS_ATTR, None)
    if not isinstance(hints, ArrayAttr):
        return
    for index, fmt in enumerate(hints.data):
        arg = op.carried_args[index]
        if isinstance(fmt, mid.TensorFormatAttr) and is_graph_tensor(arg):
            assert isinstance(arg.type, TensorType)
            Rewriter.replace_value_with_new_type(
                arg, with_format(arg.type, with_storage(fmt, arg.type)))


def hint_yielded_formats(lowered: func.FuncOp, original: func.FuncOp) -> bool:
    """Name on each `graph.repeat` of `original` (`lowered` before its lowering) the formats
    `lowered`'s `mid.repeat` in its place yields its carried values in
    (`CARRIED_FORMATS_ATTR`): whether a yield there converts one (a bridge into the carried
    format before `mid.yield`, every iteration)."""
    before = [o for o in original.walk() if isinstance(o, graph.RepeatOp)]
    after = [o for o in lowered.walk() if isinstance(o, mid.RepeatOp)]
    if len(before) != len(after):
        return False
    converts = False
    for graph_repeat, mid_repeat in zip(before, after, strict=True):
        terminator = mid_repeat.body.block.last_op
        assert terminator is not None
        sources = [source_of(value) for value in terminator.operands]
        converts |= any(source is not value
                        for source, value in zip(sources, terminator.operands, strict=True))
        graph_repeat.attributes[CARRIED_FORMATS_ATTR] = ArrayAttr(
            [tensor_format_of(source) for source in sources])
    return converts


def bridge_cycles(value: SSAValue, target: Target) -> int:
    """What the conversion `operand_in_format` bridged `value` through costs (0 when it
    bridged nothing: the value was in its format, or a graph input was retyped into it)."""
    bridge = value.owner
    if not isinstance(bridge, UnrealizedConversionCastOp):
        return 0
    return conversion_type_cycles(tensor_type(bridge.inputs[0]), tensor_type(value), target)


def stacked_bytes(arg: SSAValue, count: int) -> int:
    """Bytes the sequence of body argument `arg` takes on tile 0 when stored in the element's
    format (`normalize-repeats`: every tile holds its shard of every element; tile 0 holds a
    shard of every format)."""
    arg_type = tensor_type(arg)
    return count * geometry(arg_type.get_shape(), tensor_format_of(arg)).shard_bytes()


def fetch_chosen_spread(lowering: GraphLowering, op: graph.RepeatOp) -> None:
    """Store spread the sequences whose consumer's plan chose to take them so (memory-aware
    GEMM selection: they do not fit where the plan reads them): as the whole shards chosen
    when the plan took them (`GraphToMidLowering.store_spread`, `whole_shard_window`), whose
    fetch saving the estimates of the GEMMs that read them now take, or else in the cheapest
    spread format (`cheapest_spread`)."""
    target = get_target(lowering.config.target.data)
    tiles, indivisible = lowering.config.tiles.data, lowering.config.indivisible.data
    for arg in op.sequence_args:
        if not lowering.stores_spread(arg):
            continue
        assert lowering.resident is not None
        shards = lowering.resident.spread[(arg.block, arg.index)].whole_shards
        if shards is None:
            spread, _ = cheapest_spread(tensor_type(arg), tensor_format_of(arg), tiles,
                                        indivisible, target)
            fetch_sequence_element(op, arg, spread)
            continue
        spread, saved = shards
        for use in arg.uses:
            if not isinstance(use.operation, mid.GemmOp):  # only GEMMs price a fetch
                continue
            estimate = use.operation.attributes.get(mid.ESTIMATE_ATTR_NAME)
            if isinstance(estimate, IntegerAttr):
                use.operation.attributes[mid.ESTIMATE_ATTR_NAME] = IntegerAttr(
                    estimate.value.data - saved, i64)
        fetch_sequence_element(op, arg, spread)


def spread_sequences(lowering: GraphLowering, op: graph.RepeatOp) -> None:
    """Store the largest sequences spread over the chip: each element's format starts at tile
    0, so a stack of layers piles every layer's shard 0 there. With a `spread_saving` of N
    bytes (what the pipeline measured tile 0 to overflow by), the largest are spread until
    tile 0 holds N bytes fewer, counting the fetched element each adds to the body; with none,
    until the sequences hold at most `SEQUENCE_BUDGET` of tile 0's memory. A spread
    sequence's body argument takes the spread format fetched cheaper (`cheapest_spread`), and
    a bridge at the start of the body
    brings each iteration's element to the format its consumers' plans chose (a
    `mid.rearrange`: the iteration's element is fetched from where it is stored)."""
    target = get_target(lowering.config.target.data)
    tiles, indivisible = lowering.config.tiles.data, lowering.config.indivisible.data
    budget = (target.sram_bytes - target.code_region_bytes) * SEQUENCE_BUDGET
    count = op.count.value.data
    # each has its first consumer's format by now; one that a nested repeat iterates has a
    # provisional one (normalize-repeats stores it as blocks of the inner elements' blocks)
    args = [a for a in op.sequence_args
            if not any(isinstance(u.operation, mid.RepeatOp) for u in a.uses)
            and not lowering.stores_spread(a)]  # fetched already: its plan chose it spread
    sizes = {a: stacked_bytes(a, count) for a in args}
    total, saved = sum(sizes.values()), 0
    for arg in sorted(args, key=lambda a: -sizes[a]):
        if (saved >= lowering.spread_saving if lowering.spread_saving > 0 else total <= budget):
            return
        arg_type = tensor_type(arg)
        wanted = tensor_format_of(arg)
        spread, _ = cheapest_spread(arg_type, wanted, tiles, indivisible, target)
        spread_bytes = count * geometry(arg_type.get_shape(), spread).shard_bytes()
        if spread == wanted or spread_bytes >= sizes[arg]:
            continue  # stored spread it would hold no less on tile 0: no fetch
        fetch_sequence_element(op, arg, spread)
        total += spread_bytes - sizes[arg]
        saved += sizes[arg] - spread_bytes - geometry(arg_type.get_shape(), wanted).shard_bytes()


def fetch_sequence_element(op: graph.RepeatOp, arg: BlockArgument,
                           spread: mid.TensorFormatAttr) -> None:
    """Store the sequence of body argument `arg` in `spread` and bring each iteration's element
    to the format its consumers chose, through a bridge at the start of the body."""
    arg_type = tensor_type(arg)
    wanted = tensor_format_of(arg)
    spread_arg = Rewriter.replace_value_with_new_type(arg, with_format(arg_type, spread))
    bridge = UnrealizedConversionCastOp.get([spread_arg], [with_format(arg_type, wanted)])
    bridge.results[0].name_hint = f"{spread_arg.name_hint or 'element'}_fetched"
    bridge.attributes[mid.CONSUMER_ATTR_NAME] = StringAttr(
        f"{op_label(op)} body (its element of this iteration)")
    bridge.location = op.location
    Rewriter.insert_op(bridge, InsertPoint.at_start(op.body.block))
    fetched = bridge.results[0]
    for use in [u for u in spread_arg.uses if u.operation is not bridge]:
        use.operation.operands[use.index] = fetched


def typed_sequence(lowering: GraphLowering, op: graph.RepeatOp, index: int) -> SSAValue:
    """A sequence keeps its producer's format; a fresh graph value gets a row-major one (its
    normalized format is `normalize-repeats`' choice)."""
    value = op.sequences[index]
    if is_graph_tensor(value):
        assert isinstance(value.type, TensorType)
        fmt = row_major_format(value.type, lowering.config.indivisible.data)
        return Rewriter.replace_value_with_new_type(value, with_format(value.type, fmt))
    return value


# ---- mid-to-tile ----------------------------------------------------------------------------


def normalized_format(element: mid.TensorFormatAttr) -> mid.TensorFormatAttr:
    """The sequence format whose per-tile block i is element i in format `element`."""
    return element.with_changes(tiling=[mid.AxisTilingAttr(1, 1), *element.tiling.data])


def unify_carried_requirements(lowering: TileLowering, ops: Sequence[Operation]) -> None:
    """A buffer shared by several values must satisfy each one's largest alignment and tail:
    carried (init, body argument, yield, result), invariant and sequence (operand, body
    argument). Innermost repeats first, so that their needs reach the outer ones."""
    repeats = [o for top in ops for o in top.walk() if isinstance(o, mid.RepeatOp)]
    for op in reversed(repeats):
        terminator = op.block.last_op
        assert isinstance(terminator, mid.YieldOp)
        groups: list[tuple[SSAValue, ...]] = [(init, arg, out, res) for init, arg, out, res in zip(
            op.carried, op.carried_args, terminator.values, op.res, strict=True)]
        groups += list(zip(op.invariants, op.invariant_args, strict=True))
        groups += list(zip(op.sequences, op.sequence_args, strict=True))
        for group in groups:
            needs = [lowering.requirements[v] for v in group if v in lowering.requirements]
            if needs:
                merged = (max(a for a, _ in needs), max(t for _, t in needs))
                for value in group:
                    lowering.requirements[value] = merged


def writes_in_place(op: mid.RepeatOp, index: int) -> bool:
    """May the producer of yielded value `index` write the carried buffer directly?"""
    terminator = op.block.last_op
    assert isinstance(terminator, mid.YieldOp)
    value, arg = terminator.values[index], op.carried_args[index]
    producer = value.owner
    if not isinstance(producer, Operation) or producer.parent_block() is not op.block:
        return False
    if list(terminator.values).count(value) > 1 or value in op.res:
        return False
    if any(in_carried_buffer(v, arg) for j, v in enumerate(terminator.values) if j != index):
        return False  # another slot takes this carried value: its copy reads the buffer
    plan = getattr(producer, "plan", None)
    conversion = isinstance(producer, (mid.CastPrecisionOp, mid.RearrangeOp))
    if not isinstance(plan, mid.OperatorPlanAttr) and not conversion:
        return False  # a nested repeat: its result lives in its own carried buffer
    body_ops = list(op.block.ops)
    later = body_ops[body_ops.index(producer) + 1:]
    if any(in_carried_buffer(o, arg) for later_op in later if later_op is not terminator
           for o in later_op.operands):
        return False
    read = [o for o in producer.operands if in_carried_buffer(o, arg)]
    if read:  # reads what it overwrites: only elementwise, same format
        return (isinstance(plan, mid.OperatorPlanAttr)
                and plan.dispatch.kind.data == mid.DispatchKind.POINTWISE
                and all(o.type == value.type for o in read))
    return True


def in_carried_buffer(value: SSAValue, arg: SSAValue) -> bool:
    """Is `value` the carried argument, or a nested repeat's result that may live in its
    buffer (a nested repeat takes over a carried value it is the only user of)?"""
    if value is arg:
        return True
    owner = value.owner
    if isinstance(owner, mid.RepeatOp) and isinstance(value, OpResult):
        return in_carried_buffer(owner.carried[value.index], arg)
    return False


def copy_cycles(copy: Operation, target: Target) -> int:
    """A copy kernel's cycles as the model charges its step (`device.kernels.step_cycles`)."""
    assert isinstance(copy, KernelOp)
    return step_cycles(copy.callee.string_value(), [int(v) for v in copy.scalars.get_values()],
                       copy.tiles.as_array(), target)


def copy_kernel(lowering: TileLowering, dst: BufferOp, src: BufferOp, value: SSAValue,
                source: str, reason: str, for_op: Operation) -> KernelOp:
    """A copy of `value` done for `for_op` (the repeat, or its yield): located at
    `fused[for_op, value's producer]`."""
    from passes.operators.conversions import CONVERT_KERNEL
    from passes.operators.formats import descriptor

    words = descriptor(tensor_type(value))
    zero = scalar_map(0, 0)
    copy = KernelOp(CONVERT_KERNEL, [(dst, zero), (src, zero)], [*words, *words], dst.tiles, [],
                    WorkProvenanceAttr(source, value_label(value), reason))
    copy.location = fused_location(for_op.location, value_location(value))
    return copy


@dataclass
class YieldMove:
    """One carried slot's copy at the end of the body: `dst` takes `value`, read from `src`."""

    dst: BufferOp
    src: BufferOp
    value: SSAValue


def yield_copies(op: mid.RepeatOp, lowering: TileLowering,
                 carried: Sequence[BufferOp]) -> list[Operation]:
    """The copies that end the body: every carried buffer takes its yielded value, all at
    once (a parallel assignment, as `yield %y, %x` means a swap). A copy runs only after
    every copy that reads its destination; in a cycle, one destination is first saved in a
    temporary that its readers read instead."""
    terminator = op.block.last_op
    assert isinstance(terminator, mid.YieldOp)
    moves = [YieldMove(carried[i], lowering.operand_buffer(terminator, v), v)
             for i, v in enumerate(terminator.values)]
    moves = [m for m in moves if m.src is not m.dst]
    copies: list[Operation] = []
    while moves:
        ready = [m for m in moves if not any(o.src is m.dst for o in moves if o is not m)]
        if not ready:  # only cycles are left: free the first move's destination
            dst = moves[0].dst
            arg = op.carried_args[list(carried).index(dst)]
            temp = lowering.scratch(f"{dst.sym_name.data}_swap", dst.tiles, dst.shard_shape,
                                    dst.precision.data, dst.order.data, dst.memory.data,
                                    dst.alignment_bytes, dst.tail_bytes)
            copies.append(copy_kernel(lowering, temp, dst, arg, "graph.yield", SWAP_REASON,
                                      terminator))
            for move in moves:
                if move.src is dst:
                    move.src = temp
            continue
        move = ready[0]
        moves.remove(move)
        copies.append(copy_kernel(lowering, move.dst, move.src, move.value, "graph.yield",
                                  YIELD_COPY_REASON, terminator))
    return copies


def nest(op: Operation, loop: OuterLoop) -> Operation:
    """`op` as work inside the repeat's loop (see the module doc); returns the op to keep.
    Each op moves itself (`LoopNestInterface.nested_in`)."""
    fixed = next((o for o in op.walk() if not isinstance(o, LoopNestInterface)), None)
    if fixed is not None:
        raise PassFailedException(f"mid-to-tile: cannot nest {fixed.name} in a repeat's loop")
    assert isinstance(op, LoopNestInterface)
    return op.nested_in(loop)


class RepeatOperator(Operator):
    kind = "repeat"
    mid_op = mid.RepeatOp
    operand_names = ()
    # its copies and views work on its buffers' own tiles (a sequence stored spread as whole
    # shards starts past its consumer's tiles)
    honours_first_tile = True

    def lower(self, op: Operation, lowering: TileLowering) -> list[Operation]:
        assert isinstance(op, mid.RepeatOp)
        label = lowering.source_of_repeat(op)
        before: list[Operation] = []
        carried = [self.carried_buffer(op, i, lowering, label, before)
                   for i in range(len(op.carried))]
        for value, arg in zip(op.invariants, op.invariant_args, strict=True):
            lowering.buffers[arg] = lowering.operand_buffer(op, value)
        strides: dict[BufferOp, int] = {}
        for index, (value, arg) in enumerate(zip(op.sequences, op.sequence_args, strict=True)):
            buffer = lowering.operand_buffer(op, value)
            lowering.buffers[arg] = buffer
            strides[buffer] = sequence_stride(op, index, buffer)
        terminator = op.block.last_op
        assert isinstance(terminator, mid.YieldOp)
        for index, value in enumerate(terminator.values):
            if value is not op.carried_args[index] and writes_in_place(op, index):
                lowering.buffers[value] = carried[index]
        body: list[Operation] = []
        for inner in op.block.ops:
            if inner is not terminator:
                body.extend(lowering.lower_op(inner))
        ends = yield_copies(op, lowering, carried)
        starts = stage_sent_sequences(op, lowering, body, label)
        body = [*starts, *body, *ends]
        # the copies are the lowering's, not a selected plan's: the estimate counts them here
        lowering.added_cycles += runs_of(op) * (
            sum(copy_cycles(c, lowering.target) for c in before)
            + op.iterations * sum(copy_cycles(c, lowering.target) for c in (*starts, *ends)))
        loop = LoopOp(0, op.iterations, WorkProvenanceAttr(
            label, value_label(op.results[0]) if op.results else "",
            f"{op.iterations} iterations of one tile-local body"))
        loop.induction_var.name_hint = "r"
        outer = OuterLoop(loop.induction_var, strides, label)
        for work in body:
            loop.body.block.add_op(nest(work, outer))
        return [*before, loop]

    @staticmethod
    def carried_buffer(op: mid.RepeatOp, index: int, lowering: TileLowering, label: str,
                       before: list[Operation]) -> BufferOp:
        """The buffer of carried value `index`: the initial value's own when the repeat may
        take it over (its only use, not a returned result; a scratch value or an enclosing
        repeat's carried value), else the result's, filled from the initial value before the
        loop."""
        init, arg, res = op.carried[index], op.carried_args[index], op.res[index]
        init_buffer = lowering.operand_buffer(op, init)
        sole_use = len(list(init.uses)) == 1 and res not in lowering.outputs
        owned = sole_use and (
            (isinstance(init.owner, Operation) and init_buffer.kind.data == "scratch")
            or carried_by_enclosing_repeat(init))
        if owned:
            buffer = init_buffer
            lowering.buffers[res] = buffer
        else:
            buffer = lowering.result_buffer(res)
            before.append(copy_kernel(lowering, buffer, init_buffer, init, label,
                                      CARRY_IN_REASON, op))
        lowering.buffers[arg] = buffer
        return buffer


def stage_sent_sequences(op: mid.RepeatOp, lowering: TileLowering, body: list[Operation],
                         label: str) -> list[Operation]:
    """Copies that start the body: the current element of every sequence an exchange sends
    from, into a staging buffer of one element that the exchanges send from instead.

    An exchange row holds absolute addresses, so an exchange reading `base + i * stride`
    would need new rows in every iteration; from the staging buffer its rows are the same in
    every iteration (one slot for all of them), and the package keeps the loop as a loop.
    Kernels read the sequence in place, by base-pointer increment.
    """
    sequences = {lowering.buffers[arg]: arg for arg in op.sequence_args}
    exchanges = [x for work in body for x in work.walk()
                 if isinstance(x, ExchangeOp) and x.src.owner in sequences and sends(x)]
    staged: dict[BufferOp, BufferOp] = {}
    copies: list[Operation] = []
    for exchange in exchanges:
        sequence = exchange.src.owner
        assert isinstance(sequence, BufferOp)
        if sequence not in staged:
            arg = sequences[sequence]
            staged[sequence] = lowering.new_buffer(
                arg, "scratch", None, f"{sequence.sym_name.data}_element")
            lowering.buffers[SSAValue.get(staged[sequence])] = staged[sequence]
            copies.append(copy_kernel(lowering, staged[sequence], sequence, arg,
                                      exchange.provenance.op.data, SEQUENCE_STAGING_REASON,
                                      exchange))
        exchange.operands[0] = staged[sequence].buffer
    redirect_homes(body, staged)
    return copies


def redirect_homes(body: list[Operation], staged: dict[BufferOp, BufferOp]) -> None:
    """Home views of a staged sequence read its staging buffer: a grid GEMM's home tiles read
    the block where it lives while the others read their slots, so reading the sequence in
    place would advance only the home tiles' pointers and unroll the repeat's loop."""
    for kernel in (k for work in body for k in work.walk() if isinstance(k, KernelOp)):
        for index, home in enumerate(kernel.homes):
            staging = staged.get(home.buffer.owner)  # type: ignore[call-overload]
            if staging is not None:
                kernel.operands[kernel.pointer_count + index] = staging.buffer


def sends(exchange: ExchangeOp) -> bool:
    """Whether some iteration has a receiver: not when the only destination tile is the
    only tile the source lives on (one tile: nothing moves)."""
    source = exchange.src.owner
    assert isinstance(source, BufferOp)
    destinations = set(exchange.dst_tiles.tiles())
    return not (len(destinations) == 1 and destinations == set(source.tiles.tiles()))


def sequence_stride(op: mid.RepeatOp, index: int, buffer: BufferOp) -> int:
    """Bytes between element i and i + 1 of sequence `index` on every tile: one element's
    shard, when the sequence is normalized (`normalize-repeats`); else a diagnostic."""
    seq, arg = op.sequences[index], op.sequence_args[index]
    seq_type = tensor_type(seq)
    arg_type, arg_format = tensor_format(op, f"sequence body argument #{index}", arg)
    if seq_type.encoding != normalized_format(arg_format):
        raise PassFailedException(located(
            op, f"mid-to-tile: sequence operand #{index} ({value_label(seq)}) of the repeat is "
            "not normalized (its format is not consecutive per-tile blocks of its body "
            "element's format); run normalize-repeats before mid-to-tile"))
    stride = geometry(arg_type.get_shape(), arg_format).shard_bytes()
    if stride % buffer.alignment_bytes:
        raise PassFailedException(located(
            op, f"mid-to-tile: sequence operand #{index} ({value_label(seq)}) advances by "
            f"{stride} bytes per iteration, not a multiple of its {buffer.alignment_bytes}-byte "
            "alignment"))
    return stride
