"""What the mid and tile dialects share: the enum attributes both hold and the module's
configured tile count.

The enum attributes keep their `mid.*` names (the printed IR is unchanged) and are registered
by the mid dialect (`ipu_dialects/mid.py` re-exports them). The tile verifiers read the tile
count of the module's `ipu.config` through `ConfiguresTileCount`, which `#mid.config`
implements: the tile dialect needs the count, not the mid dialect.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
from xdsl.dialects.builtin import BytesAttr, DenseArrayBase, IntegerType, ModuleOp, Signedness
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Operation, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.utils.exceptions import VerifyException

from device.layouts import ElementOrder
from device.target import MemoryClass
from device.target import Precision as StoragePrecision

# The enum-valued parameters of mid attributes (and of tile.buffer). Inside the attributes
# that hold them they print as the bare value (`f16`, `amp_left`); standalone, e.g. as an op
# property in generic form, as `#mid<order amp_left>`.


@irdl_attr_definition
class PrecisionAttr(EnumAttribute[StoragePrecision], SpacedOpaqueSyntaxAttribute):
    name = "mid.precision"


@irdl_attr_definition
class ElementOrderAttr(EnumAttribute[ElementOrder], SpacedOpaqueSyntaxAttribute):
    name = "mid.order"


@irdl_attr_definition
class MemoryClassAttr(EnumAttribute[MemoryClass], SpacedOpaqueSyntaxAttribute):
    name = "mid.memory"


EnumAttr = TypeVar("EnumAttr", bound=EnumAttribute[Any])


def enum_attr(attr_class: type[EnumAttr], value: str | EnumAttr, what: str) -> EnumAttr:
    """`value` (an enum member, its text or the attribute itself) as an `attr_class`.

    The parsers read enum values with `parse_str_enum`; this is for Python callers, whose
    misspelt string gets a diagnostic naming `what` rather than a bare ValueError.
    """
    if isinstance(value, attr_class):
        return value
    try:
        return attr_class(attr_class.enum_type(value))
    except ValueError:
        allowed = ", ".join(attr_class.enum_type)
        raise VerifyException(f"{what} '{value}' is not one of {allowed}") from None


CONFIG_ATTR_NAME = "ipu.config"


class ConfiguresTileCount(Attribute, ABC):
    """An attribute that, stored on the module as `ipu.config`, fixes how many tiles the
    module's work may use (`#mid.config`)."""

    @abstractmethod
    def configured_tiles(self) -> int: ...


def configured_tile_count(op: Operation) -> int | None:
    """The tile count of the module's `ipu.config`, if there is one."""
    module = op.get_toplevel_object()
    if not isinstance(module, ModuleOp):
        return None
    config = module.attributes.get(CONFIG_ATTR_NAME)
    return config.configured_tiles() if isinstance(config, ConfiguresTileCount) else None


def dense_ints(elt_type: IntegerType, values: Sequence[int]) -> DenseArrayBase:
    """`DenseArrayBase.from_list(elt_type, values)`, the same attribute, packed by NumPy when
    every value is a plain int in the signed range of a signless 32- or 64-bit type (what
    `from_list` then stores as is); anything else goes through `from_list` (its
    normalization and its errors). Per-iteration patch arrays hold thousands of values."""
    width = elt_type.width.data
    if width in (32, 64) and elt_type.signedness.data == Signedness.SIGNLESS and all(
            type(v) is int for v in values):
        bound = 1 << (width - 1)
        if not values or (-bound <= min(values) and max(values) < bound):
            packed = np.asarray(values, dtype="<i8" if width == 64 else "<i4").tobytes()
            return DenseArrayBase(elt_type, BytesAttr(packed))
    return DenseArrayBase.from_list(elt_type, values)
