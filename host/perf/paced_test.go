package perf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// stepEvents posts body to the step server at addr and returns the data of every event.
func stepEvents(t *testing.T, addr string, body []byte) []string {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || len(resp.TransferEncoding) == 0 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("status %d, transfer encoding %v: want 200, chunked", resp.StatusCode, resp.TransferEncoding)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type stepChunk struct {
	Choices []struct {
		Index        int     `json:"index"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
	} `json:"usage"`
}

// A routed request gets one stamped chunk per step with vLLM's per-chunk usage, its last
// chunk finished, then a usage chunk and [DONE]; chunks are a step apart, the stamps are the
// send times, and the server's record counts the steps.
func TestStepServerRouted(t *testing.T) {
	step := 5 * time.Millisecond
	s, err := NewStepServer("127.0.0.1:0", step)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 2 { // twice on one keep-alive connection
		t0 := time.Now()
		ev := stepEvents(t, s.Addr(), PacedBody(3, 1, 7, 4, false))
		if len(ev) != 6 || ev[5] != "[DONE]" {
			t.Fatalf("events %q: want 4 chunks, usage, [DONE]", ev)
		}
		var prev time.Duration
		for k, d := range ev[:4] {
			var c stepChunk
			if err := json.Unmarshal([]byte(d), &c); err != nil {
				t.Fatal(err)
			}
			ts := ParseStamp([]byte(c.Choices[0].Text))
			if len(c.Choices[0].Text) != StampWidth || ts < time.Duration(t0.UnixNano()) {
				t.Fatalf("chunk %d text %q is not a send stamp after the request", k, c.Choices[0].Text)
			}
			if k > 0 && ts-prev < step/2 {
				t.Errorf("chunk %d sent %v after chunk %d, want about a step (%v)", k, ts-prev, k-1, step)
			}
			prev = ts
			if c.Usage == nil || c.Usage.Prompt != 7 || c.Usage.Completion != k+1 {
				t.Errorf("chunk %d usage %+v, want prompt 7, completion %d", k, c.Usage, k+1)
			}
			if fin := c.Choices[0].FinishReason; (k == 3) != (fin != nil && *fin == "length") {
				t.Errorf("chunk %d finish_reason %v", k, fin)
			}
		}
		var u stepChunk
		if err := json.Unmarshal([]byte(ev[4]), &u); err != nil || len(u.Choices) != 0 || u.Usage.Completion != 4 {
			t.Fatalf("usage chunk %q", ev[4])
		}
	}
	st := s.Stats()
	if st.Steps != 8 || st.Chunks != 8 || st.StepUS != 5000 {
		t.Fatalf("stats %+v: want 8 steps, 8 chunks, step 5000 µs", st)
	}
	if again := s.Stats(); again.Steps != 0 {
		t.Fatalf("stats after a read: %+v, want a fresh record", again)
	}
}

// An array request of 3 prompts gets, each step, one chunk per choice index; usage totals.
func TestStepServerArray(t *testing.T) {
	s, err := NewStepServer("127.0.0.1:0", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := stepEvents(t, s.Addr(), PacedBody(0, 3, 5, 2, true))
	if len(ev) != 3*2+2 {
		t.Fatalf("%d events, want 8", len(ev))
	}
	seen := map[int]int{}
	for _, d := range ev[:6] {
		var c stepChunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatal(err)
		}
		seen[c.Choices[0].Index]++
	}
	if seen[0] != 2 || seen[1] != 2 || seen[2] != 2 {
		t.Fatalf("chunks per index %v, want 2 each", seen)
	}
	var u stepChunk
	if err := json.Unmarshal([]byte(ev[6]), &u); err != nil || u.Usage.Prompt != 15 || u.Usage.Completion != 6 {
		t.Fatalf("usage chunk %q: want prompt 15, completion 6", ev[6])
	}
	resp, err := http.Get("http://" + s.Addr() + "/v1/models")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/v1/models: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get("http://" + s.Addr() + "/nope")
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("/nope: %v %v, want 404", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Post("http://"+s.Addr()+"/v1/completions", "application/json", strings.NewReader(`{"max_tokens":3}`))
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("no prompt: %v %v, want 400", resp, err)
	}
	resp.Body.Close()
}

// The table compares per round, counts the goals on medians and marks clients that fell
// behind.
func TestWritePacedTable(t *testing.T) {
	c := PacedCell{"routed", 2 * time.Millisecond, PacedRSSN}
	s := NewSamples(3)
	for r, v := range [][3]float64{{10, 8, 50}, {12, 8, 40}, {11, 10, 60}} {
		for i, cl := range []string{"genload", "raw", "asyncio"} {
			s.Add(PacedKey(c, cl, "cpu-ns/token"), r, v[i]*1e3)
			s.Add(PacedKey(c, cl, "kept-up"), r, b2f(cl != "asyncio" || r == 0))
			s.Add(PacedKey(c, cl, "maxrss-MB"), r, map[string]float64{"genload": 40, "raw": 10, "asyncio": 30}[cl])
			s.Add(PacedKey(c, cl, "err-p50-µs"), r, 100)
		}
		s.Add(PacedKey(c, "genload", "server-kept-pace"), r, 1)
	}
	var b strings.Builder
	sum := WritePacedTable(&b, s, []PacedCell{c}, []string{"genload", "raw", "asyncio"})
	out := b.String()
	// ratios per round: 1.25, 1.5, 1.1 → median 1.25; vs asyncio 0.2, 0.3, 0.183 → 0.2
	for _, want := range []string{"| routed | 2 ms | 1024 | 11.00 · 8.00 · 50.00 |", "1.25 [1.10–1.50]× pass", "0.20 [0.18–0.30]× pass", "yes · yes · 1/3", "| yes |", "40.0 · 10.0 · 30.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if sum != (PacedSummary{Cells: 1, RawMet: 1, AsyncioMet: 1, AsyncioCells: 1, RSSMet: 1, RSSCells: 1, ErrP50NoWorse: 1, ErrBoth: 1}) {
		t.Errorf("summary %+v", sum)
	}
}

// A miss against the asyncio client is told apart: that client fell behind (cannot tell), or
// the raw-socket client is above the goal itself (the floor is named), or a plain miss.
func TestPacedAsyncioVerdicts(t *testing.T) {
	cells := []PacedCell{{"routed", time.Millisecond, 64}, {"routed", 2 * time.Millisecond, 64}, {"routed", 10 * time.Millisecond, 64}, {"array", time.Millisecond, 64}}
	// CPU per token (µs) of genload, raw, asyncio, and whether asyncio kept up, per cell.
	figs := []struct {
		cpu  [3]float64
		kept [3]bool
	}{
		{[3]float64{8, 8, 20}, [3]bool{false, false, true}},  // 0.4×, asyncio behind in 2 of 3
		{[3]float64{8, 8, 20}, [3]bool{true, true, false}},   // 0.4×, asyncio kept up in 2 of 3; raw 0.4× too
		{[3]float64{8, 4, 20}, [3]bool{true, true, true}},    // 0.4×, raw 0.2×: genload's own miss
		{[3]float64{2, 2, 10}, [3]bool{false, false, false}}, // 0.2×: a pass stands, behind or not
	}
	s := NewSamples(3)
	for i, c := range cells {
		for r := range 3 {
			for j, cl := range []string{"genload", "raw", "asyncio"} {
				s.Add(PacedKey(c, cl, "cpu-ns/token"), r, figs[i].cpu[j]*1e3)
			}
			s.Add(PacedKey(c, "asyncio", "kept-up"), r, b2f(figs[i].kept[r]))
		}
	}
	var b strings.Builder
	sum := WritePacedTable(&b, s, cells, []string{"genload", "raw", "asyncio"})
	lines := strings.Split(b.String(), "\n")[2:]
	for i, want := range []string{
		"0.40× cannot tell (asyncio fell behind)",
		"0.40× miss (raw itself 0.40×)",
		"0.40× miss |",
		"0.20× pass",
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("cell %d: %q lacks %q", i, lines[i], want)
		}
	}
	if sum.AsyncioCells != 4 || sum.AsyncioMet != 1 || sum.AsyncioBehind != 1 || sum.AsyncioFloor != 1 {
		t.Errorf("summary %+v: want 4 cells, 1 met, 1 behind, 1 at the floor", sum)
	}
}

// The body is read in place: prompt counts and lengths of each shape, n, max_tokens.
func TestParseCompletion(t *testing.T) {
	cases := []struct {
		body   string
		tokens int
		prompt []int
	}{
		{`{"prompt":[1,2,3],"max_tokens":5}`, 5, []int{3}},
		{`{"model":"m","prompt":[[1,2],[3, 4 ,5],[6]],"max_tokens":2,"stream":true}`, 2, []int{2, 3, 1}},
		{`{"prompt":"abcdefgh","n":2}`, 16, []int{2, 2}},
		{`{"prompt":["abcd","abcdefghijkl"],"max_tokens":1,"stream_options":{"include_usage":true}}`, 1, []int{1, 3}},
		{` { "prompt" : [ [ 10 , 20 ] ] , "max_tokens" : 3 } `, 3, []int{2}},
	}
	for _, tc := range cases {
		st, err := parseCompletion([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if st.tokens != tc.tokens || !slices.Equal(st.prompt, tc.prompt) || st.choices != len(tc.prompt) {
			t.Errorf("%s: tokens %d prompts %v, want %d %v", tc.body, st.tokens, st.prompt, tc.tokens, tc.prompt)
		}
	}
	for _, bad := range []string{`{"max_tokens":3}`, `{"prompt":[1,"a"]}`, `{"prompt":[1,2`, `[1]`, `{"prompt":[1],"max_tokens":-1}`, `{"prompt":[1],"max_tokens":0}`} {
		if _, err := parseCompletion([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
