"""Full-duplex exchange rows: within one phase a tile may send for one group of a grouped
`tile.exchange` while it receives for another. `schedule-exchange` gives it one row that
does both (a transmitting `sendpicp` that also sets its incoming source and pointer), and
the device model runs it from its words: a ring shift, where every tile sends its row to
the next tile and receives the previous tile's, moves every row in one phase."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException, VerifyException

from device import isa
from device.model import run_package
from device.model.host import stored_of_values, values_of_stored
from device.package import ExchangeStep, Package
from device.target import IPU21
from ipu_dialects.tile import BufferOp
from passes import get_all_passes
from tools.ipu_run import make_context
from tools.package_writer import build_package

FORMAT = ("tensor<{tiles}x64xf32, #mid.format<f32, row_major, [1 x {tiles} pad, 1 x 1 pad], "
          "replication = 1, group = {tiles}, standard>>")
RING = """
builtin.module attributes {{ipu.config = #mid.config<target = "ipu21", tiles = {tiles}, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>}} {{
  func.func @ring() {{
    %x = tile.buffer @x input 0 on #tile.tiles<0 to {tiles}> shard [1, 64] f32 row_major standard align 8 tail 0 from {fmt}
    %z = tile.buffer @z output 0 on #tile.tiles<0 to {tiles}> shard [1, 64] f32 row_major standard align 8 tail 0 from {fmt}
    tile.exchange 64 words from %x[() -> (0)] on tile (d0) -> (d0) to %z[() -> (0)] on #tile.tiles<[0]> groups {tiles} shift (d0) -> ((d0 + {step}) mod {tiles}) iv() provenance #tile.provenance<op = "test", value = "%z", reason = "ring shift">
    func.return
  }}
}}
"""


def ring_package(tiles: int, step: int = 1) -> Package:
    ctx = make_context()
    text = RING.format(tiles=tiles, step=step, fmt=FORMAT.format(tiles=tiles))
    module = Parser(ctx, text).parse_module()
    registry = get_all_passes()
    for name in ("place-memory", "schedule-exchange"):
        registry[name]()().apply(ctx, module)
    return build_package(module, with_assembly=False)


def run_ring(package: Package, x: np.ndarray) -> np.ndarray:
    [source], [result] = package.inputs, package.outputs
    run = run_package(package, {source.name: values_of_stored(source, x)})
    assert not run.exchange_errors
    return stored_of_values(result, run.outputs[result.name])


@pytest.mark.parametrize("tiles, step", [(2, 1), (4, 1), (16, 3), (64, 17)])
def test_a_ring_shift_moves_every_row_in_one_phase(tiles, step):
    package = ring_package(tiles, step)
    x = np.random.default_rng(tiles).standard_normal((tiles, 64)).astype(np.float32)
    np.testing.assert_array_equal(run_ring(package, x), np.roll(x, step, axis=0))
    phases = [s for s in package.steps if isinstance(s, ExchangeStep)]
    assert len(phases) == 1
    first = {int(package.rows[r][0]) >> 28 for r in phases[0].row_id.tolist()}
    assert first == {0xF}  # every tile runs a sendpicp first: sends and receives


def test_a_duplex_row_sends_and_selects_its_source_at_event_zero():
    package = ring_package(4)
    step = next(s for s in package.steps if isinstance(s, ExchangeStep))
    row = isa.decode(package.rows[int(step.row_id[1])].tolist(), step.row_address)
    assert isinstance(row[0], isa.SendPicP)
    assert row[0].sctl != 0 and row[0].xpic == 0  # tile 1 sends and listens to tile 0


def test_a_duplex_row_listening_to_the_wrong_tile_fails_the_run():
    package = ring_package(4)
    x = np.arange(4 * 64, dtype=np.float32).reshape(4, 64)
    index, step = next((i, s) for i, s in enumerate(package.steps)
                       if isinstance(s, ExchangeStep))
    row = isa.decode(package.rows[int(step.row_id[2])].tolist(), step.row_address)
    row[0] = replace(row[0], xpic=3)  # tile 2 should listen to tile 1
    corrupted = copy.deepcopy(package)
    corrupted.rows.append(np.asarray(isa.encode(row, step.row_address), dtype=np.uint32))
    corrupted.steps[index].row_id[2] = len(corrupted.rows) - 1
    [source], [result] = corrupted.inputs, corrupted.outputs
    run = run_package(corrupted, {source.name: values_of_stored(source, x)})
    got = stored_of_values(result, run.outputs[result.name])
    assert run.exchange_errors or not np.array_equal(got, np.roll(x, 1, axis=0))


def test_a_tile_may_not_receive_for_two_groups_in_one_phase():
    text = RING.format(tiles=4, step=1, fmt=FORMAT.format(tiles=4)).replace(
        "shift (d0) -> ((d0 + 1) mod 4)", "shift (d0) -> (2)")
    with pytest.raises(VerifyException, match="tile 2 receives for two groups"):
        Parser(make_context(), text).parse_module().verify()


def test_place_memory_keeps_a_duplex_exchanges_buffers_in_distinct_elements():
    ctx = make_context()
    module = Parser(ctx, RING.format(tiles=4, step=1, fmt=FORMAT.format(tiles=4))).parse_module()
    get_all_passes()["place-memory"]()().apply(ctx, module)
    buffers = [op for op in module.walk() if isinstance(op, BufferOp)]
    elements = [IPU21.elements_of_range(b.address_value, b.byte_size) for b in buffers]
    assert not elements[0] & elements[1]


def test_schedule_exchange_reports_a_duplex_row_whose_reads_meet_its_writes():
    text = RING.format(tiles=4, step=1, fmt=FORMAT.format(tiles=4))
    module = Parser(make_context(), text).parse_module()
    x, z = [op for op in module.walk() if isinstance(op, BufferOp)]
    x.set_address(0x5C000)  # one memory element for both
    z.set_address(0x5C100)
    with pytest.raises(PassFailedException, match="contends for memory element"):
        get_all_passes()["schedule-exchange"]()().apply(make_context(), module)


GROUP_OFFSETS = """
builtin.module attributes {{ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>}} {{
  func.func @pick() {{
    %x = tile.buffer @x input 0 on #tile.tiles<0 to 4> shard [2, 64] f32 row_major standard align 8 tail 0 from {x}
    %z = tile.buffer @z output 0 on #tile.tiles<0 to 4> shard [1, 64] f32 row_major standard align 8 tail 0 from {z}
    tile.exchange 64 words from %x[(d0) -> ((d0 mod 2) * 256)] on tile (d0) -> (d0) to %z[(d0) -> (0)] on #tile.tiles<[0]> groups 4 shift (d0) -> ((d0 + 1) mod 4) iv() provenance #tile.provenance<op = "test", value = "%z", reason = "each sender its own row">
    func.return
  }}
}}
"""


def test_a_grouped_exchange_reads_each_groups_own_source_offset():
    fmt = ("tensor<{rows}x64xf32, #mid.format<f32, row_major, [{block} x 4 pad, 1 x 1 pad], "
           "replication = 1, group = 4, standard>>")
    text = GROUP_OFFSETS.format(x=fmt.format(rows=8, block=2), z=fmt.format(rows=4, block=1))
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    for name in ("place-memory", "schedule-exchange"):
        get_all_passes()[name]()().apply(ctx, module)
    package = build_package(module, with_assembly=False)
    x = np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32)
    senders = (np.arange(4) - 1) % 4
    np.testing.assert_array_equal(run_ring(package, x), x[2 * senders + senders % 2])


def test_a_group_offset_outside_the_buffer_is_named():
    fmt = ("tensor<{rows}x64xf32, #mid.format<f32, row_major, [{block} x 4 pad, 1 x 1 pad], "
           "replication = 1, group = 4, standard>>")
    text = GROUP_OFFSETS.format(x=fmt.format(rows=8, block=2), z=fmt.format(rows=4, block=1))
    text = text.replace("((d0 mod 2) * 256)", "(d0 * 256)")
    with pytest.raises(VerifyException, match="source view of @x at byte offset 768"):
        Parser(make_context(), text).parse_module().verify()
