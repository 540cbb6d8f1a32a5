"""`place-memory`: give every `tile.buffer` an SRAM address (the same on every tile of its set).

Rules (docs/internals.md, "tile level"; spec: architecture.md, the retained GEMM plan):
- nothing is placed in the code region (`Target.code_region`): exchange rows live there;
  the sources and destinations of `tile.exchange`s are also kept out of the memory elements
  the code region touches, so a row's instruction fetch never contends with its own sends
  or incoming writes (`schedule-exchange` checks this with `device.memory_conflicts`);
- `interleaved` buffers go to the interleaved region (`interleaved_start`..`memory_end`);
  standard buffers go below it, and spill into the interleaved region only when the standard
  region is full (interleaved memory can hold anything; the reverse is not true);
- PACE operands (`amp_*` element orders) are aligned to `Target.pace_alignment`, every buffer
  to its own declared alignment (the larger of the two wins);
- a buffer's access tail (the AMP left stream reads past its end) is reserved right after it;
- the `out` and `left` operands of every kernel that has both (the AMP GEMMs, from the ABI
  registry `device/kernels.py`) sit in different memory elements (`Target.elements_of_range`);
- two buffers whose tile sets share a tile never overlap.

Placement is first fit, interleaved buffers first. Lifetimes: all buffers of one function are
live for the whole function for now (no reuse). The tile count and target come from
`ipu.config`; hand-written tile IR without it is placed for the default target.

When a tile cannot hold its buffers the pass fails the way Poplar does, naming the tile, the
bytes needed and available, and the buffers with their sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from device.kernels import UnknownKernelError, get_kernel
from device.target import Target, get_target
from ipu_dialects.mid import CONFIG_ATTR_NAME, PipelineConfigAttr
from ipu_dialects.tile import BufferOp, ExchangeOp, KernelOp, configured_tile_count
from passes.pipeline_config import configured_target

PACE_ORDERS = ("amp_left", "amp_right", "amp_output")


def align_up(address: int, alignment: int) -> int:
    return -(-address // alignment) * alignment


def module_target(module: ModuleOp) -> Target:
    """The configured target; hand-written tile IR without `ipu.config` gets the default."""
    config = module.attributes.get(CONFIG_ATTR_NAME)
    if isinstance(config, PipelineConfigAttr):
        return configured_target(config, PlaceMemoryPass.name)
    return get_target()


@dataclass
class Placed:
    buffer: BufferOp
    address: int
    extent: int  # bytes + access tail

    @property
    def end(self) -> int:
        return self.address + self.extent


@dataclass
class FunctionPlacement:
    """Places the buffers of one function (all live together)."""

    function: func.FuncOp
    target: Target
    tile_count: int
    placed: list[Placed] = field(default_factory=list)
    exchanged: set[BufferOp] = field(default_factory=set)

    # -- facts about buffers -------------------------------------------------------------
    def alignment(self, buffer: BufferOp) -> int:
        pace = self.target.pace_alignment if buffer.order.data in PACE_ORDERS else 1
        return max(pace, buffer.alignment_bytes)

    @staticmethod
    def extent(buffer: BufferOp) -> int:
        return buffer.byte_size + buffer.tail_bytes

    @staticmethod
    def share_a_tile(a: BufferOp, b: BufferOp) -> bool:
        if a.tiles.is_range and b.tiles.is_range:
            return max(a.tiles.start.data, b.tiles.start.data) < min(a.tiles.stop.data, b.tiles.stop.data)
        return bool(set(a.tiles.tiles()) & set(b.tiles.tiles()))

    def distinct_pairs(self) -> dict[BufferOp, set[BufferOp]]:
        """Buffers that must not share a memory element: each kernel's `out` and `left`."""
        partners: dict[BufferOp, set[BufferOp]] = {}
        for op in self.function.walk():
            if not isinstance(op, KernelOp):
                continue
            try:
                pointers = get_kernel(op.symbol).pointers
            except UnknownKernelError as error:
                raise PassFailedException(f"place-memory: tile.kernel @{op.symbol}: {error}") from None
            if "out" not in pointers or "left" not in pointers:
                continue
            out = op.views[pointers.index("out")].owner
            left = op.views[pointers.index("left")].owner
            assert isinstance(out, BufferOp) and isinstance(left, BufferOp)
            partners.setdefault(out, set()).add(left)
            partners.setdefault(left, set()).add(out)
        return partners

    # -- capacity diagnostics ------------------------------------------------------------
    def bytes_per_tile(self, buffers: Sequence[BufferOp]) -> np.ndarray:
        needed = np.zeros(self.tile_count + 1, dtype=np.int64)
        for buffer in buffers:
            size = self.extent(buffer)
            if buffer.tiles.is_range:
                needed[buffer.tiles.start.data] += size
                needed[buffer.tiles.stop.data] -= size
            else:
                for tile in buffer.tiles.tiles():
                    needed[tile] += size
                    needed[tile + 1] -= size
        return np.cumsum(needed)[: self.tile_count]

    def buffer_list(self, buffers: Sequence[BufferOp], tile: int) -> str:
        parts = []
        for buffer in buffers:
            if tile in buffer.tiles:
                tail = f" + tail {buffer.tail_bytes}" if buffer.tail_bytes else ""
                parts.append(f"{buffer.sym_name.data} {buffer.byte_size}{tail}")
        return ", ".join(parts)

    def check_capacity(self, buffers: Sequence[BufferOp]) -> None:
        target = self.target
        code = target.code_region_bytes
        needed = self.bytes_per_tile(buffers) + code
        worst = int(np.argmax(needed))
        if needed[worst] > target.sram_bytes:
            over = int(np.count_nonzero(needed > target.sram_bytes))
            others = f"; {over - 1} other tile(s) overflow too" if over > 1 else ""
            raise PassFailedException(
                f"Out of memory on tile {worst}: {int(needed[worst])} bytes needed, tiles only "
                f"have {target.sram_bytes} bytes (code region {code}, buffers: "
                f"{self.buffer_list(buffers, worst)}){others}"
            )
        interleaved = [b for b in buffers if b.interleaved]
        region = target.memory_end - target.interleaved_start
        needed = self.bytes_per_tile(interleaved)
        worst = int(np.argmax(needed)) if len(needed) else 0
        if len(needed) and needed[worst] > region:
            raise PassFailedException(
                f"Out of interleaved memory on tile {worst}: interleaved buffers need "
                f"{int(needed[worst])} bytes, the interleaved region has {region} bytes "
                f"(buffers: {self.buffer_list(interleaved, worst)})"
            )

    # -- placement -----------------------------------------------------------------------
    def exchanged_buffers(self) -> set[BufferOp]:
        """Sources and destinations of exchange phases."""
        ends: set[BufferOp] = set()
        for op in self.function.walk():
            if isinstance(op, ExchangeOp):
                ends.update(v.owner for v in (op.src, op.dst) if isinstance(v.owner, BufferOp))
        return ends

    def code_elements_end(self) -> int:
        """End of the last memory element the code region touches."""
        code_start, code_end = self.target.code_region
        return max(e.end for e in self.target.memory_elements
                   if e.start < code_end and code_start < e.end)

    def regions(self, buffer: BufferOp) -> list[tuple[int, int]]:
        target = self.target
        interleaved = (target.interleaved_start, target.memory_end)
        if buffer.interleaved:
            return [interleaved]
        # A row's instruction fetch and its send reads or incoming writes happen in the same
        # exchange events; keeping exchanged buffers out of the code's elements avoids the
        # contention (spec: exchange-isa.md), which schedule-exchange checks.
        start = self.code_elements_end() if buffer in self.exchanged else target.code_region[1]
        return [(start, target.interleaved_start), interleaved]

    def fits(self, buffer: BufferOp, address: int, end: int, partners: set[BufferOp]) -> bool:
        elements = None
        for other in self.placed:
            if not self.share_a_tile(buffer, other.buffer):
                continue
            if address < other.end and other.address < end:
                return False
            if other.buffer in partners:
                if elements is None:
                    elements = self.target.elements_of_range(address, end - address)
                if elements & self.target.elements_of_range(other.address, other.extent):
                    return False
        return True

    def candidates(self, buffer: BufferOp, start: int, stop: int, with_elements: bool) -> list[int]:
        """Aligned first-fit candidates: region start, ends of placed buffers, element starts."""
        align = self.alignment(buffer)
        points = {start}
        points.update(p.end for p in self.placed if start <= p.end < stop)
        if with_elements:
            points.update(e.start for e in self.target.memory_elements if start <= e.start < stop)
        return sorted(align_up(p, align) for p in points)

    def find_address(self, buffer: BufferOp, partners: set[BufferOp]) -> int | None:
        extent = self.extent(buffer)
        for start, stop in self.regions(buffer):
            for address in self.candidates(buffer, start, stop, bool(partners)):
                end = address + extent
                if end <= stop and self.fits(buffer, address, end, partners):
                    return address
        return None

    def place(self) -> None:
        buffers = [op for op in self.function.walk() if isinstance(op, BufferOp)]
        if not buffers:
            return
        self.tile_count = max(self.tile_count, max(b.tiles.stop.data for b in buffers))
        self.check_capacity(buffers)
        partners = self.distinct_pairs()
        self.exchanged = self.exchanged_buffers()
        # Interleaved buffers first: they have only one region to go to.
        ordered = [b for b in buffers if b.interleaved] + [b for b in buffers if not b.interleaved]
        for buffer in ordered:
            wanted = partners.get(buffer, set())
            address = self.find_address(buffer, wanted)
            if address is None:
                self.fail(buffer, wanted, buffers)
            assert address is not None
            self.placed.append(Placed(buffer, address, self.extent(buffer)))
            buffer.set_address(address)

    def fail(self, buffer: BufferOp, partners: set[BufferOp], buffers: Sequence[BufferOp]) -> None:
        name = buffer.sym_name.data
        tile = buffer.tiles.tiles()[0]
        if partners and self.find_address(buffer, set()) is not None:
            placed = ", ".join(
                f"@{p.buffer.sym_name.data} at {p.address:#x} ({p.extent} bytes, elements "
                f"{sorted(self.target.elements_of_range(p.address, p.extent))})"
                for p in self.placed
                if p.buffer in partners
            )
            raise PassFailedException(
                f"place-memory: cannot keep @{name} ({self.extent(buffer)} bytes) in a memory "
                f"element apart from {placed} on tile {tile}: no free range of its memory class "
                "avoids those elements"
            )
        raise PassFailedException(
            f"Out of memory on tile {tile}: no free {buffer.memory.data} range of "
            f"{self.extent(buffer)} bytes (aligned to {self.alignment(buffer)}) left for @{name} "
            f"after placing {', '.join('@' + p.buffer.sym_name.data for p in self.placed) or 'nothing'} "
            f"(buffers: {self.buffer_list(buffers, tile)})"
        )


@dataclass(frozen=True)
class PlaceMemoryPass(ModulePass):
    """Assign an SRAM `address` to every `tile.buffer` (see the module docstring)."""

    name = "place-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op)
        tiles = configured_tile_count(op) or 0
        for function in op.walk():
            if isinstance(function, func.FuncOp):
                FunctionPlacement(function, target, tiles).place()
