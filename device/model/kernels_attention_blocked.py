"""The blocked attention kernels: one 64-key block at a time, online softmax (FP32 state).

`attention_block_<p>_{init,accum}` (p = f16 or f32) takes key block `key_block` against the
tile's query rows; `attention_finish_<p>` divides the accumulator by the running sum. Their
ABIs (byte layouts in the docs) and records are at the end; cycles:
`device/model/cycles_attention.py`. Every operand
is read from and written to tile memory in its declared order and precision, the scratch
operands included: S goes to `scores` as the AMP stores it and is read back for the softmax,
P goes to `probs` (at the inputs' precision, as the AMP's left operand) and is read back for
P . V, so a wrong pointer or layout gives wrong numbers.

Per active 16-row group (`cycles_attention.active_groups`; the others keep their state) and
per row: s = scale * (q . k_j) for the block's keys j, masked to -inf past `key_length` and,
with `causal`, for keys after the row; m' = max(m, max s); P = exp(s - m') rounded to the
inputs' precision; l' = l * exp(m - m') + sum P (FP32, of the rounded P); out' = out *
exp(m - m') + P . V_b (FP32 products and sums). The init call starts from m = -inf, l = 0,
out = 0 for every row (inactive rows keep that state). Finish: out = acc / l, rounded once;
rows with l = 0 (padding) are zeros.

The key-masked variants (`attention_block_<p>_{init,accum}_masked`) also take `key_mask`,
the whole i32 key padding mask [mask_rows, key_length] (written by the host, replicated on
every compute tile): slice s = tile floordiv partitions reads row s floordiv heads, and a key
whose entry is 0 is masked like a key past `key_length` (an entry other than 0 or 1 stops the
call). A row none of whose keys is attended keeps l = 0 and finishes as zeros.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from device.kernel_abi import IMPLEMENTED, Footprint, KernelAbi, non_negative
from device.layouts import AMP_BLOCK, AMP_ROWS, element_bytes, pack, unpack
from device.model.cycles_attention import (
    KEY_BLOCK,
    STATE_WORDS,
    active_groups,
    attention_block_cycles,
    attention_finish_cycles,
    attention_merge_cycles,
    group_starts,
    key_blocks_of,
    padded,
    tile_key_block,
    tile_position,
)
from device.model.kernel_call import Kernel, KernelImpl
from device.model.kernel_shards import positive_f32
from device.target import WORD_BYTES, Precision

if TYPE_CHECKING:
    from device.model.kernel_call import KernelCall

F32 = Precision.F32


def _check_scalars(call: KernelCall) -> None:
    s = call.scalars
    for name in ("rows", "head_dim", "partitions", "query_length", "key_length"):
        call.positive_scalar(name)
    if s["rows"] % AMP_ROWS:
        raise call.fail(f"rows = {s['rows']} is not a multiple of {AMP_ROWS}")
    for flag in ("causal", "cyclic"):
        if s[flag] not in (0, 1):
            raise call.fail(f"{flag} = {s[flag]} must be 0 or 1")
    for name in ("slices", "key_splits"):
        call.positive_scalar(name)
    blocks = key_blocks_of(s)
    if s["key_splits"] > 1 and (blocks % s["key_splits"] or s["cyclic"]):
        raise call.fail(f"key_splits = {s['key_splits']} layers need contiguous rows and an "
                        f"equal share of the {blocks} key blocks")
    if tile_position(call.tile, s)[0] >= s["key_splits"]:
        raise call.fail(f"tile {call.tile} is past the {s['key_splits']} layers of "
                        f"{s['slices']} slices")
    blocks = -(-s["key_length"] // KEY_BLOCK)
    steps = blocks // max(1, s["key_splits"])
    if not 0 <= s["key_block"] < steps:
        raise call.fail(f"key_block = {s['key_block']} is outside the {steps} blocks of "
                        f"{s['key_length']} keys a layer takes")


class _Operands:
    """Pointers and byte sizes of one call, checked for alignment and the AMP's memory rules."""

    def __init__(self, call: KernelCall, precision: str):
        self.call, self.precision = call, precision
        self.rows, self.width = call.scalars["rows"], padded(call.scalars["head_dim"])
        self.footprint = call.abi.footprint_of(
            [call.scalars[n] for n in call.abi.named_scalars]) or {}
        alignment = call.target.pace_alignment
        self.address = {n: call.aligned_pointer(n, alignment) for n in call.abi.pointers}
        target = call.target
        for name in ("out", "scores"):  # AMP outputs
            start, nbytes = self.address[name], self.footprint[name]
            if not (target.interleaved_start <= start and start + nbytes <= target.memory_end):
                raise call.fail(f"'{name}' at {start:#x} is not in interleaved memory "
                                f"[{target.interleaved_start:#x}, {target.memory_end:#x})")
        for a, b in call.abi.distinct_pairs:
            shared = (target.elements_of_range(self.address[a], self.footprint[a])
                      & target.elements_of_range(self.address[b], self.footprint[b]))
            if shared:
                raise call.fail(f"'{a}' at {self.address[a]:#x} and '{b}' at "
                                f"{self.address[b]:#x} share memory element {min(shared)}")

    def read(self, name: str, shape: tuple[int, ...], order: str, precision: str) -> np.ndarray:
        raw = self.call.read(name, self.address[name], self.footprint[name])
        return unpack(raw, shape, order, precision).astype(np.float32)

    def write(self, name: str, values: np.ndarray, order: str, precision: str) -> None:
        self.call.write(name, self.address[name], pack(values, order, precision))


