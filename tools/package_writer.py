"""The package writer: expand the scheduled tile program into per-tile NumPy arrays.

This is the one place where per-tile expansion happens (docs/internals.md, "What we build"):
loops run here, in Python over iterations, and per-tile differences become dense arrays of
the `device.package` steps; no xDSL op is created per tile. The input is a module after
`schedule-exchange` with one `func.func`: placed `tile.buffer`s, scheduled `tile.exchange`s
and their shared `exchange.row`s.

- Exchange, iteration n: the concrete rows are the shared rows with their `#tile.patch`
  values at n (`planning.exchange_rows.instantiate`); each distinct row of a shared row is
  encoded once (`RowInterner`; a new row must also have a well-defined timeline) and named `<row>.<n>`
  when patched. The step is an `ExchangeStep` at `row_address + n * slot_stride(rows)` whose
  `row_id` gives the receiver row to every destination tile, the sender row to the source
  tile and -1 elsewhere; an iteration without traffic (-1) has no step.
- Kernel runs become `KernelStep`s (a guarded `only` run on its one tile, or none).
- Inputs and outputs become `HostTensor`s from the buffers' `#mid.format`s (inputs named like
  the buffers, outputs `result<i>`); `package.assembly` is the `-t ipu-asm` text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import PassFailedException

from device import isa
from device.exchange_timeline import TimelineError, row_timeline
from device.package import ExchangeStep, HostTensor, KernelStep, LoopStep, Package, Step
from ipu_dialects import mid
from ipu_dialects.exchange import RowOp
from ipu_dialects.tile import (
    BufferOp,
    ExchangeOp,
    KernelOp,
    LoopOp,
    WorkProvenanceAttr,
    enclosing_loops,
)
from ipu_dialects.tile_iteration import map_evaluator, selected_iteration
from planning.exchange_phases import recheck_exchange_rows
from planning.exchange_rows import checked_words, instantiate, slot_stride
from planning.pipeline_config import pipeline_config, target_and_tiles
from planning.program_size import check_expansion
from planning.shard_geometry import ShardGeometry
from tools.asm_listing import format_assembly
from tools.package_loops import folds, loop_body
from tools.progress import Progress, no_progress, phase


def provenance_text(provenance: WorkProvenanceAttr, op: Operation, ivs: Sequence[int],
                    folded: frozenset[int] = frozenset()) -> str:
    """`graph.gemm %c %b: rhs block to output-row tiles [r, j=0, k=1]` (no value for the
    index of a loop the package keeps as a loop: `folded` depths)."""
    return located_text(provenance_head(provenance), loop_names(op), ivs, folded)


def provenance_head(provenance: WorkProvenanceAttr) -> str:
    return f"{provenance.op.data} {provenance.value.data}: {provenance.reason.data}"


def loop_names(op: Operation) -> list[str]:
    return [loop.induction_var.name_hint or f"i{depth}"
            for depth, loop in enumerate(enclosing_loops(op))]


def located_text(head: str, names: Sequence[str], ivs: Sequence[int],
                 folded: frozenset[int]) -> str:
    """`provenance_text` from its parts."""
    values = [n if d in folded else f"{n}={v}"
              for d, (n, v) in enumerate(zip(names, ivs, strict=True))]
    where = f" [{', '.join(values)}]" if ivs else ""
    return f"{head}{where}"


def eval_map(affine_map, ivs: Sequence[int]) -> int:
    return int(map_evaluator(affine_map)(ivs)[0])


@dataclass
class RowInterner:
    """Concrete rows of the package, each encoded once per shared row and named after the
    shared row and the first iteration that runs it (so a listing traces back to its op)."""

    base_address: int
    rows: list[np.ndarray] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    ids: dict[tuple[str, tuple[int, ...]], int] = field(default_factory=dict)

    def intern(self, instrs: list, shared: str, symbol: str) -> int:
        """Encode a concrete row; a new one must also have a well-defined event timeline (a
        row `schedule-exchange` checked in this process has, and its words are known)."""
        words = checked_words(instrs, self.base_address)
        try:
            key = (shared, words if words is not None
                   else tuple(isa.encode(instrs, self.base_address)))
            if key not in self.ids and words is None:
                row_timeline(instrs)
        except (isa.EncodeError, TimelineError) as error:
            raise PassFailedException(f"package: row {symbol}: {error}") from error
        if key not in self.ids:
            self.ids[key] = len(self.rows)
            self.rows.append(np.asarray(key[1], dtype=np.uint32))
            self.symbols.append(symbol)
        return self.ids[key]


@dataclass
class ExchangeTable:
    """What every iteration of one scheduled `tile.exchange` reads, decoded from its
    properties once (not once per iteration: loops run thousands of times)."""

    symbols: list[str]
    templates: dict[str, list]  # shared row -> its instructions
    patches: dict[str, list[tuple[int, str, np.ndarray]]]  # row -> (instruction, field, values)
    sender_rows: np.ndarray
    receiver_rows: np.ndarray
    dst_tiles: np.ndarray
    row_address: int
    stride: int
    src_tile: Callable  # the maps, compiled (`map_evaluator`)
    dst_shift: Callable | None
    provenance: str  # `provenance_text`'s head
    loop_names: list[str]
    row_ids: dict[tuple[str, tuple[int, ...]], int] = field(default_factory=dict)
    patch_values: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)

    def values_at(self, symbol: str, n: int) -> tuple[int, ...]:
        """The patch values of row `symbol` in iteration `n` (ints, in patch order)."""
        patches = self.patches[symbol]
        if not patches:
            return ()
        if symbol not in self.patch_values:  # once per row: a tuple per iteration
            self.patch_values[symbol] = list(zip(*(values.tolist() for _, _, values in patches),
                                                 strict=True))
        return self.patch_values[symbol][n]

    @classmethod
    def of(cls, op: ExchangeOp, rows: dict[str, RowOp]) -> ExchangeTable:
        schedule = op.schedule
        if schedule is None:
            raise PassFailedException(
                f"package: {op.name} ({op.provenance.reason.data}) has no rows; "
                "run schedule-exchange first"
            )
        symbols = schedule.row_symbols
        templates = {s: rows[s].instructions() for s in symbols}
        return cls(
            symbols, templates, schedule.patches_by_row(),
            np.asarray(schedule.senders), np.asarray(schedule.receivers),
            op.dst_tiles.as_array(), schedule.address,
            slot_stride(list(templates.values())),
            map_evaluator(op.src_tile.data),
            None if op.dst_shift is None else map_evaluator(op.dst_shift.data),
            provenance_head(op.provenance), loop_names(op),
        )


@dataclass
class KernelTable:
    """What every iteration of one `tile.kernel` reads, decoded from its properties once."""

    symbol: str
    tile_set: frozenset[int]  # `tiles`, for `on_tile`'s membership test
    tiles: np.ndarray
    tiles32: np.ndarray  # the step's copy of `tiles`
    on_tile: Callable | None  # the maps, compiled (`map_evaluator`)
    views: list[tuple[int, Callable]]  # (buffer address, offset) of each pointer
    homes: list[tuple[np.ndarray, Callable, int, int, Callable]]  # tiles, shift, pointer, address, offset
    iv_scalars: list[Callable]
    scalars: tuple[int, ...]
    pointer_count: int
    provenance: str
    loop_names: list[str]

    @classmethod
    def of(cls, op: KernelOp) -> KernelTable:
        tiles = op.tiles.as_array()
        return cls(
            op.symbol, frozenset(op.tiles.tiles()), tiles, tiles.astype(np.int32),
            None if op.on_tile is None else map_evaluator(op.on_tile.data),
            [(buffer_address(view), map_evaluator(offset)) for view, offset in op.pointer_views],
            [(home.tiles.as_array(), map_evaluator(home.shift), home.pointer,
              buffer_address(home.buffer), map_evaluator(home.offset)) for home in op.homes],
            [map_evaluator(m) for m in op.iv_scalar_maps], op.scalar_values, op.pointer_count,
            provenance_head(op.provenance), loop_names(op),
        )


@dataclass
class Expansion:
    """Steps of the program and the rows they use, built by walking the tile program."""

    tiles: int
    templates: dict[str, RowOp]
    rows: RowInterner
    steps: list[Step] = field(default_factory=list)
    tables: dict[ExchangeOp, ExchangeTable] = field(default_factory=dict)
    kernels: dict[KernelOp, KernelTable] = field(default_factory=dict)
    loop_folds: dict[LoopOp, bool] = field(default_factory=dict)  # `folds`, once per loop
    progress: Progress = no_progress  # wraps the iterations of outermost loops
    folded: frozenset[int] = frozenset()  # depths of the enclosing loops kept as loops

    def walk(self, block: Block, ivs: list[int], bounds: list[tuple[int, int]]) -> None:
        for op in block.ops:
            if isinstance(op, LoopOp) and self.folds(op):
                self.steps.append(self.loop_step(op, ivs, bounds))
            elif isinstance(op, LoopOp):
                iterations: Iterable[int] = range(op.lower_bound, op.upper_bound)
                if not ivs:
                    iterations = self.progress(iterations, "package",
                                               op.upper_bound - op.lower_bound)
                for iv in iterations:
                    self.walk(op.body.block, ivs + [iv],
                              bounds + [(op.lower_bound, op.upper_bound)])
            elif isinstance(op, ExchangeOp):
                self.exchange(op, ivs, bounds)
            elif isinstance(op, KernelOp):
                self.kernel(op, ivs)
            elif not isinstance(op, BufferOp | ReturnOp):
                raise PassFailedException(
                    f"package: {op.name} is not at the tile level; the package is built from "
                    "the output of the whole pipeline (ipu-pipeline, or through schedule-exchange)"
                )

    def folds(self, op: LoopOp) -> bool:
        if op not in self.loop_folds:
            self.loop_folds[op] = folds(op)
        return self.loop_folds[op]

    def loop_step(self, op: LoopOp, ivs: list[int], bounds: list[tuple[int, int]]) -> LoopStep:
        """A loop kept as a loop (`tools.package_loops`): its body expanded for the first two
        iterations, their difference the kernels' pointer strides."""
        loop_bounds = bounds + [(op.lower_bound, op.upper_bound)]
        self.folded = self.folded | {len(ivs)}
        try:
            first, second = (self.expanded(op.body.block, ivs + [op.lower_bound + n], loop_bounds)
                             for n in (0, 1))
        finally:
            self.folded = self.folded - {len(ivs)}
        where = provenance_text(op.provenance, op, ivs, self.folded)
        return LoopStep(op.upper_bound - op.lower_bound, loop_body(first, second, where), where)

    def expanded(self, block: Block, ivs: list[int], bounds: list[tuple[int, int]]) -> list[Step]:
        outer, self.steps = self.steps, []
        try:
            self.walk(block, ivs, bounds)
            return self.steps
        finally:
            self.steps = outer

    def concrete_row(self, table: ExchangeTable, symbol: str, n: int) -> int:
        patches = table.patches[symbol]
        values = table.values_at(symbol, n)
        key = (symbol, values)
        row = table.row_ids.get(key)
        if row is None:  # the same row and patch values are the same concrete row
            instrs = instantiate(table.templates[symbol],
                                 [(instruction, field_name, value) for (instruction, field_name, _), value
                                  in zip(patches, values, strict=True)])
            row = self.rows.intern(instrs, symbol, f"{symbol}.{n}" if patches else symbol)
            table.row_ids[key] = row
        return row

    def table(self, op: ExchangeOp) -> ExchangeTable:
        if op not in self.tables:
            self.tables[op] = ExchangeTable.of(op, self.templates)
        return self.tables[op]

    def exchange(self, op: ExchangeOp, ivs: list[int], bounds: list[tuple[int, int]]) -> None:
        """One phase: every group's sender runs its sender row, its receivers (the
        destination tiles shifted by the group's shift) their receiver row; a sender that
        receives for another group runs its full-duplex sender row."""
        table = self.table(op)
        groups = op.group_count
        n = selected_iteration(bounds, ivs, op.row_loop_positions(len(ivs)))
        row_id = np.full(self.tiles, -1, dtype=np.int32)
        active = [g for g in range(groups) if table.sender_rows[n * groups + g] >= 0]
        grouped = op.groups is not None
        # receivers first: a tile that also sends for another group runs that group's
        # (full-duplex) sender row, which receives too
        for g in active:
            group_ivs = [*ivs, g] if grouped else ivs
            shift = 0 if table.dst_shift is None else int(table.dst_shift(group_ivs)[0])
            receiver_row = table.receiver_rows[n * groups + g]
            row_id[table.dst_tiles + shift] = self.concrete_row(
                table, table.symbols[receiver_row], n * groups + g)
        for g in active:
            group_ivs = [*ivs, g] if grouped else ivs
            row_id[int(table.src_tile(group_ivs)[0])] = self.concrete_row(
                table, table.symbols[table.sender_rows[n * groups + g]], n * groups + g)
        if np.all(row_id < 0):
            return  # no receiver in this iteration: no traffic, no phase
        address = table.row_address + n * table.stride
        self.steps.append(ExchangeStep(address, row_id, located_text(
            table.provenance, table.loop_names, ivs, self.folded)))

    def kernel(self, op: KernelOp, ivs: list[int]) -> None:
        if op not in self.kernels:
            self.kernels[op] = KernelTable.of(op)
        table = self.kernels[op]
        tiles, tiles32 = table.tiles, table.tiles32
        if table.on_tile is not None:
            only = int(table.on_tile(ivs)[0])
            if only not in table.tile_set:
                return
            tiles = np.array([only], dtype=np.int64)
            tiles32 = tiles.astype(np.int32)
        pointers = np.broadcast_to(
            np.asarray([address + int(offset(ivs)[0]) for address, offset in table.views],
                       dtype=np.int64), (len(tiles), table.pointer_count)).copy()
        for home_tiles, shift, pointer, address, offset in table.homes:
            # the tiles that read this pointer's block where it lives
            at_home = np.isin(tiles, home_tiles + int(shift(ivs)[0]))
            pointers[at_home, pointer] = address + int(offset(ivs)[0])
        self.steps.append(KernelStep(
            table.symbol, tiles32.copy(),
            pointers,
            (*(int(m(ivs)[0]) for m in table.iv_scalars), *table.scalars),
            located_text(table.provenance, table.loop_names, ivs, self.folded)))


