"""The interfaces of tile work (ipu_dialects/tile.py): what each op declares it reads and
writes (`BufferEffectsInterface`, xDSL's `MemoryEffect`), which buffers it accesses in the
same cycles, how it moves into an outer loop and whether it repeats across one
(`LoopNestInterface`); and that place-memory asks them, not the op's class."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def
from xdsl.parser import Parser
from xdsl.traits import EffectInstance, MemoryEffectKind, get_effects
from xdsl.transforms.dead_code_elimination import is_trivially_dead
from xdsl.utils.exceptions import VerifyException

from device.kernels import KERNELS, UnknownKernelError
from device.target import IPU21
from ipu_dialects.tile import (
    EXCHANGE_FABRIC,
    BufferEffectsInterface,
    BufferOp,
    BufferType,
    ExchangeOp,
    ExchangeScheduleAttr,
    HomeView,
    KernelOp,
    LoopNestInterface,
    LoopOp,
    OuterLoop,
    TileSetAttr,
    WorkProvenanceAttr,
)
from passes.place_memory import PlaceMemoryPass, lifetimes
from planning.memory_allocator import code_elements_end
from tools.registry import make_context

READ, WRITE = MemoryEffectKind.READ, MemoryEffectKind.WRITE
PROVENANCE = WorkProvenanceAttr("graph.test", "%x", "r")
TILES = TileSetAttr.range(0, 2)
CONFIG = ('#mid.config<target = "ipu21", tiles = {tiles}, indivisible = pad, inputs = consumer, '
          "catalog = [], scheduling = in_order, profiling = off>")


def buffer(name: str) -> BufferOp:
    return BufferOp(name, "scratch", TILES, [16, 64], "f16", "row_major", "standard", 8, 0)


def at_zero(depth: int = 0) -> AffineMap:
    return AffineMap.from_callable(lambda *d: (0,), dim_symbol_split=(depth, 0))


def effects(op: Operation) -> set[tuple[MemoryEffectKind, object]]:
    """(kind, value) of each effect, through xDSL's own query."""
    found = get_effects(op)
    assert found is not None
    return {(e.kind, e.value) for e in found}


def kernel(symbol: str, views: Sequence[BufferOp], homes: Sequence[HomeView] = ()) -> KernelOp:
    return KernelOp(symbol, [(b, at_zero()) for b in views], [16], TILES, [], PROVENANCE,
                    homes=homes)


# ---- what each op reads and writes -----------------------------------------------------------


@pytest.mark.parametrize("symbol", sorted(KERNELS))
def test_a_kernel_writes_its_out_view_and_reads_every_other(symbol):
    pointers = KERNELS[symbol].pointers
    views = [buffer(name) for name in pointers]
    op = kernel(symbol, views)
    assert effects(op) == {(WRITE if name == "out" else READ, b.buffer)
                           for name, b in zip(pointers, views, strict=True)}
    assert all(e.resource != EXCHANGE_FABRIC for e in op.buffer_effects())
    assert not is_trivially_dead(op)  # xDSL's dce keeps it: it writes memory


def test_an_in_place_kernel_reads_and_writes_its_out_buffer():
    x, y = buffer("x"), buffer("y")
    assert effects(kernel("add", [x, x, y])) == {(WRITE, x.buffer), (READ, x.buffer),
                                                 (READ, y.buffer)}


def test_home_views_are_read_and_partner_the_left_panel_with_out():
    out, left, right, home = buffer("c"), buffer("l"), buffer("r"), buffer("a")
    op = kernel("amp_gemm_f16_accum", [out, left, right],
                [HomeView(1, home.buffer, at_zero(), TileSetAttr.of([0]), at_zero())])
    assert effects(op) == {(WRITE, out.buffer), (READ, left.buffer), (READ, right.buffer),
                           (READ, home.buffer)}
    assert op.concurrent_buffers() == [(out.buffer, left.buffer), (out.buffer, home.buffer)]


def test_kernels_access_exactly_their_abis_distinct_pairs_at_once():
    """(out, left) of the AMP GEMMs and the pairs an ABI declares (the blocked attention
    kernels' two products); every other kernel accesses one buffer at a time."""
    for symbol, abi in KERNELS.items():
        views = [buffer(name) for name in abi.pointers]
        op = kernel(symbol, views)
        name_of = {view.buffer: name for view, name in zip(views, abi.pointers)}
        pairs = [(name_of[a], name_of[b]) for a, b in op.concurrent_buffers()]
        assert pairs == list(abi.distinct_pairs), symbol
    assert any(abi.distinct for abi in KERNELS.values())  # the declared pairs are exercised


