"""The `tile` dialect: logical per-tile work lists (buffers, loops, exchange phases, kernels).

An op describes work for a *set of tiles*, never one op per tile, and loops stay loops: the IR
keeps the size of the program, not of the chip. Per-iteration quantities (the home tile of a
block, byte offsets into a buffer) are builtin `affine_map`s over the indices of the enclosing
`tile.loop`s, which each op takes as `index` operands (outermost loop first), like MLIR's
affine ops. There are no SRAM addresses until `place-memory`, and no exchange rows until
`schedule-exchange`; both fill in optional properties of the ops defined here.

The syntax of every op and attribute, and a worked example (a GEMM after `schedule-exchange`),
are in docs/internals.md, "tile level". Shared syntax pieces: `ipu_dialects/tile_syntax.py`;
shared verification helpers: `ipu_dialects/tile_checks.py`.

The ops implement the interfaces that the passes ask instead of an op's class (what an op
reads and writes, which buffers it accesses at once, how it moves into an outer loop):
docs/internals.md, "Tile work interfaces".
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar, final

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    IndexType,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.ir.affine import (
    AffineMap,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    EffectInstance,
    MemoryEffect,
    MemoryEffectKind,
    NoTerminator,
    Resource,
    SymbolOpInterface,
    SymbolTable,
    SymbolUserOpInterface,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from device.kernels import KERNELS, UnknownKernelError, get_kernel
from device.layouts import shard_bytes
from device.target import IPU21, WORD_BYTES, MemoryClass
from ipu_dialects.exchange import RowOp
from ipu_dialects.shared_attrs import (
    ElementOrderAttr,
    MemoryClassAttr,
    PrecisionAttr,
    configured_tile_count,
    enum_attr,
)
from ipu_dialects.tile_checks import (
    NamedInDiagnostics,
    check_map,
    check_resident,
    check_tile_set_fits,
    check_view_inside,
    check_word_aligned,
    describe,
    map_values,
)
from ipu_dialects.tile_iteration import iteration_count, linear_in, map_dims, under_outer_loop
from ipu_dialects.tile_schedule import ExchangeScheduleAttr, RowPatchAttr
from ipu_dialects.tile_syntax import (
    int_prop,
    parse_attribute_of,
    parse_enum,
    parse_i64,
    parse_ivs,
    parse_view,
    print_ivs,
    print_map,
    print_provenance_and_attrs,
    print_view,
)

# ----------------------------------------------------------------------------------------------
# Types and attributes
# ----------------------------------------------------------------------------------------------


@final
@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """`!tile.buffer`: a distributed per-tile buffer (its shape lives on the `tile.buffer`)."""

    name = "tile.buffer"


class BufferKind(StrEnum):
    INPUT = "input"
    OUTPUT = "output"
    SCRATCH = "scratch"


@irdl_attr_definition
class BufferKindAttr(EnumAttribute[BufferKind], SpacedOpaqueSyntaxAttribute):
    name = "tile.buffer_kind"


@irdl_attr_definition
class TileSetAttr(ParametrizedAttribute):
    """A static set of tile ids: `#tile.tiles<0 to 4>` (half-open: 0..3) or `#tile.tiles<[0, 2, 7]>`.

    `listed` is empty for a range; otherwise it holds the ids and `start`/`stop` are the
    smallest id and the largest id + 1.
    """

    name = "tile.tiles"
    start: IntAttr
    stop: IntAttr
    listed: ArrayAttr[IntAttr]

    def __init__(self, start: int, stop: int, listed: Sequence[int] = ()):
        super().__init__(IntAttr(start), IntAttr(stop), ArrayAttr(IntAttr(t) for t in listed))

    @staticmethod
    def range(start: int, stop: int) -> TileSetAttr:
        return TileSetAttr(start, stop)

    @staticmethod
    def of(tiles: Iterable[int]) -> TileSetAttr:
        """The smallest representation: a range when the ids are consecutive."""
        ids = sorted(set(tiles))
        if ids and ids == list(range(ids[0], ids[-1] + 1)):
            return TileSetAttr(ids[0], ids[-1] + 1)
        return TileSetAttr(ids[0] if ids else 0, ids[-1] + 1 if ids else 0, ids)

    @property
    def is_range(self) -> bool:
        return not self.listed.data

    def tiles(self) -> Sequence[int]:
        if self.is_range:
            return range(self.start.data, self.stop.data)
        return tuple(t.data for t in self.listed.data)

    def as_array(self) -> np.ndarray:
        if self.is_range:
            return np.arange(self.start.data, self.stop.data, dtype=np.int64)
        return np.asarray(self.tiles(), dtype=np.int64)

    @property
    def count(self) -> int:
        return len(self.tiles())

    def __contains__(self, tile: object) -> bool:
        return isinstance(tile, int | np.integer) and int(tile) in self.tiles()

    def issubset(self, other: TileSetAttr) -> bool:
        if self.is_range and other.is_range:
            return other.start.data <= self.start.data and self.stop.data <= other.stop.data
        return set(self.tiles()) <= set(other.tiles())

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        # `a to b`, not `[a, b)`: MLIR's generic parser needs balanced brackets in the body
        with parser.in_angle_brackets():
            if parser.parse_optional_punctuation("[") is None:
                start = parser.parse_integer(allow_boolean=False)
                parser.parse_keyword("to", " in a tile range 'first to end'")
                stop = parser.parse_integer(allow_boolean=False)
                return (IntAttr(start), IntAttr(stop), ArrayAttr(()))
            ids = [parser.parse_integer(allow_boolean=False)]
            while parser.parse_optional_punctuation(","):
                ids.append(parser.parse_integer(allow_boolean=False))
            parser.parse_punctuation("]", " to end a tile list")
        return (IntAttr(min(ids)), IntAttr(max(ids) + 1), ArrayAttr(IntAttr(t) for t in ids))

    def print_parameters(self, printer: Printer) -> None:
        if self.is_range:
            printer.print_string(f"<{self.start.data} to {self.stop.data}>")
        else:
            printer.print_string("<[" + ", ".join(str(t) for t in self.tiles()) + "]>")

    def verify(self) -> None:
        start, stop = self.start.data, self.stop.data
        if start < 0:
            raise VerifyException(f"tile set {self}: tile ids must be >= 0, got {start}")
        if self.is_range:
            if stop <= start:
                raise VerifyException(f"tile set [{start}, {stop}) is empty")
            return
        ids = [t.data for t in self.listed.data]
        if any(b <= a for a, b in zip(ids, ids[1:])):
            raise VerifyException(f"tile list {ids} must be strictly increasing")
        if (start, stop) != (ids[0], ids[-1] + 1):
            raise VerifyException(f"tile list {ids}: bounds must be [{ids[0]}, {ids[-1] + 1})")


def parse_tiles_after_on(parser: Parser) -> TileSetAttr:
    """`on #tile.tiles<...>`: the tile set an op runs on or sends to."""
    parser.parse_keyword("on")
    tiles = parser.parse_attribute()
    if not isinstance(tiles, TileSetAttr):
        parser.raise_error(f"expected a #tile.tiles<...> set, got {tiles}")
    return tiles


@irdl_attr_definition
class WorkProvenanceAttr(ParametrizedAttribute):
    """Why some work exists: `#tile.provenance<op = "...", value = "...", reason = "...">`."""

    name = "tile.provenance"
    op: StringAttr
    value: StringAttr
    reason: StringAttr

    FIELDS: ClassVar[tuple[str, ...]] = ("op", "value", "reason")

    def __init__(self, op: str, value: str, reason: str):
        super().__init__(StringAttr(op), StringAttr(value), StringAttr(reason))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        values: list[Attribute] = []
        with parser.in_angle_brackets():
            for index, field in enumerate(cls.FIELDS):
                if index:
                    parser.parse_punctuation(",")
                parser.parse_keyword(field)
                parser.parse_punctuation("=")
                values.append(StringAttr(parser.parse_str_literal(f" for provenance {field}")))
        return values

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        for index, (field, value) in enumerate(zip(self.FIELDS, (self.op, self.value, self.reason))):
            printer.print_string(f"{', ' if index else ''}{field} = ")
            printer.print_string_literal(value.data)
        printer.print_string(">")


def parse_provenance(parser: Parser) -> WorkProvenanceAttr:
    """`provenance #tile.provenance<...>`: why the work of an op exists."""
    parser.parse_keyword("provenance")
    return parse_attribute_of(parser, WorkProvenanceAttr)


# ----------------------------------------------------------------------------------------------
# Loop-nest queries (the syntax and the other verification helpers: tile_syntax.py,
# tile_checks.py)
# ----------------------------------------------------------------------------------------------


def enclosing_loops(op: Operation) -> list[LoopOp]:
    """The `tile.loop`s around `op`, outermost first."""
    loops: list[LoopOp] = []
    parent = op.parent_op()
    while isinstance(parent, LoopOp):
        loops.append(parent)
        parent = parent.parent_op()
    return loops[::-1]


def loop_bounds(loops: Sequence[LoopOp]) -> list[tuple[int, int]]:
    return [(loop.lower_bound, loop.upper_bound) for loop in loops]


def defining_buffer(op: Operation, what: str, value: SSAValue) -> BufferOp:
    owner = value.owner
    if not isinstance(owner, BufferOp):
        raise VerifyException(f"{describe(op)}: {what} must be the result of a tile.buffer")
    return owner


def check_induction_operands(op: Operation, ivs: Sequence[SSAValue]) -> list[tuple[int, int]]:
    """`ivs` must be the enclosing loops' indices, outermost first; returns the nest bounds."""
    loops = enclosing_loops(op)
    expected = [loop.induction_var for loop in loops]
    if list(ivs) != expected:
        raise VerifyException(
            f"{describe(op)}: iv(...) must list the indices of the {len(loops)} enclosing tile.loop(s), "
            f"outermost first; got {len(ivs)} operand(s)"
        )
    return loop_bounds(loops)


