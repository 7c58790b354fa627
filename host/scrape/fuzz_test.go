package scrape

import (
	"strings"
	"testing"
)

// FuzzParse: any metrics text parses or fails with an error; Detect, Value, Hist and
// Delta never panic on what parsed.
func FuzzParse(f *testing.F) {
	f.Add(vllmText(3, 2, 0.1, 0.05))
	f.Add("# TYPE tgi_batch_decode_duration histogram\ntgi_batch_decode_duration_bucket{method=\"decode\",le=\"+Inf\"} 1\ntgi_batch_decode_duration_sum{method=\"decode\"} 1\ntgi_batch_decode_duration_count{method=\"decode\"} 1\ntgi_batch_current_size 2\n")
	f.Add("llamacpp:requests_processing 2\nllamacpp:n_decode_total NaN\nllamacpp:tokens_predicted_seconds_total +Inf\n")
	f.Add("x{a=\"1\" 2\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		fams, err := Parse(strings.NewReader(text))
		if err != nil {
			return
		}
		s := Snapshot{Families: fams}
		n, _ := Detect(fams)
		for _, names := range []Names{VLLM, SGLang, LlamaCpp, TGI, n} {
			_ = Delta(names, s, s, 1)
			s.Value(names.Running)
			s.Hist(names.ITL, "method=decode")
		}
	})
}
