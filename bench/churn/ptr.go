package main

import "unsafe"

// unsafePtr is the address of b's first byte, for prctl.
func unsafePtr(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