# ----------------------------------------------------------------------------------------------
# Interfaces of tile work: what it reads and writes, and how it sits in loops. The passes and
# the package writer ask these instead of an op's class (docs/internals.md, "Tile work
# interfaces").
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExchangeFabric(Resource):
    """The resource of an exchange phase's effects: the exchange reads the words it sends and
    writes the words it receives, outside the tile's instruction stream (placement keeps such
    buffers out of the memory elements the code region touches)."""

    def name(self) -> str:
        return "exchange"


EXCHANGE_FABRIC = ExchangeFabric()
OpT = TypeVar("OpT", bound=Operation)


class BufferEffects(MemoryEffect):
    """xDSL's `MemoryEffect` trait of tile work: the effects its `buffer_effects` names (None,
    xDSL's "unknown", for a kernel the ABI registry does not know)."""

    @classmethod
    def get_effects(cls, op: Operation) -> frozenset[EffectInstance] | None:
        assert isinstance(op, BufferEffectsInterface)
        try:
            return op.buffer_effects()
        except UnknownKernelError:
            return None


class BufferEffectsInterface(Operation, ABC):
    """Tile work that reads and writes buffers.

    `buffer_effects` names every buffer the op reads (READ) and every buffer it writes
    (WRITE), one `EffectInstance` each whose value is the `tile.buffer` result (a buffer both
    read and written has both); the resource is `EXCHANGE_FABRIC` when the exchange moves the
    words. `concurrent_buffers` names the pairs of buffers it accesses in the same cycles.
    The trait makes the effects xDSL's (`xdsl.traits.get_effects`), so xDSL's `dce` and `cse`
    see tile work as writing memory, as it does.
    """

    traits = traits_def(BufferEffects())

    @abstractmethod
    def buffer_effects(self) -> frozenset[EffectInstance]:
        """The buffers the op reads and writes; `UnknownKernelError` when they depend on a
        kernel ABI the registry does not know (the passes report it)."""
        raise NotImplementedError()

    @abstractmethod
    def concurrent_buffers(self) -> list[tuple[SSAValue, SSAValue]]:
        """Pairs of buffers the op accesses in the same cycles (a load from one and a store
        to the other, or an exchange's send and incoming words on one tile): they must sit in
        distinct memory elements. `UnknownKernelError` as for `buffer_effects`."""
        raise NotImplementedError()


@dataclass(frozen=True)
class OuterLoop:
    """A `tile.loop` that work moves into as its new outermost loop (a structured repeat's):
    its index, the bytes per iteration that views of a buffer advance (a sequence's element
    stride; absent: 0), and what the loop repeats, which the moved work's provenance names
    (`"<op> in <repeats>"`, one `in` per enclosing repeat)."""

    index: SSAValue
    advance: Mapping[BufferOp, int]
    repeats: str

    def map(self, affine_map: AffineMap) -> AffineMap:
        """A map of the loop indices, under the new outermost loop."""
        return under_outer_loop(affine_map)

    def view(self, buffer: SSAValue, offset: AffineMap) -> AffineMap:
        """A view's byte offset under the new loop: advanced by its buffer's stride."""
        owner = buffer.owner
        return under_outer_loop(offset, self.advance.get(owner, 0) if isinstance(owner, BufferOp) else 0)

    def ivs(self, ivs: Sequence[SSAValue]) -> list[SSAValue]:
        return [self.index, *ivs]

    def provenance(self, provenance: WorkProvenanceAttr) -> WorkProvenanceAttr:
        return WorkProvenanceAttr(f"{provenance.op.data} in {self.repeats}", provenance.value.data,
                                  provenance.reason.data)


class LoopNestInterface(Operation, ABC):
    """Tile work in a loop nest: how it moves into a new outermost loop, and whether it does
    the same work in every iteration of an enclosing loop."""

    @abstractmethod
    def nested_in(self, loop: OuterLoop) -> Operation:
        """This work inside `loop`, a new outermost loop: every map takes the loop's index as
        its first dimension, views of the buffers `loop` advances move by that much per
        iteration, `iv(...)` starts with the loop's index, the provenance names what `loop`
        repeats. Returns the op to keep: this one, changed in place, or a new op (with this
        one's location and attributes) that the caller puts in its place."""
        raise NotImplementedError()

    @abstractmethod
    def repeats_across(self, position: int) -> bool:
        """Whether every iteration of the enclosing loop at `position` (0: outermost) does
        the same work, up to view offsets that advance linearly with that loop's index."""
        raise NotImplementedError()


def moved(new: OpT, old: Operation) -> OpT:
    """`new`, which replaces `old` in an outer loop, with `old`'s attributes and location."""
    new.attributes.update(old.attributes)
    new.location = old.location
    return new


# ----------------------------------------------------------------------------------------------
# Ops
# ----------------------------------------------------------------------------------------------


