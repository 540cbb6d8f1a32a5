"""The blocked attention plan (`attention_blocks` dispatch): layout, memory and cost.

Tensors are `[..., heads, seq, head_dim]`; the leading axes together are S = batch x heads
slices. Tile `s * P + p` owns query rows `p * R .. p * R + R - 1` of slice `s` (R a multiple
of the AMP's 16 rows, P = ceil(seq / R) partitions): its query shard (amp_left, head_dim
padded to 64), its output shard (row-major) and the attention state of those rows (an f32
accumulator, the running max and sum). Key and value are cut the same way into P chunks of
whole 64-key blocks (`kc` = ceil(key blocks / P) per tile, amp_right_t / amp_right), so no tile
holds all of a slice's K or V: for key block j, one grouped exchange per operand sends block j
of every slice from the tile of that slice that holds it (`s * P + j floordiv kc`) to the
other tiles of the slice (S groups, to tile pairs when P is even), and every tile runs
`attention_block_*` on it: S = Q . K_j^T on the AMP, the online softmax update (FP32 state),
O += P . V_j on the AMP; the holder reads its block where it lives (`home`). After the last
block, `attention_finish_*` writes out = O / l. A tile skips the 16-row groups of its rows
that see no key of the block (padding; above the causal diagonal) and is charged only for the
others (`device/model/cycles_attention.py`). With a key padding mask every compute tile also
holds the whole i32 mask (host-written) and the block kernels are the `_masked` ones.

The cost is what the device model charges for that tile work, from the model's cycle
functions (`blocked_cycles`); candidates cover the partition counts that give distinct row
chunks, each checked against tile memory with the allocator `place-memory` uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from device.layouts import AMP_BLOCK, AMP_ROWS, element_bytes
from device.model import cycles as device_cycles
from device.model.cycles_attention import (
    KEY_BLOCK,
    STATE_WORDS,
    active_groups,
    attention_finish_cycles,
    attention_merge_cycles,
    block_cycles_of,
    group_starts,
    layer_firsts,
    padded,
)
from device.target import WORD_BYTES, Precision, Target, latency_table
from ipu_dialects import mid
from planning.exchange_rows import broadcast_events
from planning.gemm_grid import phase_events
from planning.gemm_memory import DoesNotFit, RowTileBuffer, check_capacity, check_placement
from planning.memory_allocator import Request
from planning.plan_reasons import MemoryReason
from planning.shard_geometry import ShardGeometry, ceil_div

BLOCKED_PRECISIONS = (Precision.F16, Precision.F32)


@dataclass(frozen=True)
class BlockedLayout:
    """The blocked plan's shape: S slices of P partitions of R query rows, kc key blocks per
    holder tile."""

    slices: int  # S: product of the leading (batch, head) axes
    partitions: int  # P: query-row partitions per slice (tiles per slice)
    rows: int  # R: query rows per tile, a multiple of 16
    key_blocks: int  # nK: 64-key blocks of the keys
    key_chunk: int  # kc: key blocks per holder tile
    query_length: int
    key_length: int
    head_dim: int
    precision: str
    causal: bool
    cyclic: bool = False  # compute tiles hold the 16-row blocks g * P + p (staged)
    mask_rows: int = 0  # the key padding mask's rows (the batch), whole on every tile; 0: none
    heads: int = 1  # slices per mask row
    key_splits: int = 1  # L: layers of compute tiles, each over nK / L of the key blocks

    @property
    def segment(self) -> int:
        """Key blocks per layer: layer l takes blocks l * segment .. (l + 1) * segment - 1."""
        return self.key_blocks // self.key_splits

    @cached_property
    def firsts(self) -> tuple[int, ...]:
        """The first partition of every layer (`cycles_attention.layer_firsts`, as the kernels
        place their tiles)."""
        return tuple(layer_firsts(self.partitions, self.rows, self.query_length,
                                  self.key_blocks, self.key_splits, self.causal))

    def layer_first(self, layer: int) -> int:
        return self.firsts[layer]

    def layer_width(self, layer: int) -> int:
        """Partitions per slice of a layer's tiles."""
        return self.partitions - self.layer_first(layer)

    def layer_base(self, layer: int) -> int:
        """A layer's first tile: the layers follow each other, slice-major inside."""
        return sum(self.slices * self.layer_width(k) for k in range(layer))

    def layer_pairs(self, layer: int) -> bool:
        """Whether a layer's block broadcasts go to tile pairs: its slices' tiles whole pairs."""
        return self.layer_width(layer) % 2 == 0 and self.layer_base(layer) % 2 == 0

    @property
    def layers(self) -> range:
        """The layers with tiles (a causal layer whose keys no row sees has none)."""
        return range(sum(1 for k in range(self.key_splits) if self.layer_width(k) > 0))

    def block_phases(self) -> list[range]:
        """The layers each step's key (and value) phase serves: every layer in one phase when
        they are alike (all P partitions wide, one key block per holder tile, so no holder
        sends two blocks), else one phase per layer; none for a first layer that holds its
        blocks (P = 1)."""
        layers = self.layers
        if (len(layers) > 1 and self.exchanges and self.key_chunk == 1
                and all(self.layer_width(k) == self.partitions for k in layers)):
            return [layers]
        return [range(k, k + 1) for k in layers if k > 0 or self.exchanges]

    @property
    def compute_tiles(self) -> int:
        """Tiles of every layer: the first's are the formats' (`tiles`), the others' follow."""
        return self.layer_base(self.key_splits)

    @property
    def masked(self) -> bool:
        return self.mask_rows > 0

    @property
    def mask_bytes(self) -> int:
        return self.mask_rows * self.key_length * WORD_BYTES

    @property
    def units(self) -> int:
        """16-row groups per tile."""
        return self.rows // AMP_ROWS

    @property
    def tiles(self) -> int:
        return self.slices * self.partitions

    @property
    def width(self) -> int:
        """Head_dim padded to whole 64-column panels."""
        return padded(self.head_dim)

    @property
    def block_words(self) -> int:
        """Words of one key (or value) block: 64 keys x the padded head_dim."""
        return KEY_BLOCK * self.width * element_bytes(self.precision) // WORD_BYTES

    @property
    def block_bytes(self) -> int:
        return self.block_words * WORD_BYTES

    @property
    def pairs(self) -> bool:
        """The blocks go to tile pairs when every slice's tiles are whole pairs (P even)."""
        return self.partitions % 2 == 0

    @property
    def exchanges(self) -> bool:
        """Whether a block has receivers: one tile per slice holds and computes everything."""
        return self.partitions > 1

    def holder(self, key_block: int | np.ndarray) -> int | np.ndarray:
        """The partition (within its slice) holding a key block."""
        return key_block // self.key_chunk

    @classmethod
    def of(cls, query: ShardGeometry, key: ShardGeometry, causal: bool,
           cyclic: bool, masked: bool = False, key_splits: int = 1) -> BlockedLayout:
        """The layout a plan's query and key formats describe (`masked`: with a key mask;
        `key_splits`: the plan name's, `plan_key_splits`)."""
        return cls(math.prod(query.shape[:-2]), query.partitions[-2], query.chunk[-2],
                   ceil_div(key.shape[-2], KEY_BLOCK), key.chunk[-2] // KEY_BLOCK,
                   query.shape[-2], key.shape[-2], query.shape[-1], query.precision, causal,
                   cyclic, *mask_extents(query.shape, masked), key_splits)


