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
