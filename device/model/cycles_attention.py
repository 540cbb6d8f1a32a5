"""Modeled cycles of the blocked attention kernels (`attention_block_*`, `attention_finish`).

Pure functions of a kernel's scalars, the tile it runs on and the `Target` (never of tile
memory), like `device/model/cycles.py`, which dispatches to them by symbol: the executable
model charges them (`device/model/kernels_attention_blocked.py`) and the compiler's cost
model calls them (`planning/attention_plans.py`).

A compute tile holds `rows` query rows of one (batch, head) slice: tile t holds partition
`p = t mod partitions` of the query rows, rows `p * rows ..` (or, `cyclic`, the 16-row
blocks `g * partitions + p`: `group_starts`). With `key_splits` L > 1 (the key-split plan)
the tiles are L layers, layer l taking key blocks `l * nK / L ..` of the same rows: layer 0
is every partition of every slice (tile s * P + p), a later layer only the partitions whose
rows see a key of its first block (with the causal mask a suffix of them, `layer_firsts`),
slice-major after the layers before it (`tile_position`); a call's `key_block` is the step
j, and a tile's block is `l * nK / L + j`. One call of `attention_block_*`
takes one 64-key block (`key_block`) against them, in 16-row groups (the AMP's row block). A
group is *active* when it holds a query row of the tensor (not padding) that sees a key of the
block: every key of a real block without the causal mask, with it only when the block's first
key is at or before the group's last real row. Only active groups are computed and charged, so
blocks above the causal diagonal cost a tile nothing but the call:

- the AMP: S = Q . K_b^T (active rows x padded head_dim x 64) and O += P . V_b (active rows x
  64 x padded head_dim), each at the inputs' AMP rate (P is stored at the inputs' precision,
  so FP16 attention runs P . V at the FP16 rate);
- the vector unit, per score: the row max, scale-and-subtract, exp, the row sum and the
  conversion of P (`exp_cycles_per_element` and four FP32 operations on `vector_f32_lanes`);
  per active row: the rescale of its running sum and of its accumulator row (one exp, head_dim
  multiplies);
- the initializing call (`*_init`, the first key block) also writes the running state of its
  inactive rows (accumulator, max and sum), streamed at the vector store rate;
- the key-masked variants (`*_masked`, a key padding mask) also load the block's 64 i32 mask
  words and select every active score against them (one more vector operation per score).
  Whether the mask hides a whole block is known only at run time, so nothing is skipped for
  it: the charge depends on the scalars alone, and the unmasked kernels' is unchanged.
"""

from __future__ import annotations

import numpy as np

from device.layouts import AMP_BLOCK, AMP_ROWS, element_bytes
from device.target import WORD_BYTES, Precision, Target

KEY_BLOCK = AMP_BLOCK  # keys per block: one AMP block of output columns of S
SCORE_VECTOR_OPS = 4  # row max, scale-and-subtract, row sum, conversion of P (per score)
STATE_WORDS = 2  # per query row: running max, running sum (f32)
MASK_VECTOR_OPS = 1  # the key-masked variants: the select of each score against its key's mask


