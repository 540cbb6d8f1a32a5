"""The target description: memory map, elements and the exchange latency model."""

import numpy as np
import pytest

from device.target import IPU21, Target, latency_table


def test_memory_map_matches_public_numbers():
    assert IPU21.sram_bytes == 638_976
    assert IPU21.memory_end - IPU21.memory_base == IPU21.sram_bytes
    assert IPU21.code_region[0] == IPU21.memory_base


def test_elements_partition_memory_and_split_at_interleaved_region():
    elements = IPU21.memory_elements
    assert elements[0].start == IPU21.memory_base and elements[-1].end == IPU21.memory_end
    for before, after in zip(elements, elements[1:]):
        assert before.end == after.start
    assert {e.interleaved for e in elements} == {False, True}
    assert all(e.interleaved == (e.start >= IPU21.interleaved_start) for e in elements)
    assert IPU21.element_of(IPU21.interleaved_start).interleaved


def test_latency_is_symmetric_positive_and_not_constant():
    lat = IPU21.latency_matrix(64)
    assert (lat == lat.T).all() and lat.min() >= 1
    off_diagonal = lat[~np.eye(64, dtype=bool)]
    assert off_diagonal.min() < off_diagonal.max()
    assert IPU21.latency(0, 3) != IPU21.latency(0, 1)


def test_element_of_an_address_outside_memory_is_an_error():
    with pytest.raises(ValueError) as info:
        IPU21.element_of(IPU21.memory_end)
    assert str(info.value) == (f"address {IPU21.memory_end:#x} is outside tile memory "
                               f"[{IPU21.memory_base:#x}, {IPU21.memory_end:#x})")


def test_element_of_finds_the_element_that_contains_each_address():
    for element in IPU21.memory_elements:
        for address in (element.start, element.end - 1, (element.start + element.end) // 2):
            assert IPU21.element_of(address) is element
    with pytest.raises(ValueError):
        IPU21.element_of(IPU21.memory_base - 1)


@pytest.mark.parametrize("tiles", [2, 3, 15, 16, 17, 32, 33, 64, 255, 256, 257, 1000, 1471,
                                   1472, 2000])
@pytest.mark.parametrize("target", [IPU21, Target(column_tiles=8, latency_per_column=3)],
                         ids=["ipu21", "columns-of-8"])
def test_max_latency_is_the_largest_entry_of_the_latency_table(target, tiles):
    assert target.max_latency(tiles) == int(latency_table(target, tiles).max())
