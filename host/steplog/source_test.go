package steplog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/genload/genload/host/exitcode"
)

// A gzip-compressed file is refused by its magic bytes, and a missing one, with the code of a
// missing input; a plain file's records are read.
func TestReadFileRefusesGzipAndNamesMissingFiles(t *testing.T) {
	dir := t.TempDir()
	gz := filepath.Join(dir, "steps.log.gz")
	os.WriteFile(gz, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0}, 0o644)
	p := NewParser(mustPreset(t, "genload"), Options{})
	if err := p.ReadFile(gz); exitcode.Of(err) != exitcode.InvalidConfig || !strings.Contains(err.Error(), "gzip-compressed; decompress it, or read it with --cmd 'zcat "+gz+"'") {
		t.Errorf("gzip: %v", err)
	}
	if err := p.ReadFile(filepath.Join(dir, "none.log")); exitcode.Of(err) != exitcode.InvalidConfig || !strings.Contains(err.Error(), "step log: open ") {
		t.Errorf("missing: %v", err)
	}
	plain := filepath.Join(dir, "steps.log")
	os.WriteFile(plain, []byte("time=2026-12-01T10:00:00.001Z step=1 active=2 decode=2 decoding=2 prefill_tokens=0 spec_tokens=0 waiting=0 kv_blocks=1 experts=0 fwd_ms=5.000 wall_ms=5.000\n"), 0o644)
	if err := p.ReadFile(plain); err != nil || p.Stats().Records != 1 || p.Records()[0].Src != plain+":1" {
		t.Errorf("plain: %v, %+v", err, p.Stats())
	}
}

// A command's records are read from both its streams; when it fails, the error holds its exit
// status and the last of its stderr lines that held no record; when the context is cancelled
// it is Interrupted, with what it wrote before kept.
func TestReadCommandKeepsWhatWasRead(t *testing.T) {
	line := "time=2026-12-01T10:00:00.001Z step=1 active=2 decode=2 decoding=2 prefill_tokens=0 spec_tokens=0 waiting=0 kv_blocks=1 experts=0 fwd_ms=5.000 wall_ms=5.000"
	p := NewParser(mustPreset(t, "genload"), Options{})
	err := p.ReadCommand(context.Background(), "echo '"+line+"'; echo '"+line+"' >&2; echo 'disk on fire' >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "exit status 3; the table holds what it wrote before; its stderr ended with:\n  disk on fire") {
		t.Errorf("exit 3: %v", err)
	}
	if st := p.Stats(); st.Records != 1 || st.Duplicates != 1 || st.Other != 1 {
		t.Errorf("exit 3: %+v, want 1 record (and its copy on stderr counted once) and 1 other line", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mark := filepath.Join(t.TempDir(), "written")
	p = NewParser(mustPreset(t, "genload"), Options{})
	done := make(chan error, 1)
	go func() { done <- p.ReadCommand(ctx, "echo '"+line+"'; touch '"+mark+"'; exec sleep 60") }()
	for {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the command ended before it was cancelled: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; exitcode.Of(err) != exitcode.Interrupted || p.Stats().Records != 1 {
		t.Errorf("cancelled: %v (exit %d), %d records", err, exitcode.Of(err), p.Stats().Records)
	}
}