def test_an_unknown_kernel_has_unknown_effects():
    op = kernel("no_such_kernel", [buffer("x")])
    assert get_effects(op) is None  # xDSL's "unknown": dce and cse leave it alone
    with pytest.raises(UnknownKernelError, match="unknown kernel symbol 'no_such_kernel'"):
        op.buffer_effects()
    with pytest.raises(UnknownKernelError):
        op.concurrent_buffers()


def test_an_exchange_reads_its_source_and_writes_its_destination_through_the_fabric():
    src, dst = buffer("s"), buffer("d")
    op = ExchangeOp(16, src, at_zero(), at_zero(), dst, at_zero(), TILES, [], PROVENANCE)
    assert effects(op) == {(READ, src.buffer), (WRITE, dst.buffer)}
    assert {e.resource for e in op.buffer_effects()} == {EXCHANGE_FABRIC}
    assert op.concurrent_buffers() == []
    assert not is_trivially_dead(op)


GROUPED = """
builtin.module attributes {{ipu.config = {config}}} {{
  func.func @grouped() {{
    %x = tile.buffer @x input 0 on #tile.tiles<0 to 4> shard [64] f32 row_major standard align 8 tail 0
    %z = tile.buffer @z output 0 on #tile.tiles<0 to 4> shard [64] f32 row_major standard align 8 tail 0
    tile.exchange 64 words from %x[() -> (0)] on tile {src_tile} to %z[() -> (0)] on #tile.tiles<[0]> groups 2 shift {shift} iv() provenance #tile.provenance<op = "test", value = "%z", reason = "r">
    func.return
  }}
}}
"""


@pytest.mark.parametrize("src_tile, shift, duplex", [
    ("(d0) -> (d0)", "(d0) -> (((d0 + 1) mod 2))", True),  # 0 -> 1 while 1 -> 0
    ("(d0) -> ((d0 * 2))", "(d0) -> (((d0 * 2) + 1))", False),  # 0 -> 1 and 2 -> 3
])
def test_a_full_duplex_exchange_accesses_source_and_destination_at_once(src_tile, shift, duplex):
    text = GROUPED.format(config=CONFIG.format(tiles=4), src_tile=src_tile, shift=shift)
    module = Parser(make_context(), text).parse_module()
    module.verify()
    exchange = next(op for op in module.walk() if isinstance(op, ExchangeOp))
    assert exchange.concurrent_buffers() == ([(exchange.src, exchange.dst)] if duplex else [])


def test_buffers_and_loops_declare_no_effects():
    """A buffer is the program's storage (an unused input is still an input): xDSL's dce must
    not erase it; a loop's effects are those of its body, which the passes walk into."""
    assert get_effects(buffer("x")) is None
    assert get_effects(LoopOp(0, 2, PROVENANCE)) is None
    assert not isinstance(buffer("x"), BufferEffectsInterface)


# ---- moving into an outer loop ----------------------------------------------------------------

GRID = """
builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 4, indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, profiling = off>} {
func.func @grid() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 4> shard [32, 64] f16 amp_left standard align 32 tail 16
  %b = tile.buffer @b input 1 on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  %c = tile.buffer @c output 0 on #tile.tiles<0 to 4> shard [16, 64] f16 amp_output interleaved align 32 tail 0
  %l = tile.buffer @l scratch on #tile.tiles<0 to 4> shard [16, 64] f16 amp_left standard align 32 tail 16
  %r = tile.buffer @r scratch on #tile.tiles<0 to 4> shard [64, 64] f16 amp_right standard align 32 tail 0
  tile.loop %k = 0 to 2 provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "k blocks"> {
    tile.exchange 512 words from %a[(d0) -> (0)] on tile (d0, d1) -> (((d1 * 2) + d0)) to %l[(d0) -> (0)] on #tile.tiles<0 to 2> groups 2 shift (d0, d1) -> ((d1 * 2)) iv(%k) provenance #tile.provenance<op = "graph.gemm %c", value = "%a", reason = "lhs">
    tile.kernel @amp_gemm_f16_accum(%c[(d0) -> (0)], %l[(d0) -> (0)], %r[(d0) -> (0)]) iv_scalars [(d0) -> (d0)] scalars [] on #tile.tiles<0 to 4> only (d0) -> (d0) home [1: %a[(d0) -> (0)] on #tile.tiles<[0, 2]> shift (d0) -> (d0)] iv(%k) provenance #tile.provenance<op = "graph.gemm %c", value = "%c", reason = "accumulate"> {tag = "kept"}
  }
  func.return
}
}
"""