def view_address(view: SSAValue, offset, ivs: Sequence[int]) -> int:
    """The absolute byte address a kernel view points at in iteration `ivs`."""
    return buffer_address(view) + eval_map(offset, ivs)


def buffer_address(view: SSAValue) -> int:
    buffer = view.owner
    assert isinstance(buffer, BufferOp) and buffer.address_value is not None  # placed
    return buffer.address_value


def host_tensor(buffer: BufferOp, name: str) -> HostTensor:
    origin, fmt = buffer.origin, buffer.format
    assert isinstance(origin, TensorType) and isinstance(fmt, mid.TensorFormatAttr)  # host I/O
    geometry = ShardGeometry.from_format(origin.get_shape(), fmt)
    tiles = geometry.all_tiles()  # [replication, partitions]
    origins = np.tile(geometry.all_origins(), (geometry.replication, 1))
    flat_tiles = tiles.reshape(-1)
    outside = [int(t) for t in flat_tiles if int(t) not in buffer.tiles]
    if outside:
        raise PassFailedException(
            f"package: buffer @{buffer.sym_name.data} has a shard on tile {outside[0]} "
            f"outside its tile set {buffer.tiles}"
        )
    return HostTensor(
        name, tuple(origin.get_shape()), buffer.precision.data, buffer.order.data,
        buffer.shard_shape, flat_tiles.astype(np.int32),
        np.full(len(flat_tiles), buffer.address_value, dtype=np.int64), origins,
        scale=fmt.scale.data,
    )


