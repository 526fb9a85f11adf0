package cli

import (
	"os"
	"syscall"
	"unsafe"
)

// IsTerminal reports whether f is a terminal (TCGETS succeeds on it).
func IsTerminal(f *os.File) bool {
	var t syscall.Termios
	return ioctl(f.Fd(), syscall.TCGETS, unsafe.Pointer(&t)) == nil
}

// ForegroundTTY reports whether stdin is a terminal whose foreground
// process group is baton's own. Only then may COMMAND's group take the
// terminal: taking it from a background baton would steal it from the
// job the user is actually running.
func ForegroundTTY(stdin *os.File) bool {
	var pgrp int32
	if err := ioctl(stdin.Fd(), syscall.TIOCGPGRP, unsafe.Pointer(&pgrp)); err != nil {
		return false // not a terminal (ENOTTY) or no controlling terminal
	}
	return int(pgrp) == syscall.Getpgrp()
}

// TakeTerminal makes baton's process group the terminal's foreground
// group again after COMMAND's group had it. The caller ignores SIGTTOU,
// which a background group would otherwise get for trying.
func TakeTerminal(stdin *os.File) {
	pgrp := int32(syscall.Getpgrp())
	_ = ioctl(stdin.Fd(), syscall.TIOCSPGRP, unsafe.Pointer(&pgrp))
}

func ioctl(fd uintptr, req uint, arg unsafe.Pointer) error {
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}
