package steplog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/genload/genload/host/exitcode"
)

// ReadFile parses the log file name into p (Read, errors naming "step log"). A missing or
// unreadable file is an exitcode.InvalidConfig error (a missing input, like a missing corpus);
// a gzip-compressed file (its first two bytes 1f 8b) is refused, with the same code, rather
// than read as bytes.
func (p *Parser) ReadFile(name string) error {
	fl, err := os.Open(name)
	if err != nil {
		return exitcode.With(exitcode.InvalidConfig, fmt.Errorf("step log: %w", err))
	}
	defer fl.Close()
	br := bufio.NewReader(fl)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return exitcode.Errorf(exitcode.InvalidConfig, "step log %s: gzip-compressed; decompress it, or read it with --cmd 'zcat %s'", name, name)
	}
	if err := p.Read(br, name); err != nil {
		return fmt.Errorf("step log: %w", err)
	}
	return nil
}

// ReadCommand runs command with sh -c and parses its standard output and standard error into
// p, each line as it comes (the two interleave by line, named "cmd stdout:N" and "cmd
// stderr:N"; the parser sorts records by time): servers log to either (docker logs gives a
// container's stderr on its stderr). What was read is kept whatever happens. The error is the
// command's, for the caller to report after what it read: a non-zero exit with the last five
// lines of its stderr that held no record (its own complaint), or, when ctx is cancelled (a
// command that does not end, such as tail -f, stopped by Ctrl-C), exitcode.Interrupted.
func (p *Parser) ReadCommand(ctx context.Context, command string) error {
	c := exec.CommandContext(ctx, "sh", "-c", command)
	c.WaitDelay = time.Second // a child left holding the pipes after sh is killed
	outPipe, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	errPipe, err := c.StderrPipe()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("step log --cmd %q: %w", command, err)
	}
	// One goroutine per stream, each handing whole lines to the parser under one lock; the
	// stderr lines that hold no record are kept (the last few) to show on failure.
	var mu sync.Mutex
	var tail []string
	read := func(r io.Reader, name string, keep bool) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		n := 0
		for sc.Scan() {
			n++
			mu.Lock()
			before := p.Stats()
			p.Line(fmt.Sprintf("%s:%d", name, n), strings.TrimRight(sc.Text(), "\r"))
			if keep && p.Stats().Other > before.Other {
				tail = append(tail, sc.Text())
				if len(tail) > 5 {
					tail = tail[1:]
				}
			}
			mu.Unlock()
		}
		if err := sc.Err(); err != nil {
			io.Copy(io.Discard, r) // keep the command from blocking on a full pipe
			return fmt.Errorf("%s line %d: %w", name, n+1, err)
		}
		return nil
	}
	errc := make(chan error, 1)
	exitcode.Go(func() { errc <- read(errPipe, "cmd stderr", true) })
	rerr := read(outPipe, "cmd stdout", false)
	eerr := <-errc
	werr := c.Wait()
	if ctx.Err() != nil {
		return &exitcode.Error{Code: exitcode.Interrupted, Err: fmt.Errorf("step log --cmd %q: interrupted; the table holds what it wrote until then", command)}
	}
	if werr != nil {
		msg := fmt.Sprintf("step log --cmd %q: %v; the table holds what it wrote before", command, werr)
		if len(tail) > 0 {
			msg += "; its stderr ended with:\n  " + strings.Join(tail, "\n  ")
		}
		return errors.New(msg)
	}
	if err := errors.Join(rerr, eerr); err != nil {
		return fmt.Errorf("step log --cmd %q: %w", command, err)
	}
	return nil
}
