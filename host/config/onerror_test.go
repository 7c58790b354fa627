package config

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// [run] on_error: "stop" by default and not written to JSON then (a results header of a run
// that kept it reads as one written before the key existed), "continue" when set; any other
// value is named with its line.
func TestRunOnError(t *testing.T) {
	d := Default()
	if d.Run.OnError != OnErrorStop || d.Validate() != nil {
		t.Fatalf("default on_error %q, %v", d.Run.OnError, d.Validate())
	}
	if b, _ := json.Marshal(d); bytes.Contains(b, []byte(`"run"`)) {
		t.Fatalf("the default [run] table is written: %s", b)
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
