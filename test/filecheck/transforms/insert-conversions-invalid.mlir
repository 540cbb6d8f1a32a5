// RUN: ipu-opt %s --verify-diagnostics -p insert-conversions

#A = #mid.format<f16, row_major, [4 x 1 pad, 4 x 1 pad], replication = 1, group = 1, standard>
func.func @reshape(%x: tensor<4x4xf16, #A>) -> tensor<2x8xf16, #A> {
  // expected-error @+1 {{insert-conversions: cannot convert %x of shape [4, 4] to shape [2, 8]}}
  %y = builtin.unrealized_conversion_cast %x : tensor<4x4xf16, #A> to tensor<2x8xf16, #A>
  func.return %y : tensor<2x8xf16, #A>
}
