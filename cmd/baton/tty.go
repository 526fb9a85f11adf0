package main

import (
	"os"
	"syscall"
	"unsafe"
)

// foregroundTTY reports whether stdin is a terminal whose foreground
// process group is baton's own. Only then may COMMAND's group take the
// terminal: taking it from a background baton would steal it from the
// job the user is actually running.
func foregroundTTY() bool {
	fd := os.Stdin.Fd()
	var pgrp int32
	if err := ioctl(fd, syscall.TIOCGPGRP, unsafe.Pointer(&pgrp)); err != nil {
		return false // not a terminal (ENOTTY) or no controlling terminal
	}
	return int(pgrp) == syscall.Getpgrp()
}

// takeTerminal makes baton's process group the terminal's foreground
// group again after COMMAND's group had it. The caller ignores SIGTTOU,
// which a background group would otherwise get for trying.
func takeTerminal() {
	pgrp := int32(syscall.Getpgrp())
	_ = ioctl(os.Stdin.Fd(), syscall.TIOCSPGRP, unsafe.Pointer(&pgrp))
}

func ioctl(fd uintptr, req uint, arg unsafe.Pointer) error {
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}
