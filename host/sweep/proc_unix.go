//go:build unix

package sweep

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd in a process group of its own, so that stopping it reaches the
// server the shell started and every process the server started.
func setProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to cmd's process group.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}