def host_tensors(buffers: list[BufferOp]) -> tuple[list[HostTensor], list[HostTensor]]:
    """Inputs by argument index, named like the buffers (the graph's argument names)."""
    by_kind: dict[str, dict[int, BufferOp]] = {"input": {}, "output": {}}
    for buffer in buffers:
        if buffer.kind.data in by_kind:
            assert buffer.index is not None  # inputs and outputs are numbered (verifier)
            by_kind[buffer.kind.data][buffer.index.value.data] = buffer
    inputs = [host_tensor(by_kind["input"][i], by_kind["input"][i].sym_name.data)
              for i in sorted(by_kind["input"])]
    outputs = [host_tensor(by_kind["output"][i], f"result{i}")
               for i in sorted(by_kind["output"])]
    return inputs, outputs


def single_function(module: ModuleOp) -> FuncOp:
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if len(funcs) != 1:
        raise PassFailedException(f"package: expected one func.func, found {len(funcs)}")
    return funcs[0]


def unplaced(buffers: list[BufferOp]) -> list[str]:
    return [b.sym_name.data for b in buffers if b.address_value is None]


def written_copies() -> Callable[[ExchangeOp | KernelOp], int]:
    """The steps `Expansion` builds for an op: one per iteration of each enclosing loop it
    unrolls, two per loop it keeps as a loop (it expands the first two iterations)."""
    folded: dict[LoopOp, bool] = {}  # folds walks the loop's body: once per loop

    def iterations(loop: LoopOp) -> int:
        if loop not in folded:
            folded[loop] = folds(loop)
        return 2 if folded[loop] else max(loop.upper_bound - loop.lower_bound, 0)

    return lambda op: math.prod(iterations(loop) for loop in enclosing_loops(op))


