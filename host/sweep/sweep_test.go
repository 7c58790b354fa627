package sweep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/results"
	"github.com/genload/genload/host/shard"
)

// testServe is the serve command of the test points: this test binary as the built-in
// engine (see main_test.go).
const testServe = serveEnv + "=1 {genload} --addr 127.0.0.1:{port} --time-scale 0.05 --profile {profile}"

func sweepFile(t *testing.T, dir, body string) *File {
	t.Helper()
	src := fmt.Sprintf(`name = "t"
out = %q
[server]
command = %q
ready_timeout = "20s"
stop_timeout = "5s"
[labels]
rig = "test"
[override]
max_tokens = 6
metrics = "off"
[override.matrix]
seq_lens = [300, 1000]
batch_sizes = [1, 2]
`, dir, testServe) + body
	f, err := Parse(filepath.Join(dir, "sweep.toml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func testOptions(t *testing.T) Options {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{Executable: exe}
}

func byName(s *Summary) map[string]PointResult {
	m := map[string]PointResult{}
	for _, p := range s.Points {
		m[p.Name] = p
	}
	return m
}

// alive reports whether the process whose pid is in path still exists.
func alive(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// A sweep whose second server fails at once, whose third names an unknown placeholder, whose
// fourth never gets ready (and ignores SIGTERM), whose fifth finds its port taken and whose
// sixth dies during the run records each with its reason and measures the others; --resume
// with the servers fixed measures the rest, continuing the run that had measured some
// cells, and leaves the points that were ok alone.
func TestSweepRecordsFailedPointsAndGoesOn(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	dir := t.TempDir()
	taken := httptest.NewServer(http.NotFoundHandler())
	defer taken.Close()
	tu, _ := url.Parse(taken.URL)
	points := fmt.Sprintf(`
[[point]]
name = "moe"
vars = { profile = "moe-30b-a3b" }
[[point]]
name = "exits"
vars = { profile = "dense-8b" }
server = { command = "echo no GPU here >&2; exit 3" }
[[point]]
name = "unknown"
vars = { profile = "dense-8b" }
server = { command = "serve --gpus {gpus}" }
[[point]]
name = "slow"
vars = { profile = "dense-8b" }
server = { command = "trap '' TERM; echo $$ > {out}/slow.pid; sleep 60", ready_timeout = "1s", stop_timeout = "300ms" }
[[point]]
name = "taken"
vars = { profile = "dense-8b" }
server = { target = "http://127.0.0.1:%s", command = "sleep 60" }
[[point]]
name = "dies"
vars = { profile = "dense-8b" }
server = { command = "%s --die-after 8" }
[[point]]
name = "dense"
vars = { profile = "dense-8b", tp = 2 }
labels = { gpus = 2 }
`, tu.Port(), testServe)
	f := sweepFile(t, dir, points)
	sum, err := Run(context.Background(), f, testOptions(t))
	if exitcode.Of(err) != exitcode.TargetFailed || !strings.Contains(err.Error(), "5 of 7 points not measured: exits (server), unknown (invalid), slow (server), taken (server), dies (server)") {
		t.Fatalf("err = %v", err)
	}
	got := byName(sum)
	for _, c := range []struct{ name, status, err string }{
		{"moe", StatusOK, ""},
		{"exits", StatusServer, "the serve command exited (exit status 3)"},
		{"unknown", StatusInvalid, "unknown placeholder {gpus} in [server] command \"serve --gpus {gpus}\" (known: genload, out, point, port, profile)"},
		{"slow", StatusServer, "readiness timeout: http://127.0.0.1:"},
		{"taken", StatusServer, "port in use: something answers at 127.0.0.1:" + tu.Port()},
		{"dies", StatusServer, "the server exited during the run (exit status 3)"},
		{"dense", StatusOK, ""},
	} {
		p := got[c.name]
		if p.Status != c.status || !strings.Contains(p.Error, c.err) {
			t.Errorf("%s: status %q error %q; want %q containing %q", c.name, p.Status, p.Error, c.status, c.err)
		}
	}
	if p := got["exits"]; !strings.Contains(p.Error, "no GPU here") {
		t.Errorf("exits: the error should quote the server's log: %q", p.Error)
	}
	// SIGTERM ignored: the group was killed, and the shell is gone.
	if p := got["slow"]; !strings.Contains(p.Stop, "killed (SIGKILL)") || alive(t, filepath.Join(dir, "slow.pid")) {
		t.Errorf("slow: stop %q; the process must be gone", p.Stop)
	}
	// 2 × 2 cells per point; the dying server let some be measured.
	for _, name := range []string{"moe", "dense"} {
		p := got[name]
		r, err := results.ReadFile(p.JSON)
		if err != nil || p.Measured != 4 || p.Cells != 4 || len(r.Cells) != 4 || p.PerForward == nil || p.PerForward.Min <= 0 {
			t.Fatalf("%s: %+v (%v)", name, p, err)
		}
	}
	if l := got["dense"].Labels; l["gpus"] != int64(2) || l["tp"] != int64(2) || l["rig"] != "test" || l["profile"] != "dense-8b" {
		t.Errorf("dense labels %v", l)
	}
	// The point's labels are its run's [labels], so its results header carries them.
	if r, err := results.ReadFile(got["dense"].JSON); err != nil || fmt.Sprint(r.Header.Labels["gpus"]) != "2" || r.Header.Labels["rig"] != "test" {
		t.Errorf("dense results header labels %v (%v)", r.Header.Labels, err)
	}
	dies := got["dies"]
	if dies.Measured < 1 || dies.Measured >= 4 || dies.Results == "" {
		t.Fatalf("dies: %d of %d cells measured (%s); want some, not all", dies.Measured, dies.Cells, dies.Results)
	}
	first, err := results.ReadFile(dies.Results)
	if err != nil {
		t.Fatal(err)
	}

	// Without --resume the summary is not overwritten.
	if _, err := Run(context.Background(), f, testOptions(t)); err == nil || !strings.Contains(err.Error(), "continue that sweep with --resume") {
		t.Fatalf("second run without --resume: %v", err)
	}

	// Fixed: every point gets the working serve command.
	fixed := strings.NewReplacer(`server = { command = "echo no GPU here >&2; exit 3" }`, "",
		`server = { command = "serve --gpus {gpus}" }`, "",
		fmt.Sprintf(`server = { command = "%s --die-after 8" }`, testServe), "").Replace(points)
	fixed = fixed[:strings.Index(fixed, "[[point]]\nname = \"slow\"")] + fixed[strings.Index(fixed, "[[point]]\nname = \"dies\""):]
	f2 := sweepFile(t, dir, fixed)
	opt := testOptions(t)
	opt.Resume = true
	sum2, err := Run(context.Background(), f2, opt)
	// slow and taken are no longer in the file: they stay recorded as they were.
	if exitcode.Of(err) != exitcode.TargetFailed || !strings.Contains(err.Error(), "2 of 7 points not measured: slow (server), taken (server)") {
		t.Fatalf("resume: err = %v", err)
	}
	got2 := byName(sum2)
	for _, name := range []string{"moe", "exits", "unknown", "dies", "dense"} {
		if p := got2[name]; p.Status != StatusOK || p.Measured != 4 {
			t.Errorf("resume: %s %s %d/%d %s", name, p.Status, p.Measured, p.Cells, p.Error)
		}
	}
	if got2["moe"].Started != got["moe"].Started {
		t.Error("resume ran moe again; it was ok")
	}
	// The dying point's run was continued in its file: the cells measured before are the
	// same records (their start times unchanged).
	if got2["dies"].Results != dies.Results {
		t.Fatalf("dies: resumed into %s, want %s", got2["dies"].Results, dies.Results)
	}
	after, err := results.ReadFile(dies.Results)
	if err != nil {
		t.Fatal(err)
	}
	measured := 0
	for _, c := range after.Cells {
		if results.Measured(c.Status) {
			measured++
		}
	}
	for _, c := range first.Cells {
		if results.Measured(c.Status) && !after.Cells[c.Cell.Index].Started.Equal(c.Started) {
			t.Errorf("dies: cell %s measured again on resume", c.Cell.Key())
		}
	}
	if measured != 4 {
		t.Errorf("dies after resume: %d of 4 cells measured", measured)
	}
}

// Shard 1/2 of six points runs points 1, 3 and 5 only; the summary is the shard's own.
func TestSweepShardRunsItsPoints(t *testing.T) {
	dir := t.TempDir()
	f := sweepFile(t, dir, `
[grid]
profile = ["a", "b", "c", "d", "e"]
[[point]]
name = "never"
vars = { profile = "x" }
server = { command = "{nope}" }
`)
	opt := testOptions(t)
	opt.Shard = shard.Spec{Index: 1, Count: 2}
	specs, err := f.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range opt.Shard.Items(len(specs)) {
		names = append(names, specs[i].Name)
	}
	if strings.Join(names, " ") != "01_profile=b 03_profile=d never" {
		t.Fatalf("points %v", names)
	}
	// A typo in the shared template makes every point of the shard invalid: refused before
	// any server starts (exit 3), not recorded once per point.
	f.Server.Command = "{missing}"
	sum, err := Run(context.Background(), f, opt)
	if err == nil || sum != nil || exitcode.Of(err) != exitcode.InvalidConfig || !strings.Contains(err.Error(), "unknown placeholder {missing}") ||
		!strings.Contains(err.Error(), "in every point: nothing was started") {
		t.Fatalf("err = %v (code %v), summary %v", err, exitcode.Of(err), sum)
	}
	if _, err := os.Stat(filepath.Join(dir, "sweep-shard-1-of-2.json")); !os.IsNotExist(err) {
		t.Errorf("a summary was written for a sweep that started nothing: %v", err)
	}
}

// A point whose server died after some cells, resumed once with a server that does not
// start, then again when its earlier port is taken by something else: its server starts on
// a free port and its run continues in the earlier results file — the cells measured before are the same records (their start times
// unchanged), the others measured — instead of a new run measuring every cell again.
func TestSweepResumeWithTheEarlierPortTakenKeepsMeasuredCells(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	dir := t.TempDir()
	dies := fmt.Sprintf(`
[[point]]
name = "dies"
vars = { profile = "dense-8b" }
server = { command = "%s --die-after 8" }
`, testServe)
	sum, err := Run(context.Background(), sweepFile(t, dir, dies), testOptions(t))
	if exitcode.Of(err) != exitcode.TargetFailed {
		t.Fatalf("err = %v", err)
	}
	before := byName(sum)["dies"]
	if before.Measured < 1 || before.Measured >= 4 || before.Results == "" || before.Port == 0 {
		t.Fatalf("dies: %d of %d cells measured (%s, port %d); want some, not all", before.Measured, before.Cells, before.Results, before.Port)
	}
	first, err := results.ReadFile(before.Results)
	if err != nil {
		t.Fatal(err)
	}
	// A resume whose server does not start keeps the earlier attempt's results as the point's.
	opt := testOptions(t)
	opt.Resume = true
	sum, err = Run(context.Background(), sweepFile(t, dir, strings.Replace(dies, "--die-after 8", "--no-such-flag", 1)), opt)
	if p := byName(sum)["dies"]; exitcode.Of(err) != exitcode.TargetFailed || p.Status != StatusServer || p.Results != before.Results || p.Measured != before.Measured {
		t.Fatalf("resume with a server that does not start: %v; dies %s, results %q with %d cells, want %q with %d", err, p.Status, p.Results, p.Measured, before.Results, before.Measured)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(before.Port)) // the earlier port, taken
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sum2, err := Run(context.Background(), sweepFile(t, dir, strings.Replace(dies, fmt.Sprintf(`server = { command = "%s --die-after 8" }`, testServe), "", 1)), opt)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	after := byName(sum2)["dies"]
	if after.Status != StatusOK || after.Results != before.Results || after.Port == before.Port || after.Measured != 4 {
		t.Fatalf("resume: %s in %s on port %d, %d of %d cells; want ok in %s on a port other than %d, 4 cells",
			after.Status, after.Results, after.Port, after.Measured, after.Cells, before.Results, before.Port)
	}
	r, err := results.ReadFile(after.Results)
	if err != nil {
		t.Fatal(err)
	}
	again := 0
	for _, c := range first.Cells {
		if results.Measured(c.Status) && !r.Cells[c.Cell.Index].Started.Equal(c.Started) {
			again++
		}
	}
	if again > 0 {
		t.Errorf("%d of the %d cells measured before were measured again", again, before.Measured)
	}
}

// A point's labels (the sweep's [labels], its variables, its own labels) become its run's
// [labels] over bench.toml's and the [override]'s; each one that replaces another value is
// named with both values and where the replaced one was set, and an equal value is not.
func TestPointLabelsOverBenchLabelsAreSaid(t *testing.T) {
	dir := t.TempDir()
	bench := filepath.Join(dir, "bench.toml")
	if err := os.WriteFile(bench, []byte("max_tokens = 6\n[labels]\ngpu_count = 8\nhardware = \"h100\"\nrig = \"test\"\nkeep = \"me\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := sweepFile(t, dir, `
[override.labels]
tp = 1
[[point]]
name = "p"
vars = { profile = "dense-8b", tp = 2 }
labels = { gpu_count = 2, hardware = "h100" }
`)
	f.Bench = bench
	specs, err := f.Expand()
	if err != nil {
		t.Fatal(err)
	}
	cfg, relabelled, err := pointConfig(f, specs[0], "http://127.0.0.1:1", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	// gpu_count: bench.toml line 3 says 8, the point 2; tp: the override 1, the variable 2;
	// rig = "test" is the sweep file's [labels] and bench.toml's alike; hardware is equal.
	want := []string{
		"label [labels.gpu_count] = 2 (the point's) overrides 8 (" + bench + ":3)",
		"label [labels.tp] = 2 (the point's) overrides 1 (the sweep's [override])",
	}
	if !slices.Equal(relabelled, want) {
		t.Errorf("relabelled:\n  %s\nwant:\n  %s", strings.Join(relabelled, "\n  "), strings.Join(want, "\n  "))
	}
	for k, v := range map[string]string{"gpu_count": "2", "tp": "2", "hardware": "h100", "rig": "test", "keep": "me", "profile": "dense-8b"} {
		if got := fmt.Sprint(cfg.Labels[k]); got != v {
			t.Errorf("[labels.%s] = %s, want %s", k, got, v)
		}
	}
}
