"""With `graph-to-mid{spread-sequences=true}` (the pipeline's last memory fallback), a
repeat's per-layer sequences are stored spread over the chip when their elements' formats
would pile them onto tile 0 (`passes/operators/repeat.py`, `spread_sequences`), and each
iteration's element is fetched in the body."""

from pathlib import Path

from xdsl.parser import Parser

from device.target import IPU21
from frontend.builder import GraphBuilder, as_element_type
from ipu_dialects import mid
from passes import get_all_passes
from passes.operators.costs import conversion_type_cycles
from passes.operators.formats import with_format
from passes.operators.gather import piece_plan
from passes.operators.repeat import SEQUENCE_BUDGET, stacked_bytes
from passes.operators.sequence_spread import spread_format
from planning.shard_geometry import geometry
from tools.ipu_run import EXIT_PASS, compile_module, make_context, run_main

REPO = Path(__file__).resolve().parents[2]


def stack_text(layers: int = 12) -> str:
    """An MLP stack whose [256, 256] weights the row plan keeps on 16 of 64 tiles: 12 layers
    of them stacked there hold 768 KiB per tile, more than a tile has."""
    g = GraphBuilder("stack")
    f32 = as_element_type("f32")
    x = g.input([16, 256], f32, name="x")
    w = g.input([layers, 256, 256], f32, name="w")
    b = g.input([layers, 256], f32, name="b")

    def layer(carried, _invariants, slices):
        return [g.gelu(carried[0] @ slices[0] + slices[1])]

    (out,) = g.repeat(layers, layer, carried=[x], sequence=[w, b])
    g.output(out)
    return str(g.build())


def lowered_repeat(text: str, tiles: int, spread: bool = True) -> mid.RepeatOp:
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    get_all_passes()["graph-to-mid"]()(tiles=tiles, spread_sequences=spread).apply(ctx, module)
    return next(o for o in module.walk() if isinstance(o, mid.RepeatOp))


def test_a_stack_that_would_pile_onto_tile_0_is_spread_and_fetched():
    """Without any option: the GEMM's selection finds that no plan holds the 12 weights where
    it reads them beside the rest (`GemmOperator.spread_operands`), takes them stored spread
    and prices the fetch of each iteration's element into its format."""
    repeat = lowered_repeat(stack_text(), 64, spread=False)
    weight = repeat.sequence_args[0]
    fmt = weight.type.encoding
    assert isinstance(fmt, mid.TensorFormatAttr)
    (fetch,) = [u.operation for u in weight.uses]
    assert fetch.results[0].name_hint == "w_fetched"
    consumer_fmt = fetch.results[0].type.encoding
    assert consumer_fmt.order.data == "amp_right"  # what the GEMM's plan wants
    # the consumer's shards, each cut into contiguous pieces along its rows and laid out as
    # the consumer lays them out, on tiles the consumer does not use: the fetch sends every
    # piece straight into its bytes of the fetched element (`gather.piece_plan`)
    shape = weight.type.get_shape()
    spread, wanted = geometry(shape, fmt), geometry(shape, consumer_fmt)
    assert fmt.order == consumer_fmt.order and spread.tiles_used > wanted.tiles_used
    assert wanted.chunk[0] % spread.chunk[0] == 0 and spread.chunk[1] == wanted.chunk[1]
    assert spread.replication == 1 and spread.first_tile >= wanted.tile_stop
    assert piece_plan(spread, wanted) is not None
    assert stacked_bytes(weight, 12) == 12 * spread.shard_bytes()


def test_a_stack_that_fits_where_its_plan_reads_it_is_not_spread():
    repeat = lowered_repeat(stack_text(layers=2), 64, spread=False)
    (use,) = repeat.sequence_args[0].uses
    assert use.operation.name != "builtin.unrealized_conversion_cast"
    assert repeat.sequence_args[0].type.encoding.order.data == "amp_right"


def test_the_spread_format_is_the_one_fetched_in_fewer_cycles():
    """Against whole rows spread over the chip (4 rows of 256 on each of the 64 tiles, of
    which each consumer tile keeps a block's columns), the pieces of the consumer's shards
    that the spread stores are fetched in fewer estimated cycles."""
    repeat = lowered_repeat(stack_text(), 64)
    weight = repeat.sequence_args[0]
    (fetch,) = [u.operation for u in weight.uses]
    element, wanted = weight.type, fetch.results[0].type
    rows = spread_format(element, 64, "pad")
    assert rows.partitions == (64, 1) and rows != element.encoding
    aligned = conversion_type_cycles(element, wanted, IPU21)
    whole_rows = conversion_type_cycles(with_format(element, rows), wanted, IPU21)
    assert aligned < whole_rows


def test_the_spread_stack_runs_on_the_device_model(tmp_path):
    """It compiles at the first attempt (selection spread the weights) and runs."""
    module = Parser(make_context(), stack_text()).parse_module()
    assert compile_module(module, 64, "pad", with_assembly=False).pipeline == "ipu-pipeline{tiles=64}"
    path = tmp_path / "stack.mlir"
    path.write_text(stack_text())
    assert run_main(path, tiles=64, quiet=True) == EXIT_PASS


def test_sequences_under_the_budget_stay_in_their_elements_formats():
    """The repeat example's weights hold little: no fetch, no spread (its cycles unchanged)."""
    repeat = lowered_repeat((REPO / "examples/repeat_layers.mlir").read_text(), 16)
    count = repeat.count.value.data
    assert all(u.operation.name != "builtin.unrealized_conversion_cast"
               or not u.operation.results[0].name_hint.endswith("_fetched")
               for a in repeat.sequence_args for u in a.uses)
    total = sum(stacked_bytes(a, count) for a in repeat.sequence_args)
    assert total <= (IPU21.sram_bytes - IPU21.code_region_bytes) * SEQUENCE_BUDGET
