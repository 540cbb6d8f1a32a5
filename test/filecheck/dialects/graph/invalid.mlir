// RUN: ipu-opt %s --split-input-file --verify-diagnostics

func.func @gemm_rank(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{graph.gemm: lhs has shape [8] of rank 1; gemm operands need rank >= 2 (the last two axes are the matrix)}}
  %c = graph.gemm %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @gemm_contraction(%a: tensor<4x8xf32>, %b: tensor<6x4xf32>) {
  // expected-error @+1 {{graph.gemm: contraction extents differ: lhs [4, 8] axis -1 is 8, rhs [6, 4] axis -2 is 6}}
  %c = graph.gemm %a, %b : (tensor<4x8xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

func.func @gemm_contraction_transposed(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.gemm: contraction extents differ: lhs [4, 8] axis -2 (transposed) is 4, rhs [4, 8] axis -1 (transposed) is 8}}
  %c = graph.gemm %a, %b transpose_lhs transpose_rhs : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

func.func @gemm_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) {
  // expected-error @+1 {{graph.gemm: batch axes of lhs and rhs [2] and [3] do not broadcast: extents 2 and 3 at axis -1 (counted from the last axis)}}
  %c = graph.gemm %a, %b : (tensor<2x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x4x4xf32>
  func.return
}

// -----

func.func @gemm_result(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>) {
  // expected-error @+1 {{graph.gemm: result shape [2, 4, 5] does not match [2, 3, 4, 5] (batch axes broadcast, then [M, N] of [2, 1, 4, 8] x [3, 8, 5])}}
  %c = graph.gemm %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x4x5xf32>
  func.return
}

// -----

func.func @gemm_element_types(%a: tensor<4x8xf32>, %b: tensor<8x4xf16>) {
  // expected-error @+1 {{graph.gemm: rhs element type f16 differs from lhs element type f32}}
  %c = graph.gemm %a, %b : (tensor<4x8xf32>, tensor<8x4xf16>) -> tensor<4x4xf32>
  func.return
}

// -----

func.func @element_type(%a: tensor<4x8xi32>) {
  // expected-error @+1 {{graph.gelu: input has element type i32; graph tensors are f32, f16 or f8E4M3FNUZ}}
  %c = graph.gelu %a : tensor<4x8xi32> -> tensor<4x8xi32>
  func.return
}

// -----

func.func @dynamic(%a: tensor<?x8xf32>) {
  // expected-error @+1 {{graph.gelu: input must have static extents, got tensor<?x8xf32>}}
  %c = graph.gelu %a : tensor<?x8xf32> -> tensor<?x8xf32>
  func.return
}

// -----

func.func @scale_on_f16(%a: tensor<8xf16, #graph.fp8_scale<1>>) {
  // expected-error @+1 {{graph.gelu: input has an FP8 scale but element type f16; only f8E4M3FNUZ tensors are scaled}}
  %c = graph.gelu %a : tensor<8xf16, #graph.fp8_scale<1>> -> tensor<8xf16>
  func.return
}

// -----

func.func @foreign_encoding(%a: tensor<8xf32, "x">) {
  // expected-error @+1 {{graph.gelu: input has encoding "x"; the only graph encoding is #graph.fp8_scale<n>}}
  %c = graph.gelu %a : tensor<8xf32, "x"> -> tensor<8xf32>
  func.return
}

// -----

// An attribute's range error is a parse error at the exponent's text, with a line and column.
// expected-error @+1 {{#graph.fp8_scale: exponent 40 is outside -31..31}}
func.func @scale_range(%a: tensor<8xf8E4M3FNUZ, #graph.fp8_scale<40>>) {
  func.return
}

// -----

func.func @gelu_shape(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.gelu: result shape [8, 4] does not match [4, 8] (the input shape)}}
  %c = graph.gelu %a : tensor<4x8xf32> -> tensor<8x4xf32>
  func.return
}

// -----

func.func @gelu_element(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{graph.gelu: result element type f16 differs from input element type f32}}
  %c = graph.gelu %a : tensor<4x8xf32> -> tensor<4x8xf16>
  func.return
}

