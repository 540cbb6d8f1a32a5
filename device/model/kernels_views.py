"""The layout-op kernels: `view_shard` (tile-local) and `gather_view` (one staged source
shard), which copy elements through an index view (`device/index_views.py`).

Both move storage codes bit-exactly (out and source share precision and scale) and write only
the elements of this tile's out box, inside the view's window and out's logical extent, whose
source they hold: the compiler zeroes out's padding first and, for a concat, calls them once
per input (each input a window of out). `view_shard` requires every such element's source in
the source shard on this tile.
"""

from __future__ import annotations

from device.index_views import IndexView, view_moves
from device.kernel_abi import split_view_words, viewed
from device.model.cycles import view_cycles
from device.model.kernel_call import Kernel, KernelCall
from device.model.kernel_shards import box_on, read_codes, write_codes
from device.shard_geometry import DescriptorError, ShardGeometry


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


RECORDS: tuple[Kernel, ...] = (
    Kernel(
        viewed(
            "view_shard", ("out", "src"), (),
            "For every element r of out's box on this tile within the view's window and out's "
            "logical extent: out[r] = src[unravel(offset + sum((r - starts) * strides))], "
            "which must be in src's shard on this tile (variadic: out's and src's descriptors, "
            "then the view, device/index_views.py). Moves storage codes bit-exactly (same "
            "precision and scale); other elements of out are left as they are. Layout ops, "
            "tile-local.",
        ),
        view_shard,
        lambda call: view_cycles(call.words, None, call.tile, call.target),
    ),
    Kernel(
        viewed(
            "gather_view", ("out", "staged"), ("source_tile",),
            "staged holds the whole shard that tile `source_tile` stores in the staged format; "
            "as view_shard, but only the elements whose source is in that shard are written "
            "(others of out are left as they are). Layout ops, one call per source shard.",
            checked=("source_tile",),
        ),
        gather_view,
        lambda call: view_cycles(call.words, call.scalars["source_tile"], call.tile,
                                 call.target),
    ),
)
