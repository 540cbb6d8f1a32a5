"""The package schema: one corruption per check, each a `PackageError` naming file and field.

A real package (an FP16 GEMM on 4 tiles, saved by `ipu-run --package`) is copied and changed in
one place; `Package.load` must reject it before anything runs, and the message is pinned. The
tools read the same loader: `ipu-run DIR` and `ipu-objdump --package` exit 2 with the message.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from e2e_support import ROW_PLANS
from typer.testing import CliRunner

from device import package_metadata, package_schema
from device.package import FORMAT_VERSION, Package, PackageError
from tools import ipu_objdump, ipu_run
from tools.ipu_run import compile_module, module_text, parse_module, run_main

SOURCE = (
    "func.func @gemm(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) -> tensor<64x64xf16> {\n"
    "  %c = graph.gemm %a, %b : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16>\n"
    "  func.return %c : tensor<64x64xf16>\n}\n")


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("schema")
    source = directory / "gemm.mlir"
    source.write_text(SOURCE)
    assert run_main(source, tiles=4, package_dir=directory / "pkg") == 0
    return directory / "pkg"


@pytest.fixture(scope="module")
def row_base(tmp_path_factory) -> Path:
    """The same GEMM compiled with the row plan, whose home tiles copy blocks (`copy_words`):
    the corruptions of a one-scalar kernel call below use that call."""
    directory = tmp_path_factory.mktemp("schema_rows")
    module = parse_module(directory / "gemm.mlir", SOURCE)
    package = compile_module(module.clone(), 4, "pad", catalog=ROW_PLANS)
    package.source = module_text(module)
    package.save(directory / "pkg")
    return directory / "pkg"


# the corruptions of a one-scalar kernel call, which use the row plan's `copy_words`
ROW_PLAN_CASES = {"unknown kernel", "scalar count", "scalar over 32 bits", "scalar count list"}


@pytest.fixture
def package(base, row_base, tmp_path, request) -> Path:
    callspec = getattr(request.node, "callspec", None)
    name = callspec.params.get("name") if callspec is not None else None
    copy = tmp_path / "pkg"
    shutil.copytree(row_base if name in ROW_PLAN_CASES else base, copy)
    return copy


@pytest.fixture
def row_package(row_base, tmp_path) -> Path:
    copy = tmp_path / "pkg"
    shutil.copytree(row_base, copy)
    return copy


def edit_metadata(directory: Path, change: Callable[[dict], None]) -> None:
    meta = json.loads((directory / "metadata.json").read_text())
    change(meta)
    (directory / "metadata.json").write_text(json.dumps(meta))


def edit_arrays(directory: Path, change: Callable[[dict], None]) -> None:
    with np.load(directory / "program.npz", allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    change(arrays)
    np.savez_compressed(directory / "program.npz", **arrays)


def first_step(meta: dict, kind: str, symbol: str | None = None) -> dict:
    return next(s for s in meta["steps"]
                if s["kind"] == kind and (symbol is None or s.get("symbol") == symbol))


def step_index(directory: Path, kind: str, symbol: str | None = None) -> int:
    meta = json.loads((directory / "metadata.json").read_text())
    return meta["steps"].index(first_step(meta, kind, symbol))


def set_array(name_of: Callable[[Path], str], index, value) -> Callable[[Path], None]:
    def change(directory: Path) -> None:
        name = name_of(directory)

        def put(arrays: dict) -> None:
            arrays[name] = arrays[name].copy()
            arrays[name][index] = value
        edit_arrays(directory, put)
    return change


def meta_change(change: Callable[[dict], None]) -> Callable[[Path], None]:
    return lambda directory: edit_metadata(directory, change)


def setter(*path_and_value) -> Callable[[dict], None]:
    *path, value = path_and_value

    def change(meta: dict) -> None:
        target = meta
        for key in path[:-1]:
            target = target[key] if not callable(key) else key(target)
        target[path[-1]] = value
    return change


def kernel(symbol: str) -> Callable[[dict], dict]:
    return lambda steps: first_step({"steps": steps}, "kernel", symbol)


def exchange(steps: list) -> dict:
    return first_step({"steps": steps}, "exchange")


def row_id_name(directory: Path) -> str:
    return f"step{step_index(directory, 'exchange')}_row_id"


def tiles_name(directory: Path) -> str:
    return f"step{step_index(directory, 'kernel', 'amp_gemm_f16p32_init')}_tiles"


def pointers_name(directory: Path) -> str:
    return f"step{step_index(directory, 'kernel', 'amp_gemm_f16p32_init')}_pointers"


def overlap_shards(first: str, second: str, offset: int) -> Callable[[Path], None]:
    """Move `second`'s shard on the first tile it shares with `first` to `offset` bytes past
    `first`'s shard there."""
    def change(directory: Path) -> None:
        def put(arrays: dict) -> None:
            tiles_a, tiles_b = arrays[f"{first}_tiles"].tolist(), arrays[f"{second}_tiles"].tolist()
            tile = next(t for t in tiles_b if t in tiles_a)
            addresses = arrays[f"{second}_addresses"].copy()
            addresses[tiles_b.index(tile)] = arrays[f"{first}_addresses"][tiles_a.index(tile)] + offset
            arrays[f"{second}_addresses"] = addresses
        edit_arrays(directory, put)
    return change


