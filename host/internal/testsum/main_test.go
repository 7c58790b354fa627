package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A go test -json stream of one package with a passing, a skipped and a failed test, and one
// package that does not build (the events as go 1.26 writes them).
const sample = `{"Action":"start","Package":"x/a"}
{"Action":"run","Package":"x/a","Test":"TestPass"}
{"Action":"output","Package":"x/a","Test":"TestPass","Output":"=== RUN   TestPass\n"}
{"Action":"output","Package":"x/a","Test":"TestPass","Output":"--- PASS: TestPass (0.00s)\n"}
{"Action":"pass","Package":"x/a","Test":"TestPass","Elapsed":1.25}
{"Action":"run","Package":"x/a","Test":"TestSkip"}
{"Action":"output","Package":"x/a","Test":"TestSkip","Output":"=== RUN   TestSkip\n"}
{"Action":"output","Package":"x/a","Test":"TestSkip","Output":"    a_test.go:12: chromium is not installed\n"}
{"Action":"output","Package":"x/a","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Action":"skip","Package":"x/a","Test":"TestSkip","Elapsed":0}
{"Action":"run","Package":"x/a","Test":"TestSkip2"}
{"Action":"output","Package":"x/a","Test":"TestSkip2","Output":"    b_test.go:40: chromium is not installed\n"}
{"Action":"skip","Package":"x/a","Test":"TestSkip2","Elapsed":0}
{"Action":"run","Package":"x/a","Test":"TestFail"}
{"Action":"output","Package":"x/a","Test":"TestFail","Output":"=== RUN   TestFail\n"}
{"Action":"output","Package":"x/a","Test":"TestFail","Output":"    a_test.go:20: got 1, want 2\n"}
{"Action":"output","Package":"x/a","Test":"TestFail","Output":"--- FAIL: TestFail (0.00s)\n"}
{"Action":"fail","Package":"x/a","Test":"TestFail","Elapsed":0}
{"Action":"output","Package":"x/a","Output":"FAIL\n"}
{"Action":"output","Package":"x/a","Output":"FAIL\tx/a\t0.01s\n"}
{"Action":"fail","Package":"x/a","Elapsed":0.01}
{"ImportPath":"x/b","Action":"build-output","Output":"b/b.go:3:1: syntax error\n"}
{"ImportPath":"x/b","Action":"build-fail"}
{"Action":"output","Package":"x/b","Output":"FAIL\tx/b [build failed]\n"}
{"Action":"fail","Package":"x/b","Elapsed":0}
`

func TestStreamAndSummary(t *testing.T) {
	var out, rec bytes.Buffer
	failed, err := stream(strings.NewReader(sample), &out, &rec)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	// The failed test's whole output, the build error and the package lines; nothing of the
	// passing or the skipped tests.
	want := "=== RUN   TestFail\n    a_test.go:20: got 1, want 2\n--- FAIL: TestFail (0.00s)\nFAIL\tx/a\t0.01s\nb/b.go:3:1: syntax error\nFAIL\tx/b [build failed]\n"
	if got := out.String(); got != want {
		t.Errorf("stream printed\n%s\nwant\n%s", got, want)
	}
	// A record per test, with its run time.
	if first, _, _ := strings.Cut(rec.String(), "\n"); first != `{"package":"x/a","test":"TestPass","action":"pass","elapsed":1.25}` {
		t.Errorf("first record %s", first)
	}
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	if err := os.WriteFile(path, rec.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var sum bytes.Buffer
	if code := printSummary(&sum, path); code != 1 {
		t.Errorf("summary exit %d, want 1 (a test failed)", code)
	}
	wantSum := "skipped tests, by reason:\n    2 × chromium is not installed\n        x/a TestSkip, x/a TestSkip2\ntests: 1 passed, 1 failed, 2 skipped\n"
	if sum.String() != wantSum {
		t.Errorf("summary\n%s\nwant\n%s", sum.String(), wantSum)
	}
}

// Input with no package result (go test failed before running anything) is a failure.
func TestNoResultIsAFailure(t *testing.T) {
	var out bytes.Buffer
	failed, _ := stream(strings.NewReader("go: unknown flag -x\n"), &out, &bytes.Buffer{})
	if !failed || !strings.Contains(out.String(), "go: unknown flag -x") {
		t.Errorf("failed %v, output %q", failed, out.String())
	}
}
