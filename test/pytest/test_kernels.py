"""The kernel table and the ABI comments and field loads of device/sources/*.S agree."""

import re

import pytest

from device.kernel_abi import (
    IMPLEMENTED,
    SOURCES_DIR,
    KernelAbi,
    parse_source_abis,
    source_abis,
    source_fields,
)
from device.kernels import KERNELS, RECORDS, UnknownKernelError, get_kernel
from device.model.kernels_gemm import GEMM_FAMILIES, MODES

GEMM = ("amp_gemm_f16_init", "amp_gemm_f16_accum", "amp_gemm_f32_init", "amp_gemm_f32_accum")
COMPARED = ("pointers", "scalars", "returns", "row_specialization", "status")


def test_implemented_kernels_have_the_documented_abi():
    for symbol in GEMM:
        abi = get_kernel(symbol)
        assert (abi.pointers, abi.scalars, abi.status) == (("out", "left", "right"), ("rows",),
                                                           IMPLEMENTED)
    copy = get_kernel("copy_words")
    assert (copy.pointers, copy.scalars, copy.status) == (("out", "src"), ("words",), IMPLEMENTED)


def test_every_kernel_is_implemented():
    assert [s for s, abi in KERNELS.items() if abi.status != IMPLEMENTED] == []
    for family in ("gelu", "add", "attention", "convert_shard", "gather_shard", "fill_zero",
                   "amp_gemm_f8_init", "amp_gemm_f8_accum"):
        assert family in KERNELS, family


def test_unknown_symbol_is_a_clear_error():
    with pytest.raises(UnknownKernelError, match="unknown kernel symbol 'amp_gemm_f64_init'"):
        get_kernel("amp_gemm_f64_init")


def test_every_registry_entry_has_a_matching_source_comment():
    sources = source_abis()
    assert set(sources) == set(KERNELS)
    for symbol, abi in KERNELS.items():
        for name in COMPARED:
            assert getattr(sources[symbol], name) == getattr(abi, name), (symbol, name)


def test_every_record_loads_its_fields_from_the_vertex_state_record():
    """Each entry point reads field i of its record (`ld32 $mN, $m0, $m15, i  // name`) in the
    record's order: the pointers, then the named scalars (descriptors follow them)."""
    fields = source_fields()
    for symbol, record in RECORDS.items():
        assert record.symbol == symbol == record.abi.symbol
        assert fields[symbol] == record.abi.fields, symbol


def test_field_loads_follow_a_shared_body_and_see_a_swap(tmp_path):
    (tmp_path / "k.S").write_text(
        "    .globl k_init\nk_init:\n    bri     .Lbody\n    .size k_init, .-k_init\n"
        "    .globl k_accum\nk_accum:\n.Lbody:\n"
        "    ld32    $m1, $m0, $m15, 0   // out\n    ld32    $m2, $m0, $m15, 1   // right\n"
        "    ld32    $m3, $m0, $m15, 2   // left\n    exitz   $m15\n")
    assert source_fields(tmp_path) == {"k_init": ("out", "right", "left"),
                                       "k_accum": ("out", "right", "left")}
    (tmp_path / "k.S").write_text("    .globl k\nk:\n    ld32    $m2, $m0, $m15, 1  // src\n")
    with pytest.raises(ValueError, match="'k' loads record fields \\[1\\], not 0..0"):
        source_fields(tmp_path)


def test_the_gemm_kernels_are_the_family_table():
    gemm = {s for s in KERNELS if s.startswith("amp_gemm_")}
    assert gemm == {f"{family.prefix}{mode}" for family in GEMM_FAMILIES for mode in MODES}
    for family in GEMM_FAMILIES:
        for mode in MODES:
            abi = get_kernel(f"{family.prefix}{mode}")
            footprint = abi.footprint_of([32] + [0] * (len(abi.scalars) - 1))
            assert footprint is not None
            assert footprint["out"] == 32 * 64 * {"f16": 2, "f32": 4}[family.accumulate]


def test_every_exported_entry_point_is_registered_or_the_runtime():
    exported = set()
    for path in SOURCES_DIR.glob("*.S"):
        exported |= set(re.findall(r"^\s*\.globl\s+(\w+)", path.read_text(), re.M))
    assert exported - set(KERNELS) == {"__ipu_static_runtime"}
    assert set(KERNELS) <= exported


def test_static_runtime_hands_control_to_emitted_supervisor_code():
    text = (SOURCES_DIR / "static_runtime.S").read_text()
    assert re.search(r"^\s*call\s+\$lr,\s*__ipu_supervisor_main", text, re.M)


def test_comment_parser_sees_a_mismatch():
    text = ("// ABI: amp_gemm_f16_init(out, right, left; rows) -> void\n"
            "// status: Implemented\n// row_specialization: none\n")
    (parsed,) = parse_source_abis(text)
    assert isinstance(parsed, KernelAbi)
    assert parsed.pointers == ("out", "right", "left")
    assert parsed.pointers != get_kernel("amp_gemm_f16_init").pointers


def test_comment_without_status_is_rejected():
    with pytest.raises(ValueError, match="no 'status:' line"):
        parse_source_abis("// ABI: copy_words(out, src; words) -> void\n    nop\n", "x.S")


def test_abi_comment_without_status_is_an_error():
    with pytest.raises(ValueError) as info:
        parse_source_abis("// ABI: k(out; n) -> none\nnop\n", "x.S")
    assert str(info.value) == "x.S: ABI comment of 'k' has no 'status:' line"


def test_a_kernel_declared_in_two_sources_is_an_error(tmp_path):
    for name in ("a.S", "b.S"):
        (tmp_path / name).write_text("// ABI: k(out; n) -> none\n// status: Implemented\n")
    with pytest.raises(ValueError) as info:
        source_abis(tmp_path)
    assert str(info.value) == "kernel 'k' declared in both a.S and b.S"
