"""The pipeline's options (declared once, for `graph-to-mid` and `ipu-pipeline`), and reading
the module's `PipelineConfig` (`ipu.config`) the same way in every pass."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from device.target import Target, get_target
from ipu_dialects.mid import CONFIG_ATTR_NAME, PipelineConfigAttr
from ipu_dialects.mid_attrs import IndivisibleOption
from ipu_dialects.mid_config import GemmPartials, ProfilingOption


@dataclass(frozen=True)
class PipelineOptions:
    """The options `ipu-pipeline` hands to `graph-to-mid` (both passes inherit them, so the
    CLI spells them the same: `tiles=N indivisible=... profiling=... gemm-partials=...
    catalog=a,b spread-sequences=true|false spread-saving=N spread-inputs=true|false
    program-layouts=true|false`). `graph-to-mid` records the
    configuration in the module's `ipu.config`."""

    tiles: int | None = None
    indivisible: IndivisibleOption = "pad"
    profiling: ProfilingOption = "off"
    # GEMM partial sums over K: f32 (exact FP32 accumulation, one rounding) or f16 (also
    # enables the cheaper FP16-partials candidates, which round after every 64-deep block).
    # Only the default catalog depends on it: an explicit `catalog` is taken as given.
    gemm_partials: GemmPartials = "f32"
    # The GEMM candidates to choose from (default: all but the FP16-partials ones, unless
    # gemm-partials=f16).
    catalog: tuple[str, ...] = ()
    # Store a repeat's large per-iteration sequences spread over the chip and fetch each
    # iteration's element in the body (`passes/operators/repeat.py`, `spread_sequences`):
    # `ipu-pipeline`'s last fallback when the program does not fit otherwise.
    spread_sequences: bool = False
    # With spread-sequences: spread the largest until tile 0 holds this many bytes fewer (what
    # the pipeline measured it to overflow by); 0: until they hold a quarter of its memory.
    spread_saving: int = 0
    # Store each graph input (a weight) on the least-loaded tiles rather than on its first
    # consumer's, and bring it to every consumer with a mid.rearrange
    # (`passes/graph_to_mid.py`, `GraphToMidLowering.home_of`): `ipu-pipeline`'s fallback when
    # the inputs of the program pile onto the same tiles.
    spread_inputs: bool = False
    # Given no catalog, also lower each function with the opt-in layouts (the 3-D grid) and
    # keep the lowering whose program estimate is lower (`graph_to_mid.lower_cheaper_catalog`):
    # BERT-base at 1472 tiles 422,338 -> 278,842 modeled cycles, at about twice the compile
    # time (the 3-D grid's formats make its consumers' pricing dear), hence not the default.
    program_layouts: bool = False

    def pipeline_options(self) -> dict[str, Any]:
        """These options (only), as keyword arguments for another `PipelineOptions` pass."""
        return {f.name: getattr(self, f.name) for f in fields(PipelineOptions)}


def pipeline_config(module: ModuleOp, pass_name: str) -> PipelineConfigAttr:
    config = module.attributes.get(CONFIG_ATTR_NAME)
    if not isinstance(config, PipelineConfigAttr):
        raise PassFailedException(
            f"{pass_name}: the module has no '{CONFIG_ATTR_NAME}' #mid.config attribute; "
            "run graph-to-mid first (it records the tile count and target)"
        )
    return config


def configured_target(config: PipelineConfigAttr, pass_name: str) -> Target:
    try:
        return get_target(config.target.data)
    except ValueError as error:
        raise PassFailedException(f"{pass_name}: {error}") from None


def target_and_tiles(module: ModuleOp, pass_name: str) -> tuple[Target, int]:
    config = pipeline_config(module, pass_name)
    return configured_target(config, pass_name), config.tiles.data
