// RUN: not ipu-opt %s 2>&1 | filecheck %s

// A range has exactly two bounds: [first, end).
func.func @bad_range_syntax() {
  %a = tile.buffer @a scratch on #tile.tiles<[0, 1, 2)> shard [4] f32 row_major standard align 4 tail 0
  func.return
}
// CHECK: a tile range is written [first, end)
