"""`graph-to-mid`: choose an operator plan for every graph op and rewrite it to the mid level.

- Stores the `PipelineConfig` (`#mid.config<...>`) on the module as `ipu.config`.
- Each graph op becomes the mid op of its operator (`passes/operators/`), carrying the
  cheapest valid candidate plan the operator offers; its operand and result types carry the
  plan's formats.
- Function arguments take the format of their first consumer's plan (input policy
  `consumer`: the host writes inputs straight into that layout) or a row-major single-tile
  format (policy `row_major`); results carry their producer's format.
- Where a consumer wants a format other than the one its operand has, the two are bridged by a
  `builtin.unrealized_conversion_cast`; `insert-conversions` turns each such bridge into
  explicit `mid.cast_precision` / `mid.rearrange` ops. Each mid op carries its graph op's
  location; a bridge carries `loc(fused[consumer, producer])` (`ipu_dialects/locations.py`).

- A `graph.repeat` becomes a `mid.repeat` whose body is lowered with the same operators
  (`passes/operators/repeat.py`, `lower_repeat`); its sequences are `normalize-repeats`'.

Graph ops without an operator plan yet are a diagnostic, never silently kept.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import (
    IntegerAttr,
    StringAttr,
    TensorType,
    UnrealizedConversionCastOp,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException, VerifyException

from device.target import Target, get_target
from ipu_dialects import graph, mid
from ipu_dialects.locations import fused_location, located, op_label, value_label, value_location
from ipu_dialects.mid_config import InputPolicyOption
from passes.operators import operator_for_graph
from passes.operators.base import Operator, SelectionContext, tensor_type
from passes.operators.costs import conversion_type_cycles
from passes.operators.formats import (
    is_graph_tensor,
    row_major_format,
    tensor_format_of,
    with_format,
    with_storage,
)
from passes.operators.repeat import hint_yielded_formats, is_body_argument, lower_repeat
from passes.operators.resident import ResidentMemory, ResidentTracker, selection_room
from passes.operators.spreading import LookAhead
from planning.gemm_problem import (
    catalog_entries,
    default_catalog_names,
    opt_in_catalog_names,
)
from planning.pipeline_config import PipelineOptions
from planning.plan_reasons import NoValidPlan
from planning.program_estimate import program_estimate
from planning.shard_geometry import geometry
from planning.tile_loads import TileLoads

FITTING_ROUNDS = 3  # lowerings of a function while its sequences do not fit (`lower_fitting_sequences`)


@dataclass
class GraphToMidLowering:
    """Lowers the graph ops of one function, in program order."""

    function: func.FuncOp
    config: mid.PipelineConfigAttr
    target: Target
    spread_sequences: bool = False  # graph-to-mid{spread-sequences}: see `GraphLowering`
    spread_saving: int = 0
    spread: bool = True  # pointwise plans may start on the least-loaded tiles
    spread_inputs: bool = False  # graph-to-mid{spread-inputs}: see `home_of`
    # sequences whose plans must take them stored spread (`lower_fitting_sequences`)
    force_spread: frozenset[str] = frozenset()
    layer_norm_columns: bool = True  # offer the column-split layer norm (`lower_function`)
    # the bytes of the values lowered so far, per tile: where a pointwise plan may start
    loads: TileLoads = field(init=False)
    look_ahead: LookAhead = field(init=False)
    moved: int = 0  # results placed past tile 0
    # per block, per value, the bridges made so far into each format (`operand_in_format`)
    bridges: dict[Block | None, dict[SSAValue, dict[mid.TensorFormatAttr, SSAValue]]] = field(
        init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.loads = TileLoads(self.config.tiles.data)
        self.look_ahead = LookAhead(self.loads, self.plain_selection(), self.target)

    resident: ResidentTracker | None = None  # set when `run` starts

    def plain_selection(self, resident: ResidentMemory | None = None) -> SelectionContext:
        """The pipeline's context, with what the tiles hold (`resident`; default: nothing)."""
        return SelectionContext(self.config.tiles.data, self.config.indivisible.data,
                                self.config.inputs.data, self.target, self.config.catalog_names,
                                resident or ResidentMemory(),
                                layer_norm_columns=self.layer_norm_columns)

    def selection(self, op: Operation) -> SelectionContext:
        """The context `op`'s plan is chosen in: what the tiles hold at it (memory-aware)."""
        return dataclasses.replace(
            self.plain_selection(self.resident.at(op) if self.resident is not None else None),
            consumers=self.look_ahead, converted=self.bridges.get(op.parent_block(), {}))

    def selection_for(self, op: Operation) -> SelectionContext:
        """`selection`, with the tile loads for an op of the function's own block: a repeat
        body's values stay from tile 0 on (the repeat's lowering places them there)."""
        if not self.spread or op.parent_block() is not self.function.body.block:
            return self.selection(op)
        return dataclasses.replace(self.selection(op), spreading=self.look_ahead)

    def check_index_arguments(self) -> None:
        """An i32 argument has a device format only as graph.gather's indices (the gather
        operator replicates it on the table's tiles) or as graph.attention's key mask (the
        blocked plan replicates it on its tiles): any other use is refused by name before
        anything is lowered (the reference interpreter runs such graphs)."""
        for arg in self.function.args:
            if not graph.is_index_type(arg.type):
                continue
            for use in arg.uses:
                user = use.operation
                if (isinstance(user, graph.GatherOp) and use.index == 1) or (
                        isinstance(user, graph.AttentionOp) and use.index == 3):
                    continue
                where = f"operand #{use.index} of {op_label(user)}"
                raise PassFailedException(located(
                    user,
                    f"graph-to-mid: argument %{arg.name_hint or arg.index} of "
                    f"@{self.function.sym_name.data} is an i32 index tensor used as {where}; "
                    "index tensors lower only as the indices of graph.gather or the key_mask of "
                    "graph.attention"))

    def run(self) -> None:
        ops = list(self.function.body.walk())
        if any(op.dialect_name() == "graph" for op in ops):  # a graph function: check its signature
            try:
                graph.check_graph_signature(self.function)
            except VerifyException as error:
                raise PassFailedException(str(error)) from None
            self.check_index_arguments()
        self.resident = ResidentTracker.of(self.function, self.config.tiles.data)
        self.resident.force_spread = self.force_spread
        self.lower_block(self.function.body.block)
        for arg in self.function.args:
            if is_graph_tensor(arg):  # unused or only returned: a plain row-major input
                assert isinstance(arg.type, TensorType)
                fmt = row_major_format(arg.type, self.config.indivisible.data)
                Rewriter.replace_value_with_new_type(arg, with_format(arg.type, fmt))
        self.function.update_function_type()

    def lower_block(self, block: Block) -> None:
        for op in list(block.ops):
            operator = operator_for_graph(op)
            if operator is not None:
                self.lower_op(op, operator)
            elif isinstance(op, graph.RepeatOp):
                lower_repeat(self, op)
            elif op.dialect_name() in ("linalg", "tensor"):
                result = f" (result {value_label(op.results[0])})" if op.results else ""
                raise PassFailedException(located(
                    op, f"graph-to-mid: {op.name}{result} is not a graph op; run "
                        "convert-linalg-to-graph first (it rewrites linalg.matmul, "
                        "linalg.batch_matmul, elementwise additions and tensor.empty)"))
            elif op.dialect_name() == "graph" and not isinstance(op, graph.YieldOp):
                raise PassFailedException(located(
                    op,
                    f"{op.name} has no operator plan yet (result {value_label(op.results[0])})"
                    if op.results
                    else f"{op.name} has no operator plan yet",
                ))

    def operand_in_format(
        self, value: SSAValue, fmt: mid.TensorFormatAttr, before: Operation, share: bool = True
    ) -> SSAValue:
        """`value` as the consumer wants it: retype a fresh graph input, else bridge. An
        earlier consumer's bridge of `value` into `fmt` in the same block is taken again (one
        conversion for the Q, K and V projections of one layer norm: selection priced it at
        no cost, `SelectionContext.converted`); `share=False` (a repeat's operands, which it
        prices from their bridges itself) always makes its own."""
        assert isinstance(value.type, TensorType)
        wanted = with_format(value.type, fmt)
        if is_graph_tensor(value):
            # A graph value is retyped into the consumer's layout but keeps its declared
            # precision and scale: the host writes an argument's codes as given, and the
            # value's other consumers read it at its own scale. A plan wanting another scale
            # gets a conversion, bridged below.
            # A repeat body's argument is the repeat's to format, whatever the input policy.
            if is_body_argument(value):
                layout = with_storage(fmt, value.type)
            elif self.config.inputs.data == mid.InputPolicy.CONSUMER:
                layout = self.home_of(value.type, with_storage(fmt, value.type))
            else:
                layout = row_major_format(value.type, self.config.indivisible.data)
            value = Rewriter.replace_value_with_new_type(value, with_format(value.type, layout))
        if value.type == wanted:
            return value
        made = self.bridges.setdefault(before.parent_block(), {}).setdefault(value, {})
        if share and fmt in made:
            return made[fmt]
        bridge = UnrealizedConversionCastOp.get([value], [wanted])
        bridge.results[0].name_hint = value.name_hint
        bridge.attributes[mid.CONSUMER_ATTR_NAME] = StringAttr(op_label(before))
        # for the consumer (named first, as in `ipu.for`), from the producer
        bridge.location = fused_location(before.location, value_location(value))
        Rewriter.insert_op(bridge, InsertPoint.before(before))
        made.setdefault(fmt, bridge.results[0])
        return bridge.results[0]

    def home_of(self, value_type: TensorType, layout: mid.TensorFormatAttr
                ) -> mid.TensorFormatAttr:
        """Where a graph input its first consumer wants in `layout` is stored: there, or with
        `spread_inputs` the same layout moved to the least-loaded run of tiles (then every
        consumer, the first included, takes it through a mid.rearrange), so that the weights
        of many ops that compute on the same tiles (one GEMM per head) do not pile up there.
        A moved home is counted in the tile loads here: its consumer's operand is the bridge."""
        if not self.spread_inputs:
            return layout
        geom = geometry(value_type.get_shape(), layout)
        start = self.loads.least_loaded_start(geom.tile_stop - geom.first_tile)
        if start == geom.first_tile:
            return layout
        home = layout.with_changes(first_tile=start)
        self.loads.add(geometry(value_type.get_shape(), home))
        return home

    def lower_op(self, op: Operation, operator: Operator) -> None:
        """Select `op`'s plan, bring its operands into the plan's formats, build its mid op."""
        self.look_ahead.forget_prices()
        ctx = self.selection_for(op)
        try:
            chosen = operator.choose(op, ctx)
        except (NoValidPlan, ValueError) as err:
            raise PassFailedException(located(op, f"{op_label(op)}: {err}")) from None
        plan = chosen.plan
        ctx = self.store_spread(op, operator, plan, ctx)
        self.record_resident(op, operator, plan, ctx)
        # one at a time: retyping a graph input replaces the value, so re-read the operand
        operands = [
            self.operand_in_format(op.operands[index], plan.operand_plan(name).format, op)
            for index, name in enumerate(operator.plan_operand_names(op))
        ]
        out_type = op.results[0].type
        assert isinstance(out_type, TensorType)
        result_type = with_format(out_type, plan.operand_plan("out").format)
        new_op = operator.build_mid(op, operands, result_type, plan)
        for value in (*(v for v in operands if isinstance(v, BlockArgument)), new_op.results[0]):
            self.loads.add(geometry(tensor_type(value).get_shape(), tensor_format_of(value)))
        self.moved += tensor_format_of(new_op.results[0]).first_tile.data != 0
        new_op.results[0].name_hint = op.results[0].name_hint
        new_op.location = op.location
        Rewriter.replace_op(op, new_op)
        rounding = self.round_to_declared_storage(new_op, out_type)
        new_op.attributes[mid.ESTIMATE_ATTR_NAME] = IntegerAttr(chosen.estimate + rounding, i64)
        if self.resident is not None:
            self.resident.computed_by(new_op.results[0])

    def store_spread(self, op: Operation, operator: Operator, plan: mid.OperatorPlanAttr,
                     ctx: SelectionContext) -> SelectionContext:
        """Where `op`'s plan takes a sequence stored spread (`Operator.spread_operands`), the
        repeat stores it so (`lower_repeat` fetches its elements); `ctx` with what the tiles
        then hold."""
        spread = operator.spread_operands(op, plan, ctx)
        if not spread or self.resident is None:
            return ctx
        for index, storage in spread.items():
            arg = op.operands[index]
            assert isinstance(arg, BlockArgument)
            self.resident.store_spread(arg, storage)
        return dataclasses.replace(ctx, resident=ctx.resident.with_spread(spread))

    def stores_spread(self, arg: SSAValue) -> bool:
        """Whether a plan chose to take body argument `arg`'s sequence stored spread."""
        return self.resident is not None and self.resident.is_spread(arg)

    def record_resident(self, op: Operation, operator: Operator, plan: mid.OperatorPlanAttr,
                        ctx: SelectionContext) -> None:
        """Tell the memory-aware selection what `op`'s chosen plan holds on its tiles."""
        if self.resident is None:
            return
        self.resident.record(ctx.resident, operator.plan_tile_bytes(op, plan, self.target),
                             *operator.plan_formats(op, plan))

    def round_to_declared_storage(self, op: Operation, declared: TensorType) -> int:
        """A plan may store its result wider than the graph declares it (an FP8 GEMM gives
        FP16 partials): every consumer sees the value rounded to the declared type, through a
        bridge that insert-conversions makes a `mid.cast_precision`. Its estimated cycles (0
        when the plan stores the declared type)."""
        result = op.results[0]
        stored = tensor_format_of(result)
        wanted = with_storage(stored, declared)
        if wanted == stored:
            return 0
        bridge = UnrealizedConversionCastOp.get([result], [with_format(declared, wanted)])
        bridge.results[0].name_hint = result.name_hint
        bridge.attributes[mid.CONSUMER_ATTR_NAME] = StringAttr(
            f"{op_label(op).replace('mid.', 'graph.', 1)} (its declared storage)")
        bridge.location = op.location
        Rewriter.insert_op(bridge, InsertPoint.after(op))
        result.replace_uses_with_if(bridge.results[0], lambda use: use.operation is not bridge)
        return conversion_type_cycles(tensor_type(result), tensor_type(bridge.results[0]),
                                      self.target)


