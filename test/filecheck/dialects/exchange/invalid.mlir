// RUN: ipu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every field of every instruction one past its encoding range (and one negative value).
exchange.row @r {
  exchange.delay 0x80000
}
// CHECK: exchange.delay: field 'events_m1' = 524288 is out of range [0, 524287]

// -----

exchange.row @r {
  exchange.delay -1
}
// CHECK: exchange.delay: field 'events_m1' = -1 is out of range [0, 524287]

// -----

exchange.row @r {
  exchange.delaypic 128, 0, 0
}
// CHECK: exchange.delaypic: field 'events_m1' = 128 is out of range [0, 127]

// -----

exchange.row @r {
  exchange.delaypic 0, 2, 0
}
// CHECK: exchange.delaypic: field 'selector' = 2 is out of range [0, 1]

// -----

exchange.row @r {
  exchange.delaypic 0, 0, 0x40000
}
// CHECK: exchange.delaypic: field 'value' = 262144 is out of range [0, 262143]

// -----

exchange.row @r {
  exchange.delayxpic 4096, 0, 0
}
// CHECK: exchange.delayxpic: field 'events_m1' = 4096 is out of range [0, 4095]

// -----

exchange.row @r {
  exchange.delayxpic 0, 2, 0
}
// CHECK: exchange.delayxpic: field 'selector' = 2 is out of range [0, 1]

// -----

exchange.row @r {
  exchange.delayxpic 0, 0, 8192
}
// CHECK: exchange.delayxpic: field 'value' = 8192 is out of range [0, 8191]

// -----

exchange.row @r {
  exchange.send 64, 0, 1
}
// CHECK: exchange.send: field 'words_m1' = 64 is out of range [0, 63]

// -----

exchange.row @r {
  exchange.send 0, 0x40000, 1
}
// CHECK: exchange.send: field 'address' = 262144 is out of range [0, 262143]

// -----

exchange.row @r {
  exchange.send 0, 0, 8
}
// CHECK: exchange.send: field 'sctl' = 8 is out of range [0, 7]

// -----

exchange.row @r {
  exchange.sendoff 4096, 0, 1
}
// CHECK: exchange.sendoff: field 'words_m1' = 4096 is out of range [0, 4095]

// -----

exchange.row @r {
  exchange.sendoff 0, 2048, 1
}
// CHECK: exchange.sendoff: field 'delta' = 2048 is out of range [0, 2047]

// -----

exchange.row @r {
  exchange.sendoff 0, 0, 8
}
// CHECK: exchange.sendoff: field 'sctl' = 8 is out of range [0, 7]

// -----

exchange.row @r {
  exchange.sendpic 64, 2, 0
}
// CHECK: exchange.sendpic: field 'words_m1' = 64 is out of range [0, 63]

// -----

exchange.row @r {
  exchange.sendpic 0, 4, 0
}
// CHECK: exchange.sendpic: field 'selector' = 4 is out of range [0, 3]

// -----

exchange.row @r {
  exchange.sendpic 0, 2, 0x40000
}
// CHECK: exchange.sendpic: field 'value' = 262144 is out of range [0, 262143]

// -----

exchange.row @r {
  exchange.sendpic 0, 1, 0x2000
}
// CHECK: exchange.sendpic: field 'value' = 8192 is out of range [0, 8191] (an XPIC immediate in sendpic is 13 bits)

// -----

exchange.row @r {
  exchange.sendpicp 64, 0, 1, 0, xpic = 0, pic = 0
}
// CHECK: exchange.sendpicp: field 'words_m1' = 64 is out of range [0, 63]

// -----

exchange.row @r {
  exchange.sendpicp 0, 0x40000, 1, 0, xpic = 0, pic = 0
}
// CHECK: exchange.sendpicp: field 'address' = 262144 is out of range [0, 262143]

// -----

exchange.row @r {
  exchange.sendpicp 0, 0, 8, 0, xpic = 0, pic = 0
}
// CHECK: exchange.sendpicp: field 'sctl' = 8 is out of range [0, 7]

// -----

exchange.row @r {
  exchange.sendpicp 0, 0, 1, 2, xpic = 0, pic = 0
}
// CHECK: exchange.sendpicp: field 'pic_selector' = 2 is out of range [0, 1]

// -----

exchange.row @r {
  exchange.sendpicp 0, 0, 1, 0, xpic = 0x4000, pic = 0
}
// CHECK: exchange.sendpicp: field 'xpic' = 16384 is out of range [0, 16383]

// -----

exchange.row @r {
  exchange.sendpicp 0, 0, 1, 0, xpic = 0, pic = 0x40000
}
// CHECK: exchange.sendpicp: field 'pic' = 262144 is out of range [0, 262143]

// -----

exchange.row @misaligned address 0x4c004 {
  exchange.sendpicp 0, 0x100, 1, 0, xpic = 5, pic = 0x14000
}
// CHECK: exchange.row @misaligned: sendpicp 0, 0x100, 1, 0, xpic = 0x5, pic = 0x14000: sendpicp would start at byte address 0x4c004, which is not 8-byte aligned

// -----

exchange.row @misaligned_after address 0x4c000 {
  exchange.delay 3
  exchange.sendpicp 0, 0x100, 1, 0, xpic = 5, pic = 0x14000
}
// CHECK: exchange.row @misaligned_after: sendpicp 0, 0x100, 1, 0, xpic = 0x5, pic = 0x14000: sendpicp would start at byte address 0x4c004, which is not 8-byte aligned

// -----

exchange.row @odd address 0x4c002 {
  exchange.delay 3
}
// CHECK: exchange.row @odd: address 0x4c002 is not a 4-byte-aligned byte address

// -----

exchange.row @foreign {
  "test.op"() : () -> ()
}
// CHECK: exchange.row @foreign: 'test.op' is not an exchange instruction

// -----

exchange.row @empty {
}
// CHECK: exchange.row @empty: a row needs at least one instruction

// -----

// A row holds only exchange instructions (a nested row is not one).
exchange.row @outer {
  exchange.delay 0
  exchange.row @inner {
    exchange.delay 0
  }
}
// CHECK: exchange.row @outer: 'exchange.row' is not an exchange instruction; a row holds only exchange.delay/delaypic/delayxpic/send/sendoff/sendpic/sendpicp
