"""The pipeline configuration of the `mid` dialect: `#mid.config` and its policies (IR
definitions only; the dialect `Mid` in `ipu_dialects/mid.py` registers them, and its module
re-exports them).

`graph-to-mid` stores the configuration on the module as `ipu.config`, so that every pass of a
pipeline sees the same one and the printed IR shows it; reading it from a module and
resolving its target happen in `planning/pipeline_config.py`. The tile verifiers read its
tile count through `ConfiguresTileCount` (`ipu_dialects/shared_attrs.py`).

Syntax
------
    #mid.config<target = "ipu21", tiles = N, indivisible = pad|reject, inputs = consumer|row_major,
                catalog = ["name", ...], scheduling = in_order, profiling = off|cycles>
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from device.target import get_target
from ipu_dialects.mid_attrs import (
    Indivisible,
    IndivisibleAttr,
    integer_parser,
    parse_field,
    parse_key,
)
from ipu_dialects.shared_attrs import ConfiguresTileCount, enum_attr


class InputPolicy(StrEnum):
    """How graph inputs arrive: in the consumer's format, or row-major (then converted)."""

    CONSUMER = "consumer"
    ROW_MAJOR = "row_major"


class SchedulingPolicy(StrEnum):
    IN_ORDER = "in_order"


class ProfilingPolicy(StrEnum):
    OFF = "off"
    CYCLES = "cycles"


# The policies' values as the types of options (`graph-to-mid{inputs profiling}`): xDSL's pass
# options and typer take a `Literal`, not a StrEnum (test_mid.py holds each equal to its enum).
InputPolicyOption = Literal["consumer", "row_major"]
ProfilingOption = Literal["off", "cycles"]
# The precisions of GEMM partial sums a pipeline may allow (`graph-to-mid{gemm-partials}`): the
# config holds the catalog they enable (`planning.gemm_problem.default_catalog_names`).
GemmPartials = Literal["f32", "f16"]


# The enum attributes of the config's policies. Inside `#mid.config` they print as the bare
# value (`consumer`); standalone, as `#mid<inputs consumer>`.


@irdl_attr_definition
class InputPolicyAttr(EnumAttribute[InputPolicy], SpacedOpaqueSyntaxAttribute):
    name = "mid.inputs"


@irdl_attr_definition
class SchedulingPolicyAttr(EnumAttribute[SchedulingPolicy], SpacedOpaqueSyntaxAttribute):
    name = "mid.scheduling"


@irdl_attr_definition
class ProfilingPolicyAttr(EnumAttribute[ProfilingPolicy], SpacedOpaqueSyntaxAttribute):
    name = "mid.profiling"


@irdl_attr_definition
class PipelineConfigAttr(ParametrizedAttribute, ConfiguresTileCount):
    """`PipelineConfig`, stored on the module as `ipu.config`: target, tile count, graph-input
    format policy, operator catalog, scheduling and profiling policy."""

    name = "mid.config"
    target: StringAttr
    tiles: IntAttr
    indivisible: IndivisibleAttr
    inputs: InputPolicyAttr
    catalog: ArrayAttr[StringAttr]
    scheduling: SchedulingPolicyAttr
    profiling: ProfilingPolicyAttr

    def __init__(
        self,
        target: str,
        tiles: int,
        indivisible: str = Indivisible.PAD,
        inputs: str = InputPolicy.CONSUMER,
        catalog: Sequence[str] = (),
        scheduling: str = SchedulingPolicy.IN_ORDER,
        profiling: str = ProfilingPolicy.OFF,
    ):
        super().__init__(
            StringAttr(target),
            IntAttr(tiles),
            enum_attr(IndivisibleAttr, indivisible, "config: indivisible policy"),
            enum_attr(InputPolicyAttr, inputs, "config: graph-input format policy"),
            ArrayAttr(StringAttr(c) for c in catalog),
            enum_attr(SchedulingPolicyAttr, scheduling, "config: scheduling policy"),
            enum_attr(ProfilingPolicyAttr, profiling, "config: profiling policy"),
        )

    def configured_tiles(self) -> int:
        return self.tiles.data

    @property
    def catalog_names(self) -> tuple[str, ...]:
        return tuple(c.data for c in self.catalog.data)

    def with_catalog(self, catalog: Sequence[str]) -> PipelineConfigAttr:
        """This configuration with another operator catalog."""
        return PipelineConfigAttr(self.target.data, self.tiles.data, self.indivisible.data,
                                  self.inputs.data, catalog, self.scheduling.data,
                                  self.profiling.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            parse_key(parser, "target")
            target = parser.parse_str_literal()
            tiles = parse_field(parser, "tiles", integer_parser(parser))
            indivisible = parse_field(parser, "indivisible", lambda: parser.parse_str_enum(Indivisible))
            inputs = parse_field(parser, "inputs", lambda: parser.parse_str_enum(InputPolicy))
            catalog = parse_field(parser, "catalog", lambda: parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: StringAttr(parser.parse_str_literal())
            ))
            scheduling = parse_field(parser, "scheduling", lambda: parser.parse_str_enum(SchedulingPolicy))
            profiling = parse_field(parser, "profiling", lambda: parser.parse_str_enum(ProfilingPolicy))
        return (
            StringAttr(target),
            IntAttr(tiles),
            IndivisibleAttr(indivisible),
            InputPolicyAttr(inputs),
            ArrayAttr(catalog),
            SchedulingPolicyAttr(scheduling),
            ProfilingPolicyAttr(profiling),
        )

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string("target = ")
            printer.print_string_literal(self.target.data)
            printer.print_string(
                f", tiles = {self.tiles.data}, indivisible = {self.indivisible.data}, "
                f"inputs = {self.inputs.data}, catalog = "
            )
            with printer.in_square_brackets():
                printer.print_list(self.catalog_names, printer.print_string_literal)
            printer.print_string(
                f", scheduling = {self.scheduling.data}, profiling = {self.profiling.data}"
            )

    def verify(self) -> None:
        try:
            target = get_target(self.target.data)
        except ValueError as err:
            raise VerifyException(f"config: {err}") from None
        tiles = self.tiles.data
        if not 1 <= tiles <= target.tiles:
            raise VerifyException(
                f"config: tile count {tiles} is outside 1..{target.tiles} for target {target.name}"
            )
        names = self.catalog_names
        if len(set(names)) != len(names):
            raise VerifyException(f"config: operator catalog repeats a name: {list(names)}")