@dataclass(frozen=True)
class GraphToMidPass(PipelineOptions, ModulePass):
    """-p 'graph-to-mid{tiles=16 indivisible=pad inputs=consumer profiling=off}'

    The options shared with `ipu-pipeline` are `PipelineOptions`' (planning/pipeline_config.py);
    `inputs` and `target` are graph-to-mid's own."""

    name = "graph-to-mid"

    inputs: InputPolicyOption = "consumer"
    target: str = "ipu21"

    def checked_target(self) -> Target:
        try:
            target = get_target(self.target)
        except ValueError as err:
            raise PassFailedException(f"{self.name}: {err}") from None
        if self.tiles is None:
            raise PassFailedException(f"{self.name}: option tiles is required (tiles=N)")
        if not 1 <= self.tiles <= target.tiles:
            raise PassFailedException(
                f"{self.name}: tiles={self.tiles} is outside 1..{target.tiles}, the tile count "
                f"of target {target.name}"
            )
        if self.spread_saving < 0:
            raise PassFailedException(
                f"{self.name}: spread-saving={self.spread_saving} is negative (bytes tile 0 must "
                "hold fewer; 0 spreads by a budget)")
        try:
            catalog_entries(self.catalog)
            default_catalog_names(self.gemm_partials)
        except ValueError as err:
            raise PassFailedException(f"{self.name}: {err}") from None
        return target

    def pipeline_config(self, target: Target) -> mid.PipelineConfigAttr:
        assert self.tiles is not None
        return mid.PipelineConfigAttr(
            target.name,
            self.tiles,
            self.indivisible,
            self.inputs,
            self.catalog or default_catalog_names(self.gemm_partials),
            mid.SchedulingPolicy.IN_ORDER,
            self.profiling,
        )

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        target = self.checked_target()
        if mid.CONFIG_ATTR_NAME in op.attributes:
            raise PassFailedException(
                f"{self.name}: the module already has '{mid.CONFIG_ATTR_NAME}': it was lowered "
                "before (run graph-to-mid, or ipu-pipeline, once per module)"
            )
        config = self.pipeline_config(target)
        op.attributes[mid.CONFIG_ATTR_NAME] = config
        # with program-layouts and no catalog, the opt-in layouts are offered too where the
        # program is cheaper with them (by its estimate); the config then records the catalog
        offered = None if self.catalog or not self.program_layouts else config.with_catalog(
            opt_in_catalog_names(self.gemm_partials))
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
            if function.is_declaration:
                continue
            options = (target, self.spread_sequences, self.spread_saving, self.spread_inputs)
            if lower_carried_as_yielded(function, config, offered, options):
                assert offered is not None  # only an offered catalog can be kept
                op.attributes[mid.CONFIG_ATTR_NAME] = offered


