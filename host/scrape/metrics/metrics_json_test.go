package metrics

import (
	"encoding/json"
	"testing"
	"time"
)

func TestStepsRoundTripThroughJSON(t *testing.T) {
	in := Steps{Dialect: "vllm", StepTime: 1234567 * time.Nanosecond, HasStepTime: true, TokensPerStep: 64,
		HasTokensPerStep: true, Steps: 99, TruthStepTime: 1250 * time.Microsecond, TruthSteps: 100, HasTruth: true}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Steps
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	// ms() keeps full float precision, so the nanoseconds survive the trip.
	if out != in {
		t.Errorf("round trip:\n got %+v\nwant %+v\njson %s", out, in, b)
	}
}
