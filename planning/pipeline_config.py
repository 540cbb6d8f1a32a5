"""Reading the module's `PipelineConfig` (`ipu.config`), the same way in every pass."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from device.target import Target, get_target
from ipu_dialects.mid import CONFIG_ATTR_NAME, PipelineConfigAttr


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