LoweringOptions = tuple[Target, bool, int, bool]  # target, spread sequences, saving, inputs


def lower_function(function: func.FuncOp, config: mid.PipelineConfigAttr,
                   offered: mid.PipelineConfigAttr | None, options: LoweringOptions,
                   layer_norm_columns: bool) -> tuple[func.FuncOp, bool]:
    """`function` lowered in its place (with `offered`, the opt-in layouts where the program
    is cheaper with them): the function now there, and whether `offered`'s was kept."""
    if offered is None or offered == config:
        return lower_spread_if_no_costlier(function, config, *options,
                                           layer_norm_columns=layer_norm_columns), False
    return lower_cheaper_catalog(function, config, offered, *options,
                                 layer_norm_columns=layer_norm_columns)


def lower_carried_as_yielded(function: func.FuncOp, config: mid.PipelineConfigAttr,
                             offered: mid.PipelineConfigAttr | None,
                             options: LoweringOptions) -> bool:
    """Lower `function` (`lower_columns_if_no_costlier`); where a repeat's body then yields a
    carried value in another format than its body argument took from its first consumer (a
    conversion every iteration), lower it again with those arguments in the yielded formats
    from the start (`hint_yielded_formats`) and keep the cheaper lowering by its program
    estimate (the first on a tie). A carried argument's format is its first consumer's
    choice, made before the op that computes the next iteration's value is lowered: on the
    GPT-2-small stack the layer norm that reads the residual stream took rows, and each
    iteration brought the last residual add's output, in the MLP projection's panels, back
    into them; taken in those panels, the layer norm keeps their cut. Whether `offered`'s
    catalog was kept."""
    if not any(isinstance(op, graph.RepeatOp) for op in function.walk()):
        return lower_columns_if_no_costlier(function, config, offered, options)
    block = function.parent_block()
    assert block is not None
    other = function.clone()
    block.insert_op_after(other, function)
    wider = lower_columns_if_no_costlier(function, config, offered, options)
    lowered = other.prev_op
    assert isinstance(lowered, func.FuncOp)
    if not hint_yielded_formats(lowered, other):
        block.erase_op(other)
        return wider
    hinted_wider = lower_columns_if_no_costlier(other, config, offered, options)
    hinted = lowered.next_op
    assert isinstance(hinted, func.FuncOp)
    return hinted_wider if keep_cheaper(lowered, hinted) else wider


