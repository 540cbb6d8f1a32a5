delay 0   # pad
delay 0
sendpicp 42, 0x14021, 1, 0, xpic = 0x640, pic = 0x15000