def padded(head_dim: int) -> int:
    """Head_dim as the AMP reads it: padded to whole 64-column panels."""
    return -(-head_dim // AMP_BLOCK) * AMP_BLOCK


def layer_firsts(partitions: int, rows: int, query_length: int, key_blocks: int,
                 key_splits: int, causal: bool) -> list[int]:
    """The first partition of each of `key_splits` layers: with the causal mask, the first
    whose rows see a key of the layer's first block (`partitions`: none does); else 0."""
    firsts = [0]
    starts = group_starts(np.arange(partitions), rows, partitions, False)
    for layer in range(1, key_splits):
        active = active_groups(starts, query_length, layer * (key_blocks // key_splits),
                               causal) > 0 if causal else np.ones(partitions, dtype=bool)
        firsts.append(int(np.argmax(active)) if active.any() else partitions)
    return firsts


def key_blocks_of(scalars: dict[str, int]) -> int:
    return -(-scalars["key_length"] // KEY_BLOCK)


def tile_position(tile: int, scalars: dict[str, int]) -> tuple[int, int, int]:
    """(layer, slice, query-row partition) of a compute tile: the layers follow each other,
    each slice-major over its partitions (`layer_firsts`)."""
    partitions, splits = max(1, scalars["partitions"]), max(1, scalars["key_splits"])
    if splits == 1:
        return 0, tile // partitions, tile % partitions
    firsts = layer_firsts(partitions, scalars["rows"], scalars["query_length"],
                          key_blocks_of(scalars), splits, bool(scalars["causal"]))
    base = 0
    for layer, first in enumerate(firsts):
        width = partitions - first
        if width and tile < base + scalars["slices"] * width:
            return layer, (tile - base) // width, first + (tile - base) % width
        base += scalars["slices"] * width
    return len(firsts), 0, 0  # past every layer: refused by the kernel


def tile_key_block(tile: int, scalars: dict[str, int]) -> int:
    """The key block a tile's call takes: step `key_block` of its layer's blocks."""
    layer = tile_position(tile, scalars)[0]
    return layer * (key_blocks_of(scalars) // max(1, scalars["key_splits"])) + scalars["key_block"]


def group_starts(partition: np.ndarray, rows: int, partitions: int, cyclic: bool) -> np.ndarray:
    """The first global query row of each 16-row group of the given partitions' tiles
    ([..., groups]): contiguous, rows p * rows + 16 g; cyclic (`cyclic`), the 16-row blocks
    g * partitions + p, so that a tile holds early and late rows alike."""
    p = np.asarray(partition, dtype=np.int64)[..., None]
    g = np.arange(rows // AMP_ROWS, dtype=np.int64)
    return (g * partitions + p) * AMP_ROWS if cyclic else p * rows + g * AMP_ROWS


def active_groups(starts: np.ndarray, query_length: int, key_block: int,
                  causal: bool) -> np.ndarray:
    """How many of the 16-row groups starting at `starts` ([..., groups]) are active."""
    active = starts < query_length
    if causal:  # the block's first key at or before the group's last real row
        active &= key_block * KEY_BLOCK <= np.minimum(starts + AMP_ROWS, query_length) - 1
    return active.sum(axis=-1)


def block_cycles_of(active: int, rows: int, head_dim: int, precision: str, init: bool,
                    target: Target, masked: bool = False) -> int:
    """One `attention_block_*` call with `active` active 16-row groups of a `rows`-row shard
    (`masked`: the key-masked variant)."""
    active_rows = active * AMP_ROWS
    width = padded(head_dim)
    cycles = 0
    if init:  # the running state of the inactive rows is written once
        state_bytes = (rows - active_rows) * (width + STATE_WORDS) * element_bytes(Precision.F32)
        cycles += -(-state_bytes // target.vector_bytes_per_cycle)
    if active_rows == 0:
        return target.kernel_call_cycles + cycles
    scores = active_rows * KEY_BLOCK
    amp = 2 * target.amp_cycles(scores * width, precision)
    vector_ops = SCORE_VECTOR_OPS + (MASK_VECTOR_OPS if masked else 0)
    vector = ((scores + active_rows) * target.exp_cycles_per_element
              + -(-(vector_ops * scores + active_rows * width) // target.vector_f32_lanes))
    if masked:  # the block's mask words, one i32 word per key
        cycles += -(-KEY_BLOCK * WORD_BYTES // target.vector_bytes_per_cycle)
    return amp + vector + cycles


def attention_block_cycles(scalars: dict[str, int], precision: str, init: bool, tile: int,
                           target: Target, masked: bool = False) -> int:
    """One call of `attention_block_<precision>_{init,accum}[_masked]` on `tile` (its named
    scalars)."""
    rows, partitions = scalars["rows"], max(1, scalars["partitions"])
    starts = group_starts(np.array(tile_position(tile, scalars)[2]), rows, partitions,
                          bool(scalars["cyclic"]))
    active = int(active_groups(starts, scalars["query_length"], tile_key_block(tile, scalars),
                               bool(scalars["causal"])))
    return block_cycles_of(active, rows, scalars["head_dim"], precision, init, target, masked)


def attention_finish_cycles(rows: int, head_dim: int, precision: str, target: Target) -> int:
    """out = accumulator / running sum for every row of a tile's shard: the f32 accumulator
    and sums read, out's row-major elements stored, one FP32 multiply per element."""
    f32 = element_bytes(Precision.F32)
    moved = rows * (padded(head_dim) * f32 + STATE_WORDS * f32 + head_dim * element_bytes(precision))
    return target.vector_cycles(moved) + -(-rows * padded(head_dim) // target.vector_f32_lanes)


def attention_merge_cycles(rows: int, head_dim: int, target: Target) -> int:
    """Two layers' states of the same rows merged into the first: both f32 accumulators and
    states read, the first's written back; per row two exps (each state's rescale), per
    accumulator element two FP32 multiplies and an add."""
    f32 = element_bytes(Precision.F32)
    state_bytes = rows * (padded(head_dim) + STATE_WORDS) * f32
    return (target.vector_cycles(3 * state_bytes) + 2 * rows * target.exp_cycles_per_element
            + -(-3 * rows * padded(head_dim) // target.vector_f32_lanes))
