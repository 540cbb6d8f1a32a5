// The catalog is pinned to the row-plan candidates (the default catalog before the grid plan):
// this file tests the row plan; the grid plan has mid-to-tile-gemm-grid.mlir.
// RUN: ipu-opt %s --split-input-file --verify-diagnostics -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f16_r16,amp_gemm_f16_r32,amp_gemm_f16_r64,amp_gemm_f32_r16,amp_gemm_f32_r32,amp_gemm_f32_r64,amp_gemm_f8_r16,amp_gemm_f8_r32,amp_gemm_f8_r64}' | filecheck %s

// graph-to-mid rejects a plan that place-memory could not place, and says which per-tile
// limit it exceeds, with byte counts, and whether more tiles would help.

// The output shard lives in the interleaved region: 16 rows of 8192 FP16 columns (256 KiB)
// exceed it, and since the retained plan partitions output rows only, no tile count helps.
func.func @interleaved(%a: tensor<256x64xf16>, %b: tensor<64x8192xf16>) -> tensor<256x8192xf16> {
  // expected-error-re @+1 {{graph.gemm %c: no valid operator plan: none of the 3 candidate(s) that could run it fits in tile memory, on any tile count. Per candidate: amp_gemm_f16_r16: an output-row tile needs 262144 bytes of interleaved memory for its output shard, the interleaved region holds 245760; no tile count helps: the retained plan partitions output rows only, and on all 1472 tiles an output-row tile still holds 16 rows (with all 8192 output columns and all 64 of K);{{.*}}amp_gemm_f16_r32: an output-row tile needs 524288 bytes of interleaved memory for its output shard, the interleaved region holds 245760; no tile count helps{{.*}}amp_gemm_f32_r16, amp_gemm_f32_r32, amp_gemm_f32_r64: init kernel @amp_gemm_f32_init does not run f16 operands}}
  %c = graph.gemm %a, %b : (tensor<256x64xf16>, tensor<64x8192xf16>) -> tensor<256x8192xf16>
  func.return %c : tensor<256x8192xf16>
}

// -----

// A 393 KiB left shard (16 rows of K = 12288) fits neither standard memory outside the code
// region nor what the output shard leaves of the interleaved region: one buffer cannot
// straddle the two. Every row tile already holds a single 16-row block.
func.func @left_spill(%a: tensor<256x12288xf16>, %b: tensor<12288x64xf16>) -> tensor<256x64xf16> {
  // expected-error-re @+1 {{graph.gemm %c: no valid operator plan: none of the 3 candidate(s) that could run it fits in tile memory, on any tile count. Per candidate: amp_gemm_f16_r16: an output-row tile needs one free range of 393232 bytes for its left shard (393216 bytes + 16-byte access tail); the largest free ranges left are 360448 bytes of standard memory outside the code region and 239616 bytes of interleaved memory; no tile count helps: the retained plan partitions output rows only, and on all 1472 tiles an output-row tile still holds 16 rows (with all 64 output columns and all 12288 of K);{{.*}}amp_gemm_f16_r32: an output-row tile needs 905232 bytes, tile memory holds 606208 outside the code region; no tile count helps}}
  %c = graph.gemm %a, %b : (tensor<256x12288xf16>, tensor<12288x64xf16>) -> tensor<256x64xf16>
  func.return %c : tensor<256x64xf16>
}

// -----

// On one tile the 512 KiB right operand is one exchanged buffer: it must sit above the code
// region's memory elements (or in the interleaved region) and fits in neither; on two tiles
// each holds half of it. On 16 tiles the plan is valid.
func.func @right_on_one_tile(%a: tensor<16x512xf16>, %b: tensor<512x512xf16>) -> tensor<16x512xf16> {
  %c = graph.gemm %a, %b : (tensor<16x512xf16>, tensor<512x512xf16>) -> tensor<16x512xf16>
  func.return %c : tensor<16x512xf16>
}

// CHECK-LABEL: func.func @right_on_one_tile
// CHECK: mid.gemm %a, %b plan #mid.plan<"amp_gemm_f16_r16"
// -----

// Batch slices with a B each are not partitioned either: an output-row tile holds its rows
// of all 72 batch slices, and the message says so.
func.func @batched(%a: tensor<8x9x13x193xf32>, %b: tensor<8x9x193x4xf32>) -> tensor<8x9x13x4xf32> {
  // expected-error-re @+1 {{amp_gemm_f32_r16: an output-row tile needs {{[0-9]+}} bytes, tile memory holds 606208 outside the code region; no tile count helps: the retained plan partitions output rows only, and on all 1472 tiles an output-row tile still holds 16 rows in each of the 72 batch slices (batch axes are not partitioned) (with all 4 output columns and all 193 of K)}}
  %c = graph.gemm %a, %b : (tensor<8x9x13x193xf32>, tensor<8x9x193x4xf32>) -> tensor<8x9x13x4xf32>
  func.return %c : tensor<8x9x13x4xf32>
}

// -----

// Slices of one B fold into one GEMM of their stacked rows, one slice per tile
// (planning/gemm_fold.py): the 72 slices need 72 tiles, and the message says so.
func.func @folded(%a: tensor<8x9x13x193xf32>, %b: tensor<193x4xf32>) -> tensor<8x9x13x4xf32> {
  // expected-error @+1 {{amp_gemm_f32_r16: an output-row tile needs 1507344 bytes, tile memory holds 606208 outside the code region; it fits on 72 tiles}}
  %c = graph.gemm %a, %b : (tensor<8x9x13x193xf32>, tensor<193x4xf32>) -> tensor<8x9x13x4xf32>
  func.return %c : tensor<8x9x13x4xf32>
}
