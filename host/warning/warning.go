// Package warning is genload's catalogue of cell warnings: every kind of warning a cell can
// carry has a stable [Name] — written beside the warning's text in the results JSON
// (results.Cell's "warning_names"), used by the CSV and by the grouping of the table and the
// HTML report — and a [Kind.Headline], one sentence that stands for every warning of the kind
// when they are grouped ("The first chunks of some sequences arrived late"), with no
// placeholder left in. A warning's own text ([Warning.Text]) keeps its figures and its cause.
//
// Names are lowercase words joined by '-'; once written to a results file a name is never
// reused for another kind or renamed (a reader groups and filters by it). A new kind is one
// more entry in the catalogue, with the prefixes by which its text is recognised.
//
// Results written before names existed hold the text alone; [Classify] gives such a text
// its name from the catalogue's prefixes (so old files group as new ones do), and [Other]
// when none matches. One name was retired: "estimates-disagree" was written for two kinds
// (the client's mean against its robust fit, now [FwdVsFit], and the client's figure against
// the server's or the engine's, now [SourcesDisagree]); [Resolve] names a text stored with it
// by the text's kind.
//
// README.md's "Warnings" section lists the catalogue (a test holds it to [Catalogue]).
package warning

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Name is a kind of warning's stable name, e.g. "late-first-chunks".
type Name string

// Warning is one warning of a cell: its kind and its text (a sentence or more with its
// figures, e.g. "batch not reached: the server ran at most 8 sequences at once …").
type Warning struct {
	Name Name   `json:"name"`
	Text string `json:"text"`
}

// New returns a warning of kind n with the given text.
func New(n Name, text string) Warning { return Warning{Name: n, Text: text} }

// Newf returns a warning of kind n with its text formatted as by fmt.Sprintf.
func Newf(n Name, format string, args ...any) Warning {
	return Warning{Name: n, Text: fmt.Sprintf(format, args...)}
}

// Of returns text with its name from the catalogue ([Classify]): for texts made by packages
// that return strings (measure's checks, the realised lengths).
func Of(text string) Warning { return Warning{Name: Classify(text), Text: text} }

// The catalogue's names, one per kind of warning.
const (
	// Other is the name of a text no kind of the catalogue recognises.
	Other Name = "other"

	RequestFailed     Name = "request-failed"
	RequestsResent    Name = "requests-resent"
	ResentAfterBatch  Name = "resent-after-batch"
	PromptsTruncated  Name = "prompts-truncated"
	PromptTokens      Name = "prompt-tokens-deviate"
	PromptsCached     Name = "prompts-already-cached"
	LengthsOffTarget  Name = "lengths-off-target"
	ChunksTogether    Name = "chunks-together"
	FwdAbsent         Name = "fwd-absent"
	FwdSubset         Name = "fwd-subset"
	SlowForwards      Name = "slow-forwards"
	TokensUnverified  Name = "tokens-unverified"
	TokensPerChunk    Name = "tokens-per-chunk"
	TokenCountSource  Name = "token-count-source"
	LateFirstChunks   Name = "late-first-chunks"
	EarlyFirstChunks  Name = "early-first-chunks"
	LateLastChunks    Name = "late-last-chunks"
	FwdVsFit          Name = "fwd-vs-fit"
	SourcesDisagree   Name = "sources-disagree"
	MetricConstant    Name = "metric-constant"
	HeaderFwdAbsent   Name = "hdr-fwd-absent"
	MetricsFwdAbsent  Name = "metrics-fwd-absent"
	MetricsFailed     Name = "metrics-failed"
	OtherLoad         Name = "other-load"
	BatchNotReached   Name = "batch-not-reached"
	BatchBrief        Name = "batch-brief"
	CapacityShort     Name = "server-capacity-short"
	AttainmentUnknown Name = "attainment-unknown"
	FullBatchAbsent   Name = "full-batch-absent"
	RoutedSplit       Name = "routed-split"
	ServersDiffer     Name = "servers-differ"
	ClientBottleneck  Name = "client-bottleneck"
	SlowBodyWrite     Name = "slow-body-write"
	EngineOverrun     Name = "engine-overrun"
	EngineRemeasured  Name = "engine-remeasured"
)

// Kind is one entry of the catalogue.
type Kind struct {
	Name Name
	// Headline is a sentence that stands for every warning of the kind, capitalised and
	// without a full stop (a count of cells may follow it), with no placeholder.
	Headline string
	// prefixes recognise the kind's texts (Classify): plain prefixes, or regular expressions
	// anchored at the start when they begin with '^'.
	prefixes []string
}