def _key_mask_row(call: KernelCall, address: int) -> np.ndarray:
    """The key mask entries of this tile's batch row for key block `key_block` (True: masked),
    64 of them (keys past key_length are masked anyway)."""
    s = call.scalars
    for name in ("heads", "mask_rows"):
        call.positive_scalar(name)
    slice_index = tile_position(call.tile, s)[1]
    row = slice_index // s["heads"]
    if row >= s["mask_rows"]:
        raise call.fail(f"tile {call.tile} is in slice {slice_index}, of mask "
                        f"row {row}; the mask has {s['mask_rows']} rows")
    first = tile_key_block(call.tile, s) * KEY_BLOCK
    count = min(KEY_BLOCK, s["key_length"] - first)
    entries = call.read("key_mask", address + (row * s["key_length"] + first) * WORD_BYTES,
                        count * WORD_BYTES).view("<i4")
    bad = np.flatnonzero((entries != 0) & (entries != 1))
    if bad.size:
        raise call.fail(f"key_mask entry {int(entries[bad[0]])} for key {first + int(bad[0])} of "
                        f"mask row {row} is not 0 (masked) or 1 (attended)")
    masked = np.ones(KEY_BLOCK, dtype=bool)
    masked[:count] = entries == 0
    return masked


def attention_block(precision: str, init: bool, masked_keys: bool = False) -> KernelImpl:
    def run(call: KernelCall) -> int:
        _check_scalars(call)
        s = call.scalars
        scale = positive_f32(call, "scale_bits", " scale")
        ops = _Operands(call, precision)
        rows, width = ops.rows, ops.width
        if init:
            acc = np.zeros((rows, width), np.float32)
            state = np.tile(np.array([-np.inf, 0.0], np.float32), (rows, 1))
        else:
            acc = ops.read("out", (rows, width), "amp_output", F32)
            state = ops.read("stats", (rows, STATE_WORDS), "row_major", F32)
        starts = group_starts(np.array(tile_position(call.tile, s)[2]), rows,
                              s["partitions"], bool(s["cyclic"]))
        key_block = tile_key_block(call.tile, s)
        active = active_groups(starts[:, None], s["query_length"], key_block,
                               bool(s["causal"])) > 0
        global_rows = (starts[:, None] + np.arange(AMP_ROWS)).reshape(-1)
        # per local row: in an active group and a row of the tensor (padding keeps l = 0)
        live = np.repeat(active, AMP_ROWS) & (global_rows < s["query_length"])
        if live.any():
            query = ops.read("query", (rows, width), "amp_left", precision)
            key_t = ops.read("key", (width, AMP_BLOCK), "amp_right", precision)
            value = ops.read("value", (AMP_BLOCK, width), "amp_right", precision)
            scores = np.zeros((rows, AMP_BLOCK), np.float32)
            scores[live] = (query[live] @ key_t) * scale  # the AMP: FP32 partials
            ops.write("scores", scores, "amp_output", F32)
            scores = ops.read("scores", (rows, AMP_BLOCK), "amp_output", F32)
            keys = key_block * KEY_BLOCK + np.arange(AMP_BLOCK)
            masked = keys[None, :] >= s["key_length"]
            if masked_keys:
                masked = masked | _key_mask_row(call, ops.address["key_mask"])[None, :]
            if s["causal"]:
                masked = masked | (keys[None, :] > global_rows[:, None])
            scores = np.where(masked, np.float32(-np.inf), scores)
            old_max = state[:, 0]
            new_max = np.maximum(old_max, scores.max(axis=1))
            seen = np.isfinite(new_max) & live  # rows that see at least one key so far
            safe = np.where(seen, new_max, np.float32(0))
            probs = np.where(seen[:, None], np.exp(scores - safe[:, None]), np.float32(0))
            ops.write("probs", probs, "amp_left", precision)
            probs = ops.read("probs", (rows, AMP_BLOCK), "amp_left", precision)
            rescale = np.where(seen & np.isfinite(old_max), np.exp(old_max - safe),
                               np.float32(0)).astype(np.float32)
            rescale = np.where(live, rescale, np.float32(1))
            update = probs @ value  # the AMP: FP32 partials of P . V_b
            acc = np.where(live[:, None], acc * rescale[:, None] + update, acc)
            state[:, 1] = np.where(live, state[:, 1] * rescale + probs.sum(axis=1), state[:, 1])
            state[:, 0] = np.where(live, new_max, old_max)
        ops.write("out", acc, "amp_output", F32)
        ops.write("stats", state, "row_major", F32)
        return attention_block_cycles(s, precision, init, call.tile, call.target, masked_keys)

    return run


