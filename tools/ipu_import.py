"""`ipu-import MODEL.onnx -o DIR`: an ONNX model as graph IR (`DIR/model.mlir`) and its weights
(`DIR/weights.npz`, one array per weight argument, by argument name).

    ipu-import model.onnx -o out
    ipu-run out/model.mlir --inputs out/weights.npz --input x=x.npy --reference

`--repeat-layers`: consecutive blocks of identical structure (a stack of transformer layers)
become one `graph.repeat` whose body is one block, carrying the activation from block to block;
the per-block weights of each place are stacked into one argument `[layers, ...]`, named after
the first block's weight with the layer index as a range (`v0-3.ln_1.weight`) or, when the
names hold no such index, with `.x<layers>` appended (`onnx__MatMul.478.x4`); weights.npz holds
the stacked arrays under those names (frontend/repeat_layers.py has the rules). A model without
repeated blocks is imported as without the flag, with a note on stderr.

Exit status: 0 when the model is imported, 2 on a diagnostic (`ipu-import: error: MODEL: ...`,
naming the ONNX node, its op type and its index, or the graph input) or an unreadable model;
nothing is written then. Needs the `onnx` package (`pip install -e '.[onnx]'`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from xdsl.printer import Printer

from tools.usage import UsageError
from tools.version import version_callback

EXIT_OK, EXIT_DIAGNOSTIC = 0, 2

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


def check_model_file(model: Path) -> None:
    """A regular file (a FIFO would block the read, /dev/zero never end) within protobuf's
    2 GiB (`MAX_ONNX_BYTES`, device/limits.py)."""
    import stat

    from device.limits import MAX_ONNX_BYTES

    info = model.stat()
    if not stat.S_ISREG(info.st_mode):
        raise ValueError("not a regular file")
    if info.st_size > MAX_ONNX_BYTES:
        raise ValueError(f"{info.st_size} bytes (at most {MAX_ONNX_BYTES}: MAX_ONNX_BYTES, "
                         "device/limits.py)")


def import_main(model: Path, output: Path, dtype: str = "f32", function: str = "main",
                repeat_layers: bool = False) -> int:
    try:
        import onnx

        from frontend.onnx import OnnxImportError, import_onnx
    except ImportError as error:
        print(f"ipu-import: error: {error}; install the extra: pip install -e '.[onnx]'",
              file=sys.stderr)
        return EXIT_DIAGNOSTIC
    try:
        check_model_file(model)
        loaded = onnx.load(str(model))
    except Exception as error:  # missing, a directory, not protobuf: all one usage error
        print(f"ipu-import: error: cannot read '{model}' as an ONNX model: {error}",
              file=sys.stderr)
        return EXIT_DIAGNOSTIC
    try:
        imported = import_onnx(loaded, dtype, function, repeat_layers)
    except OnnxImportError as error:
        print(f"ipu-import: error: {model}: {error}", file=sys.stderr)
        return EXIT_DIAGNOSTIC
    try:
        from tools.output_files import staged_directory

        with staged_directory(output) as staging:  # renamed into place, never followed
            with open(staging / "model.mlir", "w") as stream:
                Printer(stream=stream).print_op(imported.module)
                stream.write("\n")
            # (Any: numpy's stub reads a ** mapping as possibly holding its allow_pickle flag)
            arrays: dict[str, Any] = imported.weights
            np.savez(staging / "weights.npz", **arrays)
    except (OSError, UsageError) as error:
        print(f"ipu-import: error: cannot write to '{output}': {error}", file=sys.stderr)
        return EXIT_DIAGNOSTIC
    ops = sum(op.name.startswith("graph.") and op.name != "graph.yield"
              for op in imported.module.walk())
    print(f"wrote {output / 'model.mlir'} ({ops} graph ops) and {output / 'weights.npz'} "
          f"({len(imported.weights)} weights)")
    for run in imported.repeats:
        print(f"repeated layers: {run.count} blocks of {run.block_ops} ops became one "
              f"graph.repeat, with {len(run.sequences)} stacked weights")
    if repeat_layers and not imported.repeats:
        print("ipu-import: note: --repeat-layers found no consecutive blocks of identical "
              "structure; the model is imported without a graph.repeat", file=sys.stderr)
    return EXIT_OK


@app.command()
def run(
    model: Annotated[Path, typer.Argument(help="the ONNX model")],
    output: Annotated[Path, typer.Option("-o", "--output", help="directory to write")],
    dtype: Annotated[str, typer.Option(help="element type of every tensor: f32 or f16")] = "f32",
    function: Annotated[str, typer.Option(help="name of the func.func")] = "main",
    repeat_layers: Annotated[bool, typer.Option(
        "--repeat-layers",
        help="consecutive identical blocks as one graph.repeat, their weights stacked")] = False,
    version: Annotated[bool, typer.Option(
        "--version", callback=version_callback("ipu-import"), is_eager=True,
        help="print the version and exit")] = False,
) -> None:
    """Import MODEL.onnx as DIR/model.mlir and DIR/weights.npz."""
    sys.exit(import_main(model, output, dtype, function, repeat_layers))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
