"""Registry of ipu-opt's emitters (`-t NAME`)."""

from collections.abc import Callable

from xdsl.utils.target import Target


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    def get_ipu_asm():
        from tools.emit_asm import IpuAsmTarget

        return IpuAsmTarget

    def get_ipu_rows():
        from tools.emit_rows import IpuRowsTarget

        return IpuRowsTarget

    return {"ipu-asm": get_ipu_asm, "ipu-rows": get_ipu_rows}