def grid_module() -> ModuleOp:
    return Parser(make_context(), GRID).parse_module()


def moved_into_a_repeat(module: ModuleOp, advance: str) -> tuple[LoopOp, LoopOp]:
    """The grid's loop moved into a new outer loop over 2 iterations whose views of
    `advance` step 2048 bytes per iteration (a sequence's element stride)."""
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    buffers = {b.sym_name.data: b for b in function.walk() if isinstance(b, BufferOp)}
    inner = next(op for op in function.walk() if isinstance(op, LoopOp))
    outer = LoopOp(0, 2, WorkProvenanceAttr("graph.repeat %c", "%c", "layers"))
    inner.detach()
    ret = function.body.block.last_op
    assert ret is not None
    function.body.block.insert_op_before(outer, ret)
    moved = inner.nested_in(OuterLoop(outer.induction_var, {buffers[advance]: 2048},
                                      "graph.repeat %c"))
    outer.body.block.add_op(moved)
    return outer, moved


def test_work_moves_into_an_outer_loop():
    module = grid_module()
    outer, inner = moved_into_a_repeat(module, "a")
    module.verify()
    assert isinstance(inner, LoopOp)
    exchange, kernel_op = list(inner.body.block.ops)
    assert isinstance(exchange, ExchangeOp) and isinstance(kernel_op, KernelOp)
    for op in (inner, exchange, kernel_op):
        assert op.provenance.op.data == "graph.gemm %c in graph.repeat %c"
    for op in (exchange, kernel_op):
        assert list(op.ivs) == [outer.induction_var, inner.induction_var]
    # every map gains the outer index as d0; the views of @a advance 2048 bytes a layer
    assert str(exchange.src_offset.data) == "(d0, d1) -> ((d0 * 2048))"
    assert str(exchange.dst_offset.data) == "(d0, d1) -> (0)"
    assert str(exchange.src_tile.data) == "(d0, d1, d2) -> (((d2 * 2) + d1))"
    assert exchange.dst_shift is not None
    assert str(exchange.dst_shift.data) == "(d0, d1, d2) -> ((d2 * 2))"
    [home] = kernel_op.homes
    assert str(home.offset) == "(d0, d1) -> ((d0 * 2048))"
    assert str(home.shift) == "(d0, d1) -> (d1)"
    assert kernel_op.on_tile is not None and str(kernel_op.on_tile.data) == "(d0, d1) -> (d1)"
    assert [str(m) for m in kernel_op.iv_scalar_maps] == ["(d0, d1) -> (d1)"]
    assert [str(m) for _, m in kernel_op.pointer_views] == ["(d0, d1) -> (0)"] * 3
    assert kernel_op.attributes["tag"] == StringAttr("kept")


def test_a_loop_refuses_to_move_work_that_cannot_move():
    loop = LoopOp(0, 2, PROVENANCE)
    loop.body.block.add_op(buffer("x"))
    outer = LoopOp(0, 2, PROVENANCE)
    with pytest.raises(VerifyException, match="tile.buffer in its body cannot move into an outer loop"):
        loop.nested_in(OuterLoop(outer.induction_var, {}, "graph.repeat %x"))


def test_work_says_whether_it_repeats_across_a_loop():
    """The kernel's `only` tile, iv scalar and home shift read the inner loop's index; the
    outer index only advances views; the unscheduled exchange has rows for every loop."""
    module = grid_module()
    _, inner = moved_into_a_repeat(module, "a")
    assert isinstance(inner, LoopOp)
    exchange, kernel_op = list(inner.body.block.ops)
    assert isinstance(kernel_op, LoopNestInterface) and isinstance(exchange, ExchangeOp)
    assert kernel_op.repeats_across(0) and not kernel_op.repeats_across(1)
    assert not exchange.repeats_across(0) and not exchange.repeats_across(1)
    exchange.properties["schedule"] = ExchangeScheduleAttr(["r"], [0], [0], 0, row_loops=[1])
    assert exchange.repeats_across(0) and not exchange.repeats_across(1)
    assert not inner.repeats_across(1) and inner.repeats_across(0)