def lower_columns_if_no_costlier(function: func.FuncOp, config: mid.PipelineConfigAttr,
                                 offered: mid.PipelineConfigAttr | None,
                                 options: LoweringOptions) -> bool:
    """Lower `function` with the column-split layer norm offered; where a repeat's body took
    it, lower it again without and keep the cheaper lowering by its program estimate (the one
    without on a tie). In a repeat body the tiles hold the sequences of every iteration, and
    a layer norm kept in its producer's cut moves what lives where (its producer's choice, the
    next GEMM's): on the GPT-2-small stack a few KB more on the first 768 tiles left its MLP
    up-projection only the grid and its bias add the whole chip, 7.1M -> 18.8M cycles, which
    selection op by op cannot see. Whether `offered`'s catalog was kept."""
    if not any(isinstance(op, graph.RepeatOp) for op in function.walk()):  # nothing to undo
        return lower_function(function, config, offered, options, True)[1]
    block = function.parent_block()
    assert block is not None
    other = function.clone()
    block.insert_op_after(other, function)
    lowered, wider = lower_function(function, config, offered, options, True)
    if not splits_columns_in_a_repeat(lowered):
        block.erase_op(other)
        return wider
    plain, plain_wider = lower_function(other, config, offered, options, False)
    return wider if keep_cheaper(plain, lowered) else plain_wider