@irdl_op_definition
class BufferOp(IRDLOperation):
    """One distributed per-tile buffer holding a shard of the same (padded) shape on each tile."""

    name = "tile.buffer"

    sym_name = prop_def(StringAttr)
    kind = prop_def(BufferKindAttr)
    index = opt_prop_def(IntegerAttr[I64])
    tiles = prop_def(TileSetAttr)
    shape = prop_def(DenseArrayBase)
    precision = prop_def(PrecisionAttr)
    order = prop_def(ElementOrderAttr)
    memory = prop_def(MemoryClassAttr)
    alignment = prop_def(IntegerAttr[I64])
    tail = prop_def(IntegerAttr[I64])
    origin = opt_prop_def(TensorType)
    address = opt_prop_def(IntegerAttr[I64])

    buffer = result_def(BufferType)

    def __init__(
        self,
        name: str,
        kind: str | BufferKindAttr,
        tiles: TileSetAttr,
        shape: Sequence[int],
        precision: str | PrecisionAttr,
        order: str | ElementOrderAttr,
        memory: str | MemoryClassAttr,
        alignment: int,
        tail: int,
        *,
        index: int | None = None,
        origin: TensorType | None = None,
        address: int | None = None,
    ):
        label = f"tile.buffer @{name}"
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "kind": enum_attr(BufferKindAttr, kind, f"{label}: kind"),
            "tiles": tiles,
            "shape": DenseArrayBase.from_list(i64, list(shape)),
            "precision": enum_attr(PrecisionAttr, precision, f"{label}: precision"),
            "order": enum_attr(ElementOrderAttr, order, f"{label}: element order"),
            "memory": enum_attr(MemoryClassAttr, memory, f"{label}: memory class"),
            "alignment": int_prop(alignment),
            "tail": int_prop(tail),
        }
        if index is not None:
            properties["index"] = int_prop(index)
        if origin is not None:
            properties["origin"] = origin
        if address is not None:
            properties["address"] = int_prop(address)
        super().__init__(properties=properties, result_types=[BufferType()])

    # -- convenient views of the properties (what the passes and emitters read) -----------
    @property
    def shard_shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.shape.get_values())

    @property
    def byte_size(self) -> int:
        """The shard's bytes rounded up to whole 32-bit words: exchanges move words."""
        nbytes = shard_bytes(self.shard_shape, self.precision.data)
        return -(-nbytes // WORD_BYTES) * WORD_BYTES

    @property
    def alignment_bytes(self) -> int:
        return self.alignment.value.data

    @property
    def tail_bytes(self) -> int:
        return self.tail.value.data

    @property
    def address_value(self) -> int | None:
        return None if self.address is None else self.address.value.data

    @property
    def interleaved(self) -> bool:
        return self.memory.data == MemoryClass.INTERLEAVED

    @property
    def format(self) -> Attribute | None:
        """The `#mid.format` of the tensor this buffer stores (None for a scratch slot)."""
        return None if self.origin is None else self.origin.encoding

    def set_address(self, address: int) -> None:
        self.properties["address"] = int_prop(address)

    # -- syntax ----------------------------------------------------------------------------
    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(f" {self.kind.data}")
        if self.index is not None:
            printer.print_string(f" {self.index.value.data}")
        printer.print_string(" on ")
        printer.print_attribute(self.tiles)
        printer.print_string(f" shard [{', '.join(str(d) for d in self.shard_shape)}]")
        printer.print_string(f" {self.precision.data} {self.order.data} {self.memory.data}")
        printer.print_string(f" align {self.alignment_bytes} tail {self.tail_bytes}")
        if self.origin is not None:
            printer.print_string(" from ")
            printer.print_attribute(self.origin)
        if self.address is not None:
            printer.print_string(f" address {self.address_value:#x}")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> BufferOp:
        name = parser.parse_symbol_name().data
        label = f"tile.buffer @{name}"
        kind = parse_enum(parser, BufferKindAttr, f"{label}: kind",
                          " (buffer kind: input, output or scratch)")
        index = None
        if kind.data != BufferKind.SCRATCH:
            index = parse_i64(parser, allow_negative=False)
        tiles = parse_tiles_after_on(parser)
        parser.parse_keyword("shard")
        shape = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, lambda: parse_i64(parser)
        )
        precision = parse_enum(parser, PrecisionAttr, f"{label}: precision", " (precision)")
        order = parse_enum(parser, ElementOrderAttr, f"{label}: element order", " (element order)")
        memory = parse_enum(parser, MemoryClassAttr, f"{label}: memory class", " (memory class)")
        parser.parse_keyword("align")
        alignment = parse_i64(parser)
        parser.parse_keyword("tail")
        tail = parse_i64(parser)
        origin: TensorType | None = None
        if parser.parse_optional_keyword("from"):
            parsed = parser.parse_type()
            if not isinstance(parsed, TensorType):
                parser.raise_error(f"expected the mid tensor type after 'from', got {parsed}")
            origin = parsed
        address = None
        if parser.parse_optional_keyword("address"):
            address = parse_i64(parser, allow_negative=False)
        op = cls(
            name, kind, tiles, shape, precision, order, memory, alignment, tail,
            index=index, origin=origin, address=address,
        )
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def verify_(self) -> None:
        label = f"tile.buffer @{self.sym_name.data}"
        kind = self.kind.data
        if (self.index is None) != (kind == BufferKind.SCRATCH):
            raise VerifyException(f"{label}: 'input' and 'output' buffers take an index, 'scratch' none")
        if self.index is not None and self.index.value.data < 0:
            raise VerifyException(f"{label}: {kind} index must be >= 0")
        shape = self.shard_shape
        if self.shape.elt_type != i64 or not shape or any(d < 1 for d in shape):
            raise VerifyException(f"{label}: shard shape {list(shape)} must be non-empty with extents >= 1")
        align = self.alignment_bytes
        if align < 1 or align & (align - 1):
            raise VerifyException(f"{label}: alignment {align} must be a power of two")
        if self.tail_bytes < 0:
            raise VerifyException(f"{label}: access tail {self.tail_bytes} must be >= 0")
        # An access tail longer than tile memory is malformed IR (it overflowed the memory
        # element arithmetic); a buffer too big for its tiles is place-memory's to report,
        # with what else is live there and the user's source line.
        span = IPU21.memory_end - IPU21.memory_base  # one target: its tile memory bounds all
        if self.tail_bytes > span:
            raise VerifyException(f"{label}: {self.byte_size} bytes and an access tail of "
                                  f"{self.tail_bytes} exceed the {span} bytes of tile memory")
        address = self.address_value
        if address is not None and address % align:
            raise VerifyException(f"{label}: address {address:#x} is not {align}-byte aligned")
        if address is not None and not (IPU21.memory_base <= address
                                        and address + self.byte_size + self.tail_bytes
                                        <= IPU21.memory_end):
            raise VerifyException(
                f"{label}: [{address:#x}, {address + self.byte_size + self.tail_bytes:#x}) "
                f"(with its access tail) is outside tile memory "
                f"[{IPU21.memory_base:#x}, {IPU21.memory_end:#x})")
        self.verify_format_rank(label)
        check_tile_set_fits(self, f"@{self.sym_name.data} tile set", self.tiles)

    def verify_format_rank(self, label: str) -> None:
        """The format of the stored tensor tiles every axis of it, once (what the package
        writer's shard geometry needs; the #mid.format verifier cannot see the tensor)."""
        fmt = self.format
        if self.origin is None:
            return
        # the tensor the package's host tensor is: no more elements than the device stores
        # (the package schema's bound), so its shard geometry's int64 arithmetic is exact
        device_bytes = IPU21.tiles * IPU21.sram_bytes
        if math.prod(self.origin.get_shape()) > device_bytes:
            raise VerifyException(f"{label}: {self.origin} has more elements than the "
                                  f"{device_bytes} bytes of the whole device")
        if getattr(fmt, "blocks", None) is None:
            return
        rank = len(self.origin.get_shape())
        for name in ("blocks", "partitions", "pads"):
            if len(getattr(fmt, name)) != rank:
                raise VerifyException(f"{label}: the format of {self.origin} has "
                                      f"{len(getattr(fmt, name))} {name} for a rank-{rank} tensor")


