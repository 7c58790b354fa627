//go:build linux

package clock

import (
	"syscall"
	"time"
	"unsafe"
)

// Sleep blocks the calling thread in nanosleep(2) for d (high-resolution timer). An
// interrupted sleep returns early; SleepUntil loops.
func Sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}

// holdSleep blocks the calling thread in nanosleep(2) for d without leaving the Go runtime's
// system-call state: the goroutine keeps its P. An interrupted sleep returns early.
func holdSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}
