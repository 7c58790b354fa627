package warning

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/genload/genload/host/internal/textcheck"
)

// One text of every kind as genload writes it (most of them taken from runs against the
// built-in engine), and the texts of results written before names existed.
var samples = map[Name][]string{
	RequestFailed: {"1 request errors: POST http://127.0.0.1:8000/v1/completions: status 503: busy",
		"1 of 4 requests failed (their sequences are left out, the others kept): POST http://127.0.0.1:8000/v1/completions: status 503"},
	ResentAfterBatch: {"resent after the batch: request 3 (worker w1) was sent again 1.2 s after the first, when 7 of the other 7 sequences had finished"},
	RequestsResent:   {"requests resent: 0 warmup, 2 measured (status 500: Internal Server Error ×2): the figures are the last attempt's"},
	PromptsTruncated: {"prompts truncated by the server: 1 of 1 requests counted fewer prompt tokens than sent (worst: request 0, the server counted 4,096 of the 6,000 prompt tokens sent); its context is smaller than genload's — set context to the server's"},
	PromptTokens:     {"prompt tokens deviate on 8 of 8 requests (max |deviation| 1, sum +8; worst: request 0, the server counted 201 of 200 sent): token-id prompts: the server adds tokens of its own (a BOS, or a template)"},
	PromptsCached:    {"prompts already cached: its warmup found 97.8 % of the prompt tokens (1,612 of 1,648) in the server's prefix cache before the cell had sent them"},
	LengthsOffTarget: {"realised mean length 206 is +3.2 % off L = 200: 2 of 8 lengths clamped to [50, 131024]"},
	ChunksTogether: {"over half of the chunk intervals are 0: chunks arrived together in one read (the client fell behind, or the server or network coalesced them); per-forward figures are unreliable",
		"over half of the chunk intervals are under a tenth of their mean (ITL p50 0.041 ms, mean 20.208 ms): chunks arrived together"},
	FwdAbsent: {"no per-forward figure: no sequence ran its max_tokens; left out: 2 of 2 sequences finished with no token"},
	FwdSubset: {"fwd over 6 of 10 sequences: left out: 4 of 10 sequences finished with no token"},
	SlowForwards: {
		"fwd 22.020 ms includes long chunk intervals that shifted every chunk after them: up to 1 interval in 4 of 4 sequences (the longest 220.0 ms, 11× the typical forward pass 20.000 ms) carry 9.2 % of the decode time (said above 2 %); without them fwd would read 20.000 ms",
		"fwd 15.263 ms is 3.1× the median chunk interval 5.000 ms, and ITL p99 is 200.0 ms: a few very slow forward passes weigh on the mean",
	},
	TokensUnverified: {"3 of 8 sequences' token counts are unverified (counted from chunks: the server sent no usable usage); the table shows them as a lower bound"},
	TokensPerChunk:   {"chunks carry 2.00 tokens on average: fwd counts one forward pass per token"},
	TokenCountSource: {"token counts of 8 of 8 sequences: all-zero usage on every chunk: counted from logprobs"},
	LateFirstChunks:  {"the first chunks of 16 of 16 sequences arrived late, bunched with the chunks behind them (held back: Nagle's algorithm): fwd starts at their first on-time chunk"},
	EarlyFirstChunks: {"the first chunks of 4 of 4 sequences arrived early: their first chunk 90.0 ms (median) earlier than the chunks after it imply, beyond the cell's jitter (tolerance 1.00 ms, median; robust deviation 0.115 ms) — a slow first decode step (a prefill sharing it), or a lag that began after the first chunk: fwd includes the long first interval; on the line of the chunks after it fwd would read -4.3 %"},
	LateLastChunks:   {"the last chunks of 16 of 16 sequences arrived late: later than the chunks before them imply, beyond the cell's jitter (read late by the client, or a delayed final flush; or a slower last step, which the client cannot tell apart): fwd ends at each one's last consistent chunk, 1 forward pass(es) before its last token (median)"},
	MetricConstant:   {"server metric does not vary with load: metrics fwd (/metrics) reads 10.000 ms in 3 cells whose client fwd spans 7.2–14.1 ms"},
	FwdVsFit: {
		"per-forward estimators disagree: fwd (the mean forward pass) 1.045 ms is +16.6 % of the robust fit 0.896 ms (the typical one)",
		"full-batch estimators disagree: full-batch fwd (the mean forward pass) 8.1 ms is +6.0 % of the pooled robust fit 7.6 ms",
	},
	SourcesDisagree: {
		"per-forward sources disagree: client fwd 2.483 ms is +11 % of the engine's own decode step time 2.230 ms (a late first token or a stall shortens or lengthens the client's decode window)",
		"per-forward estimates disagree: metrics fwd (/metrics) 10.000 ms is +39 % of the client's fwd 7.190 ms (a late first token or a stall)",
	},
	HeaderFwdAbsent:  {"hdr fwd absent: no generation-duration header"},
	MetricsFwdAbsent: {"metrics fwd absent: x is not exposed", "server http://a/metrics: metrics fwd absent: y had no observation during the cell"},
	MetricsFailed:    {"metrics: scrape: GET http://a/metrics: status 500", "server http://a/metrics: scrape: GET http://a/metrics: status 500"},
	OtherLoad: {
		"the server ran up to 12 requests at once, more than B = 8: other load shares it",
		"server http://a/metrics ran up to 3 requests at once, more than the 2 routed to it: other load shares it",
	},
	CapacityShort: {"server capacity too small: the 256 prompts need 33,570,816 tokens of KV cache at once, the server holds 8,388,608",
		"server http://a capacity too small: the 4 prompts routed to it need 8,448 tokens of KV cache at once",
		"server capacity too small: it runs at most 256 sequences at once (the built-in engine's max_num_seqs), fewer than the 300 of the batch",
		"server http://a capacity too small: its KV cache is the limit: the 4 routed to it need 8,448 tokens of KV cache at once"},
	BatchNotReached: {
		"batch not reached: the server ran at most 8 sequences at once, not B = 16 (gauge: median 8, mean 8.0, p10–p90 8–8, max 8 over 23 samples, 0 % at 16)",
		"batch attainment: the server mostly ran 8 sequences at once, not B = 16 (0 % of samples at B)",
		"batch attainment: server a mostly ran 2 sequences at once, not the 4 routed to it (20 % of samples at 4)",
		"batch probably not reached (no running-requests gauge from /metrics; the client's marks): only 3 of 8 sequences streamed a token",
	},
	BatchBrief:        {"batch reached briefly: the server ran B = 8 in 20 % of the samples only (gauge: median 2)"},
	AttainmentUnknown: {"batch attainment unknown (no running-requests gauge from /metrics): the client saw 8 sequences decoding together, consistent with B = 8"},
	FullBatchAbsent:   {"no full-batch figure: routed over 2 workers: the sequences share no single batch"},
	ServersDiffer:     {"servers differ: fwd http://127.0.0.1:1 7.100 ms, http://127.0.0.1:2 14.200 ms (+100 %)"},
	ClientBottleneck:  {"the client was the bottleneck: genload's process used 98 % of its 2 cores (1960.0 ms of CPU in 1000.0 ms)"},
	SlowBodyWrite:     {"writing the body of request 0 took 2.0 ms, 8.0 % of the cell's TTFT p50 25.0 ms (building every body took 0.1 ms): TTFT includes it, fwd, ITL and the chunk timings do not (the write ended before the first token); a slow client or a server that reads its requests slowly"},
	EngineOverrun:     {"the built-in engine's steps ran 5.0 % over their planned wall time in all (one step's delay p50 1.0 %, p99 10 % of it; over 100 steps), above the 2 % this cell allows"},
	EngineRemeasured:  {"measured again: in attempt 1 the built-in engine's steps ran 10.1 % over their planned wall time; in attempt 2 the built-in engine's decode steps ran 3.0 % short of their plan, beyond the 2 % a cell allows"},
	RoutedSplit:       {"routed over 2 workers: B = 8 is the total; each worker ran about 4 sequences"},
}

