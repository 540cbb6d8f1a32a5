"""The IPU21 target description: every hardware number the compiler and the model use.

Sources are tagged: [C] stated by public material, [I] derived from stated numbers, [M] our
model choice.
Nothing else in the code base may hold a hardware constant: the cost model, placement,
the exchange scheduler and the executable device model all read this one description.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from xdsl.utils.str_enum import StrEnum


class Precision(StrEnum):
    """Storage precision names shared by formats (`#mid.format`), kernels and the model."""

    F8F143 = "f8f143"
    F16 = "f16"
    F32 = "f32"
    # 32-bit signed integers: graph.gather's indices (row numbers), written by the host
    # exactly; no kernel computes with them, the gather kernel reads them as row numbers.
    I32 = "i32"


class MemoryClass(StrEnum):
    """Where a buffer lives in tile memory: anywhere, or in the interleaved region."""

    STANDARD = "standard"
    INTERLEAVED = "interleaved"


BYTES_PER_ELEMENT: dict[str, int] = {Precision.F8F143: 1, Precision.F16: 2, Precision.F32: 4,
                                     Precision.I32: 4}
# [C] the supervisor's instruction words, exchange items and PIC/send word addresses are
# 32-bit words (spec: exchange-isa.md).
WORD_BYTES = 4


@dataclass(frozen=True)
class MemoryElement:
    """One SRAM element: accesses to the same element in one cycle contend."""

    index: int
    start: int  # absolute byte address, inclusive
    end: int  # absolute byte address, exclusive
    interleaved: bool

    def contains(self, address: int) -> bool:
        return self.start <= address < self.end


@dataclass(frozen=True)
class Target:
    name: str = "ipu21"
    # [C] tiles per chip (Mk2 GC200, Bow, C600).
    tiles: int = 1472
    # [C] worker contexts per tile, plus the supervisor.
    workers_per_tile: int = 6
    # [C] SRAM per tile: 624 KiB.
    sram_bytes: int = 638_976
    # [M] tile memory base address (third-party, unconfirmed).
    memory_base: int = 0x4C000
    # [M] size of one memory element; not public.
    element_bytes: int = 0x10000
    # [M] bytes at the top of memory that form the interleaved region ("upper part").
    interleaved_bytes: int = 0x3C000
    # [M] bytes at the bottom of memory reserved for code (exchange rows); non-interleaved [C].
    code_region_bytes: int = 0x8000
    # [C] Bow clock, used only to turn cycles into seconds in reports.
    clock_hz: float = 1.85e9
    # [C]/[I] AMP multiply-accumulates per tile per cycle, by input precision.
    amp_macs_per_cycle: dict[str, int] = field(
        default_factory=lambda: {Precision.F16: 64, Precision.F32: 16, Precision.F8F143: 128}
    )
    # [M] fixed cycles to call a kernel and fill the AMP pipeline.
    kernel_call_cycles: int = 50
    # [M] bytes a tile-local copy or vector kernel moves per cycle (one 64-bit load/store).
    vector_bytes_per_cycle: int = 8
    # [C] 64-bit vector loads and stores need 8-byte aligned addresses (poplibs: AMP input
    # 8-byte aligned): every pointer of a descriptor kernel (convert, gather, gelu, add,
    # attention) is aligned to this.
    vector_alignment: int = 8
    # [I] FP32 lanes of the vector arithmetic unit per cycle (64-bit f32v2 instructions); the
    # add, gelu and softmax kernels compute in FP32 whatever their storage precision.
    vector_f32_lanes: int = 2
    # [M] cycles per element of the erf evaluation in gelu (a polynomial on f32v2 pairs
    # plus its range reduction); not public.
    erf_cycles_per_element: int = 8
    # [M] cycles per element of tanh in gelu's tanh form (gelu_tanh); not public.
    tanh_cycles_per_element: int = 4
    # [M] FP32 vector passes of gelu_tanh around its tanh: the cubic x + 0.044715 x^3 (two
    # multiplies, one multiply-add), the sqrt(2/pi) factor, then x/2 * (1 + t) (two).
    tanh_gelu_f32_passes: int = 5
    # [M] cycles per element of exp in attention's softmax; not public.
    exp_cycles_per_element: int = 4
    # [M] cycles per output row of the gather_rows kernel besides its copy: load the index,
    # check it against the table's rows and compute the row's address; not public.
    gather_row_cycles: int = 6
    # [M] cycles a round kernel (gather_round, gather_view_round) takes to find the shard it
    # received from its tile id: a subtract, a modulo and a division by constants (each a
    # multiply by a reciprocal and a shift) and a multiply-add; not public.
    round_select_cycles: int = 8
    # [M] cycles of one FP32 reciprocal square root (layer_norm, once per row); not public.
    rsqrt_cycles: int = 12
    # [C] one 32-bit word per tile per exchange event; one event per cycle (4 bytes/cycle).
    exchange_word_bytes: int = WORD_BYTES
    # [C] bulk-synchronous sync cost, cycles (one poplibs plan).
    sync_cycles: int = 90
    # Spec: PACE operands (AMP left/right/output) require 32-byte alignment.
    pace_alignment: int = 32
    # [M] the AMP left (input) stream is pipelined: it loads one 128-bit word beyond the end
    # of a panel, so its buffer carries this access tail. Not public; our model choice.
    amp_left_access_tail_bytes: int = 16
    # [M] exchange latency model: tiles sit in columns of `column_tiles`; a word crosses
    # `latency_base` stages plus one per tile position within the column and
    # `latency_per_column` per column crossed. Transit time is fixed and depends on tile
    # positions [C, US 11,119,873]; the table itself is not public.
    column_tiles: int = 16
    latency_base: int = 6
    latency_per_column: int = 2

    # ---- memory -------------------------------------------------------------------
    @property
    def memory_end(self) -> int:
        return self.memory_base + self.sram_bytes

    @property
    def interleaved_start(self) -> int:
        return self.memory_end - self.interleaved_bytes

    @property
    def code_region(self) -> tuple[int, int]:
        return (self.memory_base, self.memory_base + self.code_region_bytes)

    @property
    def usable_bytes(self) -> int:
        """Tile memory outside the code region: what a tile's buffers may take together."""
        return self.sram_bytes - self.code_region_bytes

    @property
    def standard_bytes(self) -> int:
        """Tile memory outside the code region and the interleaved region."""
        return self.sram_bytes - self.code_region_bytes - self.interleaved_bytes

    @property
    def row_memory(self) -> tuple[int, int]:
        """[start, end) where exchange rows may lie: the code region first and, when a
        program's rows do not fit there, standard memory no buffer takes
        (`passes/schedule_exchange.py`, `RowMemory`); code is never in the interleaved
        region ([C] ipu21-facts)."""
        return self.memory_base, self.interleaved_start

    @cached_property
    def memory_elements(self) -> tuple[MemoryElement, ...]:
        """Elements of `element_bytes`, split at the interleaved boundary."""
        elements: list[MemoryElement] = []
        for lo, hi, interleaved in (
            (self.memory_base, self.interleaved_start, False),
            (self.interleaved_start, self.memory_end, True),
        ):
            start = lo
            while start < hi:
                end = min(start + self.element_bytes, hi)
                elements.append(MemoryElement(len(elements), start, end, interleaved))
                start = end
        return tuple(elements)

    @cached_property
    def element_starts(self) -> list[int]:
        """Each memory element's first byte address, in order (`element_of` searches them)."""
        return [element.start for element in self.memory_elements]

    def element_of(self, address: int) -> MemoryElement:
        index = bisect.bisect_right(self.element_starts, address) - 1
        if index >= 0 and self.memory_elements[index].contains(address):
            return self.memory_elements[index]
        raise ValueError(
            f"address {address:#x} is outside tile memory "
            f"[{self.memory_base:#x}, {self.memory_end:#x})"
        )

    def elements_of_range(self, address: int, nbytes: int) -> frozenset[int]:
        """Indices of every element touched by [address, address + nbytes)."""
        if nbytes <= 0:
            return frozenset()
        first = self.element_of(address).index
        last = self.element_of(address + nbytes - 1).index
        return frozenset(range(first, last + 1))

    # ---- exchange -----------------------------------------------------------------
    def latency(self, source: int, receiver: int) -> int:
        """Events between a word leaving `source` and reaching `receiver`'s input: L(s, r)."""
        return int(self.latency_matrix(2, np.array([source, receiver]))[0, 1])

    def latency_matrix(self, tiles: int, ids: np.ndarray | None = None) -> np.ndarray:
        """L(s, r) for all s, r < tiles (or among `ids`), as an int64 matrix (diagonal unused)."""
        ids = np.arange(tiles) if ids is None else ids
        return self.latencies(ids[:, None], ids[None, :])

    def latencies(self, sources: np.ndarray, receivers: np.ndarray) -> np.ndarray:
        """L(s, r) elementwise over broadcast arrays of source and receiver tiles."""
        sources, receivers = np.asarray(sources), np.asarray(receivers)
        return (self.latency_base
                + np.abs(sources % self.column_tiles - receivers % self.column_tiles)
                + self.latency_per_column * np.abs(sources // self.column_tiles
                                                   - receivers // self.column_tiles))

    def max_latency(self, tiles: int) -> int:
        """The largest L(s, r) among the first `tiles` tiles (`latency_base` for one), without
        the table: L grows with the distance in position and the distance in columns, and both
        are largest at once, between the last tile of the first column and the first tile of
        the last one (within one column, between its two ends)."""
        if tiles <= 1:
            return self.latency_base
        if tiles <= self.column_tiles:
            return self.latency_base + tiles - 1
        last_column = (tiles - 1) // self.column_tiles
        return self.latency_base + self.column_tiles - 1 + self.latency_per_column * last_column

    # ---- compute ------------------------------------------------------------------
    def amp_cycles(self, macs: int, precision: str) -> int:
        rate = self.amp_macs_per_cycle[precision]
        return self.kernel_call_cycles + -(-macs // rate)

    def vector_cycles(self, nbytes: int) -> int:
        return self.kernel_call_cycles + -(-nbytes // self.vector_bytes_per_cycle)


def pair_tile(tile):
    """[M] The tile that shares its two incoming exchange buses with `tile` (tiles 2i and
    2i + 1; poplibs: two tiles per shared exchange bus):
    the partner of a pair broadcast's receiver. Ints or NumPy arrays."""
    return tile ^ 1


_LATENCY_TABLES: dict[tuple[int, int], np.ndarray] = {}


def latency_table(target: Target, tiles: int) -> np.ndarray:
    """`target.latency_matrix(tiles)`, computed once per target and tile count and read-only:
    the GEMM planner, its cost model and schedule-exchange all read it (1472 x 1472 takes
    about 40 ms). Keyed by identity: a Target holds a dict, so it is not hashable."""
    key = (id(target), tiles)
    if key not in _LATENCY_TABLES:
        if len(_LATENCY_TABLES) > 4:
            _LATENCY_TABLES.clear()
        table = target.latency_matrix(tiles)
        table.setflags(write=False)
        _LATENCY_TABLES[key] = table
    return _LATENCY_TABLES[key]


IPU21 = Target()


def get_target(name: str = "ipu21") -> Target:
    if name != IPU21.name:
        raise ValueError(f"unknown target '{name}'; known targets: {IPU21.name}")
    return IPU21
