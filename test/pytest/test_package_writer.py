"""The package writer (tools/package_writer.py): host tensors, tile images, steps, persistence."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, f16, f32
from xdsl.dialects.func import FuncOp

from device import isa
from device.model import run_package
from device.package import ExchangeStep, KernelStep, Package, executed_count, flat_steps
from device.target import IPU21
from frontend.builder import GraphBuilder
from interpreters.graph import run_function
from ipu_dialects.tile import ExchangeOp, KernelOp, LoopOp
from passes.ipu_pipeline import IpuPipelinePass
from tools.ipu_run import make_context, random_inputs
from tools.package_writer import build_package


def gemm_graph(lhs, rhs, element) -> ModuleOp:
    g = GraphBuilder("gemm")
    a = g.input(list(lhs), element, name="a")
    b = g.input(list(rhs), element, name="b")
    c = g.gemm(a, b)
    c.name_hint = "c"
    g.output(c)
    return g.build()


# The step counts below are worked out by hand for the 16-row FP16-partials lowering (one
# exchange, copy and GEMM per block); these tests are about the package, so they pin it.
PINNED_CATALOG = ("amp_gemm_f16_r16_p16", "amp_gemm_f32_r16")


def schedule(module: ModuleOp, tiles: int) -> ModuleOp:
    IpuPipelinePass(tiles=tiles, catalog=PINNED_CATALOG).apply(make_context(), module)
    module.verify()
    return module


def scheduled(lhs, rhs, element, tiles: int) -> ModuleOp:
    return schedule(gemm_graph(lhs, rhs, element), tiles)


CASES = [
    ((32, 128), (128, 128), f16, 2),
    ((16, 128), (128, 256), f16, 4),  # one output-row tile
    ((100, 72), (72, 40), f32, 3),  # padded: shards run past the tensor
    ((2, 1, 48, 64), (3, 64, 64), f32, 4),  # broadcast batch
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"{c[0]}x{c[1]}-{c[3]}t")
def case(request):
    lhs, rhs, element, tiles = request.param
    graph = gemm_graph(lhs, rhs, element)
    module = schedule(graph.clone(), tiles)
    return graph, module, build_package(module)


def test_host_tensors_cover_every_element_exactly_once(case):
    _, _, package = case
    assert [t.name for t in package.inputs] == ["a", "b"]
    assert [t.name for t in package.outputs] == ["result0"]
    for tensor in package.inputs + package.outputs:
        count = np.zeros(tensor.shape, dtype=np.int64)
        for origin in tensor.origins:
            box = tuple(slice(int(o), min(int(o) + p, e))
                        for o, p, e in zip(origin, tensor.padded, tensor.shape, strict=True))
            count[box] += 1
        assert count.min() == 1 and count.max() == 1, tensor.name
        assert len(tensor.tiles) == len(tensor.addresses) == len(tensor.origins)
        assert ((0 <= tensor.tiles) & (tensor.tiles < package.tiles)).all()


def test_every_exchange_row_in_a_tile_image_decodes(case):
    _, _, package = case
    start, end = IPU21.code_region
    rows_seen = 0
    for tile in range(package.tiles):
        slots: dict[int, tuple[int, ...]] = {}
        for address, words in package.tile_image(tile):
            assert start <= address and address + 4 * len(words) <= end
            instrs = isa.decode([int(w) for w in words], address)
            assert isa.encode(instrs, address) == [int(w) for w in words]
            # One slot never holds two different rows.
            assert slots.setdefault(address, tuple(int(w) for w in words)) == tuple(
                int(w) for w in words)
            rows_seen += 1
    exchange_steps = [s for _, s in flat_steps(package.steps) if isinstance(s, ExchangeStep)]
    assert rows_seen == sum(int((s.row_id >= 0).sum()) for s in exchange_steps)


def test_each_exchange_step_has_one_sender_and_its_receivers(case):
    """Per step: the sender's row transmits, every other row of the step only receives."""
    _, _, package = case
    for step in (s for s in package.executed() if isinstance(s, ExchangeStep)):
        tiles = np.flatnonzero(step.row_id >= 0)
        senders = [t for t in tiles if any(
            isinstance(i, isa.Send) for i in isa.decode(
                [int(w) for w in package.rows[step.row_id[t]]], step.row_address))]
        assert len(senders) == 1 and len(tiles) >= 2, step.provenance


def loop_iterations(op) -> list[tuple[int, ...]]:
    bounds = []
    parent = op.parent_op()
    while not isinstance(parent, FuncOp):
        if isinstance(parent, LoopOp):
            bounds.append(range(parent.lower_bound, parent.upper_bound))
        parent = parent.parent_op()
    return list(itertools.product(*bounds[::-1]))


def expected_step_count(module: ModuleOp) -> int:
    """Iterations x (exchange + kernels): an exchange counts where some destination tile is
    not the source (there is traffic); a guarded kernel where its tile is in its set."""
    total = 0
    for op in module.walk():
        if isinstance(op, ExchangeOp):
            for ivs in loop_iterations(op):
                (sender,) = op.src_tile.data.eval(list(ivs), [])
                total += any(t != sender for t in op.dst_tiles.tiles())
        elif isinstance(op, KernelOp):
            for ivs in loop_iterations(op):
                if op.on_tile is None:
                    total += 1
                else:
                    (tile,) = op.on_tile.data.eval(list(ivs), [])
                    total += tile in op.tiles
    return total