def attention_finish(precision: str) -> KernelImpl:
    def run(call: KernelCall) -> int:
        for name in ("rows", "head_dim"):
            call.positive_scalar(name)
        rows, head_dim = call.scalars["rows"], call.scalars["head_dim"]
        width = padded(head_dim)
        footprint = call.abi.footprint_of([rows, head_dim]) or {}
        pace = call.target.pace_alignment
        acc_at, stats_at = (call.aligned_pointer(n, pace) for n in ("acc", "stats"))
        out_at = call.aligned_pointer("out", call.target.vector_alignment)
        acc = unpack(call.read("acc", acc_at, footprint["acc"]), (rows, width), "amp_output", F32)
        state = unpack(call.read("stats", stats_at, footprint["stats"]), (rows, STATE_WORDS),
                       "row_major", F32)
        total = state[:, 1:2]
        out = np.where(total > 0, acc[:, :head_dim] / np.where(total > 0, total, 1.0), 0.0)
        call.write("out", out_at, pack(out, "row_major", precision))
        return attention_finish_cycles(rows, head_dim, precision, call.target)

    return run


def attention_merge(call: KernelCall) -> int:
    """Two online-softmax states of the same rows (this layer's, and one received from another
    layer over other key blocks) into one: m = max(m0, m1), l = l0 e^(m0 - m) + l1 e^(m1 - m),
    acc = acc0 e^(m0 - m) + acc1 e^(m1 - m), FP32; a state that saw no key (m = -inf) adds
    nothing."""
    for name in ("rows", "head_dim"):
        call.positive_scalar(name)
    rows, head_dim = call.scalars["rows"], call.scalars["head_dim"]
    if rows % AMP_ROWS:
        raise call.fail(f"rows = {rows} is not a multiple of {AMP_ROWS}")
    width = padded(head_dim)
    footprint = call.abi.footprint_of([rows, head_dim]) or {}
    at = {n: call.aligned_pointer(n, call.target.pace_alignment) for n in call.abi.pointers}

    def read(name: str, shape: tuple[int, int], order: str) -> np.ndarray:
        return unpack(call.read(name, at[name], footprint[name]), shape, order, F32)

    acc = [read(n, (rows, width), "amp_output") for n in ("out", "acc_in")]
    state = [read(n, (rows, STATE_WORDS), "row_major") for n in ("stats", "stats_in")]
    maxima = [s[:, 0] for s in state]
    new_max = np.maximum(*maxima)
    safe = np.where(np.isfinite(new_max), new_max, np.float32(0))
    scale = [np.where(np.isfinite(m), np.exp(m - safe), np.float32(0)).astype(np.float32)
             for m in maxima]
    merged_acc = acc[0] * scale[0][:, None] + acc[1] * scale[1][:, None]
    merged = np.stack([new_max, state[0][:, 1] * scale[0] + state[1][:, 1] * scale[1]], axis=1)
    call.write("out", at["out"], pack(merged_acc.astype(np.float32), "amp_output", F32))
    call.write("stats", at["stats"], pack(merged.astype(np.float32), "row_major", F32))
    return attention_merge_cycles(rows, head_dim, call.target)


