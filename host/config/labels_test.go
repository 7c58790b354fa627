package config

import (
	"encoding/json"
	"strings"
	"testing"
)

// [labels] takes string and integer values; anything else is named by key and line, all at once.
func TestLabels(t *testing.T) {
	c, err := Parse("bench.toml", []byte("[labels]\ngpu_count = 8\ndeployment = \"h100-tp1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Labels["gpu_count"] != int64(8) || c.Labels["deployment"] != "h100-tp1" {
		t.Fatalf("labels %#v", c.Labels)
	}

	// A stored config read back from JSON holds the integer as float64: still valid.
	b, _ := json.Marshal(c)
	back := Default()
	if err := json.Unmarshal(b, back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil || back.Labels["gpu_count"] != 8.0 {
		t.Fatalf("round trip: %v, %#v", err, back.Labels)
	}

	if _, err := Parse("bench.toml", []byte("[labels.sub]\nx = 1\n")); err == nil || !strings.Contains(err.Error(), "bench.toml:2: unknown key [labels.sub.x]") {
		t.Errorf("a table in [labels]: %v", err)
	}
	c, err = Parse("bench.toml", []byte("[labels]\nratio = 2.5\nok = 1\nfast = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{"bench.toml:2: [labels.ratio] must be a string or an integer, not a float (2.5)",
		"bench.toml:4: [labels.fast] must be a string or an integer, not a boolean (true)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "[labels.ok]") {
		t.Errorf("integer label rejected: %v", err)
	}
}