func TestEveryKindIsRecognisedByItsTexts(t *testing.T) {
	for _, k := range Catalogue() {
		texts := samples[k.Name]
		if len(texts) == 0 {
			t.Errorf("kind %s has no sample text in this test", k.Name)
		}
		for _, s := range texts {
			if got := Classify(s); got != k.Name {
				t.Errorf("Classify(%q) = %s, want %s", s, got, k.Name)
			}
		}
	}
	if got := Classify("something genload never wrote"); got != Other {
		t.Errorf("an unknown text is %s, want %s", got, Other)
	}
}

func TestNamesAreStableAndHeadlinesAreSentences(t *testing.T) {
	seen := map[Name]bool{}
	for _, k := range Catalogue() {
		if seen[k.Name] {
			t.Errorf("name %s twice", k.Name)
		}
		seen[k.Name] = true
		if k.Name == Other || strings.ToLower(string(k.Name)) != string(k.Name) || strings.ContainsAny(string(k.Name), " _") {
			t.Errorf("name %q: lowercase words joined by '-'", k.Name)
		}
		h := []rune(k.Headline)
		switch {
		case len(h) == 0:
			t.Errorf("%s: no headline", k.Name)
		case !unicode.IsUpper(h[0]) && h[0] != '/':
			t.Errorf("%s: headline %q does not start a sentence", k.Name, k.Headline)
		case strings.HasSuffix(k.Headline, "."):
			t.Errorf("%s: headline %q ends with a full stop", k.Name, k.Headline)
		case strings.ContainsAny(k.Headline, "…%") && !strings.Contains(k.Headline, "5 %"):
			t.Errorf("%s: headline %q has a placeholder", k.Name, k.Headline)
		}
		if got, ok := Lookup(k.Name); !ok || got.Headline != k.Headline {
			t.Errorf("Lookup(%s) = %+v, %v", k.Name, got, ok)
		}
	}
	if _, ok := Lookup(Other); ok {
		t.Error("Other is in the catalogue")
	}
}