# ---- place-memory asks the ops --------------------------------------------------------------


class StageBase(IRDLOperation, BufferEffectsInterface):
    """Test ops place-memory has never heard of: the exchange writes `dst` from `src`, both
    in the same cycles."""

    dst = operand_def(BufferType)
    src = operand_def(BufferType)

    def buffer_effects(self) -> frozenset[EffectInstance]:
        return frozenset((EffectInstance(WRITE, self.dst, EXCHANGE_FABRIC),
                          EffectInstance(READ, self.src, EXCHANGE_FABRIC)))

    def concurrent_buffers(self) -> list[tuple[SSAValue, SSAValue]]:
        return [(self.dst, self.src)]


@irdl_op_definition
class StageOp(StageBase):
    name = "tile_test.stage"


@irdl_op_definition
class AccumulateOp(StageBase):
    """It also reads `dst` (it adds to what is there)."""

    name = "tile_test.accumulate"

    def buffer_effects(self) -> frozenset[EffectInstance]:
        return super().buffer_effects() | {EffectInstance(READ, self.dst, EXCHANGE_FABRIC)}


def staged_module(op_name: str) -> ModuleOp:
    """A loop that stages @a into @t and copies it out, then stages @a into @u and copies it
    out, with the new op."""
    tiles = "#tile.tiles<0 to 1>"
    provenance = '#tile.provenance<op = "graph.test", value = "%x", reason = "r">'

    def declare(name: str, kind: str) -> str:
        return (f"%{name} = tile.buffer @{name} {kind} on {tiles} shard [1024] f32 row_major "
                "standard align 8 tail 0")

    def copy(out: str, src: str) -> str:
        return (f"tile.kernel @copy_words(%{out}[(d0) -> (0)], %{src}[(d0) -> (0)]) scalars "
                f"[1024] on {tiles} iv(%r) provenance {provenance}")

    def stage(dst: str) -> str:
        return f'"{op_name}"(%{dst}, %a) : (!tile.buffer, !tile.buffer) -> ()'

    ctx = make_context()
    ctx.load_dialect(Dialect("tile_test", [StageOp, AccumulateOp]))
    text = "\n".join([
        f"builtin.module attributes {{ipu.config = {CONFIG.format(tiles=1)}}} {{",
        "func.func @f() {",
        declare("a", "input 0"), declare("o", "output 0"), declare("t", "scratch"),
        declare("u", "scratch"),
        f"tile.loop %r = 0 to 4 provenance {provenance} {{",
        stage("t"), copy("o", "t"), stage("u"), copy("o", "u"), "}",
        "func.return", "}", "}",
    ])
    return Parser(ctx, text).parse_module()


@pytest.mark.parametrize("op_name, carries", [("tile_test.stage", False), ("tile_test.accumulate", True)])
def test_place_memory_places_by_what_a_new_op_declares(op_name, carries):
    """Liveness, exchanged buffers and distinct memory elements all follow the new op's
    declarations: a buffer it only writes first in each iteration is a temporary of the
    iteration; one it also reads carries a value across iterations."""
    module = staged_module(op_name)
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    spans = {b.sym_name.data: span for b, span in lifetimes(function).items()}
    (t0, t1), (u0, u1) = spans["t"], spans["u"]
    assert (t0 <= u1 and u0 <= t1) is carries
    PlaceMemoryPass().apply(Context(), module)
    buffers = {b.sym_name.data: b for b in module.walk() if isinstance(b, BufferOp)}
    for name in ("a", "t", "u"):  # read or written by the exchange
        assert buffers[name].address_value >= code_elements_end(IPU21), name
    a = buffers["a"]
    a_elements = IPU21.elements_of_range(a.address_value, a.byte_size)
    for name in ("t", "u"):  # staged in the same cycles as @a is read
        b = buffers[name]
        assert not a_elements & IPU21.elements_of_range(b.address_value, b.byte_size), name
    assert buffers["o"].address_value < code_elements_end(IPU21)  # only the copies touch it
    assert (buffers["t"].address_value == buffers["u"].address_value) is not carries
