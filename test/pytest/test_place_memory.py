"""place-memory: placement invariants over a few GEMM shapes and tile counts."""

from __future__ import annotations

import pytest
from test_mid_to_tile import build_gemm_module, lower, ops_of
from xdsl.context import Context
from xdsl.utils.exceptions import PassFailedException

from device.target import IPU21
from ipu_dialects.tile import BufferOp
from passes.place_memory import PlaceMemoryPass


def placed(shapes, tiles, precision):
    module = lower(build_gemm_module(*shapes, tiles, precision))
    PlaceMemoryPass().apply(Context(), module)
    module.verify()
    return ops_of(module, BufferOp)


@pytest.mark.parametrize(
    "shapes, tiles, precision",
    [
        (((64, 256), (256, 128), (64, 128)), 4, "f16"),
        (((100, 130), (130, 70), (100, 70)), 1, "f32"),
        (((2, 1, 48, 128), (3, 128, 64), (2, 3, 48, 64)), 4, "f16"),
        (((512, 512), (512, 512), (512, 512)), 16, "f32"),
        (((736, 256), (256, 320), (736, 320)), 16, "f16"),
    ],
)
def test_placement_invariants(shapes, tiles, precision):
    buffers = placed(shapes, tiles, precision)
    _, code_end = IPU21.code_region
    for buffer in buffers:
        address = buffer.address_value
        assert address is not None
        end = address + buffer.byte_size + buffer.tail_bytes
        assert address % max(buffer.alignment_bytes, IPU21.pace_alignment) == 0
        assert code_end <= address and end <= IPU21.memory_end
        if buffer.interleaved:
            assert address >= IPU21.interleaved_start
    for i, x in enumerate(buffers):
        for y in buffers[i + 1:]:
            if set(x.tiles.tiles()) & set(y.tiles.tiles()):
                x_end = x.address_value + x.byte_size + x.tail_bytes
                y_end = y.address_value + y.byte_size + y.tail_bytes
                assert x_end <= y.address_value or y_end <= x.address_value, (x.sym_name, y.sym_name)
    by_name = {b.sym_name.data: b for b in buffers}
    left, out = by_name["a"], by_name["c"]
    assert not (
        IPU21.elements_of_range(left.address_value, left.byte_size + left.tail_bytes)
        & IPU21.elements_of_range(out.address_value, out.byte_size)
    )


def test_overflow_names_tile_bytes_and_buffers():
    with pytest.raises(PassFailedException) as info:
        placed(((2944, 1024), (1024, 1024), (2944, 1024)), 16, "f16")
    message = str(info.value)
    assert message.startswith("Out of memory on tile 0: ")
    assert "tiles only have 638976 bytes" in message
    assert "a 393216 + tail 16" in message and "c 393216" in message


def carried_through_a_loop_module(reads_t_first: bool) -> str:
    """A loop that writes `t` and reads it back, then writes `u` and reads it back; when
    `reads_t_first`, the iteration starts by reading `t`: the value the previous iteration
    left there (carried from one iteration to the next)."""
    provenance = '#tile.provenance<op = "graph.add %x", value = "%x", reason = "r">'
    tiles = "#tile.tiles<0 to 1>"

    def buffer(name: str, kind: str) -> str:
        return (f"%{name} = tile.buffer @{name} {kind} on {tiles} shard [1024] f32 row_major "
                "standard align 8 tail 0")

    def copy(out: str, src: str) -> str:
        return (f"tile.kernel @copy_words(%{out}[(d0) -> (0)], %{src}[(d0) -> (0)]) scalars "
                f"[1024] on {tiles} iv(%r) provenance {provenance}")

    body = [copy("o", "t")] if reads_t_first else []
    body += [copy("t", "a"), copy("o", "t"), copy("u", "a"), copy("o", "u")]
    return "\n".join([
        'builtin.module attributes {ipu.config = #mid.config<target = "ipu21", tiles = 1, '
        'indivisible = pad, inputs = consumer, catalog = [], scheduling = in_order, '
        "profiling = off>} {",
        "func.func @f() {",
        buffer("a", "input 0"), buffer("o", "output 0"), buffer("t", "scratch"),
        buffer("u", "scratch"),
        f"tile.loop %r = 0 to 4 provenance {provenance} {{", *body, "}",
        "func.return", "}", "}",
    ])


@pytest.mark.parametrize("reads_t_first", [True, False])
def test_loop_temporaries_may_share_memory_unless_they_carry_a_value(reads_t_first):
    """A buffer first written in each iteration lives between its uses inside the loop, so
    two such temporaries may share memory; one read before it is written in the iteration
    carries a value across iterations and lives for the whole loop."""
    from xdsl.parser import Parser

    from passes.place_memory import lifetimes
    from tools.registry import make_context

    module = Parser(make_context(), carried_through_a_loop_module(reads_t_first)).parse_module()
    function = next(op for op in module.walk() if op.name == "func.func")
    spans = {b.sym_name.data: span for b, span in lifetimes(function).items()}
    (t0, t1), (u0, u1) = spans["t"], spans["u"]
    assert (t0 <= u1 and u0 <= t1) is reads_t_first
    PlaceMemoryPass().apply(Context(), module)
    addresses = {op.sym_name.data: op.address_value for op in ops_of(module, BufferOp)}
    if reads_t_first:
        assert abs(addresses["t"] - addresses["u"]) >= 4096


def test_repeat_body_temporaries_live_within_the_iteration():
    """examples/repeat_layers.mlir: the carried buffer lives across the loop, a temporary of
    the body (@g: the gelu's result repacked for the residual add) only between its producer
    and its last reader."""
    from pathlib import Path

    from xdsl.parser import Parser
    from xdsl.passes import PassPipeline

    from passes import get_all_passes
    from passes.place_memory import lifetimes
    from tools.registry import make_context

    ctx = make_context()
    source = Path(__file__).resolve().parents[2] / "examples" / "repeat_layers.mlir"
    module = Parser(ctx, source.read_text()).parse_module()
    PassPipeline.parse_spec(
        # the row plans: the body then ends gelu -> add with no conversion between them
        get_all_passes(), "graph-to-mid{tiles=4 catalog=amp_gemm_f32_r16,amp_gemm_f32_r32,"
        "amp_gemm_f32_r64},insert-conversions,normalize-repeats,mid-to-tile"
    ).apply(ctx, module)
    function = next(op for op in module.walk() if op.name == "func.func")
    positions = {op: i for i, op in enumerate(function.body.walk())}
    loop = next(op for op in module.walk() if op.name == "tile.loop")
    loop_span = (positions[loop], positions[loop] + sum(1 for _ in loop.walk()) - 1)
    spans = {b.sym_name.data: span for b, span in lifetimes(function).items()}
    assert spans["out"][0] <= loop_span[0] and spans["out"][1] >= loop_span[1]
    # @g is made by the second-to-last op of the body and read by the last one
    assert loop_span[0] < spans["g"][0] and spans["g"][1] <= loop_span[1]
    assert spans["g"][1] - spans["g"][0] == 1