// -----

func.func @add_broadcast(%a: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{graph.add: lhs and rhs [4, 8] and [4] do not broadcast: extents 8 and 4 at axis -1 (counted from the last axis)}}
  %c = graph.add %a, %b : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @add_result(%a: tensor<4x1xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{graph.add: result shape [4, 1] does not match [4, 8] (the broadcast shape of lhs and rhs)}}
  %c = graph.add %a, %b : (tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

func.func @add_element(%a: tensor<4xf32>, %b: tensor<4xf8E4M3FNUZ>) {
  // expected-error @+1 {{graph.add: rhs element type f8E4M3FNUZ differs from lhs element type f32}}
  %c = graph.add %a, %b : (tensor<4xf32>, tensor<4xf8E4M3FNUZ>) -> tensor<4xf32>
  func.return
}

// -----

func.func @attention_rank(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{graph.attention: query has shape [16, 8] of rank 2; attention operands are [..., heads, seq, head_dim] (rank >= 3)}}
  %o = graph.attention %q, %q, %q : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  func.return
}

// -----

func.func @attention_ranks(%q: tensor<2x16x8xf32>, %k: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{graph.attention: query [2, 16, 8], key [1, 2, 16, 8] and value [1, 2, 16, 8] must have the same rank}}
  %o = graph.attention %q, %k, %k : (tensor<2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @attention_kv(%q: tensor<2x16x8xf32>, %v: tensor<2x12x8xf32>) {
  // expected-error @+1 {{graph.attention: key [2, 16, 8] and value [2, 12, 8] must have the same shape}}
  %o = graph.attention %q, %q, %v : (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x12x8xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @attention_batch(%q: tensor<3x2x16x8xf32>, %k: tensor<4x2x16x8xf32>) {
  // expected-error @+1 {{graph.attention: batch axes of query [3] and key [4] differ}}
  %o = graph.attention %q, %k, %k : (tensor<3x2x16x8xf32>, tensor<4x2x16x8xf32>, tensor<4x2x16x8xf32>) -> tensor<3x2x16x8xf32>
  func.return
}

// -----

func.func @attention_heads(%q: tensor<2x16x8xf32>, %k: tensor<4x16x8xf32>) {
  // expected-error @+1 {{graph.attention: heads (axis -3) differ: query has 2, key/value have 4}}
  %o = graph.attention %q, %k, %k : (tensor<2x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @attention_head_dim(%q: tensor<2x16x8xf32>, %k: tensor<2x16x4xf32>) {
  // expected-error @+1 {{graph.attention: head_dim (axis -1) differs: query has 8, key/value have 4}}
  %o = graph.attention %q, %k, %k : (tensor<2x16x8xf32>, tensor<2x16x4xf32>, tensor<2x16x4xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @attention_causal_lengths(%q: tensor<2x16x8xf32>, %k: tensor<2x32x8xf32>) {
  // expected-error @+1 {{graph.attention: causal attention needs equal sequence lengths (axis -2), but query has 16 and key/value have 32}}
  %o = graph.attention %q, %k, %k causal : (tensor<2x16x8xf32>, tensor<2x32x8xf32>, tensor<2x32x8xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @attention_result(%q: tensor<2x16x8xf32>, %k: tensor<2x32x8xf32>) {
  // expected-error @+1 {{graph.attention: result shape [2, 32, 8] does not match [2, 16, 8] (the query shape)}}
  %o = graph.attention %q, %k, %k : (tensor<2x16x8xf32>, tensor<2x32x8xf32>, tensor<2x32x8xf32>) -> tensor<2x32x8xf32>
  func.return
}

// -----

func.func @attention_element(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf16>) {
  // expected-error @+1 {{graph.attention: key element type f16 differs from query element type f32}}
  %o = graph.attention %q, %k, %k : (tensor<2x16x8xf32>, tensor<2x16x8xf16>, tensor<2x16x8xf16>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @attention_scale(%q: tensor<2x16x8xf32>) {
  // expected-error @+1 {{graph.attention: scale must be a finite positive number, got -0.5}}
  %o = graph.attention %q, %q, %q scale -0.5 : (tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>) -> tensor<2x16x8xf32>
  func.return
}

// -----

func.func @repeat_count(%x0: tensor<4xf32>) {
  // expected-error @+1 {{graph.repeat: iteration count must be at least 1, got 0}}
  %r = graph.repeat 0 carried(%x = %x0 : tensor<4xf32>) {
    graph.yield %x : tensor<4xf32>
  } -> tensor<4xf32>
  func.return
}

// -----

func.func @repeat_sequence_axis(%x0: tensor<4xf32>, %seq: tensor<3x4xf32>) {
  // expected-error @+1 {{graph.repeat: sequence operand #0 has shape [3, 4]; its leading axis must be the iteration count 2}}
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) sequence(%s = %seq : tensor<3x4xf32>) {
    %y = graph.add %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.yield %y : tensor<4xf32>
  } -> tensor<4xf32>
  func.return
}

// -----

func.func @repeat_yield_count(%x0: tensor<4xf32>) {
  // expected-error @+1 {{graph.repeat: graph.yield has 2 values for 1 carried values}}
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) {
    graph.yield %x, %x : tensor<4xf32>, tensor<4xf32>
  } -> tensor<4xf32>
  func.return
}

// -----

func.func @repeat_yield_type(%x0: tensor<4xf32>, %w0: tensor<8xf32>) {
  // expected-error @+1 {{graph.repeat: graph.yield value #0 has type tensor<8xf32>, but carried value #0 has type tensor<4xf32>}}
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) invariant(%w = %w0 : tensor<8xf32>) {
    graph.yield %w : tensor<8xf32>
  } -> tensor<4xf32>
  func.return
}

// -----

func.func @repeat_capture(%x0: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{graph.repeat: graph.add in the body uses a value defined outside the repeat; pass it in as an invariant}}
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) {
    %y = graph.add %x, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.yield %y : tensor<4xf32>
  } -> tensor<4xf32>
  func.return
}

// -----

func.func @repeat_no_yield(%x0: tensor<4xf32>) {
  // expected-error @+1 {{graph.repeat: body must end with graph.yield}}
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) {
    %y = graph.gelu %x : tensor<4xf32> -> tensor<4xf32>
  } -> tensor<4xf32>
  func.return
}

// -----

func.func @repeat_empty_body() {
  // expected-error @+1 {{graph.repeat: body must end with graph.yield}}
  graph.repeat 2 {
  }
  func.return
}

// -----

func.func @repeat_other_terminator() {
  // expected-error @+1 {{graph.repeat: body must end with graph.yield}}
  graph.repeat 2 {
    "test.termop"() : () -> ()
  }
  func.return
}

// -----

func.func @repeat_result_type(%x0: tensor<4xf32>) {
  // expected-error @+1 {{graph.repeat: result #0 has type tensor<8xf32> but carried value #0 has type tensor<4xf32>}}
  %r = "graph.repeat"(%x0) <{count = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> ({
  ^bb0(%x: tensor<4xf32>):
    "graph.yield"(%x) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<8xf32>
  func.return
}

// -----

func.func @repeat_result_count(%x0: tensor<4xf32>) {
  // expected-error @+1 {{graph.repeat: 0 results for 1 carried values}}
  "graph.repeat"(%x0) <{count = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> ({
  ^bb0(%x: tensor<4xf32>):
    "graph.yield"(%x) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> ()
  func.return
}

// -----

func.func @repeat_block_arg_count(%x0: tensor<4xf32>) {
  // expected-error @+1 {{graph.repeat: body has 2 block arguments, expected 1 (1 carried, 0 invariant, 0 sequence)}}
  %r = "graph.repeat"(%x0) <{count = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> ({
  ^bb0(%x: tensor<4xf32>, %extra: tensor<4xf32>):
    "graph.yield"(%x) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @repeat_block_arg_type(%x0: tensor<4xf32>, %seq: tensor<2x4xf32>) {
  // expected-error @+1 {{graph.repeat: block argument #1 (sequence slice) has type tensor<2x4xf32>, expected tensor<4xf32>}}
  %r = "graph.repeat"(%x0, %seq) <{count = 2 : i64, operandSegmentSizes = array<i32: 1, 0, 1>}> ({
  ^bb0(%x: tensor<4xf32>, %s: tensor<2x4xf32>):
    "graph.yield"(%x) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @yield_outside(%x0: tensor<4xf32>) {
  // expected-error @+1 {{'graph.yield' expects parent op 'graph.repeat'}}
  graph.yield %x0 : tensor<4xf32>
}

// -----

// A type that breaks an operand constraint of the custom syntax is a located parse error
// naming the op, not a bare verifier message without a position.
func.func @gemm_custom_scalar(%a: f32, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{graph.gemm: f32 should be of base attribute tensor}}
  %c = graph.gemm %a, %b : (f32, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

// The `-> types` after a repeat body must repeat the carried types: wrong type, count, absence.
func.func @repeat_arrow_type(%x0: tensor<4xf32>) {
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) {
    graph.yield %x : tensor<4xf32>
  // expected-error @+1 {{graph.repeat: result type #0 is tensor<8xf16> but carried value #0 has type tensor<4xf32>}}
  } -> tensor<8xf16>
  func.return
}

// -----

func.func @repeat_arrow_count(%x0: tensor<4xf32>) {
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) {
    graph.yield %x : tensor<4xf32>
  // expected-error @+1 {{graph.repeat: 2 result types for 1 carried values}}
  } -> tensor<4xf32>, tensor<4xf32>
  func.return
}

// -----

func.func @repeat_arrow_missing(%x0: tensor<4xf32>) {
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) {
    graph.yield %x : tensor<4xf32>
  }
  // expected-error @+1 {{graph.repeat: expected '->' and the result types after the body (the carried types tensor<4xf32>)}}
  func.return
}

// -----

func.func @repeat_huge_count(%x0: tensor<4xf32>) {
  // expected-error @+1 {{graph.repeat: iteration count 99999999999999999999999 does not fit in a signed 64-bit integer}}
  %r = graph.repeat 99999999999999999999999 carried(%x = %x0 : tensor<4xf32>) {
    graph.yield %x : tensor<4xf32>
  } -> tensor<4xf32>
  func.return
}

// -----

// A missing graph.yield in a nested repeat names the inner repeat's line.
func.func @repeat_nested_no_yield(%x0: tensor<4xf32>) {
  %r = graph.repeat 2 carried(%x = %x0 : tensor<4xf32>) {
    // expected-error @+1 {{graph.repeat: body must end with graph.yield}}
    %i = graph.repeat 2 carried(%y = %x : tensor<4xf32>) {
      %z = graph.gelu %y : tensor<4xf32> -> tensor<4xf32>
    } -> tensor<4xf32>
    graph.yield %i : tensor<4xf32>
  } -> tensor<4xf32>
  func.return
}

// -----

// expected-error @+1 {{#graph.fp8_scale: exponent 99999999999999999999999 is outside -31..31}}
func.func @huge_scale(%a: tensor<3xf8E4M3FNUZ, #graph.fp8_scale<99999999999999999999999>>) {
  func.return
}

// -----

// Zero extents: an empty tensor is not a graph value (attention would divide by
// sqrt(head_dim) = 0 or take a softmax over zero keys).
func.func @attention_zero_head_dim(%q: tensor<1x4x0xf32>) {
  // expected-error @+1 {{graph.attention: query has shape [1, 4, 0] with extent 0 at axis 2; graph tensors need every extent >= 1}}
  %o = graph.attention %q, %q, %q : (tensor<1x4x0xf32>, tensor<1x4x0xf32>, tensor<1x4x0xf32>) -> tensor<1x4x0xf32>
  func.return
}

// -----

func.func @attention_zero_keys(%q: tensor<1x4x2xf32>, %k: tensor<1x0x2xf32>) {
  // expected-error @+1 {{graph.attention: key has shape [1, 0, 2] with extent 0 at axis 1; graph tensors need every extent >= 1}}
  %o = graph.attention %q, %k, %k : (tensor<1x4x2xf32>, tensor<1x0x2xf32>, tensor<1x0x2xf32>) -> tensor<1x4x2xf32>
  func.return
}

// -----

func.func @gemm_zero_contraction(%a: tensor<4x0xf32>, %b: tensor<0x3xf32>) {
  // expected-error @+1 {{graph.gemm: lhs has shape [4, 0] with extent 0 at axis 1; graph tensors need every extent >= 1}}
  %r = graph.gemm %a, %b : (tensor<4x0xf32>, tensor<0x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @add_zero_extent(%a: tensor<0x3xf32>, %b: tensor<1x3xf32>) {
  // expected-error @+1 {{graph.add: lhs has shape [0, 3] with extent 0 at axis 0; graph tensors need every extent >= 1}}
  %c = graph.add %a, %b : (tensor<0x3xf32>, tensor<1x3xf32>) -> tensor<0x3xf32>
  func.return
}

// -----

// The scale must be finite: written as the bits of an f64, as MLIR's float attributes allow.
func.func @attention_scale_inf(%q: tensor<1x4x2xf32>) {
  // expected-error @+1 {{graph.attention: scale must be a finite positive number, got inf}}
  %o = graph.attention %q, %q, %q scale 0x7FF0000000000000 : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  func.return
}

// -----

func.func @attention_scale_nan(%q: tensor<1x4x2xf32>) {
  // expected-error @+1 {{graph.attention: scale must be a finite positive number, got nan}}
  %o = graph.attention %q, %q, %q scale 0x7FF8000000000000 : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  func.return
}

// -----

func.func @attention_scale_overflow(%q: tensor<1x4x2xf32>) {
  // expected-error @+1 {{graph.attention: scale must be a finite positive number, got inf}}
  %o = graph.attention %q, %q, %q scale 1.0e999 : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  func.return
}

// -----

func.func @attention_scale_hex_too_wide(%q: tensor<1x4x2xf32>) {
  // expected-error @+1 {{graph.attention: a hexadecimal scale is the 64 bits of an f64}}
  %o = graph.attention %q, %q, %q scale 0x1FFF0000000000000 : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  func.return
}

// -----

func.func @attention_scale_zero(%q: tensor<1x4x2xf32>) {
  // expected-error @+1 {{graph.attention: scale must be a finite positive number, got 0.0}}
  %o = graph.attention %q, %q, %q scale 0.0 : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  func.return
}

// -----

// A property of the wrong type: xDSL's message names neither op nor property; the location
// and the op name say where it is.
func.func @gemm_flag_value(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{graph.gemm: 3 : i64 should be of base attribute unit}}
  %b = "graph.gemm"(%a, %a) <{transpose_lhs = 3 : i64}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

// A property spelled in the attribute dictionary would be a separate attribute nobody reads
// (and would turn into the property after a generic round trip): refused.
func.func @causal_in_attr_dict(%q: tensor<1x4x2xf32>) {
  // expected-error @+1 {{graph.attention: 'causal' belongs in the op's own syntax, not in its attribute dictionary (there it would be a separate attribute that nothing reads)}}
  %o = graph.attention %q, %q, %q {causal} : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  func.return
}

// -----

func.func @transpose_in_attr_dict(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{graph.gemm: 'transpose_lhs' belongs in the op's own syntax, not in its attribute dictionary}}
  %b = graph.gemm %a, %a {transpose_lhs = 3 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

// An unprefixed attribute is most likely a misspelt keyword: it would drop the mask silently.
func.func @misspelt_keyword(%q: tensor<1x4x2xf32>) {
  // expected-error @+1 {{graph.attention: unknown attribute 'causual': graph ops have no such keyword, and discardable attributes need a dialect prefix (such as 'mytool.causual')}}
  %o = graph.attention %q, %q, %q {causual} : (tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  func.return
}

// -----

// Graph ops belong to a function: at module level nothing would run them.
// expected-error @+1 {{graph.repeat: graph ops live in a func.func or graph.repeat body, not in builtin.module}}
graph.repeat 1 {
  graph.yield
}
