"""With `graph-to-mid{spread-sequences=true}` (the pipeline's last memory fallback), a
repeat's per-layer sequences are stored spread over the chip when their elements' formats
would pile them onto tile 0 (`passes/operators/repeat.py`, `spread_sequences`), and each
iteration's element is fetched in the body."""

from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.parser import Parser

from device.target import IPU21
from frontend.builder import GraphBuilder, as_element_type
from ipu_dialects import mid
from passes import get_all_passes
from passes.operators.costs import conversion_type_cycles
from passes.operators.formats import with_format
from passes.operators.gather import piece_plan
from passes.operators.repeat import SEQUENCE_BUDGET, stacked_bytes
from passes.operators.resident import ResidentTracker, selection_room
from passes.operators.sequence_spread import cheapest_spread, spread_format, spread_storage
from planning.shard_geometry import geometry
from planning.tile_loads import on_tiles
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


def test_selection_counts_a_spread_stack_on_the_tiles_it_is_stored_on(monkeypatch):
    """The bytes memory-aware selection counts for the spread weights, from the moment the
    GEMM takes them spread, are those of the format the repeat stores them in: its window of
    tiles past the GEMM's (`spread_storage`), not the spread format's from tile 0."""
    counted: dict[str, np.ndarray] = {}
    store = ResidentTracker.store_spread

    def recording(self, arg, storage):
        counted[arg.name_hint] = storage.tile_bytes
        store(self, arg, storage)

    monkeypatch.setattr(ResidentTracker, "store_spread", recording)
    repeat = lowered_repeat(stack_text(), 64, spread=False)
    weight = repeat.sequence_args[0]
    stored = geometry(weight.type.get_shape(), weight.type.encoding)
    assert stored.first_tile > 0
    assert np.array_equal(counted["w"], on_tiles(stored, 64, 12 * stored.shard_bytes()))


def test_a_whole_shard_spread_takes_the_least_loaded_window_that_fits():
    """`spread_storage` puts the stack where the tiles hold least so far and at the op; with
    no window left that fits, the spread format fetched cheapest, from tile 0."""
    element, wanted = lowered_types()
    loads = np.zeros(64, np.int64)
    loads[:16] = 400_000  # the GEMM's tiles and what they hold
    loads[48:] = 100_000
    storage = spread_storage(element, wanted, 12, loads, "pad", IPU21)
    assert storage.whole_shards is not None
    shards, saved = storage.whole_shards
    geom = geometry(element.get_shape(), shards)
    assert 16 <= geom.first_tile and geom.tile_stop <= 48 and saved > 0
    assert np.array_equal(storage.tile_bytes, on_tiles(geom, 64, 12 * geom.shard_bytes()))
    full = np.full(64, selection_room(IPU21), np.int64)
    fallback = spread_storage(element, wanted, 12, full, "pad", IPU21)
    spread, _ = cheapest_spread(element, wanted, 64, "pad", IPU21)
    assert fallback.whole_shards is None
    assert np.array_equal(fallback.tile_bytes,
                          on_tiles(geometry(element.get_shape(), spread), 64,
                                   12 * geometry(element.get_shape(), spread).shard_bytes()))


def lowered_types() -> tuple[TensorType, mid.TensorFormatAttr]:
    """The stack's weight element type and the format its GEMM's plan reads it in."""
    repeat = lowered_repeat(stack_text(), 64, spread=False)
    weight = repeat.sequence_args[0]
    (fetch,) = [u.operation for u in weight.uses]
    element = weight.type
    return TensorType(element.get_element_type(), element.get_shape()), fetch.results[0].type.encoding


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
