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
// Integers that Python's int(..., 0) rejects are diagnostics naming the line too.
// RUN: printf 'delay 0\nsend 042, 0, 1\n' | not ipu-as 2>&1 | filecheck %s --check-prefix=LEADING
// LEADING: ipu-as: line 2: 'send 042, 0, 1': operand 'words_m1' is not an integer: '042' (a decimal integer has no leading zeros; write hex as 0x...)
// A header without instructions, and several rows with one --address.
// RUN: printf '# row at 0x4c000: 1 words\ndelay 0\n# row at 0x4c008: 1 words\n' | not ipu-as 2>&1 | filecheck %s --check-prefix=EMPTYROW
// EMPTYROW: ipu-as: line 3: the row at 0x4c008 has no instructions
// RUN: not ipu-as --address 0x4c000 %S/Inputs/two_rows.s 2>&1 | filecheck %s --check-prefix=RELOCATE
// RELOCATE: ipu-as: --address 0x4c000 cannot place 2 rows: each '# row at' header gives its row's address (line 3 is the first)
