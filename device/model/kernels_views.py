"""The layout-op kernels: `view_shard` (tile-local) and `gather_view` (one staged source
shard), which copy elements through an index view (`device/index_views.py`).

Both move storage codes bit-exactly (out and source share precision and scale) and write only
the elements of this tile's out box, inside the view's window and out's logical extent, whose
source they hold: the compiler zeroes out's padding first and, for a concat, calls them once
per input (each input a window of out). `view_shard` requires every such element's source in
the source shard on this tile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from device.index_views import IndexView, view_moves
from device.kernels import split_view_words
from device.model.cycles import view_cycles
from device.model.kernel_shards import box_on, read_codes, write_codes
from device.shard_geometry import DescriptorError, ShardGeometry

if TYPE_CHECKING:
    from device.model.kernel_call import KernelCall


def _operands(call: KernelCall, source: str) -> tuple[ShardGeometry, ShardGeometry, IndexView]:
    try:
        out, src, view = split_view_words(call.variadic)
    except DescriptorError as error:
        raise call.fail(f"bad descriptors or index view: {error}") from None
    for name, fmt in (("out", out), (source, src)):
        call.memory.check_range(call.tile, call.pointers[name], fmt.shard_bytes(),
                                f"{call.describe()}, operand '{name}'")
    if (out.precision, out.scale) != (src.precision, src.scale):
        raise call.fail(f"out is {out.precision} (scale {out.scale}) but {source} is "
                        f"{src.precision} (scale {src.scale}); {call.abi.symbol} moves elements "
                        f"without converting them")
    return out, src, view


def _copy(call: KernelCall, source: str, source_tile: int | None, local: bool) -> int:
    out, src, view = _operands(call, source)
    box = box_on(call, "out", out)
    src_box = box_on(call, source, src, source_tile)
    out_index, src_index, missing = view_moves(view, out, box, src, src_box)
    if local and missing:
        raise call.fail(f"{missing} element(s) of out's box {box} take their source outside "
                        f"{source}'s shard {src_box} on this tile; view_shard is tile-local")
    if out_index and out_index[0].size:
        codes = read_codes(call, "out", out)
        codes[out_index] = read_codes(call, source, src)[src_index]
        write_codes(call, "out", out, codes)
    return view_cycles(call.variadic, source_tile, call.tile, call.target)


def view_shard(call: KernelCall) -> int:
    return _copy(call, "src", None, local=True)


def gather_view(call: KernelCall) -> int:
    return _copy(call, "staged", call.scalars["source_tile"], local=False)