// catalogue lists every kind, the more specific prefixes before the general ones.
var catalogue = []Kind{
	{RequestFailed, "Requests failed", []string{`^\d+ request errors: `, `^\d+ of \d+ requests? failed`}},
	{ResentAfterBatch, "A resent request started after the other sequences had finished", []string{"resent after the batch: "}},
	{RequestsResent, "Requests were sent again after a failure", []string{"requests resent: "}},
	{PromptsTruncated, "The server truncated prompts", []string{"prompts truncated by the server: "}},
	{PromptTokens, "The server counted other prompt tokens than were sent", []string{"prompt tokens deviate on "}},
	{PromptsCached, "The prompts were already in the server's prefix cache", []string{"prompts already cached: "}},
	{LengthsOffTarget, "Realised mean prompt lengths are off their target L", []string{"realised mean length "}},
	{ChunksTogether, "Chunks arrived together in one read", []string{"over half of the chunk intervals are 0", "over half of the chunk intervals are under a tenth of their mean"}},
	{FwdAbsent, "There is no per-forward figure", []string{"no per-forward figure: "}},
	{FwdSubset, "The per-forward figure leaves sequences out", []string{`^fwd over \d+ of \d+ sequences: `}},
	{SlowForwards, "A few long chunk intervals (very slow forward passes, or a delivery lag) weigh on the mean", []string{`^fwd [\d.]+ ms includes long chunk intervals`, `^fwd [\d.]+ ms is [\d.]+× the median chunk interval`}},
	{TokensUnverified, "Token counts are unverified lower bounds", []string{`^\d+ of \d+ sequences' token counts are unverified`}},
	{TokensPerChunk, "Chunks carry more than one token", []string{"chunks carry "}},
	{TokenCountSource, "A token-count source was set aside for another", []string{"token counts of "}},
	{EarlyFirstChunks, "The first chunks of some sequences arrived early: fwd includes a long first interval", []string{`^the first chunks of \d+ of \d+ sequences arrived early`}},
	{LateFirstChunks, "The first chunks of some sequences arrived late", []string{"the first chunks of "}},
	{LateLastChunks, "The last chunks of some sequences arrived late: fwd ends before them", []string{"the last chunks of "}},
	{MetricConstant, "A server metric does not vary with load", []string{"server metric does not vary with load: "}},
	{FwdVsFit, "The mean forward pass and the robust fit (a Theil–Sen slope) differ by more than 5 %", []string{"per-forward estimators disagree", "full-batch estimators disagree"}},
	{SourcesDisagree, "The client's, the server's and the engine's per-forward figures differ by more than 5 %", []string{"per-forward sources disagree: ", "per-forward estimates disagree", "full-batch estimates disagree"}},
	{HeaderFwdAbsent, "The timing headers give no per-forward figure", []string{"hdr fwd absent: "}},
	{MetricsFwdAbsent, "/metrics gives no per-forward figure", []string{"metrics fwd absent: ", `^server \S+: metrics fwd absent: `}},
	{MetricsFailed, "Scraping /metrics failed", []string{"metrics: ", `^server \S+: `}},
	{OtherLoad, "Other load shared the server", []string{`^the server ran up to \d+ requests at once, more than`, `^server \S+ ran up to \d+ requests at once`}},
	{CapacityShort, "The server cannot hold all B sequences at once", []string{"server capacity too small: ", `^server \S+ capacity too small: `}},
	{BatchNotReached, "The batch of B sequences was not reached", []string{"batch not reached: ", "batch attainment: ", "batch probably not reached"}},
	{BatchBrief, "The batch of B sequences ran for less than half of the cell", []string{"batch reached briefly: "}},
	{AttainmentUnknown, "Whether the batch of B sequences was reached is unknown", []string{"batch attainment unknown"}},
	{FullBatchAbsent, "There is no full-batch figure", []string{"no full-batch figure: "}},
	{ServersDiffer, "The servers' per-forward figures differ by more than 5 %", []string{"servers differ: "}},
	{ClientBottleneck, "The client, not the server, limited the measurement", []string{"the client was the bottleneck: "}},
	{SlowBodyWrite, "Writing a request's body took over 5 % of TTFT", []string{"writing the body of request "}},
	{EngineOverrun, "The built-in engine's steps ran off their plan on a busy host", []string{"the built-in engine's steps ran "}},
	{EngineRemeasured, "Measured again: the built-in engine's steps had run off their plan on a busy host", []string{"measured again: "}},
	{RoutedSplit, "B is the total over several workers", []string{`^routed over \d+ workers: B = `}},
}

// compiled holds the catalogue's regular expressions, by prefix.
var compiled = func() map[string]*regexp.Regexp {
	m := map[string]*regexp.Regexp{}
	for _, k := range catalogue {
		for _, p := range k.prefixes {
			if strings.HasPrefix(p, "^") {
				m[p] = regexp.MustCompile(p)
			}
		}
	}
	return m
}()

// Catalogue returns every kind of warning, in the catalogue's order.
func Catalogue() []Kind { return append([]Kind(nil), catalogue...) }

// Lookup returns the kind named n; ok is false for a name the catalogue does not hold
// (Other, or a name written by a later genload).
func Lookup(n Name) (k Kind, ok bool) {
	for _, k := range catalogue {
		if k.Name == n {
			return k, true
		}
	}
	return Kind{}, false
}

// Classify returns the name of the kind whose prefix text starts with (the first in the
// catalogue's order), or Other.
func Classify(text string) Name {
	for _, k := range catalogue {
		for _, p := range k.prefixes {
			if re := compiled[p]; re != nil {
				if re.MatchString(text) {
					return k.Name
				}
			} else if strings.HasPrefix(text, p) {
				return k.Name
			}
		}
	}
	return Other
}

// retired are names earlier genloads wrote for the texts of more than one kind.
var retired = map[Name]bool{"estimates-disagree": true}

// Resolve returns the name of a warning read from a results file: n when it is a name of
// the catalogue's or of a later genload; the kind of text ([Classify]) when n is empty (a
// record written before names existed) or retired (written for several kinds, such as
// "estimates-disagree"); a retired n stays when no kind recognises text.
func Resolve(n Name, text string) Name {
	if n != "" && !retired[n] {
		return n
	}
	if c := Classify(text); c != Other || n == "" {
		return c
	}
	return n
}

// Thousands writes n with a comma between groups of three digits (1,020; -8,388,608), as
// warning texts write counts of tokens and sequences.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