# ---- ABIs and records --------------------------------------------------------------------------
def _attention_block_footprint(precision: str, masked: bool) -> Footprint:
    def footprint(scalars: Mapping[str, int], _: tuple[int, ...]) -> dict[str, int]:
        non_negative(scalars, "rows", "head_dim")
        rows, width = scalars["rows"], padded(scalars["head_dim"])
        f32, own = element_bytes(Precision.F32), element_bytes(precision)
        extents = {"out": rows * width * f32, "stats": rows * 2 * f32,
                   "scores": rows * AMP_BLOCK * f32, "probs": rows * AMP_BLOCK * own,
                   "query": rows * width * own, "key": AMP_BLOCK * width * own,
                   "value": AMP_BLOCK * width * own}
        if masked:
            non_negative(scalars, "mask_rows", "key_length")
            extents["key_mask"] = scalars["mask_rows"] * scalars["key_length"] * WORD_BYTES
        return extents

    return footprint


_ATTENTION_BLOCK_SCALARS = ("key_block", "key_length", "causal", "scale_bits", "query_length",
                            "head_dim", "rows", "partitions", "cyclic", "slices", "key_splits")
MASKED_SUFFIX = "_masked"  # the key-masked variants: one more pointer, two more scalars
_KEY_MASK_SCALARS = ("heads", "mask_rows")


def block_symbol(precision: str, mode: str, masked: bool) -> str:
    return f"attention_block_{precision}_{mode}{MASKED_SUFFIX if masked else ''}"


def _attention_block(precision: Precision, mode: str, masked: bool = False) -> KernelAbi:
    """One 64-key block of blocked attention against a tile's query rows (online softmax)."""
    first = ("out = the first block's P . V, the running max and sum initialized"
             if mode == "init" else "out = out * rescale + P . V, the running max and sum updated")
    mask_doc = (" key_mask: the i32 key padding mask [mask_rows, key_length], whole; the "
                "tile's slice reads row slice floordiv heads, and keys whose entry "
                "is 0 are masked too (entries are 0 or 1)." if masked else "")
    return KernelAbi(
        symbol=block_symbol(precision, mode, masked),
        pointers=("out", "stats", "scores", "probs", "query", "key", "value",
                  *(("key_mask",) if masked else ())),
        scalars=(*_ATTENTION_BLOCK_SCALARS, *(_KEY_MASK_SCALARS if masked else ())),
        returns="void",
        row_specialization="rows a multiple of 16: 16-row AMP groups looped inside, the "
                           "inactive ones (padding, above the causal diagonal) skipped",
        status=IMPLEMENTED,
        doc=(
            f"Blocked attention ({precision}), key block `key_block` (64 keys, key_length keys "
            "in all) against this tile's `rows` query rows of partition p = tile mod `partitions` "
            "(global rows p * rows ..; with `cyclic` the 16-row blocks g * partitions + p; "
            "query_length rows in all); with key_splits L > 1 the tiles are L layers of the "
            "`slices` slices, layer l taking block l * nK / L + key_block (cycles_attention."
            f"tile_position). {first}. query: a {precision}"
            " amp_left shard [rows, head_dim padded to 64]; key: the block's keys as one "
            "amp_right block column K_b^T [head_dim, 64]; value: V_b, amp_right [64, head_dim]; "
            "scores: S = scale * Q . K_b^T, f32 amp_output [rows, 64] (the AMP's output); "
            f"probs: P = exp(S - max), {precision} amp_left [rows, 64]; out: the f32 accumulator, "
            "amp_output [rows, head_dim]; stats: f32 [rows, 2] (running max, running sum). "
            "Keys past key_length, and with `causal` keys after the row, are masked. "
            "scale_bits: the f32 bit pattern of the scale. Every pointer PACE-aligned; out and "
            "scores interleaved; (out, probs) and (scores, query) in different memory elements."
            + mask_doc
        ),
        footprint=_attention_block_footprint(precision, masked),
        distinct=(("out", "probs"), ("scores", "query")),
    )