def test_step_count_follows_the_loop_nest(case):
    _, module, package = case
    assert executed_count(package.steps) == expected_step_count(module)


@pytest.mark.parametrize("lhs, rhs, tiles, steps", [
    # 2 x 2 blocks, every home tile is an output-row tile: exchange + copy + GEMM each.
    ((32, 128), (128, 128), 2, 4 * 3),
    # 2 x 4 blocks on 4 tiles, row tile 0: column 0 (2 iterations) copy + GEMM; columns 1-3
    # (6 iterations) exchange + GEMM.
    ((16, 128), (128, 256), 4, 2 * 2 + 6 * 2),
])
def test_step_count_by_hand(lhs, rhs, tiles, steps):
    package = build_package(scheduled(lhs, rhs, f16, tiles))
    assert len(package.steps) == steps
    kinds = [type(s).__name__ for s in package.steps]
    assert kinds.count("KernelStep") + kinds.count("ExchangeStep") == steps


def test_save_and_load_give_an_identical_run(case, tmp_path):
    graph, _, package = case
    arrays = random_inputs(next(op for op in graph.ops if isinstance(op, FuncOp)), seed=1)
    feeds = {t.name: a for t, a in zip(package.inputs, arrays, strict=True)}
    loaded = Package.load(package.save(tmp_path / "pkg"))
    first, second = run_package(package, feeds), run_package(loaded, feeds)
    assert first.exchange_errors == second.exchange_errors == []
    assert first.cycles == second.cycles and first.cycles_by_step == second.cycles_by_step
    assert first.outputs.keys() == second.outputs.keys()
    for name in first.outputs:
        np.testing.assert_array_equal(first.outputs[name], second.outputs[name])
    # ... and the run is the GEMM (loose tolerance: this is about the package, not numerics).
    (reference,) = run_function(graph, arrays)
    np.testing.assert_allclose(first.outputs["result0"].astype(np.float64),
                               reference.astype(np.float64), rtol=2e-2, atol=5e-2)
    assert loaded.assembly == package.assembly and loaded.function == "gemm"
    assert all(type(a) is type(b) for a, b in zip(loaded.steps, package.steps, strict=True))
    for a, b in zip(loaded.steps, package.steps, strict=True):
        if isinstance(a, KernelStep):
            assert a.symbol == b.symbol and a.scalars == b.scalars
            np.testing.assert_array_equal(a.pointers, b.pointers)



def test_a_patched_row_without_a_defined_timeline_is_a_diagnostic():
    # A pic_selector of 1 still fits its field but has no meaning yet: the writer must
    # refuse the row instead of emitting it.
    from xdsl.dialects.builtin import ArrayAttr
    from xdsl.utils.exceptions import PassFailedException

    from ipu_dialects.tile import RowPatchAttr

    module = scheduled((32, 128), (128, 128), f16, 2)
    exchange = next(op for op in module.walk() if isinstance(op, ExchangeOp))
    schedule = exchange.schedule
    assert schedule is not None
    xpic = next(p for p in schedule.patches.data if p.field.data == "xpic")
    selector = RowPatchAttr(xpic.row_name, xpic.instruction.data, "pic_selector",
                            [1] * len(xpic.value_list()))
    exchange.properties["schedule"] = schedule.changed(
        patches=ArrayAttr([*schedule.patches.data, selector]))
    with pytest.raises(PassFailedException, match="PIC selector 1 is not supported"):
        build_package(module)


def test_a_buffer_whose_format_puts_a_shard_outside_its_tile_set_is_a_diagnostic():
    from xdsl.utils.exceptions import PassFailedException

    from ipu_dialects.tile import BufferOp, TileSetAttr

    module = scheduled((32, 128), (128, 128), f16, 2)
    lhs = next(op for op in module.walk() if isinstance(op, BufferOp) and op.kind.data == "input")
    lhs.properties["tiles"] = TileSetAttr.range(0, 1)  # its format still spreads it over 2 tiles
    with pytest.raises(PassFailedException, match=r"package: buffer @a has a shard on tile 1 "
                                                   r"outside its tile set"):
        build_package(module)


def test_a_row_without_a_timeline_is_named_by_its_symbol():
    """An exchange.row verifies field by field; the package writer also checks that the
    concrete row (after patching) has a well-defined event timeline."""
    from xdsl.utils.exceptions import PassFailedException

    from tools.package_writer import RowInterner

    with pytest.raises(PassFailedException) as info:
        RowInterner(IPU21.memory_base).intern([isa.SendPic(0, 0, 1)], "r", "r.3")
    assert str(info.value) == ("package: row r.3: sendpic 0, 0, 0x1 at event 0: sendpic continues "
                               "the outgoing stream but no send has started one")