def add_member(arrays: dict) -> None:
    arrays["hidden"] = np.zeros(50_000_000, np.float32)  # 200 MB, a few hundred KB compressed


def deep_json(directory: Path) -> None:
    (directory / "metadata.json").write_text("[" * 100_000 + "]" * 100_000)


# (corruption, file, message fragment): the message must name the file and the field.
CASES: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("version", meta_change(setter("format_version", 1)), "metadata.json",
     f"format_version: the package has format 1, this ipu-stack reads format {FORMAT_VERSION}; "
     "rebuild it (ipu-run FILE.mlir --package DIR)"),
    ("version missing", meta_change(lambda m: m.pop("format_version")), "metadata.json",
     "format_version: the package has format null"),
    ("not an object", lambda d: (d / "metadata.json").write_text("[2]"), "metadata.json",
     "format_version: the package has format null"),
    ("unknown key", meta_change(setter("extra", 1)), "metadata.json",
     "the top level: unknown key 'extra'"),
    ("missing key", meta_change(lambda m: m.pop("row_count")), "metadata.json",
     "the top level: missing key 'row_count'"),
    ("float tiles", meta_change(setter("tiles", 4.5)), "metadata.json",
     "tiles: expected an integer, got the number 4.5"),
    ("bool tiles", meta_change(setter("tiles", True)), "metadata.json",
     "tiles: expected an integer, got true"),
    ("too many tiles", meta_change(setter("tiles", 1473)), "metadata.json",
     "tiles: 1473 is outside [1, 1472]"),
    ("target", meta_change(setter("target", "ipu3")), "metadata.json",
     "target: 'ipu3' is not one of ipu21"),
    ("function name", meta_change(setter("function", "a b")), "metadata.json",
     "function: 'a b' is not a name (letters, digits, _ . $ -)"),
    ("long text", meta_change(setter("pipeline", "x" * 5000)), "metadata.json",
     "pipeline: a string of 5000 characters (at most 4096)"),
    ("steps not a list", meta_change(setter("steps", {})), "metadata.json",
     "steps: expected a list, got an object"),
    ("step kind", meta_change(setter("steps", 0, "kind", "dma")), "metadata.json",
     "steps[0].kind: 'dma' is not one of exchange, kernel"),
    ("step not an object", meta_change(setter("steps", 0, 7)), "metadata.json",
     "steps[0]: expected an object, got the number 7"),
    ("row address outside", meta_change(setter("steps", exchange, "row_address", 0)),
     "metadata.json", "row_address: 0 is outside [311296, 704511]"),
    ("row address misaligned", meta_change(setter("steps", exchange, "row_address", 0x4C002)),
     "metadata.json", "row_address: 0x4c002 is not word aligned"),
    ("row past standard memory",
     meta_change(setter("steps", exchange, "row_address", 0xAC000 - 4)),
     "metadata.json", "words at 0xabffc ends past the standard memory rows may take "
     "[0x4c000, 0xac000)"),
    ("unknown kernel", meta_change(setter("steps", kernel("copy_words"), "symbol", "memcpy")),
     "metadata.json", "symbol: unknown kernel 'memcpy'; the ABI registry (device/kernels.py)"),
    ("scalar count", meta_change(setter("steps", kernel("copy_words"), "scalars", [1, 2])),
     "metadata.json", "scalars: 2 scalar(s) for copy_words(out, src; words) -> void"),
    ("scalar over 32 bits",
     meta_change(setter("steps", kernel("copy_words"), "scalars", 0, 1 << 32)),
     "metadata.json", "scalars[0]: 4294967296 is outside [-2147483648, 4294967295]"),
    ("pointer arity", meta_change(setter("steps", kernel("amp_gemm_f16p32_init"), "symbol",
                                         "copy_words")),
     "program.npz", "expected 2 columns"),
    ("scalar count list", meta_change(setter("steps", kernel("copy_words"), "scalars",
                                             list(range(257)))),
     "metadata.json", "scalars: 257 entries (at most 256)"),
    ("huge shape", meta_change(setter("outputs", 0, "shape", [10**12, 192])), "metadata.json",
     "outputs[0].shape[0]: 1000000000000 is outside [1, 940572672]"),
    ("shape vs shards", meta_change(setter("outputs", 0, "shape", [640, 64])), "metadata.json",
     "outputs[0].shape: [640, 64] has more elements than its 4 shard(s) of [16, 64] hold"),
    ("rank", meta_change(setter("inputs", 0, "padded", [16])), "metadata.json",
     "inputs[0].padded: shape [64, 128] and padded shard [16] need the same rank >= 1"),
    ("shard too big", meta_change(setter("inputs", 0, "padded", [4096, 128])), "metadata.json",
     "inputs[0].padded: a [4096, 128] f16 shard is larger than tile memory (638976 bytes)"),
    ("order", meta_change(setter("inputs", 1, "padded", [64, 48])), "metadata.json",
     "inputs[1].order: amp_right shard shape (64, 48) is not padded to 64-blocks"),
    ("precision", meta_change(setter("inputs", 0, "precision", "f64")), "metadata.json",
     "inputs[0].precision: 'f64' is not one of f8f143, f16, f32"),
    ("scale", meta_change(setter("inputs", 0, "scale", 2)), "metadata.json",
     "inputs[0].scale: 2 on a f16 tensor; only f8f143 tensors are scaled"),
    ("duplicate name", meta_change(setter("inputs", 1, "name", "a")), "metadata.json",
     "inputs: the name 'a' is used twice"),
    ("row symbols", meta_change(setter("metadata", "row_symbols", 0, 3)), "metadata.json",
     "metadata.row_symbols[0]: expected a string, got the number 3"),
    ("profiling", meta_change(setter("metadata", "profiling", "on")), "metadata.json",
     "metadata.profiling: 'on' is not one of off, cycles"),
    ("estimated cycles", meta_change(setter("metadata", "estimated_cycles", -1)),
     "metadata.json", "metadata.estimated_cycles: -1 is outside [0, 9223372036854775807]"),
    ("estimated cycles text", meta_change(setter("metadata", "estimated_cycles", "many")),
     "metadata.json", "metadata.estimated_cycles: expected an integer, got a string"),
    ("metadata not an object", meta_change(setter("metadata", [])), "metadata.json",
     "metadata: expected an object, got a list"),
    ("deep json", deep_json, "metadata.json", "nested too deeply to be package metadata"),
    ("not json", lambda d: (d / "metadata.json").write_text("{"), "metadata.json",
     "is not valid JSON: Expecting property name"),
    ("NaN", lambda d: (d / "metadata.json").write_text('{"format_version": NaN}'),
     "metadata.json", "is not valid JSON: 'NaN' is not a JSON number"),
    ("not utf-8", lambda d: (d / "metadata.json").write_bytes(b"\xff{}"), "metadata.json",
     "is not UTF-8 text"),
    # ---- program.npz
    ("hidden member", lambda d: edit_arrays(d, add_member), "program.npz",
     "member 'hidden.npy': not a member of a package with this metadata (not loaded)"),
    ("missing member", lambda d: edit_arrays(d, lambda a: a.pop("row_words")), "program.npz",
     "member 'row_words': missing"),
    ("float words", lambda d: edit_arrays(d, lambda a: a.update(
        row_words=a["row_words"].astype(np.float64))), "program.npz",
     "member 'row_words': dtype float64, expected uint32"),
    ("64-bit words", lambda d: edit_arrays(d, lambda a: a.update(
        row_words=a["row_words"].astype(np.uint64) + (1 << 33))), "program.npz",
     "member 'row_words': dtype uint64, expected uint32"),
    ("row words length", lambda d: edit_arrays(d, lambda a: a.update(
        row_words=a["row_words"][:-1])), "program.npz", "member 'row_words': shape"),
    ("row length", set_array(lambda d: "row_lengths", 0, 0), "program.npz",
     "member 'row_lengths': row length 0 (entry 0) is outside [1, 98304]"),
    ("row id -2", set_array(row_id_name, 0, -2), "program.npz", "row id -2 (entry 0) is outside"),
    ("row id past rows", set_array(row_id_name, 1, 16), "program.npz", "row id 16 (entry 1)"),
    ("kernel tile", set_array(tiles_name, 0, 4), "program.npz",
     "tile 4 (entry 0) is outside [0, 3]"),
    ("kernel tile twice", set_array(tiles_name, 1, 0), "program.npz", "tile 0 is listed twice"),
    ("pointer outside", set_array(pointers_name, (0, 1), 0x100), "program.npz",
     "pointer 'left' (+2048 bytes) 0x100 (entry 0) is outside [0x4c000, 0xe7800]"),
    ("pointer rows", lambda d: edit_arrays(d, lambda a: a.update(
        {pointers_name(d): a[pointers_name(d)][:2]})), "program.npz", "2 rows for 4 tiles"),
    ("shard tiles shape", lambda d: edit_arrays(d, lambda a: a.update(
        inputs0_tiles=np.zeros(5, np.int32))), "program.npz",
     "expected 1 axes and 1 to 4 entries on the first"),
    ("shard address", set_array(lambda d: "outputs0_addresses", 0, 0xE8000 - 16), "program.npz",
     "shard address (+2048 bytes) 0xe7ff0 (entry 0) is outside"),
    ("shard rows", lambda d: edit_arrays(d, lambda a: a.update(
        inputs0_addresses=a["inputs0_addresses"][:2])), "program.npz", "2 rows for 4 shards"),
    ("origin outside", set_array(lambda d: "inputs0_origins", (0, 0), 64), "program.npz",
     "axis 0 origin 64 (entry 0) is outside [0, 48]"),
    ("origin off grid", set_array(lambda d: "inputs0_origins", (1, 0), 17), "program.npz",
     "shard 1 starts at [17, 0], not a multiple of the padded shard [16, 128]"),
    ("origin hole", set_array(lambda d: "inputs0_origins", (1, 0), 0), "program.npz",
     "the shards cover 3 of the 4 cells of a [64, 128] tensor in [16, 128] shards"),
    ("inputs overlap", overlap_shards("inputs0", "inputs1", 2048), "program.npz",
     "member 'inputs1_addresses': the shard of inputs[1] ('b') on tile 0 at [0x54800, 0x56800) "
     "overlaps that of inputs[0] ('a') at [0x54000, 0x55000); the host writes every input "
     "before the run, so their shards may not share memory"),
    ("not an archive", lambda d: (d / "program.npz").write_bytes(b"PK\x03\x04junk"),
     "program.npz", "is not a NumPy .npz archive"),
    ("a bare array", lambda d: np.save(d / "program.npz.npy", np.zeros(3)) or os.replace(
        d / "program.npz.npy", d / "program.npz"), "program.npz", "is not a NumPy .npz archive"),
    ("truncated archive", lambda d: (d / "program.npz").write_bytes(
        (d / "program.npz").read_bytes()[:-200]), "program.npz", "is not a NumPy .npz archive"),
    # ---- the files themselves
    ("missing metadata", lambda d: (d / "metadata.json").unlink(), "metadata.json",
     "missing; a package directory holds metadata.json, program.npz and, optionally"),
    ("symlink", lambda d: ((d / "program.npz").unlink(),
                           (d / "program.npz").symlink_to("/dev/zero")), "program.npz",
     "is a symbolic link; package files are read only as regular files"),
    ("fifo", lambda d: ((d / "program.npz").unlink(), os.mkfifo(d / "program.npz")),
     "program.npz", "is not a regular file"),
    ("directory", lambda d: ((d / "metadata.json").unlink(), (d / "metadata.json").mkdir()),
     "metadata.json", "is not a regular file"),
]


