// The catalog is pinned to the row-plan candidates (the default catalog before the grid plan):
// this file tests the row plan; the grid plan has mid-to-tile-gemm-grid.mlir.
// This file: on one tile (graph-to-mid-memory.mlir: the same functions on 16 tiles).
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'graph-to-mid{tiles=1 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64}'

// graph-to-mid rejects a plan that place-memory could not place, and says which per-tile
// limit it exceeds, with byte counts, and whether more tiles would help.

// The output shard lives in the interleaved region: 16 rows of 8192 FP16 columns (256 KiB)
// exceed it, and since the retained plan partitions output rows only, no tile count helps.
func.func @interleaved(%a: tensor<256x64xf16>, %b: tensor<64x8192xf16>) -> tensor<256x8192xf16> {
  // expected-error @+1 {{graph.gemm %c: no valid operator plan: none of the 3 candidate(s) that could run it fits in tile memory, on any tile count. Per candidate: amp_gemm_f16_r16: an output-row tile needs 5283856 bytes, tile memory holds 606208 outside the code region; no tile count helps}}
  %c = graph.gemm %a, %b : (tensor<256x64xf16>, tensor<64x8192xf16>) -> tensor<256x8192xf16>
  func.return %c : tensor<256x8192xf16>
}

// -----

// A 393 KiB left shard (16 rows of K = 12288) fits neither standard memory outside the code
// region nor what the output shard leaves of the interleaved region: one buffer cannot
// straddle the two. Every row tile already holds a single 16-row block.
func.func @left_spill(%a: tensor<256x12288xf16>, %b: tensor<12288x64xf16>) -> tensor<256x64xf16> {
  // expected-error @+1 {{graph.gemm %c: no valid operator plan: none of the 3 candidate(s) that could run it fits in tile memory, on any tile count. Per candidate: amp_gemm_f16_r16: an output-row tile needs 7970832 bytes, tile memory holds 606208 outside the code region; no tile count helps}}
  %c = graph.gemm %a, %b : (tensor<256x12288xf16>, tensor<12288x64xf16>) -> tensor<256x64xf16>
  func.return %c : tensor<256x64xf16>
}

// -----

// On one tile the 512 KiB right operand is one exchanged buffer: it must sit above the code
// region's memory elements (or in the interleaved region) and fits in neither; on two tiles
// each holds half of it. On 16 tiles the plan is valid.
func.func @right_on_one_tile(%a: tensor<16x512xf16>, %b: tensor<512x512xf16>) -> tensor<16x512xf16> {
  // expected-error-re @+1 {{graph.gemm %c: no valid operator plan: none of the 3 candidate(s) that could run it fits in tile memory; the fewest tiles that help: 2 (amp_gemm_f16_r16). Per candidate: amp_gemm_f16_r16: an output-row tile needs one free range of 524288 bytes for its right shard; the largest free ranges left are 327680 bytes of standard memory above the code region's memory elements (an exchanged buffer) and 225280 bytes of interleaved memory; it fits on 2 tiles;{{.*}}amp_gemm_f16_r64: an output-row tile needs 679952 bytes, tile memory holds 606208 outside the code region; it fits on 2 tiles;}}
  %c = graph.gemm %a, %b : (tensor<16x512xf16>, tensor<512x512xf16>) -> tensor<16x512xf16>
  func.return %c : tensor<16x512xf16>
}

// -----

// Batch slices with a B each are not partitioned either: an output-row tile holds its rows
// of all 72 batch slices, and the message says so.
func.func @batched(%a: tensor<8x9x13x193xf32>, %b: tensor<8x9x193x4xf32>) -> tensor<8x9x13x4xf32> {
  // expected-error-re @+1 {{amp_gemm_f32_r16: an output-row tile needs {{[0-9]+}} bytes, tile memory holds 606208 outside the code region; no tile count helps: {{.*}} in each of the 72 batch slices (batch axes are not partitioned)}}
  %c = graph.gemm %a, %b : (tensor<8x9x13x193xf32>, tensor<8x9x193x4xf32>) -> tensor<8x9x13x4xf32>
  func.return %c : tensor<8x9x13x4xf32>
}

// -----

// Slices of one B fold into one GEMM, one slice per tile: 72 tiles would hold them.
func.func @folded(%a: tensor<8x9x13x193xf32>, %b: tensor<193x4xf32>) -> tensor<8x9x13x4xf32> {
  // expected-error-re @+1 {{amp_gemm_f32_r16: an output-row tile needs {{[0-9]+}} bytes, tile memory holds 606208 outside the code region; it fits on 72 tiles}}
  %c = graph.gemm %a, %b : (tensor<8x9x13x193xf32>, tensor<193x4xf32>) -> tensor<8x9x13x4xf32>
  func.return %c : tensor<8x9x13x4xf32>
}

// -----

// Pointwise and layout plans are checked against tile memory too: on one tile the shards
// of both operands and the result (400 KB each) do not fit.
func.func @big_add(%a: tensor<100000xf32>, %b: tensor<100000xf32>) -> tensor<100000xf32> {
  // expected-error @+1 {{graph.add %c: no valid operator plan: no candidate fits in tile memory. Per candidate: add_split0: a tile holding its shards needs 1200000 bytes, tile memory holds 606208 outside the code region}}
  %c = graph.add %a, %b : (tensor<100000xf32>, tensor<100000xf32>) -> tensor<100000xf32>
  func.return %c : tensor<100000xf32>
}

// -----

func.func @big_reshape(%a: tensor<100000x2xf32>) -> tensor<200000xf32> {
  // expected-error @+1 {{graph.reshape %c: no valid operator plan: no candidate fits in tile memory. Per candidate: reshape_split0_local: a tile holding its shards needs 1600000 bytes, tile memory holds 606208 outside the code region}}
  %c = graph.reshape %a : tensor<100000x2xf32> -> tensor<200000xf32>
  func.return %c : tensor<200000xf32>
}
