package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is one point's serve command, running in its own process group.
type server struct {
	cmd     *exec.Cmd
	log     *os.File
	logPath string
	exited  chan struct{} // closed when the process has exited
	waitErr error         // the exit status, once exited is closed
	once    sync.Once
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree reports whether port can be listened on at 127.0.0.1.
func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// inUse reports whether something accepts connections at target's host:port already — before
// the point's server is started it would be measured instead.
func inUse(target string) (string, bool) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return "", false
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	c, err := net.DialTimeout("tcp", host, time.Second)
	if err != nil {
		return host, false
	}
	c.Close()
	return host, true
}

// start runs command with /bin/sh -c in a new process group, its output appended to logPath.
func start(command, logPath string, env []string) (*server, error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "# %s: %s\n", time.Now().UTC().Format(time.RFC3339), command)
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = env
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %q: %w", command, err)
	}
	s := &server{cmd: cmd, log: log, logPath: logPath, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// status describes how the process exited ("exit status 2", "signal: killed").
func (s *server) status() string {
	if s.waitErr == nil {
		return "exit status 0"
	}
	return s.waitErr.Error()
}

// hasExited reports whether the process has exited.
func (s *server) hasExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// tail returns the last n lines of the server's log, indented, for error messages.
func (s *server) tail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\n    " + strings.Join(lines, "\n    ")
}

// waitReady polls target+path (GET) every 200 ms until it answers 200, the process exits,
// timeout passes or ctx ends. Errors say which, with the last answer and the log's tail.
func (s *server) waitReady(ctx context.Context, target, path string, timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	deadline := t0.Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	last := "no answer yet"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(target, "/")+path, nil)
		if err != nil {
			return 0, fmt.Errorf("readiness: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(t0), nil
			}
			last = fmt.Sprintf("%s %s: %d %s", http.MethodGet, req.URL, resp.StatusCode, bytes.TrimSpace(body))
		} else {
			last = err.Error()
		}
		if s.hasExited() {
			return 0, fmt.Errorf("the serve command exited (%s) %.1f s after it started, before %s%s answered 200; last lines of %s:%s",
				s.status(), time.Since(t0).Seconds(), target, path, s.logPath, s.tail(5))
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("readiness timeout: %s%s did not answer 200 within %v (last: %s); last lines of %s:%s",
				target, path, timeout, last, s.logPath, s.tail(5))
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-s.exited:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace if it is still there,
// and waits for the shell to exit. It returns how the stop went ("" when it exited on
// SIGTERM, or had exited before).
func (s *server) stop(grace time.Duration) string {
	var note string
	s.once.Do(func() {
		defer s.log.Close()
		if s.hasExited() {
			signalGroup(s.cmd, syscall.SIGKILL) // children it left behind
			return
		}
		if err := signalGroup(s.cmd, syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			note = "SIGTERM: " + err.Error()
		}
		select {
		case <-s.exited:
		case <-time.After(grace):
			signalGroup(s.cmd, syscall.SIGKILL)
			<-s.exited
			note = fmt.Sprintf("the server did not exit within %v of SIGTERM: its process group was killed (SIGKILL)", grace)
		}
		signalGroup(s.cmd, syscall.SIGKILL) // whatever of the group is left
		fmt.Fprintf(s.log, "# stopped: %s\n", s.status())
	})
	return note
}
