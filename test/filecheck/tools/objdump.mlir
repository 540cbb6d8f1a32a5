// The spec's SDK receiver row: instructions, event intervals and control events.
// RUN: ipu-objdump 64000082 40a00032 f6600000 03014048 f6600000 03095000 f6600000 04016000 f7200000 19017000 | filecheck %s --check-prefix=RX --match-full-lines
// RX:      # row at 0x0: 10 words, 266 events
// RX-NEXT: 0x00000000: 64000082           delayxpic 0, 0, 0x82                                  # events [0, 1); XPIC=130 at 0
// RX-NEXT: 0x00000004: 40a00032           delay 50                                              # events [1, 52)
// RX-NEXT: 0x00000008: f6600000 03014048  sendpicp 51, 0x0, 0, 0, xpic = 0xc0, pic = 0x14048    # events [52, 104); XPIC=192 at 52; PIC=0x14048 at 52
// RX-NEXT: 0x00000010: f6600000 03095000  sendpicp 51, 0x0, 0, 0, xpic = 0xc2, pic = 0x15000    # events [104, 156); XPIC=194 at 104; PIC=0x15000 at 104
// RX-NEXT: 0x00000018: f6600000 04016000  sendpicp 51, 0x0, 0, 0, xpic = 0x100, pic = 0x16000   # events [156, 208); XPIC=256 at 156; PIC=0x16000 at 156
// RX-NEXT: 0x00000020: f7200000 19017000  sendpicp 57, 0x0, 0, 0, xpic = 0x640, pic = 0x17000   # events [208, 266); XPIC=1600 at 208; PIC=0x17000 at 208
// RX-EMPTY:

// Round trip through ipu-as gives back the same words.
// RUN: ipu-objdump 64000082 40a00032 f6600000 03014048 f6600000 03095000 f6600000 04016000 f7200000 19017000 | ipu-as | filecheck %s --check-prefix=RXAS
// RXAS:      64000082
// RXAS-NEXT: 40a00032
// RXAS-NEXT: f6600000
// RXAS-NEXT: 03014048
// RXAS-NEXT: f6600000
// RXAS-NEXT: 03095000
// RXAS-NEXT: f6600000
// RXAS-NEXT: 04016000
// RXAS-NEXT: f7200000
// RXAS-NEXT: 19017000
// RXAS-EMPTY:

// The spec's full-duplex sendpicp after a 33-word send, placed at 0x4c000.
// RUN: ipu-objdump --address 0x4c000 7c0a0001 40a00000 f54a0109 19015000 | filecheck %s --check-prefix=TX
// TX:      # row at 0x4c000: 4 words, 77 events
// TX-NEXT: 0x0004c000: 7c0a0001           send 32, 0x14000, 1 {{ +}}# events [0, 33); sends 33 words from 0x14000 dir 1
// TX-NEXT: 0x0004c004: 40a00000           delay 0 {{ +}}# events [33, 34)
// TX-NEXT: 0x0004c008: f54a0109 19015000  sendpicp 42, 0x14021, 1, 0, xpic = 0x640, pic = 0x15000  # events [34, 77); sends 43 words from 0x14021 dir 1; XPIC=1600 at 34; PIC=0x15000 at 34
// RUN: ipu-objdump --address 0x4c000 7c0a0001 40a00000 f54a0109 19015000 | ipu-as | filecheck %s --check-prefix=TXAS
// TXAS:      7c0a0001
// TXAS-NEXT: 40a00000
// TXAS-NEXT: f54a0109
// TXAS-NEXT: 19015000
// TXAS-EMPTY:

// Decode errors are diagnostics, not tracebacks.
// RUN: not ipu-objdump 40a00000 f54a0109 19015000 2>&1 | filecheck %s --check-prefix=ALIGN
// ALIGN: ipu-objdump: row at 0x0: decode error at word 1 (0xf54a0109): sendpicp at byte address 0x4 is not 8-byte aligned
// RUN: not ipu-objdump 12345678 2>&1 | filecheck %s --check-prefix=OPCODE
// OPCODE: ipu-objdump: row at 0x0: decode error at word 0 (0x12345678): unknown opcode
