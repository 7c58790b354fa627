//go:build !unix

package sweep

import (
	"os/exec"
	"syscall"
)

// setProcessGroup does nothing: process groups are a Unix notion.
func setProcessGroup(*exec.Cmd) {}

// signalGroup kills the process (there is no group to signal, and no SIGTERM).
func signalGroup(cmd *exec.Cmd, _ syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
