"""`mid-to-tile`: lower each mid function to logical per-tile work (`tile` dialect).

Every function becomes a function without arguments whose body declares one `tile.buffer` per
value followed by the work, in program order (`passes/operators/tile_lowering.py`). Each mid op
is lowered by its operator (`passes/operators/`): for example `mid.gemm` by the retained AMP
plan's block loops (`passes/operators/gemm_lowering.py`), `mid.repeat` by one `tile.loop`
around its lowered body (`passes/operators/repeat.py`). The op count is a constant per op:
it grows neither with the tile count, nor with the number of blocks, nor with a repeat's count.

The tile count comes from the module's `ipu.config` (`#mid.config`), never from an option.
An op no operator lowers gives a `PassFailedException` naming the op.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from passes.operators.tile_lowering import FunctionLowering
from passes.pipeline_config import configured_target, pipeline_config


@dataclass(frozen=True)
class MidToTilePass(ModulePass):
    """Lower `mid` functions to `tile` work lists (see the module docstring)."""

    name = "mid-to-tile"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = pipeline_config(op, self.name)
        target = configured_target(config, self.name)
        for function in [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]:
            if function.is_declaration:
                continue
            lowered = FunctionLowering(function, config.tiles.data, target).lower()
            op.body.block.insert_op_before(lowered, function)
            op.body.block.erase_op(function)

