"""The kernel table's own consistency checks: a record that breaks the one-record rule is a
clear error when the table is built, not a wrong number later."""

from __future__ import annotations

import dataclasses

import pytest

import device.model
from device import kernels
from device.kernel_abi import IMPLEMENTED, REQUIRED, _entry_loads
from device.model.kernel_call import Kernel
from device.target import IPU21


def some_record() -> Kernel:
    return next(iter(kernels.RECORDS.values()))


def test_two_records_for_one_symbol_are_refused():
    record = some_record()
    with pytest.raises(ValueError, match=f"kernel '{record.symbol}' has two records"):
        kernels._by_symbol([record, record])


def test_an_implemented_abi_needs_an_implementation_and_cycles():
    abi = dataclasses.replace(some_record().abi, status=IMPLEMENTED)
    with pytest.raises(ValueError, match="needs a model implementation and a cycle function "
                                         "exactly when Implemented"):
        Kernel(abi)


def test_a_required_kernel_has_no_cycles():
    required = Kernel(dataclasses.replace(some_record().abi, status=REQUIRED))
    with pytest.raises(ValueError, match="is Required: it has no cycles"):
        required.call_cycles([], 0, IPU21)


def test_an_entry_point_missing_from_its_source_is_named():
    with pytest.raises(ValueError, match=r"relu.S: no label 'relu:'"):
        _entry_loads(["gelu:", "  exitz $m15"], "relu", "relu.S")


def test_device_model_names_an_unknown_attribute():
    with pytest.raises(AttributeError, match="module 'device.model' has no attribute 'nope'"):
        _ = device.model.nope