@irdl_op_definition
class LoopOp(IRDLOperation, LoopNestInterface):
    """`tile.loop %i = LB to UB provenance P { ... }`: the body once per i in [LB, UB)."""

    name = "tile.loop"

    lower = prop_def(IntegerAttr[I64])
    upper = prop_def(IntegerAttr[I64])
    provenance = prop_def(WorkProvenanceAttr)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    def __init__(
        self, lower: int, upper: int, provenance: WorkProvenanceAttr, body: Region | None = None
    ):
        if body is None:
            body = Region(Block(arg_types=[IndexType()]))
        super().__init__(
            properties={"lower": int_prop(lower), "upper": int_prop(upper), "provenance": provenance},
            regions=[body],
        )

    @property
    def lower_bound(self) -> int:
        return self.lower.value.data

    @property
    def upper_bound(self) -> int:
        return self.upper.value.data

    @property
    def trip_count(self) -> int:
        return max(0, self.upper_bound - self.lower_bound)

    @property
    def induction_var(self) -> SSAValue:
        return self.body.block.args[0]

    # -- LoopNestInterface ------------------------------------------------------------------
    def nested_in(self, loop: OuterLoop) -> LoopOp:
        """The loop, changed in place: its provenance, and each op of its body moved."""
        self.properties["provenance"] = loop.provenance(self.provenance)
        block = self.body.block
        for inner in list(block.ops):
            if not isinstance(inner, LoopNestInterface):
                raise VerifyException(
                    f"tile.loop: {inner.name} in its body cannot move into an outer loop")
            replacement = inner.nested_in(loop)
            if replacement is not inner:
                block.insert_op_before(replacement, inner)
                block.erase_op(inner)
        return self

    def repeats_across(self, position: int) -> bool:
        """Its bounds are static: its body decides."""
        return all(isinstance(op, LoopNestInterface) and op.repeats_across(position)
                   for op in self.body.block.ops)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.induction_var)
        printer.print_string(f" = {self.lower_bound} to {self.upper_bound} provenance ")
        printer.print_attribute(self.provenance)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @classmethod
    def parse(cls, parser: Parser) -> LoopOp:
        index = parser.parse_argument(expect_type=False).resolve(IndexType())
        parser.parse_punctuation("=")
        lower = parse_i64(parser)
        parser.parse_keyword("to")
        upper = parse_i64(parser)
        provenance = parse_provenance(parser)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region((index,))
        op = cls(lower, upper, provenance, body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def verify_(self) -> None:
        if self.upper_bound <= self.lower_bound:
            raise VerifyException(
                f"tile.loop: empty iteration range [{self.lower_bound}, {self.upper_bound}); "
                "a loop must run at least once"
            )
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            raise VerifyException("tile.loop: the body takes exactly one 'index' argument")


class ExchangeRowUses(SymbolUserOpInterface):
    """The `rows` of `tile.exchange`'s schedule name `exchange.row`s of the module, and each
    patch targets an instruction and field its row has (MLIR's verifySymbolUses)."""

    def verify(self, op: Operation) -> None:
        assert isinstance(op, ExchangeOp)
        if op.schedule is None or not isinstance(op.get_toplevel_object(), ModuleOp):
            return  # unscheduled, or not inside a module yet: nothing to resolve
        rows = {name: exchange_row(op, name) for name in op.schedule.row_symbols}
        for patch in op.schedule.patches.data:
            patch.check_target(rows[patch.row_name])  # the schedule's rule: one of its rows


def exchange_row(op: Operation, name: str) -> RowOp:
    """The `exchange.row` @name of `op`'s module."""
    row = lookup_symbol(op, name)
    if not isinstance(row, RowOp):
        raise VerifyException(f"tile.exchange: @{name} is not an exchange.row of the module")
    return row


def lookup_symbol(op: Operation, name: str) -> Operation | None:
    """`SymbolTable.lookup_symbol(op, name)` for a flat name, with each op class's
    `SymbolOpInterface` looked up once (traits belong to the class) instead of once per op of
    the table for every lookup: a module holds hundreds of rows, and every exchange looks up
    its own."""
    anchor: Operation | None = op
    while anchor is not None and not anchor.has_trait(SymbolTable):
        anchor = anchor.parent_op()
    if anchor is None:
        return SymbolTable.lookup_symbol(op, name)  # its ValueError
    wanted = StringAttr(name)
    for candidate in anchor.regions[0].block.ops:
        interface = symbol_interface(type(candidate))
        if interface is not None and interface.get_sym_attr_name(candidate) == wanted:
            return candidate
    return None


def symbol_interface(cls: type[Operation]) -> SymbolOpInterface | None:
    if cls not in SYMBOL_INTERFACES:
        SYMBOL_INTERFACES[cls] = cls.get_trait(SymbolOpInterface)
    return SYMBOL_INTERFACES[cls]


SYMBOL_INTERFACES: dict[type[Operation], SymbolOpInterface | None] = {}


def sends_while_receiving(senders: np.ndarray, shifts: np.ndarray, base: np.ndarray) -> bool:
    """Whether in some iteration (rows of `senders` and `shifts`, [iterations, groups]) a
    group's sender is among another group's receivers (`base + shift`; a group's own sender
    receives nothing). Iterations are keyed apart (`n * span + tile`) so that a chunk of them
    is one `np.isin`."""
    if not base.size or not senders.size:
        return False
    span = int(max(senders.max(), shifts.max() + base.max())) + 1
    step = max(1, (1 << 22) // max(1, senders.shape[1] * base.size))  # iterations per pass
    for first in range(0, senders.shape[0], step):
        chunk = slice(first, first + step)
        keys = (np.arange(senders[chunk].shape[0]) * span)[:, None]
        destinations = base[None, None, :] + shifts[chunk][:, :, None]  # [n, group, tile]
        receiving = destinations != senders[chunk][:, :, None]
        received = (destinations + keys[:, :, None])[receiving]
        if np.isin(senders[chunk] + keys, received).any():
            return True
    return False


def suspect_group_iterations(senders: np.ndarray, shifts: np.ndarray, base: np.ndarray,
                             holders: np.ndarray) -> np.ndarray:
    """The iterations (rows of `senders` and `shifts`, [iterations, groups]) in which some
    destination `base + shift` lies outside `holders`, or a tile may send or receive for two
    groups: every iteration where it happens, and perhaps others (a superset)."""
    groups = senders.shape[1]
    suspect = np.zeros(senders.shape[0], dtype=bool)
    if not base.size:  # no destinations: none outside, none received twice
        by_range = True
    elif holders.size and np.array_equal(holders, np.arange(holders[0], holders[0] + holders.size)):
        # the holders are a range: a destination is outside iff the least or the greatest is
        by_range = True
        suspect |= shifts.min(axis=1) + base.min() < holders[0]
        suspect |= shifts.max(axis=1) + base.max() > holders[-1]
    else:
        by_range = False
    # one group's sender is one tile, and its receivers are distinct when its tiles are
    twice = groups > 1 or np.unique(base).size != base.size
    if by_range and not twice:
        return np.flatnonzero(suspect)
    step = max(1, (1 << 22) // max(1, groups * base.size))  # iterations per NumPy pass
    for first in range(0, senders.shape[0], step):
        chunk = slice(first, first + step)
        destinations = base[None, None, :] + shifts[chunk][:, :, None]  # [n, group, tile]
        if not by_range:
            suspect[chunk] |= ~np.isin(destinations, holders).all(axis=(1, 2))
        if not twice:
            continue
        ordered = np.sort(senders[chunk], axis=1)
        suspect[chunk] |= (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        if destinations.size:
            # a group's own sender receives nothing: a value no receiver can have
            sentinel = int(destinations.max()) + 1 + np.arange(destinations[0].size).reshape(
                destinations.shape[1:])
            taken = np.where(destinations != senders[chunk][:, :, None], destinations,
                             sentinel[None])
            ordered = np.sort(taken.reshape(taken.shape[0], -1), axis=1)
            suspect[chunk] |= (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
    return np.flatnonzero(suspect)


@irdl_op_definition
class ExchangeOp(IRDLOperation, BufferEffectsInterface, LoopNestInterface):
    """One synchronized exchange phase per iteration of the enclosing loops (docs/internals.md)."""

    name = "tile.exchange"
    traits = traits_def(ExchangeRowUses())

    src = operand_def(BufferType)
    dst = operand_def(BufferType)
    ivs = var_operand_def(IndexType)

    words = prop_def(IntegerAttr[I64])
    src_offset = prop_def(AffineMapAttr)
    src_tile = prop_def(AffineMapAttr)
    dst_offset = prop_def(AffineMapAttr)
    dst_tiles = prop_def(TileSetAttr)
    # Concurrent groups: `groups` G broadcasts in the same phase, group g from tile
    # `src_tile(ivs, g)` to `dst_tiles` shifted by `dst_shift(ivs, g)` (both maps take the
    # group index after the loop indices; the offset maps may). Absent: one group, shift 0,
    # maps of the ivs only.
    groups = opt_prop_def(IntegerAttr[I64])
    dst_shift = opt_prop_def(AffineMapAttr)
    # Broadcast to tile pairs at double rate (docs/internals.md, "Pair broadcast"): the words
    # go as 64-bit items, which both tiles of a pair (2i, 2i + 1) take through their pair mux.
    pairs = opt_prop_def(UnitAttr)
    provenance = prop_def(WorkProvenanceAttr)
    # Filled in by schedule-exchange: the rows, their selection per iteration, patches, slot
    # and the buffer addresses they were built for (`ipu_dialects/tile_schedule.py`).
    schedule = opt_prop_def(ExchangeScheduleAttr)

    def __init__(
        self,
        words: int,
        src: SSAValue | Operation,
        src_offset: AffineMap,
        src_tile: AffineMap,
        dst: SSAValue | Operation,
        dst_offset: AffineMap,
        dst_tiles: TileSetAttr,
        ivs: Sequence[SSAValue],
        provenance: WorkProvenanceAttr,
        groups: tuple[int, AffineMap] | None = None,
        pairs: bool = False,
    ):
        properties: dict[str, Attribute] = {
            "words": int_prop(words),
            "src_offset": AffineMapAttr(src_offset),
            "src_tile": AffineMapAttr(src_tile),
            "dst_offset": AffineMapAttr(dst_offset),
            "dst_tiles": dst_tiles,
            "provenance": provenance,
        }
        if groups is not None:
            properties["groups"] = int_prop(groups[0])
            properties["dst_shift"] = AffineMapAttr(groups[1])
        if pairs:
            properties["pairs"] = UnitAttr()
        super().__init__(operands=[src, dst, list(ivs)], properties=properties)

    @property
    def group_count(self) -> int:
        """Concurrent broadcasts per phase (1 without `groups`)."""
        return 1 if self.groups is None else self.groups.value.data

    def offset_bounds(self, offset: AffineMap, bounds: Sequence[tuple[int, int]]
                      ) -> list[tuple[int, int]]:
        """The bounds an offset map reads: a grouped exchange's offset may also read the
        group index, after the loop indices (each group's sender reads, and its receivers
        write, at an address of their own); otherwise the loop indices only."""
        return [*bounds, *self.group_bounds()] if self.offset_reads_group(offset) else list(bounds)

    def offset_reads_group(self, offset: AffineMap) -> bool:
        """Whether an offset map takes the group index (one dimension past the loops)."""
        return self.groups is not None and offset.num_dims == len(self.ivs) + 1

    def group_bounds(self) -> list[tuple[int, int]]:
        """The group index's range, appended to loop bounds for the group-reading maps."""
        return [] if self.groups is None else [(0, self.group_count)]

    @property
    def source(self) -> SSAValue:
        return self.src

    @property
    def destination(self) -> SSAValue:
        return self.dst

    @property
    def word_count(self) -> int:
        return self.words.value.data

    @property
    def item_words(self) -> int:
        """Words per exchange event: 2 for a pair broadcast's 64-bit items."""
        return 2 if self.pairs is not None else 1

    # -- BufferEffectsInterface -------------------------------------------------------------
    def buffer_effects(self) -> frozenset[EffectInstance]:
        """The exchange reads `src` and writes `dst`."""
        return frozenset((EffectInstance(MemoryEffectKind.READ, self.src, EXCHANGE_FABRIC),
                          EffectInstance(MemoryEffectKind.WRITE, self.dst, EXCHANGE_FABRIC)))

    def concurrent_buffers(self) -> list[tuple[SSAValue, SSAValue]]:
        """`src` and `dst` when some tile sends for one group while it receives for another
        (its send reads and incoming writes run in the same events)."""
        return [(self.src, self.dst)] if self.has_full_duplex_tiles() else []

    # -- LoopNestInterface ------------------------------------------------------------------
    def nested_in(self, loop: OuterLoop) -> ExchangeOp:
        """A new, unscheduled exchange (rows are built for the whole nest afterwards)."""
        groups = (None if self.dst_shift is None
                  else (self.group_count, loop.map(self.dst_shift.data)))
        return moved(ExchangeOp(
            self.word_count, self.src, loop.view(self.src, self.src_offset.data),
            loop.map(self.src_tile.data), self.dst, loop.view(self.dst, self.dst_offset.data),
            self.dst_tiles, loop.ivs(self.ivs), loop.provenance(self.provenance), groups,
            self.pairs is not None), self)

    def repeats_across(self, position: int) -> bool:
        """When its rows do not vary with that loop (`row_loops`): then neither do its maps."""
        return position not in self.row_loop_positions(len(self.ivs))

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.word_count} words from ")
        printer.print_ssa_value(self.source)
        printer.print_string("[")
        print_map(printer, self.src_offset.data)
        printer.print_string("] on tile ")
        print_map(printer, self.src_tile.data)
        printer.print_string(" to ")
        printer.print_ssa_value(self.destination)
        printer.print_string("[")
        print_map(printer, self.dst_offset.data)
        printer.print_string("] on ")
        printer.print_attribute(self.dst_tiles)
        if self.groups is not None and self.dst_shift is not None:
            printer.print_string(f" groups {self.group_count} shift ")
            print_map(printer, self.dst_shift.data)
        if self.pairs is not None:
            printer.print_string(" pairs")
        print_ivs(printer, self.ivs)
        printer.print_string(" provenance ")
        printer.print_attribute(self.provenance)
        if self.schedule is not None:
            printer.print_string(" schedule ")
            printer.print_attribute(self.schedule)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ExchangeOp:
        words = parse_i64(parser)
        parser.parse_keyword("words")
        parser.parse_keyword("from")
        src, src_offset = parse_view(parser)
        parser.parse_keyword("on")
        parser.parse_keyword("tile")
        src_tile = parser.parse_affine_map()
        parser.parse_keyword("to")
        dst, dst_offset = parse_view(parser)
        dst_tiles = parse_tiles_after_on(parser)
        groups = None
        if parser.parse_optional_keyword("groups"):
            count = parse_i64(parser)
            parser.parse_keyword("shift")
            groups = (count, parser.parse_affine_map())
        pairs = parser.parse_optional_keyword("pairs") is not None
        ivs = parse_ivs(parser)
        provenance = parse_provenance(parser)
        buffer_type = BufferType()
        op = cls(
            words,
            parser.resolve_operand(src, buffer_type),
            src_offset,
            src_tile,
            parser.resolve_operand(dst, buffer_type),
            dst_offset,
            dst_tiles,
            ivs,
            provenance,
            groups,
            pairs,
        )
        if parser.parse_optional_keyword("schedule"):
            op.properties["schedule"] = parse_attribute_of(parser, ExchangeScheduleAttr)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def verify_(self) -> None:
        if self.word_count < 1:
            raise VerifyException(f"tile.exchange: must move at least one word, got {self.word_count}")
        if self.word_count % self.item_words:
            raise VerifyException(
                f"tile.exchange: a pair broadcast moves 64-bit items, so its word count must be "
                f"even, got {self.word_count}")
        src = defining_buffer(self, "source", self.source)
        dst = defining_buffer(self, "destination", self.destination)
        bounds = check_induction_operands(self, self.ivs)
        grouped = self.verify_groups(bounds)
        for what, attr, map_bounds in (
            ("source offset", self.src_offset, self.offset_bounds(self.src_offset.data, bounds)),
            ("source tile", self.src_tile, grouped),
            ("destination offset", self.dst_offset,
             self.offset_bounds(self.dst_offset.data, bounds)),
        ):
            check_map(self, what, attr.data, map_bounds)
        check_tile_set_fits(self, "destination tile set", self.dst_tiles)
        check_resident(self, "destination buffer", dst, self.dst_tiles)
        self.verify_group_tiles(dst, grouped)
        nbytes = self.word_count * WORD_BYTES
        for what, buffer, offset in (("source", src, self.src_offset), ("destination", dst, self.dst_offset)):
            offset_bounds = self.offset_bounds(offset.data, bounds)
            check_view_inside(self, what, buffer, offset.data, nbytes, offset_bounds)
            check_word_aligned(self, what, buffer, offset.data, offset_bounds,
                               WORD_BYTES * self.item_words)
        self.verify_source_tiles(src, bounds)
        self.verify_schedule(bounds)
        self.verify_placed(src, dst)

    def verify_placed(self, src: BufferOp, dst: BufferOp) -> None:
        """Rows built for other buffer addresses than the buffers have now are stale."""
        placed = None if self.schedule is None else self.schedule.placed_addresses
        if placed is None:
            return
        for what, buffer, built_for in zip(("source", "destination"), (src, dst), placed):
            now = buffer.address_value
            if now != built_for:
                where = "no address" if now is None else f"{now:#x}"
                raise VerifyException(
                    f"tile.exchange: its rows were built for {what} @{buffer.sym_name.data} at "
                    f"{built_for:#x}, but the buffer has {where} now; schedule the exchange "
                    "again after placement (run the pipeline from place-memory on unscheduled IR)"
                )

    def verify_groups(self, bounds: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        """`groups` and `shift` come together; the bounds of the group-reading maps."""
        if (self.groups is None) != (self.dst_shift is None):
            raise VerifyException("tile.exchange: 'groups' and its 'shift' map come together")
        if self.group_count < 1:
            raise VerifyException(f"tile.exchange: groups must be at least 1, got {self.group_count}")
        grouped = [*bounds, *self.group_bounds()]
        if self.dst_shift is not None:
            check_map(self, "destination shift", self.dst_shift.data, grouped)
        return grouped

    def verify_group_tiles(self, dst: BufferOp, grouped: Sequence[tuple[int, int]]) -> None:
        """Every group's receivers hold the destination; within one phase, no tile sends for
        two groups or receives for two groups. A tile may send for one group while it
        receives for another (full duplex: one row does both, `schedule-exchange`).

        The iterations are screened together in NumPy (`suspect_iterations`); the checks
        below, which word the diagnostic, run only on those it flags."""
        holders = dst.tiles.as_array()
        suspects = self.suspect_iterations(holders, grouped)
        for n, senders, destinations, receivers in self.group_roles(grouped, suspects):
            outside = destinations[~np.isin(destinations, holders)]
            if outside.size:
                raise VerifyException(
                    f"tile.exchange: in iteration {n} a group receives on tile {int(outside[0])}, "
                    f"which does not hold @{dst.sym_name.data} (it lives on {dst.tiles})"
                )
            for role, tiles in (("sends", senders), ("receives", receivers)):
                values, counts = np.unique(tiles, return_counts=True)
                if np.any(counts > 1):
                    raise VerifyException(
                        f"tile.exchange: in iteration {n} tile "
                        f"{int(values[np.argmax(counts > 1)])} {role} for two groups; a tile "
                        "sends for at most one group and receives for at most one"
                    )

    def suspect_iterations(self, holders: np.ndarray, grouped: Sequence[tuple[int, int]]
                           ) -> np.ndarray | None:
        """The iterations `verify_group_tiles` must look at one by one: every one where a
        destination lies outside `holders`, or a tile may send or receive for two groups (a
        superset: never one fewer). None when the maps cannot be evaluated (`group_roles`
        then yields nothing either)."""
        maps = self.group_maps(grouped)
        if maps is None:
            return None
        return suspect_group_iterations(*maps, self.dst_tiles.as_array(), holders)

    def group_maps(self, grouped: Sequence[tuple[int, int]]
                   ) -> tuple[np.ndarray, np.ndarray] | None:
        """Every iteration's sender and destination shift of each group, [iterations, groups]
        each, over the bounds `grouped` (None: ungrouped, or the maps cannot be evaluated)."""
        if self.dst_shift is None:
            return None
        senders = map_values(self.src_tile.data, grouped)
        shifts = map_values(self.dst_shift.data, grouped)
        if senders is None or shifts is None:
            return None
        groups = self.group_count
        return senders.reshape(-1, groups), shifts.reshape(-1, groups)

    def group_roles(self, grouped: Sequence[tuple[int, int]], only: np.ndarray | None = None
                    ) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """Per iteration of a grouped exchange (of the iterations `only`, when given): its
        index, every group's sender, every group's destination tiles, and the tiles that
        receive (a group's sender among its own destinations receives nothing)."""
        maps = self.group_maps(grouped)
        if maps is None:
            return
        senders, shifts = maps
        base = self.dst_tiles.as_array()
        for n in range(senders.shape[0]) if only is None else only.tolist():
            destinations = base[None, :] + shifts[n][:, None]
            yield (n, senders[n], destinations,
                   destinations[destinations != senders[n][:, None]])

    def has_full_duplex_tiles(self) -> bool:
        """Whether in some iteration a tile sends for one group and receives for another:
        its send reads and incoming writes then run in the same events on that tile."""
        if self.dst_shift is None:
            return False
        maps = self.group_maps([*loop_bounds(enclosing_loops(self)), *self.group_bounds()])
        return maps is not None and sends_while_receiving(*maps, self.dst_tiles.as_array())

    def verify_source_tiles(self, src: BufferOp, bounds: Sequence[tuple[int, int]]) -> None:
        tiles = map_values(self.src_tile.data, [*bounds, *self.group_bounds()])
        if tiles is None:
            return
        distinct = np.unique(tiles)
        outside = distinct[~np.isin(distinct, src.tiles.as_array())].tolist()
        if outside:
            raise VerifyException(
                f"tile.exchange: source tile {outside[0]} does not hold @{src.sym_name.data} "
                f"(it lives on {src.tiles})"
            )

    def row_loop_positions(self, depth: int) -> list[int]:
        """Positions of the enclosing loops the rows vary with (all of them by default, and
        when unscheduled)."""
        if self.schedule is None:
            return list(range(depth))
        return self.schedule.loop_positions(depth)

    def verify_row_loops(self, schedule: ExchangeScheduleAttr,
                         bounds: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
        """The bounds of the loops the rows vary with; every map must read only those (the
        schedule itself keeps them increasing)."""
        positions = schedule.varying_loops
        if positions is None:
            return list(bounds)
        if positions and positions[-1] >= len(bounds):
            raise VerifyException(
                f"tile.exchange: row_loops {positions} names loop position {positions[-1]}, "
                f"but the op is in {len(bounds)} enclosing loop(s)"
            )
        maps = [("source tile", self.src_tile), ("source offset", self.src_offset),
                ("destination offset", self.dst_offset)]
        if self.dst_shift is not None:
            maps.append(("destination shift", self.dst_shift))
        for what, attr in maps:
            read = sorted(map_dims(attr.data) - set(positions) - {len(bounds)})
            if read:
                raise VerifyException(
                    f"tile.exchange: the {what} map reads loop index d{read[0]}, which row_loops "
                    f"{positions} leaves out: its rows would be the same in every iteration of "
                    "that loop"
                )
        return [bounds[p] for p in positions]

    def verify_schedule(self, bounds: Sequence[tuple[int, int]]) -> None:
        """The schedule against the loops: one entry (of each selection, and one value of
        each patch: the schedule's own rule) per (iteration, group) of the loops its rows
        vary with."""
        if self.schedule is None:
            return
        iterations = iteration_count([*self.verify_row_loops(self.schedule, bounds),
                                      *self.group_bounds()])
        if self.schedule.entry_count != iterations:
            raise VerifyException(
                f"tile.exchange: sender_rows has {self.schedule.entry_count} entries, but the "
                f"enclosing loops its rows vary with run {iterations} iteration(s)"
            )


@dataclass(frozen=True)
class HomeView:
    """`P: %buf[OFFSET] on TILES shift SHIFT` of a `tile.kernel`'s `home [...]`: on every
    tile of TILES shifted by SHIFT(ivs), ABI pointer P reads `%buf` at OFFSET(ivs)."""

    pointer: int
    buffer: SSAValue
    offset: AffineMap
    tiles: TileSetAttr
    shift: AffineMap

    def print(self, printer: Printer) -> None:
        printer.print_string(f"{self.pointer}: ")
        print_view(printer, self.buffer, self.offset)
        printer.print_string(" on ")
        printer.print_attribute(self.tiles)
        printer.print_string(" shift ")
        print_map(printer, self.shift)

    @classmethod
    def parse(cls, parser: Parser) -> HomeView:
        pointer = parse_i64(parser, allow_negative=False)
        parser.parse_punctuation(":")
        buffer, offset = parse_view(parser)
        tiles = parse_tiles_after_on(parser)
        parser.parse_keyword("shift")
        shift = parser.parse_affine_map()
        return cls(pointer, parser.resolve_operand(buffer, BufferType()), offset, tiles, shift)

    def verify(self, op: KernelOp, label: str, bounds: Sequence[tuple[int, int]],
               view_bytes: Sequence[int]) -> None:
        what = f"home view of pointer {self.pointer}"
        if not 0 <= self.pointer < op.pointer_count:
            raise VerifyException(f"{label}: {what}: the kernel has {op.pointer_count} pointer(s)")
        buffer = defining_buffer(op, what, self.buffer)
        check_map(op, f"{what} offset", self.offset, bounds)
        check_map(op, f"{what} shift", self.shift, bounds)
        check_view_inside(op, what, buffer, self.offset, view_bytes[self.pointer], bounds)
        check_tile_set_fits(op, f"{what} tile set", self.tiles)
        shifts = map_values(self.shift, bounds)
        if shifts is None or shifts.size == 0:
            return
        homes = self.tiles.as_array()[None, :] + np.unique(shifts)[:, None]
        for tiles, where in ((op.tiles, "the kernel's tiles"),
                             (buffer.tiles, f"the tiles of @{buffer.sym_name.data}")):
            outside = homes[~np.isin(homes, tiles.as_array())]
            if outside.size:
                raise VerifyException(
                    f"{label}: {what} selects tile {int(outside[0])}, outside {where} {tiles}"
                )


@irdl_op_definition
class KernelOp(IRDLOperation, NamedInDiagnostics, BufferEffectsInterface, LoopNestInterface):
    """A kernel run on every tile of a static set, per iteration (docs/internals.md)."""

    name = "tile.kernel"

    views = var_operand_def(BufferType)
    ivs = var_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    callee = prop_def(SymbolRefAttr)
    offsets = prop_def(ArrayAttr[AffineMapAttr])
    scalars = prop_def(DenseArrayBase)
    tiles = prop_def(TileSetAttr)
    on_tile = opt_prop_def(AffineMapAttr)
    # scalars that change per iteration (e.g. the source tile of a gathered shard): passed
    # before the constant `scalars`, one affine map of the loop indices each
    iv_scalars = opt_prop_def(ArrayAttr[AffineMapAttr])
    # Home views: on the tiles `home_tiles[i]` shifted by `home_shifts[i](ivs)`, pointer
    # `home_pointers[i]` reads the view after the ABI pointers' views instead of its own (a
    # block's home tile reads it where it lives, the others from their receive slot).
    home_pointers = opt_prop_def(DenseArrayBase)
    home_tiles = opt_prop_def(ArrayAttr[TileSetAttr])
    home_shifts = opt_prop_def(ArrayAttr[AffineMapAttr])
    provenance = prop_def(WorkProvenanceAttr)

    def __init__(
        self,
        callee: str,
        views: Sequence[tuple[SSAValue | Operation, AffineMap]],
        scalars: Sequence[int],
        tiles: TileSetAttr,
        ivs: Sequence[SSAValue],
        provenance: WorkProvenanceAttr,
        on_tile: AffineMap | None = None,
        iv_scalars: Sequence[AffineMap] = (),
        homes: Sequence[HomeView] = (),
    ):
        all_views = [*views, *((h.buffer, h.offset) for h in homes)]
        properties: dict[str, Attribute] = {
            "callee": SymbolRefAttr(callee),
            "offsets": ArrayAttr(AffineMapAttr(m) for _, m in all_views),
            "scalars": DenseArrayBase.from_list(i64, list(scalars)),
            "tiles": tiles,
            "provenance": provenance,
        }
        if on_tile is not None:
            properties["on_tile"] = AffineMapAttr(on_tile)
        if iv_scalars:
            properties["iv_scalars"] = ArrayAttr(AffineMapAttr(m) for m in iv_scalars)
        if homes:
            properties["home_pointers"] = DenseArrayBase.from_list(i64, [h.pointer for h in homes])
            properties["home_tiles"] = ArrayAttr(h.tiles for h in homes)
            properties["home_shifts"] = ArrayAttr(AffineMapAttr(h.shift) for h in homes)
        super().__init__(operands=[[v for v, _ in all_views], list(ivs)], properties=properties)

    @property
    def pointer_count(self) -> int:
        """Views that are the ABI's pointers (the rest are home views)."""
        homes = 0 if self.home_pointers is None else len(self.home_pointers.get_values())
        return len(self.views) - homes

    @property
    def pointer_views(self) -> list[tuple[SSAValue, AffineMap]]:
        return [(v, m.data) for v, m in zip(self.views[:self.pointer_count],
                                            self.offsets.data[:self.pointer_count])]

    @property
    def homes(self) -> list[HomeView]:
        if self.home_pointers is None or self.home_tiles is None or self.home_shifts is None:
            return []
        first = self.pointer_count
        return [HomeView(int(p), v, m.data, t, s.data) for p, v, m, t, s in zip(
            self.home_pointers.get_values(), self.views[first:], self.offsets.data[first:],
            self.home_tiles.data, self.home_shifts.data)]

    @property
    def symbol(self) -> str:
        return self.callee.string_value()

    def diagnostic_name(self) -> str:
        return f"tile.kernel @{self.symbol}"

    @property
    def scalar_values(self) -> tuple[int, ...]:
        """The constant scalars (after the per-iteration ones, `iv_scalar_maps`)."""
        return tuple(int(s) for s in self.scalars.get_values())

    @property
    def iv_scalar_maps(self) -> tuple[AffineMap, ...]:
        return () if self.iv_scalars is None else tuple(m.data for m in self.iv_scalars.data)

    # -- BufferEffectsInterface -------------------------------------------------------------
    def named_views(self) -> list[tuple[str, SSAValue]]:
        """(ABI pointer name, buffer) of every view, home views under their pointer's name."""
        pointers = get_kernel(self.symbol).pointers
        named = [(name, view) for name, (view, _) in zip(pointers, self.pointer_views)]
        return named + [(pointers[h.pointer], h.buffer) for h in self.homes
                        if h.pointer < len(pointers)]

    def buffer_effects(self) -> frozenset[EffectInstance]:
        """The ABI's `out` pointer is written, every other pointer and every home view read
        (an in-place call, `out` viewed again as an input, reads and writes it). Only the
        pointer names are known here: an `_accum` GEMM also reads its `out`, and a gather or
        view kernel leaves the elements of `out` it does not write as they are."""
        return frozenset(
            EffectInstance(MemoryEffectKind.WRITE if name == "out" else MemoryEffectKind.READ,
                           view)
            for name, view in self.named_views())

    def concurrent_buffers(self) -> list[tuple[SSAValue, SSAValue]]:
        """For each pointer pair the ABI keeps in distinct memory elements
        (`KernelAbi.distinct_pairs`: `out` and `left` of the AMP GEMMs, which load the left
        panel while they store the output panel, and the pairs a kernel declares, such as the
        blocked attention kernels' two AMP products): the first pointer's view and each view
        of the second, home views included."""
        named = self.named_views()
        pairs: list[tuple[SSAValue, SSAValue]] = []
        for first, second in get_kernel(self.symbol).distinct_pairs:
            firsts = [view for name, view in named if name == first]
            seconds = [view for name, view in named if name == second]
            pairs += [(a, b) for a in firsts[:1] for b in seconds]
        return pairs

    # -- LoopNestInterface ------------------------------------------------------------------
    def nested_in(self, loop: OuterLoop) -> KernelOp:
        views = [(v, loop.view(v, m)) for v, m in self.pointer_views]
        homes = [HomeView(h.pointer, h.buffer, loop.view(h.buffer, h.offset), h.tiles,
                          loop.map(h.shift)) for h in self.homes]
        return moved(KernelOp(
            self.symbol, views, self.scalar_values, self.tiles, loop.ivs(self.ivs),
            loop.provenance(self.provenance),
            loop.map(self.on_tile.data) if self.on_tile is not None else None,
            [loop.map(m) for m in self.iv_scalar_maps], homes), self)

    def repeats_across(self, position: int) -> bool:
        """When that loop's index reaches no `only` tile, iv scalar or home shift, and
        enters every view offset linearly (a pointer that advances by a fixed stride)."""
        if self.on_tile is not None and position in map_dims(self.on_tile.data):
            return False
        if any(position in map_dims(m) for m in self.iv_scalar_maps):
            return False
        if any(position in map_dims(h.shift) for h in self.homes):
            return False
        return all(linear_in(expr, position) for offset in self.offsets.data
                   for expr in offset.data.results)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.callee)
        printer.print_string("(")
        for index, (view, offset) in enumerate(self.pointer_views):
            if index:
                printer.print_string(", ")
            print_view(printer, view, offset)
        printer.print_string(")")
        if self.iv_scalars is not None:
            printer.print_string(" iv_scalars [")
            printer.print_list(self.iv_scalar_maps, lambda m: print_map(printer, m))
            printer.print_string("]")
        printer.print_string(f" scalars [{', '.join(str(s) for s in self.scalar_values)}] on ")
        printer.print_attribute(self.tiles)
        if self.on_tile is not None:
            printer.print_string(" only ")
            print_map(printer, self.on_tile.data)
        if self.homes:
            printer.print_string(" home [")
            printer.print_list(self.homes, lambda h: h.print(printer))
            printer.print_string("]")
        print_ivs(printer, self.ivs)
        print_provenance_and_attrs(printer, self, self.provenance)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        callee = parser.parse_symbol_name().data
        views = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, lambda: parse_view(parser))
        iv_scalars: list[AffineMap] = []
        if parser.parse_optional_keyword("iv_scalars"):
            iv_scalars = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, parser.parse_affine_map
            )
        parser.parse_keyword("scalars")
        scalars = parser.parse_comma_separated_list(
            Parser.Delimiter.SQUARE, lambda: parse_i64(parser)
        )
        tiles = parse_tiles_after_on(parser)
        on_tile = parser.parse_affine_map() if parser.parse_optional_keyword("only") else None
        homes = []
        if parser.parse_optional_keyword("home"):
            homes = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, lambda: HomeView.parse(parser))
        ivs = parse_ivs(parser)
        provenance = parse_provenance(parser)
        buffer_type = BufferType()
        resolved = [(parser.resolve_operand(v, buffer_type), m) for v, m in views]
        op = cls(callee, resolved, scalars, tiles, ivs, provenance, on_tile, iv_scalars, homes)
        op.attributes |= parser.parse_optional_attr_dict()
        return op

    def verify_(self) -> None:
        label = f"tile.kernel @{self.symbol}"
        if len(self.offsets.data) != len(self.views):
            raise VerifyException(
                f"{label}: {len(self.views)} buffer view(s) but {len(self.offsets.data)} offset map(s)"
            )
        if self.scalars.elt_type != i64:
            raise VerifyException(f"{label}: scalars must be an array<i64: ...>")
        bounds = check_induction_operands(self, self.ivs)
        check_tile_set_fits(self, "tile set", self.tiles)
        self.verify_home_properties(label)
        view_bytes = self.view_footprints(label)
        for position, (view, offset) in enumerate(self.pointer_views):
            buffer = defining_buffer(self, f"view {position}", view)
            check_map(self, f"view {position} offset", offset, bounds)
            check_resident(self, f"view {position} buffer", buffer, self.tiles)
            check_view_inside(self, f"operand {position}", buffer, offset, view_bytes[position], bounds)
        for home in self.homes:
            home.verify(self, label, bounds, view_bytes)
        if self.on_tile is not None:
            check_map(self, "on_tile", self.on_tile.data, bounds)
            self.verify_on_tile(label, bounds)
        for position, iv_scalar in enumerate(self.iv_scalar_maps):
            check_map(self, f"iv scalar {position}", iv_scalar, bounds)

    def view_footprints(self, label: str) -> list[int]:
        """Bytes the call touches through each view: the registry's footprint for a known
        kernel (which must then get its ABI's operand counts), else at least one byte. Unknown
        symbols are left to the passes, which report them against the registry."""
        abi = KERNELS.get(self.symbol)
        if abi is None:
            return [1] * self.pointer_count
        # a per-iteration scalar counts as one scalar (its values are checked where it runs)
        scalars = (0,) * len(self.iv_scalar_maps) + tuple(self.scalars.get_values())
        if self.pointer_count != len(abi.pointers) or not abi.accepts_scalars(len(scalars)):
            raise VerifyException(
                f"{label}: the kernel takes {len(abi.pointers)} view(s) ({', '.join(abi.pointers)}) "
                f"and {len(abi.scalars)} scalar(s) ({', '.join(abi.scalars)}); got "
                f"{self.pointer_count} and {len(scalars)}"
            )
        try:  # a negative count, a malformed descriptor
            footprint = abi.footprint_of(scalars)
        except ValueError as error:
            raise VerifyException(f"{label}: {error}") from None
        if footprint is None:
            return [1] * self.pointer_count
        return [max(1, footprint[name]) for name in abi.pointers]

    def verify_home_properties(self, label: str) -> None:
        present = [k for k in ("home_pointers", "home_tiles", "home_shifts")
                   if self.properties.get(k) is not None]
        if not present:
            return
        if len(present) != 3:
            raise VerifyException(f"{label}: home_pointers, home_tiles and home_shifts come together")
        assert self.home_pointers is not None and self.home_tiles is not None and self.home_shifts is not None
        count = len(self.home_pointers.get_values())
        if self.home_pointers.elt_type != i64 or len(self.home_tiles.data) != count or \
                len(self.home_shifts.data) != count or count > len(self.views):
            raise VerifyException(
                f"{label}: home_pointers (array<i64>), home_tiles and home_shifts need one entry "
                "per home view"
            )

    def verify_on_tile(self, label: str, bounds: Sequence[tuple[int, int]]) -> None:
        assert self.on_tile is not None
        chosen = map_values(self.on_tile.data, bounds)
        if chosen is None or chosen.size == 0:  # an empty nest is the enclosing loop's error
            return
        total = configured_tile_count(self)
        if chosen.min() < 0 or (total is not None and chosen.max() >= total):
            bad = int(chosen.min()) if chosen.min() < 0 else int(chosen.max())
            raise VerifyException(f"{label}: on_tile selects tile {bad}, which does not exist")
        if not np.isin(chosen, self.tiles.as_array()).any():
            raise VerifyException(
                f"{label}: on_tile never selects a tile of {self.tiles}; the run would never happen"
            )


Tile = Dialect(
    "tile",
    [BufferOp, LoopOp, ExchangeOp, KernelOp],
    [BufferType, BufferKindAttr, TileSetAttr, WorkProvenanceAttr, RowPatchAttr,
     ExchangeScheduleAttr],
)
