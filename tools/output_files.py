"""Writing outputs safely: `--package`, `--save-outputs`, `--report`, `ipu-import -o` and
`ipu-opt -o`.

Every output file is written under a temporary name in its destination directory and renamed
into place (`os.replace`), so a failure leaves the previous file, or nothing, never half a
file; a symbolic link at the destination is replaced, never followed (its target is left as it
is), and a symbolic link as the destination directory is refused. Output directories are
checked before the work (`check_output_directory`: a usage error, not a traceback after the
compile) but created only when their files are written, so a failed compile leaves no empty
directory behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from tools.usage import UsageError


def check_output_directory(option: str, path: str | Path | None) -> Path | None:
    """The directory an option writes to, checked now (not created)."""
    if path is None:
        return None
    directory = Path(path)
    if directory.is_symlink():
        raise UsageError(f"{option}: '{path}' is a symbolic link; an output directory is "
                         "never followed through one")
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{option}: cannot use '{path}' as an output directory: it is a file")
    existing = next((p for p in [directory, *directory.parents] if p.exists()), Path("."))
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: cannot use '{path}' as an output directory: "
                         f"'{existing}' is not writable")
    try:  # access() says yes to root everywhere: a directory made and removed is the real test
        os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".ipu-probe.", suffix=".tmp"))
    except OSError as error:
        raise UsageError(f"{option}: cannot use '{path}' as an output directory: cannot "
                         f"create anything in '{existing}' ({error.strerror})") from None
    return directory


def write_file(path: Path, data: bytes | str) -> None:
    """`data` at `path`: written to a temporary name beside it, then renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def staged_directory(directory: Path) -> Iterator[Path]:
    """A temporary directory beside `directory` to write into; on success each file it holds
    is renamed into `directory` (created then), on failure it is removed."""
    if directory.is_symlink():
        raise UsageError(f"'{directory}' is a symbolic link; an output directory is never "
                         "followed through one")
    parent = directory.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=parent, prefix=f".{directory.name}.", suffix=".tmp"))
    try:
        yield staging
        directory.mkdir(exist_ok=True)
        for item in sorted(staging.rglob("*")):
            target = directory / item.relative_to(staging)
            if item.is_dir():
                target.mkdir(exist_ok=True)
            else:
                os.replace(item, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def writer_to(directory: Path) -> Callable[[str, bytes | str], None]:
    return lambda name, data: write_file(directory / name, data)
