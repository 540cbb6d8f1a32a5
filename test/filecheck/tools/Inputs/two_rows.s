# Two rows of one tile, as in an `ipu-objdump --package P --tile T` listing. The second row
# starts on an odd word, so its sendpicp is 8-byte aligned only at its own address.
# row at 0x4c000: 4 words, 77 events
send 32, 0x14000, 1
delay 0
sendpicp 42, 0x14021, 1, 0, xpic = 0x640, pic = 0x15000
# row at 0x4c104: 4 words, 12 events
delay 2
sendpicp 3, 0x0, 0, 0, xpic = 0x1, pic = 0x15000
delay 4
