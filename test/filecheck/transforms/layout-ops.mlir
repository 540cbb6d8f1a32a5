// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=3},insert-conversions' | filecheck %s --check-prefix=MID
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=3},insert-conversions,mid-to-tile' | filecheck %s --check-prefix=TILE
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=3 inputs=row_major},insert-conversions,mid-to-tile' | filecheck %s --check-prefix=GATHER

// layer_norm keeps the normalized axis whole (rows cut across the tiles), weight and bias whole
// on every tile; the layout ops that follow take the result's split that keeps them tile-local.
func.func @local(%x: tensor<4x6xf32>, %w: tensor<6xf32>, %b: tensor<6xf32>, %y: tensor<4x2xf32>) -> (tensor<6x4xf32>, tensor<2x3x4xf32>, tensor<4x3xf32>, tensor<4x8xf32>) {
  %n = graph.layer_norm %x, %w, %b eps 1.0e-05 : (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %t = graph.transpose %n permutation [1, 0] : tensor<4x6xf32> -> tensor<6x4xf32>
  %r = graph.reshape %n : tensor<4x6xf32> -> tensor<2x3x4xf32>
  %s = graph.slice %n starts [0, 1] ends [4, 6] steps [1, 2] : tensor<4x6xf32> -> tensor<4x3xf32>
  %c = graph.concat %n, %y axis 1 : (tensor<4x6xf32>, tensor<4x2xf32>) -> tensor<4x8xf32>
  func.return %t, %r, %s, %c : tensor<6x4xf32>, tensor<2x3x4xf32>, tensor<4x3xf32>, tensor<4x8xf32>
}

// MID-LABEL: func.func @local(
// MID:      %n = mid.layer_norm %x, %w, %b eps 1.000000e-05 plan #mid.plan<"layer_norm_split0", #mid.dispatch<pointwise, init = @layer_norm>
// MID-SAME: #mid.operand<weight : input, #mid.format<f32, row_major, [1 x 1 pad], replication = 3, group = 3, standard>
// MID:      %t = mid.transpose %n permutation [1, 0] plan #mid.plan<"transpose_split1_local", #mid.dispatch<pointwise, init = @view_shard>
// MID:      %r = mid.reshape %n plan #mid.plan<"reshape_split0_local"
// MID:      %s = mid.slice %n starts [0, 1] ends [4, 6] steps [1, 2] plan #mid.plan<"slice_split0_local"
// MID:      %c = mid.concat %n, %y axis 1 plan #mid.plan<"concat_split0_local"
// MID-NOT:  mid.rearrange

// Descriptors of out and source, then the index view: window starts, stops, strides, offset.
// TILE-LABEL: func.func @local()
// TILE:      tile.kernel @layer_norm(%n[() -> (0)], %x[() -> (0)], %w[() -> (0)], %b[() -> (0)]) scalars [925353388, 2, 4, 6,
// TILE-SAME: on #tile.tiles<0 to 3>
// TILE-NEXT: tile.kernel @fill_zero(%t[() -> (0)]) scalars [12] on #tile.tiles<0 to 3>
// TILE-NEXT: tile.kernel @view_shard(%t[() -> (0)], %n[() -> (0)]) scalars [{{.*}}, 0, 0, 6, 4, 1, 6, 0] on #tile.tiles<0 to 3>
// TILE-NEXT: tile.kernel @view_shard(%r[() -> (0)], %n[() -> (0)]) scalars [{{.*}}, 0, 0, 0, 2, 3, 4, 12, 4, 1, 0] on #tile.tiles<0 to 2>
// TILE-NEXT: tile.kernel @fill_zero(%s[() -> (0)])
// TILE-NEXT: tile.kernel @view_shard(%s[() -> (0)], %n[() -> (0)]) scalars [{{.*}}, 0, 0, 4, 3, 6, 2, 1] on #tile.tiles<0 to 3>
// TILE-NEXT: tile.kernel @fill_zero(%c[() -> (0)])
// TILE-NEXT: tile.kernel @view_shard(%c[() -> (0)], %n[() -> (0)]) scalars [{{.*}}, 0, 0, 4, 6, 6, 1, 0] on #tile.tiles<0 to 3>
// TILE-NEXT: tile.kernel @view_shard(%c[() -> (0)], %y[() -> (0)]) scalars [{{.*}}, 0, 6, 4, 8, 2, 1, 0] on #tile.tiles<0 to 3>
// TILE-NEXT: func.return

// -----

// No split of the input lines up with a split of the result: the reshape gathers (the whole
// input, one shard, is the cheapest source), in rounds of source shards sent at once (one
// round of one shard here; its receivers are the result tiles whose elements it holds).
func.func @gather(%x: tensor<4x6xf32>) -> tensor<6x4xf32> {
  %r = graph.reshape %x : tensor<4x6xf32> -> tensor<6x4xf32>
  func.return %r : tensor<6x4xf32>
}
// MID-LABEL: func.func @gather(
// MID:       mid.reshape %x plan #mid.plan<"reshape_split0_gather", #mid.dispatch<pointwise, init = @gather_view>
// GATHER-LABEL: func.func @gather()
// GATHER:      tile.loop %r_1 = 0 to 1 provenance #tile.provenance<op = "graph.reshape %r", value = "%r", reason = "rounds of input shards sent at once"> {
// GATHER-NEXT: tile.exchange 24 words from %x[(d0) -> (0)] on tile (d0, d1) -> (d0) to %r_gather_slot[(d0) -> (0)] on #tile.tiles<0 to 3> groups 1 shift (d0, d1) -> (0) iv(%r_1)
// GATHER-NEXT: tile.loop %g = 0 to 1
// GATHER-NEXT: tile.kernel @copy_words(%r_gather_slot[(d0, d1) -> (0)], %x[(d0, d1) -> (0)]) scalars [24] on #tile.tiles<0 to 1> only (d0, d1) -> (d0)
// GATHER-NEXT: tile.kernel @gather_view(%r[(d0, d1) -> (0)], %r_gather_slot[(d0, d1) -> (0)]) iv_scalars [(d0, d1) -> (d0)] scalars [{{.*}}, 0, 0, 6, 4, 4, 1, 0] on #tile.tiles<0 to 3>
