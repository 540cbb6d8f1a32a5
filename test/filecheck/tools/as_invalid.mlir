// ipu-as diagnostics name the line.
// RUN: echo "delay 0x80000" | not ipu-as 2>&1 | filecheck %s --check-prefix=RANGE
// RANGE: ipu-as: line 1: delay 524288: field 'events_m1' = 524288 is out of range [0, 0x7ffff]
// RUN: echo "sendpicp 1, 2, 3" | not ipu-as 2>&1 | filecheck %s --check-prefix=ARITY
// ARITY: ipu-as: line 1: 'sendpicp 1, 2, 3': sendpicp takes 6 operands (words_m1, address, sctl, pic_selector, xpic, pic), got 3
// RUN: echo "jump 3" | not ipu-as 2>&1 | filecheck %s --check-prefix=MNEMONIC
// MNEMONIC: ipu-as: line 1: unknown mnemonic 'jump' in 'jump 3'
// RUN: not ipu-as --address 0x4c004 %S/Inputs/sendpicp.s 2>&1 | filecheck %s --check-prefix=ALIGN
// ALIGN: ipu-as: line 3: sendpicp 42, 0x14021, 1, 0, xpic = 0x640, pic = 0x15000: sendpicp would start at byte address 0x4c00c, which is not 8-byte aligned
// RUN: ipu-as --address 0x4c000 %S/Inputs/sendpicp.s | filecheck %s --check-prefix=OK
// OK:      40a00000
// OK-NEXT: 40a00000
// OK-NEXT: f54a0109
// OK-NEXT: 19015000
