package measure

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/genload/genload/host/recording"
)

// roundTrip writes res as JSON (as a recording kept on disk would be) and reads it back.
func roundTrip(t *testing.T, res *recording.Result) *recording.Result {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back recording.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal the recording: %v\n%s", err, b)
	}
	return &back
}

// A recording replayed from its JSON gives the figures of the recording itself: measure reads
// nothing but the recorded values (offsets, counts, sources, usage, headers).
func TestReplayedRecordingGivesTheSameFigures(t *testing.T) {
	synth := stream{B: 8, MaxTokens: 64, Step: 5 * time.Millisecond, Jitter: time.Millisecond, Seed: 3,
		Usage: "continuous", Coalesce: 0.2, Early: 1, EarlyAt: 10, Zero: 1, Starts: []int{0, 0, 1, 1, 2, 2, 3, 3}}.result()
	synth.Requests[0].Headers = map[string]string{"generation-duration": "0.4", "speculation-acceptance": "0.5"}
	piped := replay(t, 1, 2, []float64{5, 214, 234, 236}, ev("", "", 0), ev("a", "", 0), ev("b", "length", 2), "data: [DONE]\n\n")
	o := Options{GenerationDurationHeader: "generation-duration", SpeculationAcceptanceHeader: "speculation-acceptance", DraftTokens: 2}
	for name, res := range map[string]*recording.Result{"synthetic": synth, "through sse": piped} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(Compute(res, o))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(Compute(roundTrip(t, res), o))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("figures of the replayed recording differ:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// Request.Err is not marshalled: a replayed failed request keeps its text in Request.Error,
// and a test that replays one sets Err again for measure to count it as failed.
func TestReplayedRecordingKeepsTheErrorText(t *testing.T) {
	re := &recording.RequestError{Kind: recording.KindHTTP, URL: "http://x/v1/completions", Status: 503, Message: "busy"}
	res := &recording.Result{Requests: []recording.Request{{Err: re, Error: re.Error()}}}
	back := roundTrip(t, res)
	if r := back.Requests[0]; r.Err != nil || r.Error != "POST http://x/v1/completions: status 503: busy" {
		t.Fatalf("replayed request Err %v, Error %q", r.Err, r.Error)
	}
}
