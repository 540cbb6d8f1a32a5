// RUN: ipu-opt %s --split-input-file --verify-diagnostics

// Every field of every instruction one past its encoding range (and one negative value).
exchange.row @r {
  // expected-error @+1 {{exchange.delay: field 'events_m1' = 524288 is out of range [0, 524287]}}
  exchange.delay 0x80000
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.delay: field 'events_m1' = -1 is out of range [0, 524287]}}
  exchange.delay -1
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.delaypic: field 'events_m1' = 128 is out of range [0, 127]}}
  exchange.delaypic 128, 0, 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.delaypic: field 'selector' = 2 is out of range [0, 1]}}
  exchange.delaypic 0, 2, 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.delaypic: field 'value' = 262144 is out of range [0, 262143]}}
  exchange.delaypic 0, 0, 0x40000
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.delayxpic: field 'events_m1' = 4096 is out of range [0, 4095]}}
  exchange.delayxpic 4096, 0, 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.delayxpic: field 'selector' = 2 is out of range [0, 1]}}
  exchange.delayxpic 0, 2, 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.delayxpic: field 'value' = 8192 is out of range [0, 8191]}}
  exchange.delayxpic 0, 0, 8192
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.send: field 'words_m1' = 64 is out of range [0, 63]}}
  exchange.send 64, 0, 1
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.send: field 'address' = 262144 is out of range [0, 262143]}}
  exchange.send 0, 0x40000, 1
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.send: field 'sctl' = 8 is out of range [0, 7]}}
  exchange.send 0, 0, 8
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendoff: field 'words_m1' = 4096 is out of range [0, 4095]}}
  exchange.sendoff 4096, 0, 1
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendoff: field 'delta' = 2048 is out of range [0, 2047]}}
  exchange.sendoff 0, 2048, 1
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendoff: field 'sctl' = 8 is out of range [0, 7]}}
  exchange.sendoff 0, 0, 8
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendpic: field 'words_m1' = 64 is out of range [0, 63]}}
  exchange.sendpic 64, 2, 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendpic: field 'selector' = 4 is out of range [0, 3]}}
  exchange.sendpic 0, 4, 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendpic: field 'value' = 262144 is out of range [0, 262143]}}
  exchange.sendpic 0, 2, 0x40000
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendpic: field 'value' = 8192 is out of range [0, 8191] (an XPIC immediate in sendpic is 13 bits)}}
  exchange.sendpic 0, 1, 0x2000
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendpicp: field 'words_m1' = 64 is out of range [0, 63]}}
  exchange.sendpicp 64, 0, 1, 0, xpic = 0, pic = 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendpicp: field 'address' = 262144 is out of range [0, 262143]}}
  exchange.sendpicp 0, 0x40000, 1, 0, xpic = 0, pic = 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendpicp: field 'sctl' = 8 is out of range [0, 7]}}
  exchange.sendpicp 0, 0, 8, 0, xpic = 0, pic = 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendpicp: field 'pic_selector' = 2 is out of range [0, 1]}}
  exchange.sendpicp 0, 0, 1, 2, xpic = 0, pic = 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendpicp: field 'xpic' = 16384 is out of range [0, 16383]}}
  exchange.sendpicp 0, 0, 1, 0, xpic = 0x4000, pic = 0
}

// -----

exchange.row @r {
  // expected-error @+1 {{exchange.sendpicp: field 'pic' = 262144 is out of range [0, 262143]}}
  exchange.sendpicp 0, 0, 1, 0, xpic = 0, pic = 0x40000
}

// -----

// expected-error @+1 {{exchange.row @misaligned: sendpicp 0, 0x100, 1, 0, xpic = 0x5, pic = 0x14000: sendpicp would start at byte address 0x4c004, which is not 8-byte aligned}}
exchange.row @misaligned address 0x4c004 {
  exchange.sendpicp 0, 0x100, 1, 0, xpic = 5, pic = 0x14000
}

// -----

// expected-error @+1 {{exchange.row @misaligned_after: sendpicp 0, 0x100, 1, 0, xpic = 0x5, pic = 0x14000: sendpicp would start at byte address 0x4c004, which is not 8-byte aligned}}
exchange.row @misaligned_after address 0x4c000 {
  exchange.delay 3
  exchange.sendpicp 0, 0x100, 1, 0, xpic = 5, pic = 0x14000
}

// -----

// expected-error @+1 {{exchange.row @odd: address 0x4c002 is not a 4-byte-aligned byte address}}
exchange.row @odd address 0x4c002 {
  exchange.delay 3
}

// -----

// expected-error @+1 {{exchange.row @foreign: 'test.op' is not an exchange instruction}}
exchange.row @foreign {
  "test.op"() : () -> ()
}

// -----

// expected-error @+1 {{exchange.row @empty: a row needs at least one instruction}}
exchange.row @empty {
}

// -----

// A row holds only exchange instructions (a nested row is not one).
// expected-error @+1 {{exchange.row @outer: 'exchange.row' is not an exchange instruction; a row holds only exchange.delay/delaypic/delayxpic/send/sendoff/sendpic/sendpicp}}
exchange.row @outer {
  exchange.delay 0
  exchange.row @inner {
    exchange.delay 0
  }
}