def mask_extents(query_shape: Sequence[int], masked: bool) -> tuple[int, int]:
    """(mask rows, heads) of a key padding mask over query `[..., heads, seq, head_dim]`:
    one mask row per batch index; (0, 1) without a mask."""
    return (math.prod(query_shape[:-3]), query_shape[-3]) if masked else (0, 1)


CYCLIC_SUFFIX = "_cyclic"
KEY_SPLIT_INFIX = "_k"  # attention_blocked_r<R>_k<L>: L layers over the key blocks


def plan_name(layout: BlockedLayout) -> str:
    split = f"{KEY_SPLIT_INFIX}{layout.key_splits}" if layout.key_splits > 1 else ""
    return f"attention_blocked_r{layout.rows}{split}{CYCLIC_SUFFIX if layout.cyclic else ''}"


def plan_key_splits(name: str) -> int:
    """The layers a blocked plan's name gives (1 without `_k<L>`)."""
    tail = name.removeprefix("attention_blocked_r").split(KEY_SPLIT_INFIX)
    return int(tail[1].removesuffix(CYCLIC_SUFFIX)) if len(tail) > 1 else 1


# ---- the cyclic variant's staging ---------------------------------------------------------------
@dataclass(frozen=True)
class StagingPiece:
    """Part of one staging phase of the cyclic variant: for g in [first, stop), the holder
    partition h0 + g sends the 16-row block at `position` of its chunk to slot `slot` of the
    compute partition p0 + units * g (in every slice); `local`: that one g is the same tile,
    which copies instead."""

    slot: int  # k
    position: int  # j
    h0: int
    p0: int
    first: int
    stop: int
    local: bool

    @property
    def count(self) -> int:
        return self.stop - self.first


