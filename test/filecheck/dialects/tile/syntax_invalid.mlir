// RUN: not ipu-opt %s 2>&1 | filecheck %s
// Every section after the first: one parse error each (the first section reports its own).
// RUN: ipu-opt %s --split-input-file --parsing-diagnostics | filecheck %s --check-prefix=SPLIT

// A range is written `first to end` (half-open); a list in square brackets.
func.func @bad_range_syntax() {
  %a = tile.buffer @a scratch on #tile.tiles<0, 2> shard [4] f32 row_major standard align 4 tail 0
  func.return
}
// CHECK: Expected 'to' in a tile range 'first to end'
// SPLIT: Expected 'to' in a tile range 'first to end'

// -----

// The old half-open spelling `[a, b)` is not a list.
func.func @old_range_syntax() {
  %a = tile.buffer @a scratch on #tile.tiles<[0, 2)> shard [4] f32 row_major standard align 4 tail 0
  func.return
}
// SPLIT: Expected ']' to end a tile list

// -----

// Each custom-syntax slot that takes an attribute says which attribute it wanted and what it got.
func.func @buffer_tiles_not_a_set() {
  %a = tile.buffer @a scratch on [0, 2] shard [4] f32 row_major standard align 4 tail 0
  func.return
}
// SPLIT: expected a #tile.tiles<...> set, got [0 : i64, 2 : i64]

// -----

func.func @buffer_origin_not_a_tensor() {
  %a = tile.buffer @a input 0 on #tile.tiles<0 to 2> shard [4] f32 row_major standard align 4 tail 0 from f32
  func.return
}
// SPLIT: expected the mid tensor type after 'from', got f32

// -----

func.func @loop_provenance_not_an_attr() {
  tile.loop %i = 0 to 2 provenance "batch" {
  }
  func.return
}
// SPLIT: expected #tile.provenance<...>, got "batch"

// -----

func.func @exchange_dst_not_a_set() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.exchange 1 words from %a[() -> (0)] on tile () -> (0) to %a[() -> (4)] on [0, 2] iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}
// SPLIT: expected a #tile.tiles<...> set, got [0 : i64, 2 : i64]

// -----

func.func @exchange_provenance_not_an_attr() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.exchange 1 words from %a[() -> (0)] on tile () -> (0) to %a[() -> (4)] on #tile.tiles<0 to 2> iv() provenance "why"
  func.return
}
// SPLIT: expected #tile.provenance<...>, got "why"

// -----

func.func @kernel_tiles_not_a_set() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.kernel @copy_words(%a[() -> (0)], %a[() -> (4)]) scalars [1] on 7 iv() provenance #tile.provenance<op = "graph.gemm", value = "%c", reason = "r">
  func.return
}
// SPLIT: expected a #tile.tiles<...> set, got 7 : i64

// -----

func.func @kernel_provenance_not_an_attr() {
  %a = tile.buffer @a scratch on #tile.tiles<0 to 2> shard [64] f32 row_major standard align 4 tail 0
  tile.kernel @copy_words(%a[() -> (0)], %a[() -> (4)]) scalars [1] on #tile.tiles<0 to 2> iv() provenance #tile.tiles<0 to 2>
  func.return
}
// SPLIT: expected #tile.provenance<...>, got #tile.tiles<0 to 2>
