package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// [run] on_error: "stop" by default, "continue" when set; any other value is named with its
// line. The table is left out of JSON only when it is on_error "stop" without re-measuring
// (what a results header written before remeasure_overrun existed decodes to), so a run's
// header says whether its cells could be measured again.
func TestRunOnError(t *testing.T) {
	d := Default()
	if d.Run.OnError != OnErrorStop || d.Validate() != nil {
		t.Fatalf("default on_error %q, %v", d.Run.OnError, d.Validate())
	}
	if b, _ := json.Marshal(d); !bytes.Contains(b, []byte(`"run":{"on_error":"stop","remeasure_overrun":2}`)) {
		t.Fatalf("the default [run] table is not written as it is: %s", b)
	}
	d.Run.RemeasureOverrun = 0
	if b, _ := json.Marshal(d); bytes.Contains(b, []byte(`"run"`)) {
		t.Fatalf("a [run] table of on_error stop and no re-measuring is written: %s", b)
	}
	d.Run.OnError = OnErrorContinue
	if b, _ := json.Marshal(d); !bytes.Contains(b, []byte(`"run":{"on_error":"continue"}`)) {
		t.Fatalf("on_error = continue is not written: %s", b)
	}
	c, err := Parse("bench.toml", []byte("seed = 1\n[run]\non_error = \"continue\"\n"))
	if err != nil || c.Run.OnError != OnErrorContinue || c.Validate() != nil {
		t.Fatalf("continue: %+v, %v", c.Run, err)
	}
	c, err = Parse("bench.toml", []byte("seed = 1\n[run]\non_error = \"skip\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `bench.toml:3: [run.on_error] unknown value "skip" (want "stop" or "continue")`) {
		t.Fatalf("err = %v", err)
	}
}

// [run] remeasure_overrun: 2 by default, 0 (never) to MaxRemeasureOverrun accepted, anything
// else an error naming the key and its line.
func TestRunRemeasureOverrun(t *testing.T) {
	if d := Default(); d.Run.RemeasureOverrun != 2 {
		t.Fatalf("default remeasure_overrun %d, want 2", d.Run.RemeasureOverrun)
	}
	for _, n := range []int{0, 1, MaxRemeasureOverrun} {
		c, err := Parse("bench.toml", []byte(fmt.Sprintf("seed = 1\n[run]\nremeasure_overrun = %d\n", n)))
		if err != nil || c.Run.RemeasureOverrun != n || c.Validate() != nil {
			t.Fatalf("remeasure_overrun = %d: %+v, %v, %v", n, c.Run, err, c.Validate())
		}
	}
	for _, n := range []int{-1, MaxRemeasureOverrun + 1} {
		c, err := Parse("bench.toml", []byte(fmt.Sprintf("seed = 1\n[run]\nremeasure_overrun = %d\n", n)))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("bench.toml:3: [run.remeasure_overrun] must be in [0, %d], got %d", MaxRemeasureOverrun, n)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("remeasure_overrun = %d: err = %v, want %q", n, err, want)
		}
	}
}