def _attention_finish(precision: Precision) -> KernelAbi:
    def footprint(scalars: Mapping[str, int], _: tuple[int, ...]) -> dict[str, int]:
        non_negative(scalars, "rows", "head_dim")
        rows, width = scalars["rows"], padded(scalars["head_dim"])
        f32 = element_bytes(Precision.F32)
        return {"out": rows * scalars["head_dim"] * element_bytes(precision),
                "acc": rows * width * f32, "stats": rows * 2 * f32}

    return KernelAbi(
        symbol=f"attention_finish_{precision}",
        pointers=("out", "acc", "stats"),
        scalars=("rows", "head_dim"),
        returns="void",
        row_specialization="none",
        status=IMPLEMENTED,
        doc=(
            "out = acc / running sum, rounded once to "
            f"{precision}: out a row-major [rows, head_dim] shard; acc the f32 amp_output "
            "accumulator [rows, head_dim padded to 64] and stats the f32 [rows, 2] state of "
            "attention_block_*; rows whose sum is 0 (padding) are written as zeros. out "
            "8-byte aligned, acc and stats PACE-aligned."
        ),
        footprint=footprint,
    )


def _attention_merge() -> KernelAbi:
    def footprint(scalars: Mapping[str, int], _: tuple[int, ...]) -> dict[str, int]:
        non_negative(scalars, "rows", "head_dim")
        rows, width = scalars["rows"], padded(scalars["head_dim"])
        f32 = element_bytes(Precision.F32)
        acc, stats = rows * width * f32, rows * STATE_WORDS * f32
        return {"out": acc, "stats": stats, "acc_in": acc, "stats_in": stats}

    return KernelAbi(
        symbol="attention_merge",
        pointers=("out", "stats", "acc_in", "stats_in"),
        scalars=("rows", "head_dim"),
        returns="void",
        row_specialization="none",
        status=IMPLEMENTED,
        doc=(
            "Merges two online-softmax states of the same `rows` query rows, each over other "
            "key blocks, into the first: m = max(m0, m1), l = l0 exp(m0 - m) + l1 exp(m1 - m), "
            "acc = acc0 exp(m0 - m) + acc1 exp(m1 - m) (FP32; a state with m = -inf, no key "
            "seen, adds nothing). out, acc_in: f32 amp_output accumulators [rows, head_dim "
            "padded to 64]; stats, stats_in: f32 [rows, 2] (running max, running sum), as "
            "attention_block_* leaves them; out (the accumulator) and stats are updated in "
            "place. Every pointer PACE-aligned."
        ),
        footprint=footprint,
    )


def _block_cycles(precision: str, init: bool, masked: bool):
    return lambda call: attention_block_cycles(call.scalars, precision, init, call.tile,
                                               call.target, masked)


def _finish_cycles(precision: str):
    return lambda call: attention_finish_cycles(call.scalars["rows"], call.scalars["head_dim"],
                                                precision, call.target)


RECORDS: tuple[Kernel, ...] = (
    *(Kernel(_attention_block(p, mode, masked), attention_block(p, mode == "init", masked),
             _block_cycles(p, mode == "init", masked))
      for masked in (False, True) for p in (Precision.F16, Precision.F32)
      for mode in ("init", "accum")),
    *(Kernel(_attention_finish(p), attention_finish(p), _finish_cycles(p))
      for p in (Precision.F16, Precision.F32)),
    Kernel(_attention_merge(), attention_merge,
           lambda call: attention_merge_cycles(call.scalars["rows"], call.scalars["head_dim"],
                                               call.target)),
)
