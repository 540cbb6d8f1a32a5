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

// A multi-row listing (a package tile): each `# row at` header starts a row at its address,
// and ipu-as writes the same headers so that ipu-objdump --file reads the rows back.
// RUN: ipu-as %S/Inputs/two_rows.s | filecheck %s --check-prefix=ROWS --match-full-lines
// ROWS:      # row at 0x4c000: 4 words
// ROWS-NEXT: 7c0a0001
// ROWS-NEXT: 40a00000
// ROWS-NEXT: f54a0109
// ROWS-NEXT: 19015000
// ROWS-NEXT: # row at 0x4c104: 4 words
// ROWS-NEXT: 40a00002
// ROWS-NEXT: f0600000
// ROWS-NEXT: 00055000
// ROWS-NEXT: 40a00004
// ROWS-EMPTY:
// RUN: ipu-as %S/Inputs/two_rows.s | ipu-objdump --file - | filecheck %s --check-prefix=ROWSDUMP
// ROWSDUMP:      # row at 0x4c000: 4 words, 77 events
// ROWSDUMP:      0x0004c008: f54a0109 19015000  sendpicp 42, 0x14021, 1, 0, xpic = 0x640, pic = 0x15000  # events [34, 77); sends 43 words from 0x14021 dir 1; XPIC=1600 at 34; PIC=0x15000 at 34
// ROWSDUMP-NEXT: # row at 0x4c104: 4 words, 12 events
// ROWSDUMP-NEXT: 0x0004c104: 40a00002           delay 2 {{ +}}# events [0, 3)
// ROWSDUMP-NEXT: 0x0004c108: f0600000 00055000  sendpicp 3, 0x0, 0, 0, xpic = 0x1, pic = 0x15000 {{ +}}# events [3, 7); XPIC=1 at 3; PIC=0x15000 at 3
// ROWSDUMP-NEXT: 0x0004c110: 40a00004           delay 4 {{ +}}# events [7, 12)
// And back: listing -> words -> listing -> words gives the same words.
// RUN: ipu-as %S/Inputs/two_rows.s | ipu-objdump --file - | ipu-as | filecheck %s --check-prefix=ROWS --match-full-lines

// A row without a valid timeline is still listed, but the exit status says so.
// RUN: not ipu-objdump 70000000 2>&1 | filecheck %s --check-prefix=TIMELINE
// TIMELINE: 0x00000000: 70000000           sendoff 0, 0x0, 0
// TIMELINE: ipu-objdump: row at 0x0: timeline error: sendoff 0, 0x0, 0 at event 0: sendoff continues the outgoing stream but no send has started one

// Command-line errors exit 2.
// RUN: not ipu-objdump --address 0x4c002 40a00000 2>&1 | filecheck %s --check-prefix=MISALIGNED
// MISALIGNED: ipu-objdump: --address: row address 0x4c002 is not a 4-byte aligned byte address
