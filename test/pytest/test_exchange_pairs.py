"""Pair broadcasts (`tile.exchange ... pairs`): the sender streams 64-bit items (sctl bit 2),
one per event, and every receiver takes them through its pair mux (XPIC selector 1), which
uses both incoming buses of its tile pair (2i, 2i + 1). The phase lasts words / 2 plus the
farthest receiver's latency; the device model runs the rows from their words."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from device import isa
from device.exchange_timeline import XPIC_MUX_PAIR, row_timeline
from device.model import run_package
from device.model.host import stored_of_values, values_of_stored
from device.package import ExchangeStep, Package
from device.target import IPU21, latency_table
from passes import get_all_passes
from tools.ipu_run import make_context
from tools.package_writer import build_package

FORMAT = ("tensor<{tiles}x64xf32, #mid.format<f32, row_major, [1 x {tiles} pad, 1 x 1 pad], "
          "replication = 1, group = {tiles}, standard>>")
ROWS = """
builtin.module attributes {{ipu.config = #mid.config<target = "ipu21", tiles = {tiles}, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>}} {{
  func.func @rows() {{
    %x = tile.buffer @x input 0 on #tile.tiles<0 to {tiles}> shard [1, 64] f32 row_major standard align 8 tail 0 from {fmt}
    %z = tile.buffer @z output 0 on #tile.tiles<0 to {tiles}> shard [1, 64] f32 row_major standard align 8 tail 0 from {fmt}
    tile.exchange 64 words from %x[() -> (0)] on tile (d0) -> ((d0 * {width}) + {sender}) to %z[() -> (0)] on #tile.tiles<0 to {width}> groups {groups} shift (d0) -> ((d0 * {width})) {pairs} iv() provenance #tile.provenance<op = "test", value = "%z", reason = "row broadcast">
    func.return
  }}
}}
"""


def row_broadcast(tiles: int, width: int, sender: int, pairs: bool = True) -> Package:
    """Every run of `width` tiles receives tile `sender`'s row of that run (one group each)."""
    ctx = make_context()
    text = ROWS.format(tiles=tiles, width=width, sender=sender, groups=tiles // width,
                       pairs="pairs" if pairs else "", fmt=FORMAT.format(tiles=tiles))
    module = Parser(ctx, text).parse_module()
    registry = get_all_passes()
    for name in ("place-memory", "schedule-exchange"):
        registry[name]()().apply(ctx, module)
    return build_package(module, with_assembly=False)


def expected(x: np.ndarray, width: int, sender: int) -> np.ndarray:
    """Each tile's row after the broadcast, for the tiles that receive (senders keep theirs)."""
    return np.repeat(x[sender::width], width, axis=0)


def receivers(tiles: int, width: int, sender: int) -> np.ndarray:
    return np.array([t for t in range(tiles) if t % width != sender])


def phase_of(package: Package) -> ExchangeStep:
    [step] = [s for s in package.steps if isinstance(s, ExchangeStep)]
    return step


def row_of(package: Package, tile: int) -> list[isa.Instruction]:
    step = phase_of(package)
    return isa.decode(package.rows[int(step.row_id[tile])].tolist(), step.row_address)


@pytest.mark.parametrize("tiles, width, sender", [(4, 4, 0), (8, 4, 1), (16, 8, 5), (64, 16, 15)])
def test_a_pair_broadcast_moves_the_rows_at_two_words_per_event(tiles, width, sender):
    package = row_broadcast(tiles, width, sender)
    x = np.random.default_rng(tiles).standard_normal((tiles, 64)).astype(np.float32)
    [source], [result] = package.inputs, package.outputs
    run = run_package(package, {source.name: values_of_stored(source, x)})
    assert not run.exchange_errors
    z = stored_of_values(result, run.outputs[result.name])
    got = receivers(tiles, width, sender)
    np.testing.assert_array_equal(z[got], expected(x, width, sender)[got])
    # 32 items, then the farthest receiver of any group
    latency = latency_table(IPU21, tiles)
    farthest = max(int(latency[(t // width) * width + sender, t]) for t in got)
    rows = {int(r) for r in phase_of(package).row_id.tolist()}
    lengths = {row_timeline(package.rows[r].tolist(), phase_of(package).row_address).total_events
               for r in rows}
    assert max(lengths) == 32 + farthest


def test_the_rows_send_64_bit_items_and_select_the_pair_mux():
    package = row_broadcast(8, 4, 1)
    sender, receiver = row_of(package, 1), row_of(package, 2)
    assert isinstance(sender[0], isa.Send) and sender[0].sctl & isa.SCTL_64BIT
    assert sender[0].words_m1 + 1 == 32  # 64 words as 32 items
    assert isinstance(receiver[0], isa.SendPicP)
    assert receiver[0].xpic == (XPIC_MUX_PAIR << 13) | 1


def test_pairs_halve_the_phase():
    plain, paired = (row_broadcast(16, 8, 5, pairs=p) for p in (False, True))
    lengths = []
    for package in (plain, paired):
        step = phase_of(package)
        lengths.append(max(row_timeline(package.rows[int(r)].tolist(), step.row_address)
                           .total_events for r in set(step.row_id.tolist())))
    assert lengths[0] - lengths[1] == 32


def test_a_receiver_on_its_own_mux_loses_the_items():
    """Corrupt one receiver's row to select the sender on its own mux (XPIC selector 0):
    64-bit items need the pair mux, so the run reports them and the row is not written."""
    package = row_broadcast(4, 4, 0)
    step = phase_of(package)
    row = row_of(package, 3)
    assert isinstance(row[0], isa.SendPicP)
    row[0] = replace(row[0], xpic=row[0].xpic & 0x1FFF)
    package.rows.append(np.asarray(isa.encode(row, step.row_address), dtype=np.uint32))
    step.row_id[3] = len(package.rows) - 1
    x = np.arange(4 * 64, dtype=np.float32).reshape(4, 64)
    [source], [result] = package.inputs, package.outputs
    run = run_package(package, {source.name: values_of_stored(source, x)})
    assert any("tile 3" in e and "pair mux" in e for e in run.exchange_errors)
    z = stored_of_values(result, run.outputs[result.name])
    assert not np.array_equal(z[3], x[0])


def test_pairs_whose_tiles_receive_different_groups_are_refused():
    """Runs of 3 tiles with the sender in the middle: tile 2 receives group 0 and its pair
    tile 3 group 1 in the same phase, which the pair's shared buses cannot do."""
    with pytest.raises(PassFailedException) as info:
        row_broadcast(6, 3, 1)
    message = str(info.value)
    assert ("pair broadcast in iteration 0: tile 2 receives group 0 on both incoming buses "
            "of its pair, but its pair tile 3 receives group 1 in the same phase") in message


def test_the_same_runs_without_pairs_schedule_as_32_bit_words():
    package = row_broadcast(6, 3, 1, pairs=False)
    assert not row_of(package, 1)[0].sctl & isa.SCTL_64BIT