@pytest.mark.parametrize("name, corrupt, file, message", CASES, ids=[c[0] for c in CASES])
def test_corruption_is_one_package_error(package, name, corrupt, file, message):
    corrupt(package)
    with pytest.raises(PackageError) as raised:
        Package.load(package)
    assert str(raised.value).startswith(f"{package / file}: ")
    assert message in str(raised.value)


def test_the_intact_package_loads_and_runs(base, capsys):
    from tools.run_package import run_package_main

    loaded = Package.load(base)
    assert loaded.tiles == 4 and loaded.pipeline == "ipu-pipeline{tiles=4}"
    assert "graph.gemm" in loaded.source
    assert run_package_main(base) == 0
    assert "check: PASS" in capsys.readouterr().out


def test_a_file_over_its_limit(package, monkeypatch):
    monkeypatch.setitem(package_metadata.FILE_LIMITS, "metadata.json", 100)
    with pytest.raises(PackageError, match="larger than the 100 bytes a package allows for it"):
        Package.load(package)


def test_the_arrays_are_bounded_before_they_are_read(package, monkeypatch):
    monkeypatch.setattr(package_schema, "MAX_ARRAY_BYTES", 64)
    with pytest.raises(PackageError, match="the arrays exceed 64 bytes"):
        Package.load(package)


