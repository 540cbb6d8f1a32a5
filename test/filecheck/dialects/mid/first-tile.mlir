// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

// A format's first tile: printed after the memory class when it is not 0, parsed back; an
// explicit `first_tile = 0` is the default and prints as the format always printed.
"test.op"() {
  at16 = #mid.format<f16, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard, first_tile = 16>,
  at3 = #mid.format<f32, row_major, [1 x 8 pad], replication = 2, group = 16, interleaved, first_tile = 3>,
  at0 = #mid.format<f32, row_major, [1 x 8 pad], replication = 1, group = 8, standard, first_tile = 0>
} : () -> ()

// CHECK:      "test.op"() {at16 = #mid.format<f16, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard, first_tile = 16>,
// CHECK-SAME: at3 = #mid.format<f32, row_major, [1 x 8 pad], replication = 2, group = 16, interleaved, first_tile = 3>,
// CHECK-SAME: at0 = #mid.format<f32, row_major, [1 x 8 pad], replication = 1, group = 8, standard>}
// CHECK-GENERIC: at16 = #mid.format<f16, amp_left, [16 x 4 pad, 64 x 1 pad], replication = 1, group = 4, standard, first_tile = 16>
