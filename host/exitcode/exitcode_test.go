package exitcode

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestTheInnermostCodeWins(t *testing.T) {
	base := errors.New("bench.toml:3: unknown key [x]")
	inner := With(InvalidConfig, base)
	outer := With(TargetFailed, fmt.Errorf("run: %w", inner))
	if Of(outer) != InvalidConfig || Of(nil) != OK || Of(base) != Failure {
		t.Errorf("Of = %d, %d, %d", Of(outer), Of(nil), Of(base))
	}
	if !errors.Is(outer, base) || outer.Error() != "run: bench.toml:3: unknown key [x]" {
		t.Errorf("outer = %v", outer)
	}
	if With(Usage, nil) != nil {
		t.Error("With(code, nil) is not nil")
	}
	if e := Errorf(PluginRejected, "plugin %s", "gamma"); Of(e) != PluginRejected || e.Error() != "plugin gamma" {
		t.Errorf("Errorf = %v (%d)", e, Of(e))
	}
}

// childEnv selects the scenario a re-executed test binary runs (see TestPanicInAGoroutineExits7).
const childEnv = "GENLOAD_EXITCODE_CHILD"

// boom panics; the child's stack must name it.
func boom() { panic(errors.New("boom in a goroutine")) }

// child runs one scenario in a process of its own and exits; it returns if none is selected.
func child() {
	done := make(chan struct{})
	switch os.Getenv(childEnv) {
	case "":
		return
	case "go":
		Go(boom)
	case "defer":
		go func() {
			defer Recover()
			boom()
		}()
	case "plain": // what Go does without Recover: exit status 2, genload's Usage code
		go boom()
	case "nopanic": // Recover without a panic returns (it runs before close)
		go func() {
			defer close(done)
			defer Recover()
		}()
		<-done
		os.Exit(0)
	}
	select {} // the panicking goroutine ends the process
}

func TestPanicInAGoroutineExits7(t *testing.T) {
	child()
	for _, c := range []struct {
		scenario string
		code     int
		stderr   []string
	}{
		{"go", int(Panic), []string{"genload: internal error (a bug, please report it): panic: boom in a goroutine\n", "exitcode.boom(", "goroutine "}},
		{"defer", int(Panic), []string{"panic: boom in a goroutine\n", "exitcode.boom("}},
		{"plain", int(Usage), []string{"panic: boom in a goroutine"}},
		{"nopanic", 0, nil},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestPanicInAGoroutineExits7$")
			cmd.Env = append(os.Environ(), childEnv+"="+c.scenario)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, c.code, stderr.String())
			}
			for _, want := range c.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if c.stderr == nil && stderr.Len() != 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
		})
	}
}

func TestPanicMessage(t *testing.T) {
	if got := PanicMessage("x", []byte("goroutine 1 [running]:\nmain.f()")); got != "genload: internal error (a bug, please report it): panic: x\n\ngoroutine 1 [running]:\nmain.f()\n" {
		t.Errorf("got %q", got)
	}
	if got := PanicMessage(7, nil); got != "genload: internal error (a bug, please report it): panic: 7\n" {
		t.Errorf("got %q", got)
	}
}