def test_an_unreadable_path(package):
    with pytest.raises(PackageError, match="cannot be read: Not a directory"):
        package_metadata.read_file(package / "metadata.json", "metadata.json")


def test_not_a_directory(package):
    with pytest.raises(PackageError, match="is not a package directory"):
        Package.load(package / "metadata.json")


def test_duplicate_archive_members(package):
    import zipfile

    with zipfile.ZipFile(package / "program.npz", "a") as archive, archive.open(
            "row_lengths.npy") as first:
        data = first.read()
    with pytest.warns(UserWarning), zipfile.ZipFile(package / "program.npz", "a") as archive:
        archive.writestr("row_lengths.npy", data)
    with pytest.raises(PackageError, match="a member name appears twice in the archive"):
        Package.load(package)


def test_npy_version_3_is_not_read(package):
    import zipfile

    with zipfile.ZipFile(package / "program.npz") as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    raw = bytearray(members["row_lengths.npy"])
    raw[6] = 3  # the major version byte after b"\x93NUMPY"
    members["row_lengths.npy"] = bytes(raw)
    with zipfile.ZipFile(package / "program.npz", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(PackageError, match=r"\.npy format version \(3, 0\) is not read"):
        Package.load(package)


def test_a_corrupt_member_is_a_package_error(package):
    import zipfile

    with zipfile.ZipFile(package / "program.npz") as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    members["row_words.npy"] = members["row_words.npy"][:-8]  # the header promises more
    with zipfile.ZipFile(package / "program.npz", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(PackageError, match="member 'row_words': cannot be read"):
        Package.load(package)


# ---- the tools: exit 2 with the message, no traceback ------------------------------------------


def corrupt_tiles(package: Path) -> None:
    edit_metadata(package, setter("tiles", 4.5))


def test_ipu_run_exits_2_on_a_package_error(package):
    corrupt_tiles(package)
    result = CliRunner().invoke(ipu_run.app, [str(package)])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"ipu-run: error: {package / 'metadata.json'}: tiles: expected an integer" in (
        result.output)


def test_ipu_objdump_exits_2_on_a_package_error(package):
    corrupt_tiles(package)
    result = CliRunner().invoke(ipu_objdump.app, ["--package", str(package), "--tile", "0"])
    assert result.exit_code == 2
    assert f"ipu-objdump: {package / 'metadata.json'}: tiles: expected an integer" in result.output


def test_ipu_run_package_without_source(package, capsys):
    from tools.run_package import run_package_main

    (package / "source.mlir").unlink()
    assert run_package_main(package) == 2
    assert ("source.mlir: missing; the package records no source graph to check a run against "
            "(save it with ipu-run FILE.mlir --package DIR)") in capsys.readouterr().err


def test_ipu_run_package_whose_source_disagrees(package, capsys):
    from tools.run_package import run_package_main

    text = (package / "source.mlir").read_text()
    (package / "source.mlir").write_text(text.replace("%b", "%w"))
    assert run_package_main(package) == 2
    assert "metadata.json: inputs: the package's ['a', 'b'] are not the source function's " \
           "['a', 'w']" in capsys.readouterr().err
    (package / "source.mlir").write_text(text.replace("64x64xf16", "64x63xf16"))
    assert run_package_main(package) == 2
    err = capsys.readouterr().err
    assert "graph.gemm" in err or "is not the source function's" in err


def test_ipu_run_package_rejects_compile_options(package, capsys):
    result = CliRunner().invoke(ipu_run.app, [str(package), "--tiles", "8", "--profile"])
    assert result.exit_code == 2
    assert "--tiles, --profile: only for a .mlir file; a package is already compiled" in (
        result.output)


def test_ipu_run_package_json_and_outputs(package, tmp_path):
    result = CliRunner().invoke(ipu_run.app, [str(package), "--json", "--seed", "3",
                                              "--save-outputs", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) == {"check", "max_abs_error", "max_rel_error", "modeled_cycles",
                           "tiles_used"}
    assert report["check"] == "PASS" and report["tiles_used"] == 4
    assert np.load(tmp_path / "out" / "result0.npy", allow_pickle=False).shape == (64, 64)


def test_a_well_formed_but_wrong_package_fails_the_check(row_package):
    """A copy of half the block is schema-valid: only the reference check can see it, and
    ipu-run DIR does (the bare API would return wrong outputs: see bench/robustness.py)."""
    edit_metadata(row_package, setter("steps", kernel("copy_words"), "scalars", [1024]))
    Package.load(row_package)
    result = CliRunner().invoke(ipu_run.app, [str(row_package)])
    assert result.exit_code == 1 and "check: FAIL" in result.output


def test_the_pipeline_and_source_survive_a_round_trip(base, tmp_path):
    loaded = Package.load(base)
    loaded.save(tmp_path / "again")
    again = Package.load(tmp_path / "again")
    assert (again.source, again.pipeline) == (loaded.source, loaded.pipeline)
    loaded.source = ""
    loaded.save(tmp_path / "again")
    assert not (tmp_path / "again" / "source.mlir").exists()


def test_a_member_marked_encrypted(package):
    """One flipped bit sets a member's encryption flag; zipfile then asks for a password."""
    import struct
    import zipfile

    path = package / "program.npz"
    with zipfile.ZipFile(path) as archive:
        local = archive.getinfo("row_words.npy").header_offset
    data = bytearray(path.read_bytes())
    data[local + 6] |= 0x1  # general purpose flags of the local header
    central = data.index(b"PK\x01\x02")  # the central directory entries, in turn
    while True:
        name_length = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46:central + 46 + name_length] == b"row_words.npy":
            break
        central = data.index(b"PK\x01\x02", central + 4)
    data[central + 8] |= 0x1  # and of its central directory entry
    path.write_bytes(bytes(data))
    with pytest.raises(PackageError, match="member 'row_words.npy': is marked encrypted; "
                                           "package members are not"):
        Package.load(package)


TWO_OUTPUTS = (
    "func.func @two(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> (tensor<64x64xf16>, "
    "tensor<64x64xf16>) {\n"
    "  %c = graph.add %a, %b : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16>\n"
    "  %d = graph.gelu %a : tensor<64x64xf16> -> tensor<64x64xf16>\n"
    "  func.return %c, %d : tensor<64x64xf16>, tensor<64x64xf16>\n}\n")


def test_two_outputs_may_not_share_memory(tmp_path):
    source = tmp_path / "two.mlir"
    source.write_text(TWO_OUTPUTS)
    assert run_main(source, tiles=4, package_dir=tmp_path / "pkg") == 0
    Package.load(tmp_path / "pkg")  # intact: the outputs are apart
    overlap_shards("outputs0", "outputs1", 0)(tmp_path / "pkg")
    with pytest.raises(PackageError, match=r"member 'outputs1_addresses': the shard of "
                       r"outputs\[1\] \('result1'\) on tile 0 at .* overlaps that of outputs\[0\] "
                       r"\('result0'\) at .*; the host reads every output after the run, so their "
                       r"shards may not share memory"):
        Package.load(tmp_path / "pkg")


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.mlir")))
def test_every_example_package_loads(example, tmp_path, capsys):
    """Saved packages of all examples pass the schema: descriptor kernels with long scalar
    lists (attention, layer_norm), and inputs and outputs that share memory because their
    lifetimes do not overlap (place-memory reuses a dead input's bytes for an output)."""
    assert run_main(EXAMPLES / example, tiles=16, package_dir=tmp_path / "pkg") == 0
    loaded = Package.load(tmp_path / "pkg")
    assert [t.name for t in loaded.inputs + loaded.outputs]  # something was checked
    capsys.readouterr()


def test_an_input_and_an_output_may_share_memory(tmp_path, capsys):
    """attention.mlir at 16 tiles: place-memory puts an output where a dead input was; the
    schema accepts it (only tensors of one role are live together)."""
    assert run_main(EXAMPLES / "attention.mlir", tiles=16, package_dir=tmp_path / "pkg") == 0
    loaded = Package.load(tmp_path / "pkg")
    shared = {(int(tile), int(address)) for t in loaded.inputs
              for tile, address in zip(t.tiles, t.addresses, strict=True)} & {
        (int(tile), int(address)) for t in loaded.outputs
        for tile, address in zip(t.tiles, t.addresses, strict=True)}
    assert shared
    capsys.readouterr()


def test_the_scalar_bound_covers_every_kernel_at_the_largest_rank():
    from device.kernels import KERNELS
    from device.shard_geometry import DESCRIPTOR_FIXED_WORDS

    rank = package_metadata.MAX_RANK
    longest = max(len(abi.named_scalars) + (len(abi.pointers) * (4 * rank + DESCRIPTOR_FIXED_WORDS)
                                            + 3 * rank + 1 if abi.variadic else 0)
                  for abi in KERNELS.values())
    assert longest == 216  # layer_norm_apply: 1 named, 5 descriptors (a view's words as a margin)
    assert longest <= package_metadata.MAX_SCALARS


def test_a_zip_version_zipfile_does_not_read(package):
    """The central directory's 'version needed to extract' of a member raised beyond what
    zipfile reads (found by bench/robustness.py): a diagnostic, not zipfile's exception."""
    path = package / "program.npz"
    raw = bytearray(path.read_bytes())
    entry = raw.index(b"PK\x01\x02")  # the first central directory header
    raw[entry + 6:entry + 8] = (109).to_bytes(2, "little")  # version 10.9
    path.write_bytes(bytes(raw))
    with pytest.raises(PackageError, match=r"program\.npz: is not a NumPy \.npz archive: zip "
                                           r"file version 10\.9"):
        Package.load(package)
