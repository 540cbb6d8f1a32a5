// RUN: IPU_ROUNDTRIP
// RUN: IPU_GENERIC_ROUNDTRIP

// Every instruction at the edges of its field ranges, hex and decimal spellings mixed.
exchange.row @all_ops address 0x4c000 provenance "graph.gemm %c, block (0, 1)" {
  exchange.delay 0
  exchange.delay 0x7ffff
  exchange.delaypic 127, 1, 0x3ffff
  exchange.delayxpic 4095, 1, 8191
  exchange.send 63, 0x3ffff, 7
  exchange.sendoff 4095, 2047, 3
  exchange.sendpic 63, 3, 0x3ffff
  exchange.sendpic 0, 0, 0x1fff
  exchange.sendpicp 63, 0x3ffff, 7, 1, xpic = 0x3fff, pic = 0x3ffff
}
// CHECK-LABEL: exchange.row @all_ops address 0x4c000 provenance "graph.gemm %c, block (0, 1)" {
// CHECK-NEXT:    exchange.delay 0
// CHECK-NEXT:    exchange.delay 524287
// CHECK-NEXT:    exchange.delaypic 127, 1, 0x3ffff
// CHECK-NEXT:    exchange.delayxpic 4095, 1, 0x1fff
// CHECK-NEXT:    exchange.send 63, 0x3ffff, 7
// CHECK-NEXT:    exchange.sendoff 4095, 0x7ff, 3
// CHECK-NEXT:    exchange.sendpic 63, 3, 0x3ffff
// CHECK-NEXT:    exchange.sendpic 0, 0, 0x1fff
// CHECK-NEXT:    exchange.sendpicp 63, 0x3ffff, 7, 1, xpic = 0x3fff, pic = 0x3ffff
// CHECK-NEXT:  }

// CHECK-GENERIC-LABEL: "exchange.row"() <{sym_name = "all_ops", address = 311296 : i64, provenance = "graph.gemm %c, block (0, 1)"}> ({
// CHECK-GENERIC-NEXT:    "exchange.delay"() <{events_m1 = 0 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "exchange.delay"() <{events_m1 = 524287 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "exchange.delaypic"() <{events_m1 = 127 : i64, selector = 1 : i64, value = 262143 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "exchange.delayxpic"() <{events_m1 = 4095 : i64, selector = 1 : i64, value = 8191 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "exchange.send"() <{words_m1 = 63 : i64, address = 262143 : i64, sctl = 7 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "exchange.sendoff"() <{words_m1 = 4095 : i64, delta = 2047 : i64, sctl = 3 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "exchange.sendpic"() <{words_m1 = 63 : i64, selector = 3 : i64, value = 262143 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "exchange.sendpic"() <{words_m1 = 0 : i64, selector = 0 : i64, value = 8191 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "exchange.sendpicp"() <{words_m1 = 63 : i64, address = 262143 : i64, sctl = 7 : i64, pic_selector = 1 : i64, xpic = 16383 : i64, pic = 262143 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:  }) : () -> ()

// -----

// The spec's SDK receiver row, plus an unplaced row with no provenance and extra attributes.
exchange.row @sdk_receiver {
  exchange.delayxpic 0, 0, 130
  exchange.delay 50
  exchange.sendpicp 51, 0, 0, 0, xpic = 192, pic = 0x14048
  exchange.sendpicp 51, 0, 0, 0, xpic = 194, pic = 0x15000
  exchange.sendpicp 51, 0, 0, 0, xpic = 256, pic = 0x16000
  exchange.sendpicp 57, 0, 0, 0, xpic = 0x640, pic = 0x17000
}
exchange.row @tagged attributes {note = "x"} {
  exchange.send 0, 0, 1 {tag = 3 : i32}
}
// CHECK-LABEL: exchange.row @sdk_receiver {
// CHECK-NEXT:    exchange.delayxpic 0, 0, 0x82
// CHECK-NEXT:    exchange.delay 50
// CHECK-NEXT:    exchange.sendpicp 51, 0x0, 0, 0, xpic = 0xc0, pic = 0x14048
// CHECK-NEXT:    exchange.sendpicp 51, 0x0, 0, 0, xpic = 0xc2, pic = 0x15000
// CHECK-NEXT:    exchange.sendpicp 51, 0x0, 0, 0, xpic = 0x100, pic = 0x16000
// CHECK-NEXT:    exchange.sendpicp 57, 0x0, 0, 0, xpic = 0x640, pic = 0x17000
// CHECK-NEXT:  }
// CHECK-NEXT:  exchange.row @tagged attributes {note = "x"} {
// CHECK-NEXT:    exchange.send 0, 0x0, 1 {tag = 3 : i32}
// CHECK-NEXT:  }

// CHECK-GENERIC-LABEL: "exchange.row"() <{sym_name = "sdk_receiver"}> ({
// CHECK-GENERIC-NEXT:    "exchange.delayxpic"() <{events_m1 = 0 : i64, selector = 0 : i64, value = 130 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "exchange.delay"() <{events_m1 = 50 : i64}> : () -> ()
// CHECK-GENERIC-NEXT:    "exchange.sendpicp"() <{words_m1 = 51 : i64, {{.*}}xpic = 192 : i64, pic = 81992 : i64}> : () -> ()
// CHECK-GENERIC:       "exchange.row"() <{sym_name = "tagged"}> ({
// CHECK-GENERIC-NEXT:    "exchange.send"() <{words_m1 = 0 : i64, address = 0 : i64, sctl = 1 : i64}> {tag = 3 : i32} : () -> ()
