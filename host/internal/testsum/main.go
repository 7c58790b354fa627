// Command testsum reads `go test -json` on stdin and prints what plain `go test` prints — a
// line per package (ok, FAIL, no test files) and the whole output of every failed test or
// build — and records every test's outcome in a file. With -summary it prints, from that
// file, the skipped tests grouped by their reason and then one closing line:
//
//	tests: 1234 passed, 0 failed, 32 skipped
//
// `make test` pipes each of its go test runs through it and ends with the summary, so that
// skipped tests are said, with why, instead of passing unseen.
//
// Usage:
//
//	go test -json ./... | testsum -record build/test-outcomes.jsonl
//	testsum -summary build/test-outcomes.jsonl
//
// The exit status is 1 when a test, a package or a build failed (also when the input holds
// no package result at all), 0 otherwise.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json); build events (Go ≥ 1.24) carry
// ImportPath instead of Package.
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
	Elapsed    float64
}

// outcome is one test's result, one JSON line in the record file.
type outcome struct {
	Package string `json:"package"`
	Test    string `json:"test"`
	Action  string `json:"action"` // pass, fail, skip
	Reason  string `json:"reason,omitempty"`
	// Elapsed is the test's run time in seconds, as go test reports it (a parallel test's
	// includes the time it waited to run): where the time of make test goes.
	Elapsed float64 `json:"elapsed"`
}

func main() {
	record := flag.String("record", "", "append each test's outcome to this file (JSON lines)")
	summary := flag.String("summary", "", "print the skipped tests and the closing counts from this record file, then exit")
	flag.Parse()
	if *summary != "" {
		os.Exit(printSummary(os.Stdout, *summary))
	}
	var rec io.Writer = io.Discard
	if *record != "" {
		f, err := os.OpenFile(*record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			os.Exit(1)
		}
		defer f.Close()
		rec = f
	}
	failed, err := stream(os.Stdin, os.Stdout, rec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

// location is the "file_test.go:12: " that t.Skip puts before its message.
var location = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// stream copies go test -json from r to w as plain go test output and writes outcomes to rec.
// It reports whether anything failed.
func stream(r io.Reader, w, rec io.Writer) (bool, error) {
	out := map[string][]string{} // package + test → output lines
	failed, results := false, 0
	enc := json.NewEncoder(rec)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, string(line)) // not JSON: go test's own messages
			continue
		}
		pkg := e.Package
		if pkg == "" {
			pkg = e.ImportPath
		}
		key := pkg + "\x00" + e.Test
		switch e.Action {
		case "output", "build-output":
			if e.Test == "" {
				// Package-level lines: "ok …", "FAIL …", build errors; not the PASS/FAIL
				// verdict lines -v adds, nor the test framing.
				t := strings.TrimRight(e.Output, "\n")
				if t != "PASS" && t != "FAIL" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ") {
					fmt.Fprint(w, e.Output)
				}
				continue
			}
			out[key] = append(out[key], e.Output)
		case "build-fail":
			failed = true
		case "pass", "fail", "skip":
			if e.Test == "" {
				results++
				if e.Action == "fail" {
					failed = true
				}
				continue
			}
			o := outcome{Package: pkg, Test: e.Test, Action: e.Action, Elapsed: e.Elapsed}
			switch e.Action {
			case "fail":
				failed = true
				fmt.Fprint(w, strings.Join(out[key], ""))
			case "skip":
				o.Reason = skipReason(out[key])
			}
			delete(out, key)
			if err := enc.Encode(o); err != nil {
				return failed, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	if results == 0 {
		fmt.Fprintln(w, "testsum: no package result in the input (go test did not run)")
		return true, nil
	}
	return failed, nil
}

// skipReason is the message of a skipped test's output: its lines without the framing and
// the file:line prefix, joined.
func skipReason(lines []string) string {
	var msg []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		msg = append(msg, strings.TrimSpace(location.ReplaceAllString(l, "")))
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	return strings.Join(msg, " ")
}

// printSummary prints the record's skipped tests grouped by reason, then the closing line;
// it returns the exit status (1 when a test failed or the record cannot be read).
func printSummary(w io.Writer, path string) int {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(w, "tests: no record at", path)
		return 1
	}
	if err != nil {
		fmt.Fprintln(w, "testsum:", err)
		return 1
	}
	defer f.Close()
	var pass, fail, skip int
	byReason := map[string][]string{}
	dec := json.NewDecoder(f)
	for {
		var o outcome
		if err := dec.Decode(&o); err == io.EOF {
			break
		} else if err != nil {
			fmt.Fprintf(w, "testsum: %s: %v\n", path, err)
			return 1
		}
		switch o.Action {
		case "pass":
			pass++
		case "fail":
			fail++
		case "skip":
			skip++
			name := strings.TrimPrefix(o.Package, "github.com/genload/genload/") + " " + o.Test
			byReason[o.Reason] = append(byReason[o.Reason], name)
		}
	}
	if skip > 0 {
		reasons := make([]string, 0, len(byReason))
		for r := range byReason {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if len(byReason[reasons[i]]) != len(byReason[reasons[j]]) {
				return len(byReason[reasons[i]]) > len(byReason[reasons[j]])
			}
			return reasons[i] < reasons[j]
		})
		fmt.Fprintf(w, "skipped tests, by reason:\n")
		for _, r := range reasons {
			names := slices.Compact(slices.Sorted(slices.Values(byReason[r]))) // a test skipped in the race run too is named once
			shown := names
			more := ""
			if len(shown) > 3 {
				shown, more = shown[:3], fmt.Sprintf(" and %d more", len(names)-3)
			}
			fmt.Fprintf(w, "  %3d × %s\n        %s%s\n", len(byReason[r]), r, strings.Join(shown, ", "), more)
		}
	}
	fmt.Fprintf(w, "tests: %d passed, %d failed, %d skipped\n", pass, fail, skip)
	if fail > 0 {
		return 1
	}
	return 0
}