def keep_cheaper(preferred: func.FuncOp, other: func.FuncOp) -> bool:
    """Erase the costlier of two lowerings of one function, side by side in its block, by
    their program estimates (`preferred` stays on a tie); whether `other` was kept."""
    block = preferred.parent_block()
    assert block is not None
    kept_other = program_estimate(other) < program_estimate(preferred)
    block.erase_op(preferred if kept_other else other)
    return kept_other


def splits_columns_in_a_repeat(function: func.FuncOp) -> bool:
    """Whether a layer norm in a repeat's body took the column split."""
    from passes.operators.layer_norm import APPLY_KERNEL

    return any(isinstance(op, mid.LayerNormOp) and op.plan.dispatch.init_symbol == APPLY_KERNEL
               and isinstance(op.parent_op(), mid.RepeatOp) for op in function.walk())


def lower_cheaper_catalog(function: func.FuncOp, config: mid.PipelineConfigAttr,
                          offered: mid.PipelineConfigAttr, target: Target,
                          spread_sequences: bool, spread_saving: int,
                          spread_inputs: bool, layer_norm_columns: bool = True
                          ) -> tuple[func.FuncOp, bool]:
    """Lower `function` with `config`'s catalog and, apart, with `offered`'s (the opt-in
    layouts added), and keep the lowering whose program estimate is lower (`config`'s on a
    tie): selection is op by op, and a layout that is cheaper for its GEMM can cost the
    program more than it saves there (a 3-D grid's output on a third of the tiles makes its
    consumers' conversions dearer). The function now in `function`'s place, and whether
    `offered`'s was kept."""
    block = function.parent_block()
    assert block is not None
    other = function.clone()
    block.insert_op_after(other, function)
    options = (target, spread_sequences, spread_saving, spread_inputs)
    plain = lower_spread_if_no_costlier(function, config, *options,
                                        layer_norm_columns=layer_norm_columns)
    wider = lower_spread_if_no_costlier(other, offered, *options,
                                        layer_norm_columns=layer_norm_columns)
    if keep_cheaper(plain, wider):
        return wider, True
    return plain, False


