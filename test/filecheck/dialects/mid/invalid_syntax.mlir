// Parse errors end the input, so each run repairs the earlier errors with sed.
// RUN: not ipu-opt %s 2>&1 | filecheck %s --check-prefix=ORDER
// RUN: sed -e 's/column_major/row_major/' %s | not ipu-opt 2>&1 | filecheck %s --check-prefix=KEY
// RUN: sed -e 's/column_major/row_major/' -e 's/init = @b/accum = @b/' %s | not ipu-opt 2>&1 | filecheck %s --check-prefix=NESTED

"test.op"() {f = #mid.format<f16, column_major, [16 x 1 pad], replication = 1, group = 1, standard>} : () -> ()
// ORDER: Expected `row_major`, `amp_left`, `amp_right`, `amp_output`, `amp_left_t`, or `amp_right_t`.

"test.op"() {d = #mid.dispatch<pointwise, init = @a, init = @b>} : () -> ()
// KEY: expected one of inner, columns, init, accum (each once), got 'init'

"test.op"() {o = #mid.operand<lhs : left, #mid.axis<16 x 1 pad>, align = 32, tail = 0>} : () -> ()
// NESTED: expected a #mid.format, got #mid.axis<16 x 1 pad>