def staging_pieces(layout: BlockedLayout) -> list[StagingPiece]:
    """Block i = k * P + p (compute partition p, slot k) is held by partition i // c at
    position i mod c: for each (k, j), the g with p = p0 + c g form an affine piece."""
    c, partitions = layout.units, layout.partitions
    pieces = []
    for k in range(c):
        for j in range(c):
            p0 = (j - k * partitions) % c
            if p0 >= partitions:
                continue
            h0, count = (k * partitions + p0 - j) // c, ceil_div(partitions - p0, c)
            same = [g for g in range(count) if h0 + g == p0 + c * g]
            cuts = [0, *[x for g in same for x in (g, g + 1)], count]
            for first, stop in zip(cuts, cuts[1:]):
                if stop > first:
                    pieces.append(StagingPiece(k, j, h0, p0, first, stop, first in same))
    return pieces


def candidate_partitions(slices: int, query_length: int, tiles: int) -> list[int]:
    """Partition counts worth costing: the most the tiles allow (the fewest rows per tile),
    then the fewest partitions for each doubling of the 16-row groups per tile (fewer tiles,
    each block reused by more rows); none when the slices alone exceed the tiles."""
    groups = ceil_div(query_length, AMP_ROWS)
    if slices > tiles:
        return []
    per_tile = ceil_div(groups, min(tiles // slices, groups))
    found = []
    while True:
        found.append(ceil_div(groups, per_tile))
        if found[-1] == 1:
            return found
        per_tile *= 2


def candidate_key_splits(layout: BlockedLayout, tiles: int) -> list[int]:
    """Layer counts worth costing for a contiguous layout: each divisor L >= 2 of the key
    blocks whose layers fit the tiles (every layer then takes nK / L blocks in as many steps)."""
    if layout.cyclic:
        return []
    return [splits for splits in range(2, layout.key_blocks + 1)
            if layout.key_blocks % splits == 0
            and replace(layout, key_splits=splits).compute_tiles <= tiles]


def layout_for(query_shape: Sequence[int], key_shape: Sequence[int], partitions: int,
               precision: str, causal: bool, cyclic: bool = False,
               masked: bool = False, key_splits: int = 1) -> BlockedLayout:
    groups = ceil_div(ceil_div(query_shape[-2], AMP_ROWS), partitions)
    key_blocks = ceil_div(key_shape[-2], KEY_BLOCK)
    return BlockedLayout(math.prod(query_shape[:-2]), partitions, groups * AMP_ROWS, key_blocks,
                         ceil_div(key_blocks, partitions), query_shape[-2], key_shape[-2],
                         query_shape[-1], precision, causal, cyclic,
                         *mask_extents(query_shape, masked), key_splits)


# ---- formats ------------------------------------------------------------------------------------
def formats_for_shapes(layout: BlockedLayout, lead: Sequence[int], precision: str,
                       indivisible: str) -> dict[str, mid.TensorFormatAttr]:
    """The plan's formats for leading extents `lead`: query (amp_left), key (amp_right_t),
    value (amp_right), out (row-major), on the first layer's tiles; a key mask whole (i32) on
    every compute tile of the plan (the key split's later layers read it too)."""

    def fmt(order: str, seq_block: int, dim_block: int) -> mid.TensorFormatAttr:
        tiling = [mid.AxisTilingAttr(1, extent, indivisible) for extent in lead]
        tiling += [mid.AxisTilingAttr(seq_block, layout.partitions, indivisible),
                   mid.AxisTilingAttr(dim_block, 1, indivisible)]
        return mid.TensorFormatAttr(precision, order, tiling, 1, layout.tiles)

    formats = {
        "query": fmt(mid.ElementOrder.AMP_LEFT, AMP_ROWS, AMP_BLOCK),
        "key": fmt(mid.ElementOrder.AMP_RIGHT_T, KEY_BLOCK, AMP_BLOCK),
        "value": fmt(mid.ElementOrder.AMP_RIGHT, KEY_BLOCK, AMP_BLOCK),
        "out": fmt(mid.ElementOrder.ROW_MAJOR, AMP_ROWS, 1),
    }
    if layout.masked:  # [batch..., Sk]: the query's batch axes and the keys
        formats["key_mask"] = mid.TensorFormatAttr(
            mid.StoragePrecision.I32, mid.ElementOrder.ROW_MAJOR,
            [mid.AxisTilingAttr(1, 1)] * len(lead), layout.compute_tiles, layout.compute_tiles)
    return formats


# ---- validity -----------------------------------------------------------------------------------
def layout_failure(layout: BlockedLayout, tiles: int, indivisible: str) -> str | None:
    """Why the layout cannot run (None: it can), before memory."""
    if layout.precision not in BLOCKED_PRECISIONS:
        return (f"the blocked plan has kernels for {' and '.join(BLOCKED_PRECISIONS)} "
                f"attention, not {layout.precision}")
    if layout.tiles > tiles:
        return (f"{layout.slices} batch x head slices of {layout.partitions} query partitions "
                f"need {layout.tiles} tiles, the pipeline has {tiles}")
    if layout.key_splits > 1 and (layout.cyclic or layout.key_blocks % layout.key_splits):
        return (f"the key split takes contiguous query rows and an equal share of the "
                f"{layout.key_blocks} key blocks per layer, not {layout.key_splits} layers")
    if layout.compute_tiles > tiles:
        return (f"{layout.key_splits} layers of {layout.slices} batch x head slices need "
                f"{layout.compute_tiles} tiles, the pipeline has {tiles}")
    if layout.width > AMP_BLOCK and layout.key_chunk > 1:
        return (f"a key block of head_dim {layout.head_dim} is contiguous only when each tile "
                f"holds one key block; {layout.partitions} partitions hold {layout.key_chunk}")
    if layout.cyclic and (layout.width != AMP_BLOCK or layout.units < 2):
        return ("the cyclic variant moves 16-row blocks of one 64-column panel between the "
                "tiles of a slice: it needs head_dim <= 64 and two or more groups per tile")
    if indivisible == mid.Indivisible.REJECT and (
            layout.query_length % AMP_ROWS or layout.key_length % KEY_BLOCK
            or layout.head_dim % AMP_BLOCK):
        return (f"indivisible=reject: the blocked plan pads query rows to {AMP_ROWS}, keys to "
                f"{KEY_BLOCK} and head_dim to {AMP_BLOCK}")
    return None


def tile_buffers(layout: BlockedLayout, target: Target) -> dict[str, RowTileBuffer]:
    """The buffers of one compute tile, as `mid-to-tile` declares them: the four shards, the
    two block receive slots, the accumulator, the state, S and P (and the key mask)."""
    own, f32 = element_bytes(layout.precision), element_bytes(Precision.F32)
    rows, width, pace = layout.rows, layout.width, target.pace_alignment
    tail = target.amp_left_access_tail_bytes
    kv = layout.key_chunk * layout.block_bytes

    def buffer(what: str, nbytes: int, interleaved: bool = False, exchanged: bool = False,
               extra: int = 0, alignment: int = pace) -> RowTileBuffer:
        return RowTileBuffer(what, Request(nbytes, extra, alignment, interleaved, exchanged))

    return {
        "query": buffer("its query shard", rows * width * own, extra=tail,
                        exchanged=layout.cyclic),
        "key": buffer("its key shard", kv, exchanged=layout.exchanges),
        "value": buffer("its value shard", kv, exchanged=layout.exchanges),
        "out": buffer("its output shard", rows * layout.head_dim * own,
                      alignment=target.vector_alignment, exchanged=layout.cyclic),
        "acc": buffer("its f32 accumulator", rows * width * f32, interleaved=True),
        "stats": buffer("its running max and sum", rows * STATE_WORDS * f32),
        "scores": buffer("its scores block", rows * KEY_BLOCK * f32, interleaved=True),
        "probs": buffer("its probabilities block", rows * KEY_BLOCK * own, extra=tail),
    } | ({
        "key_slot": buffer("its key-block receive slot", layout.block_bytes, exchanged=True),
        "value_slot": buffer("its value-block receive slot", layout.block_bytes, exchanged=True),
    } if layout.exchanges else {}) | ({
        "query_stage": buffer("its staged query blocks", rows * width * own, extra=tail,
                              exchanged=True),
        "out_stage": buffer("its output blocks before unstaging", rows * layout.head_dim * own,
                            exchanged=True, alignment=target.vector_alignment),
    } if layout.cyclic else {}) | ({
        "key_mask": buffer("its copy of the key mask", layout.mask_bytes),
    } if layout.masked else {}) | ({
        "query_copy": buffer("its copy of its rows' query (a later layer)", rows * width * own,
                             extra=tail, exchanged=True),
        "acc_in": buffer("a later layer's accumulator", rows * width * f32, exchanged=True),
        "stats_in": buffer("a later layer's max and sum", rows * STATE_WORDS * f32,
                           exchanged=True),
    } if layout.key_splits > 1 else {})


DISTINCT = (("acc", "probs"), ("scores", "query"), ("scores", "query_copy"))
# the cyclic variant's kernels read the staged query; its staging phases are full duplex
CYCLIC_DISTINCT = (("acc", "probs"), ("scores", "query_stage"), ("query", "query_stage"),
                   ("out", "out_stage"))


def memory_failure(layout: BlockedLayout, target: Target) -> str | None:
    """The checks `place-memory` makes, for the buffers of one compute tile."""
    buffers = tile_buffers(layout, target)
    who = "an attention tile"
    try:
        check_capacity(buffers, target, who)
        distinct = CYCLIC_DISTINCT if layout.cyclic else DISTINCT
        check_placement(buffers, target, tuple(p for p in distinct if set(p) <= buffers.keys()),
                        who)
    except DoesNotFit as failure:
        return MemoryReason(str(failure))
    return None


# ---- cycles -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BlockedCycles:
    exchange: int  # the key and value block phases
    compute: int  # the attention_block calls
    finish: int
    staging: int = 0  # the cyclic variant's query and output staging (phases and copies)
    merge: int = 0  # the key split's query copies, state phases and merges

    @property
    def total(self) -> int:
        return self.exchange + self.compute + self.finish + self.staging + self.merge


def block_words(layout: BlockedLayout, width: int) -> int:
    """Words of one 16-row block of `width` columns at the layout's precision."""
    return AMP_ROWS * width * element_bytes(layout.precision) // WORD_BYTES


def piece_tiles(layout: BlockedLayout, piece: StagingPiece) -> tuple[np.ndarray, np.ndarray]:
    """(holder tiles, compute tiles) of a staging piece, one per group (slice-major)."""
    slices = np.arange(layout.slices)[:, None] * layout.partitions
    g = np.arange(piece.first, piece.stop)[None, :]
    holders = (slices + piece.h0 + g).reshape(-1)
    return holders, (slices + piece.p0 + layout.units * g).reshape(-1)


def staging_cycles(layout: BlockedLayout, target: Target, tiles: int) -> int:
    """The query blocks to the compute tiles, and the output blocks back: one phase per
    exchanged piece each (the farthest pair of any group), one copy per local piece."""
    latency = latency_table(target, tiles)
    total = 0
    for piece in staging_pieces(layout):
        for width in (layout.width, layout.head_dim):  # query (amp_left), out (row-major)
            words = block_words(layout, width)
            if piece.local:
                total += device_cycles.copy_cycles(words * WORD_BYTES, target)
                continue
            holders, computes = piece_tiles(layout, piece)
            pair = (holders, computes) if width == layout.width else (computes, holders)
            events = phase_events(pair[0][None, :], pair[1][:, None], words, latency)
            total += device_cycles.exchange_step_cycles(int(events[0]), target)
    return total


def layer_tiles(layout: BlockedLayout, layer: int) -> np.ndarray:
    """[slice, partition of the layer] -> its compute tile."""
    width = layout.layer_width(layer)
    return (layout.layer_base(layer) + np.arange(layout.slices)[:, None] * width
            + np.arange(width)[None, :])


def home_tiles(layout: BlockedLayout, layer: int) -> np.ndarray:
    """[slice, partition of the layer] -> the first layer's tile of the same rows (the one
    holding their query and output)."""
    return (np.arange(layout.slices)[:, None] * layout.partitions + layout.layer_first(layer)
            + np.arange(layout.layer_width(layer))[None, :])


def one_to_one_cycles(senders: np.ndarray, receivers: np.ndarray, words: int,
                      target: Target, latency: np.ndarray) -> int:
    """One phase of concurrent single-receiver sends (sender i to receiver i)."""
    events = phase_events(senders.reshape(1, -1), receivers.reshape(-1, 1), words, latency)
    return device_cycles.exchange_step_cycles(int(events[0]), target)


def merge_cycles(layout: BlockedLayout, target: Target, latency: np.ndarray) -> int:
    """The key split's work around the block loop: the query copy to each later layer, then
    per later layer its state phases (accumulator, max and sum) to the first layer's tiles and
    the merge there."""
    own, f32 = element_bytes(layout.precision), element_bytes(Precision.F32)
    query_words = layout.rows * layout.width * own // WORD_BYTES
    acc_words = layout.rows * layout.width * f32 // WORD_BYTES
    stats_words = layout.rows * STATE_WORDS * f32 // WORD_BYTES
    total = 0
    for layer in layout.layers[1:]:
        home, tiles = home_tiles(layout, layer), layer_tiles(layout, layer)
        total += one_to_one_cycles(home, tiles, query_words, target, latency)
        for words in (acc_words, stats_words):
            total += one_to_one_cycles(tiles, home, words, target, latency)
        total += attention_merge_cycles(layout.rows, layout.head_dim, target)
    return total


def blocked_cycles(layout: BlockedLayout, target: Target, tiles: int) -> BlockedCycles:
    """What the device model charges for the blocked lowering
    (`passes/operators/attention_blocked_lowering.py`): per step j (nK / L of them), for every
    block phase (`block_phases`) a sync and the phase of key block l * nK / L + j to the tiles
    of each of its layers l, the same for the value block (none when P = 1 and there is one
    layer), then the slowest tile's `attention_block` call of any layer; then the key split's
    copies and merges, and the finish."""
    latency = latency_table(target, tiles)
    exchange = compute = 0
    starts = group_starts(np.arange(layout.partitions), layout.rows, layout.partitions,
                          layout.cyclic)
    phases = layout.block_phases()
    for j in range(layout.segment):
        slowest = 0
        for layers in phases:
            receivers = np.concatenate([layer_tiles(layout, k) for k in layers])
            senders = np.concatenate([np.arange(layout.slices) * layout.partitions
                                      + int(layout.holder(k * layout.segment + j))
                                      for k in layers])[None, :]
            pairs = all(layout.layer_pairs(k) for k in layers)
            items = broadcast_events(layout.block_words, pairs)
            events = phase_events(senders, receivers, items, latency)
            exchange += 2 * device_cycles.exchange_step_cycles(int(events[0]), target)
        for layer in layout.layers:
            block = layer * layout.segment + j
            first = layout.layer_first(layer)
            active = active_groups(starts[first:], layout.query_length, block, layout.causal)
            slowest = max(slowest, *(block_cycles_of(int(a), layout.rows, layout.head_dim,
                                                     layout.precision, j == 0, target,
                                                     layout.masked)
                                     for a in np.unique(active).tolist()))
        compute += slowest
    finish = attention_finish_cycles(layout.rows, layout.head_dim, layout.precision, target)
    staging = staging_cycles(layout, target, tiles) if layout.cyclic else 0
    merge = merge_cycles(layout, target, latency) if layout.key_splits > 1 else 0
    return BlockedCycles(exchange, compute, finish, staging, merge)


def attention_macs(query_shape: Sequence[int], key_shape: Sequence[int]) -> int:
    """Multiply-accumulates of attention's two products (Q . K^T and P . V), unmasked."""
    return 2 * math.prod(query_shape[:-1]) * key_shape[-2] * query_shape[-1]