def lower_spread_if_no_costlier(function: func.FuncOp, config: mid.PipelineConfigAttr,
                                target: Target, spread_sequences: bool = False,
                                spread_saving: int = 0,
                                spread_inputs: bool = False,
                                layer_norm_columns: bool = True) -> func.FuncOp:
    """Lower `function` with its pointwise results spread over the least-loaded tiles, and
    keep that only if it costs no more than with every value from tile 0; returns the
    function now in `function`'s place.

    Selection prices a moved plan's operand conversions, but not what its consumers will pay
    to bring the result to their formats (a GEMM's selection prices none), so it cannot tell
    alone: the two lowerings' program estimates (`planning/program_estimate.py`, every
    selected op's plan and conversions, each run of a repeat's body counted) decide."""
    trial, spread = lower_fitting_sequences(function, config, target, spread_sequences,
                                            spread_saving, spread_inputs, layer_norm_columns)
    if spread.moved:
        GraphToMidLowering(function, config, target, spread_sequences, spread_saving,
                           spread=False, spread_inputs=spread_inputs,
                           force_spread=spread.force_spread,
                           layer_norm_columns=layer_norm_columns).run()
        if program_estimate(trial) > program_estimate(function):
            return function
    Rewriter.replace_op(function, trial)
    return trial


def lower_fitting_sequences(function: func.FuncOp, config: mid.PipelineConfigAttr,
                            target: Target, spread_sequences: bool, spread_saving: int,
                            spread_inputs: bool, layer_norm_columns: bool = True
                            ) -> tuple[func.FuncOp, GraphToMidLowering]:
    """A lowered copy of `function` (spread pointwise results; `function` itself unchanged)
    and its lowering. Memory-aware
    selection keeps a repeat's sequence where its plan reads it while it fits beside what the
    tiles hold so far; one op at a time, the first plans may take the room the later ones
    need. When the lowering's own estimate of a tile's peak overflows, the sequences kept in
    place that hold the most of the fullest tile are stored spread (their plans chosen again,
    pricing the fetch of each iteration's element), at most `FITTING_ROUNDS` times."""
    # with a measured overflow to save (the pipeline's memory fallback), that much less
    room = selection_room(target) - (spread_saving if spread_sequences else 0)
    forced: frozenset[str] = frozenset()
    for _ in range(FITTING_ROUNDS):
        trial = function.clone()
        lowering = GraphToMidLowering(trial, config, target, spread_sequences, spread_saving,
                                      spread_inputs=spread_inputs, force_spread=forced,
                                      layer_norm_columns=layer_norm_columns)
        lowering.run()
        assert lowering.resident is not None
        more = lowering.resident.sequences_to_spread(room)
        if lowering.resident.overflow(room) == 0 or more == forced:
            break
        forced = more
    return trial, lowering