// "estimates-disagree" was written for the texts of two kinds — the client's mean against its
// robust fit (measure's check) and the client's figure against the engine's own (the run's) —
// so that a cell's CSV read "slow-forwards; estimates-disagree; estimates-disagree". Read
// back, each text gets its own kind; other names are kept, known or not; a record without a
// name is named by its text.
func TestRetiredNameIsResolvedByItsText(t *testing.T) {
	for _, tc := range []struct {
		stored Name
		text   string
		want   Name
	}{
		{"estimates-disagree", "per-forward estimators disagree: fwd (the mean forward pass) 2.483 ms is +64.1 % of the robust fit 1.513 ms (the typical one)", FwdVsFit},
		{"estimates-disagree", "full-batch estimators disagree: full-batch fwd (the mean forward pass) 8.1 ms is +6.0 % of the pooled robust fit 7.6 ms", FwdVsFit},
		{"estimates-disagree", "per-forward estimates disagree: client fwd 2.483 ms is +11 % of the engine's own decode step time 2.230 ms (…)", SourcesDisagree},
		{"estimates-disagree", "a text no kind knows", "estimates-disagree"},
		{"", "per-forward estimators disagree: fwd 1 ms", FwdVsFit},
		{"", "a text no kind knows", Other},
		{SlowForwards, "per-forward estimators disagree: a text stored under another name keeps it", SlowForwards},
		{"a-later-kind", "per-forward estimators disagree: …", "a-later-kind"},
	} {
		if got := Resolve(tc.stored, tc.text); got != tc.want {
			t.Errorf("Resolve(%q, %q) = %q, want %q", tc.stored, tc.text, got, tc.want)
		}
	}
	for _, k := range Catalogue() {
		if retired[k.Name] {
			t.Errorf("retired name %s is in the catalogue", k.Name)
		}
	}
}

var update = flag.Bool("update", false, "rewrite README.md's warning catalogue from Catalogue")

const (
	readmeStart = "<!-- the warning catalogue: written by go test ./host/warning -update from package warning; do not edit -->"
	readmeEnd   = "<!-- end of the warning catalogue -->"
)

// catalogueMarkdown is README.md's table of the catalogue: each kind's name and headline.
func catalogueMarkdown() string {
	var b strings.Builder
	b.WriteString("| name | headline |\n|---|---|\n")
	for _, k := range Catalogue() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", k.Name, strings.ReplaceAll(k.Headline, "|", `\|`))
	}
	return b.String()
}

// README.md lists the catalogue where users read about the table; the list is written from
// Catalogue (with -update) and held to it, so that neither drifts from the other.
func TestReadmeListsTheCatalogue(t *testing.T) {
	const path = "../../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, readmeStart), strings.Index(text, readmeEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no warning catalogue between %q and %q", path, readmeStart, readmeEnd)
	}
	want := catalogueMarkdown()
	got := strings.TrimPrefix(text[i+len(readmeStart):j], "\n")
	if *update && got != want {
		text = text[:i+len(readmeStart)] + "\n" + want + text[j:]
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		got = want
	}
	if got != want {
		t.Errorf("%s's warning catalogue differs from Catalogue (run go test ./host/warning -update and review the diff):\n%s\nwant\n%s", path, got, want)
	}
	if n, err := textcheck.MarkdownTables(want); n != 1 || err != nil {
		t.Errorf("the catalogue's table: %d tables, %v", n, err)
	}
}