def build_package(module: ModuleOp, with_assembly: bool = True,
                  progress: Progress = no_progress) -> Package:
    """The package of a scheduled module; `with_assembly` also formats `package.assembly`
    (the `-t ipu-asm` text, which `Package.save` writes as program.s), which a run that
    keeps no package and `-t ipu-rows` skip. `progress` wraps the outermost loops."""
    target, tiles = target_and_tiles(module, "package")
    profiling = pipeline_config(module, "package").profiling.data
    func = single_function(module)
    buffers = [op for op in func.walk() if isinstance(op, BufferOp)]
    if missing := unplaced(buffers):
        raise PassFailedException(
            f"package: buffers without addresses: {', '.join(missing)} (run place-memory)"
        )
    check_expansion(module, "package", written_copies())  # before any loop is expanded
    recheck_exchange_rows(module)  # rows read from IR text are untrusted, like a package's
    templates = {op.sym_name.data: op for op in module.ops if isinstance(op, RowOp)}
    rows = RowInterner(target.code_region[0])
    expansion = Expansion(tiles, templates, rows, progress=progress)
    expansion.walk(func.body.block, [], [])
    inputs, outputs = host_tensors(buffers)
    tiles_used = max((max(b.tiles.tiles(), default=-1) for b in buffers), default=-1) + 1
    metadata = {"row_symbols": rows.symbols, "tiles_used": tiles_used, "profiling": profiling}
    estimate = func.attributes.get(mid.ESTIMATE_ATTR_NAME)
    if isinstance(estimate, IntegerAttr):  # the selector's (`planning/program_estimate.py`)
        metadata["estimated_cycles"] = estimate.value.data
    package = Package(
        target.name, tiles, rows.rows, expansion.steps, inputs, outputs, func.sym_name.data,
        metadata=metadata,
    )
    if with_assembly:
        package.assembly = phase(progress, "listing", lambda: format_assembly(package))
    return package

