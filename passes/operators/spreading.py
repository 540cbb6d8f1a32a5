"""Where graph-to-mid may put a pointwise result that does not need tile 0 (issue 28,
"placement that uses the chip"): the least-loaded tiles (`planning/tile_loads.py`), priced
with what the result's consumers then pay to take it.

A pointwise plan computes on its output's tiles and its operands come to it, so it may start
at any tile; `pointwise.spread_candidate` offers the plan moved there beside its twin from
tile 0. Selection prices the moved plan's operand conversions itself; `consumers_extra_cycles`
adds, one look ahead of program order, the difference its consumers pay:

- `func.return`: nothing (the host reads a result wherever it is);
- a GEMM or an attention: its plan does not depend on where its operands are, so it is
  selected here once and the conversion of the result into its operand's format is priced
  from both places;
- a pointwise op that would follow the result (same shape, and nothing else placed to follow:
  its other operands are graph inputs): its own result moves with it, so its consumers are
  looked at in turn (a few levels deep);
- anything else: not known, and the result stays where its twin is.

`LookAhead` also answers `ConsumerPricing` for every pointwise and layout candidate, moved or
not: `consumers_cycles`, the least its slice, reshape and transpose consumers take with the
result in the candidate's format (a view of its shards or a gather; those consumers priced in
turn with their own consumers, `NESTED_DEPTH` level deeper: a reshape, then the transpose
after it and what that feeds), plus what each GEMM consumer pays above its cheapest plan with
the result in that format (`gemm_extra_cycles`, over its cheapest plans; a GEMM's own
selection asks only that, through the pointwise ops that would follow its result:
`chained_gemm_cycles`), the result's
conversion into the operand format of each attention consumer's plan (selected once, alone,
as above: `plan_wants`), and the cheapest plan of each pointwise consumer (add, gelu, layer
norm) with the result in that format, its own kernel, conversions and consumers counted
(`PointwiseOperator.least_cycles_given`, `LOOK_AHEAD` levels deep); and
`wanted_formats`, those plans' operand formats, which a layout op may write its result in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from device.target import Target
from ipu_dialects import graph, mid
from passes.operators import operator_for_graph
from passes.operators.base import SelectionContext, tensor_type
from passes.operators.costs import conversion_type_cycles
from passes.operators.formats import current_format, with_format, with_storage
from passes.operators.gemm import GemmOperator
from planning.plan_reasons import NoValidPlan
from planning.tile_loads import TileLoads

# pointwise ops that follow an operand: the elementwise ops (add, gelu, ...) and layer norm
FOLLOWERS = (graph.BinaryElementwiseOp, graph.UnaryElementwiseOp, graph.LayerNormOp)
LOOK_AHEAD = 3  # levels of followers looked through
NESTED_DEPTH = 1  # levels of consumers a layout consumer is priced with in turn
# consumers whose plan does not depend on where their operands are: selected once, alone
PLANNED_CONSUMERS = (graph.GemmOp, graph.AttentionOp)
GEMM_PLANS_PRICED = 4  # a GEMM consumer's cheapest plans an operand format is priced against
# one-operand layout ops, whose plan is a view or a gather by their operand's format
LAYOUT_CONSUMERS = (graph.SliceOp, graph.ReshapeOp, graph.TransposeOp)


@dataclass
class LookAhead:
    """`passes.operators.base.Spreading` for one function's lowering."""

    loads: TileLoads
    selection: SelectionContext  # without spreading: the consumers' own plans
    target: Target
    plans: dict[Operation, mid.OperatorPlanAttr | None] = field(default_factory=dict)
    gemm_options: dict[Operation, list[tuple[mid.OperatorPlanAttr, int]]] = field(
        default_factory=dict)
    # `consumers_cycles` while one op is selected: (value, format, depth) -> cycles
    priced: dict[tuple[SSAValue, mid.TensorFormatAttr, int], int | None] = field(
        default_factory=dict)

    def least_loaded_start(self, tiles: int) -> int:
        return self.loads.least_loaded_start(tiles)

    def consumers_extra_cycles(self, value: SSAValue, moved: mid.TensorFormatAttr,
                               twin: mid.TensorFormatAttr) -> int | None:
        return self.extra(value, moved, twin, LOOK_AHEAD)

    def extra(self, value: SSAValue, moved: mid.TensorFormatAttr, twin: mid.TensorFormatAttr,
              depth: int) -> int | None:
        total = 0
        for use in value.uses:
            user = use.operation
            if isinstance(user, func.ReturnOp):
                continue
            if isinstance(user, PLANNED_CONSUMERS):
                wanted = self.plan_wants(user, use.index)
                if wanted is None:
                    return None
                total += self.cost(value, moved, wanted) - self.cost(value, twin, wanted)
                continue
            if not (isinstance(user, FOLLOWERS) and depth > 0 and tensor_type(value).get_shape()
                    == tensor_type(user.results[0]).get_shape()):
                return None
            further = self.follower_extra(user, value, moved, twin, depth)
            if further is None:
                return None
            total += further
        return total

    def follower_extra(self, user: Operation, value: SSAValue, moved: mid.TensorFormatAttr,
                       twin: mid.TensorFormatAttr, depth: int) -> int | None:
        """What `user` (a pointwise op with `value`'s shape) pays more when `value` is stored
        `moved` rather than `twin`, when it has nothing else to follow (its other operands
        are graph inputs, written where its plan wants them, or broadcast ones of its own
        choosing): its result then sits where `value` does. A user with another operand
        placed already (a residual add) is not told: it picks which of the two to convert by
        their conversions alone, and its own consumers may then pay for the move."""
        outputs = self.outputs(user, moved, twin)
        if not all(self.follows(user, value, f) for f in outputs):
            return None
        return self.extra(user.results[0], *outputs, depth - 1)

    def outputs(self, user: Operation, moved: mid.TensorFormatAttr,
                twin: mid.TensorFormatAttr) -> tuple[mid.TensorFormatAttr, mid.TensorFormatAttr]:
        return self.follower_format(user, moved), self.follower_format(user, twin)

    def cost(self, value: SSAValue, fmt: mid.TensorFormatAttr,
             wanted: mid.TensorFormatAttr) -> int:
        """Cycles to bring `value`, stored `fmt`, into `wanted` (either way round: a
        conversion's estimate does not depend on which end asks)."""
        if fmt == wanted:
            return 0
        value_type = tensor_type(value)
        base = TensorType(value_type.get_element_type(), value_type.get_shape())
        return conversion_type_cycles(with_format(base, fmt), with_format(base, wanted),
                                      self.target)

    def consumers_cycles(self, value: SSAValue, fmt: mid.TensorFormatAttr,
                         depth: int = LOOK_AHEAD) -> int | None:
        key = (value, fmt, depth)
        if key not in self.priced:
            self.priced[key] = self.consumers_cycles_now(value, fmt, depth)
        return self.priced[key]

    def forget_prices(self) -> None:
        """Drop what `consumers_cycles` remembered: lowering an op gives its operands and
        result formats, which the prices of the consumers around them depend on."""
        self.priced.clear()

    def consumers_cycles_now(self, value: SSAValue, fmt: mid.TensorFormatAttr,
                             depth: int) -> int | None:
        total = 0
        converted: set[mid.TensorFormatAttr] = set()  # one bridge per format (shared)
        for use in value.uses:
            user = use.operation
            if isinstance(user, graph.GemmOp):  # the cheapest of its plans with `fmt` taken
                total += self.gemm_extra_cycles(user, use.index, value, fmt, converted)
            elif isinstance(user, PLANNED_CONSUMERS):  # its plan as chosen with the operand free
                wanted = self.plan_wants(user, use.index)
                total += 0 if wanted is None else self.cost(value, fmt, wanted)
            elif depth > 0 and isinstance(user, FOLLOWERS):
                # its cheapest plan, its own kernel and conversions counted: following `fmt`
                # onto one tile is not free, nor is re-cutting a layer norm's rows
                operator = operator_for_graph(user)
                assert operator is not None
                least = operator.least_cycles_given(user, {value: fmt}, self.nested(depth - 1))
                total += least or 0  # a follower with no plan is its own selection's to refuse
            elif isinstance(user, LAYOUT_CONSUMERS):
                operator = operator_for_graph(user)
                assert operator is not None
                nested = self.nested(min(depth - 1, NESTED_DEPTH))
                least = operator.least_cycles_given(user, {value: fmt}, nested)
                if least is None:  # no valid plan with `value` stored `fmt`
                    return None
                total += least
        return total

    def gemm_extra_cycles(self, op: graph.GemmOp, index: int, value: SSAValue,
                          fmt: mid.TensorFormatAttr,
                          converted: set[mid.TensorFormatAttr] | None = None) -> int:
        """What GEMM `op` pays above its cheapest plan when its operand `index` (`value`) is
        stored `fmt`: the least, over its `GEMM_PLANS_PRICED` cheapest plans, of the plan's
        cycles and the operand's conversion into it. The plan the GEMM picks alone is no
        guide: it may want a cut no producer writes cheaply, and the GEMM, selecting with the
        operand in place, picks another (GPT-2's MLP: a 22 x 48 grid wanted alone, 64 x 16
        taken from a row split). A conversion into a format in `converted` (an earlier
        consumer's, which graph-to-mid's bridge shares) is free; the one taken joins it: the
        per-head GEMMs of one layer norm's result convert it once."""
        if op not in self.gemm_options:
            operator = operator_for_graph(op)
            assert isinstance(operator, GemmOperator)
            self.gemm_options[op] = operator.cheapest_plans(op, self.selection, GEMM_PLANS_PRICED)
        options = self.gemm_options[op]
        if not options:  # no valid plan: its own selection says why
            return 0
        name = ("lhs", "rhs")[index]
        shared = converted if converted is not None else set()

        def conversion(wanted: mid.TensorFormatAttr) -> int:
            return 0 if wanted in shared else self.cost(value, fmt, wanted)

        best_cycles, best_format = min(
            ((cycles + conversion(plan.operand_plan(name).format), plan.operand_plan(name).format)
             for plan, cycles in options), key=lambda found: found[0])
        shared.add(best_format)
        return best_cycles - options[0][1]

    def chained_gemm_cycles(self, value: SSAValue, fmt: mid.TensorFormatAttr,
                            depth: int = LOOK_AHEAD) -> int:
        total = 0
        for use in value.uses:
            user = use.operation
            if isinstance(user, graph.GemmOp):
                total += self.gemm_extra_cycles(user, use.index, value, fmt)
                continue
            follower = self.follower_format(user, fmt) if isinstance(user, FOLLOWERS) else None
            if depth > 0 and follower is not None and self.follows(user, value, follower):
                total += self.chained_gemm_cycles(user.results[0], follower, depth - 1)
        return total

    def wanted_formats(self, value: SSAValue) -> list[mid.TensorFormatAttr]:
        wanted = [self.plan_wants(use.operation, use.index) for use in value.uses
                  if isinstance(use.operation, PLANNED_CONSUMERS)]
        return [fmt for fmt in wanted if fmt is not None]

    def nested(self, depth: int) -> SelectionContext:
        """The context a layout consumer is priced in: its own consumers looked at in turn
        while `depth` lasts (a reshape, then a transpose, then the attention they feed)."""
        if depth <= 0:
            return self.selection
        return dataclasses.replace(self.selection, consumers=NestedLookAhead(self, depth))

    @staticmethod
    def follows(user: Operation, value: SSAValue, result: mid.TensorFormatAttr) -> bool:
        """`user` would keep `value`'s format, its result stored `result`: a pointwise op of
        `value`'s shape with nothing else to follow (`follower_extra`), and not a layer norm
        asked to follow a cut last axis (where it goes is then its own choice)."""
        return (isinstance(user, FOLLOWERS)
                and tensor_type(value).get_shape() == tensor_type(user.results[0]).get_shape()
                and all(other is value or (isinstance(other, BlockArgument)
                                           and current_format(other) is None)
                        for other in user.operands)
                and not (isinstance(user, graph.LayerNormOp) and result.partitions[-1] > 1))

    @staticmethod
    def follower_format(user: Operation, fmt: mid.TensorFormatAttr) -> mid.TensorFormatAttr:
        return with_storage(fmt, tensor_type(user.results[0]))

    def plan_wants(self, op: Operation, index: int) -> mid.TensorFormatAttr | None:
        """The format the plan of `op` (a GEMM or an attention) wants its operand `index` in,
        chosen once with its operands free, or None when `op` has no valid plan (its own
        selection says why, at its own location)."""
        operator = operator_for_graph(op)
        assert operator is not None
        if op not in self.plans:
            try:
                self.plans[op] = operator.select(op, self.selection)
            except NoValidPlan:
                self.plans[op] = None
        plan = self.plans[op]
        names = operator.plan_operand_names(op)
        return None if plan is None or index >= len(names) else plan.operand_plan(
            names[index]).format


@dataclass(frozen=True)
class NestedLookAhead:
    """`ConsumerPricing` for a consumer priced inside a look-ahead: the same answers, `depth`
    levels deep."""

    look_ahead: LookAhead
    depth: int

    def consumers_cycles(self, value: SSAValue, fmt: mid.TensorFormatAttr) -> int | None:
        return self.look_ahead.consumers_cycles(value, fmt, self.depth)

    def wanted_formats(self, value: SSAValue) -> list[mid.TensorFormatAttr]:
        return self.look_ahead.wanted_formats(value)

    def chained_gemm_cycles(self, value: SSAValue, fmt: mid.TensorFormatAttr) -> int:
        return self.look_ahead.chained_gemm_cycles(value, fmt, self.depth)
