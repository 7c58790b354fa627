package compare

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/genload/genload/host/results"
)

// Identity is what makes two runs measure the same thing, as far as comparing their figures
// goes: the served model, max_tokens, the [labels] (deployment dimensions), and the target —
// for the built-in engine its settings (time scale, cost-model profile by name and by hash of
// its figures, quirks, injected noise), for an external server what identifies the deployment
// that the header records (its URL, or its workers' in routed mode, and the context length it
// reported). Name is how messages call the run: the file it was read from, as given on the
// command line (or its run id when there is none).
type Identity struct {
	Name      string
	Model     string
	MaxTokens int
	Labels    map[string]any
	// Builtin is true for the built-in engine. Profile and ProfileHash are its profile and
	// the hash of its figures (Header.Engine "profile" and "profile_hash"; ProfileHash "" in
	// files that predate it); TimeScale its time_scale (0: not recorded); Quirks its quirk
	// set and Noise its injected noise without the seed (each repeat of genload run --repeat
	// derives its own seed: the runs are repeats of one noise model), "" for none.
	Builtin     bool
	Profile     string
	ProfileHash string
	TimeScale   float64
	Quirks      string
	Noise       string
	// Target is an external server's base URL, or in routed mode its workers' URLs joined by
	// ", " (the built-in engine's URL is a fresh port every run: "", not compared). Context is
	// the model context in tokens the run used and ContextSource where it was read (for an
	// external server usually the server's own /v1/models).
	Target        string
	Context       int
	ContextSource string
}

// IdentityOf is the identity of a run with header h, called name ("" for its run id).
func IdentityOf(name string, h results.Header) Identity {
	if name == "" {
		name = h.RunID
	}
	id := Identity{Name: name, Model: h.Model, MaxTokens: h.ConfigMaxTokens(), Labels: h.Labels, Context: h.Context, ContextSource: h.ContextSource}
	if h.Engine != nil || h.TargetKind == "builtin" {
		id.SetEngine(h.Engine)
		return id
	}
	id.Target = h.Target
	if len(h.Workers) > 0 {
		urls := make([]string, len(h.Workers))
		for i, w := range h.Workers {
			urls[i] = w.URL
		}
		id.Target = strings.Join(urls, ", ")
	}
	return id
}

// SetEngine makes id the built-in engine's with the settings of engine, the description a
// results header, a model file or a replay records ("profile", "profile_hash", "time_scale",
// "quirks", "noise"; a key that is missing or of another type leaves its field empty, the
// noise without its seed).
func (id *Identity) SetEngine(engine map[string]any) {
	id.Builtin = true
	id.Profile, _ = engine["profile"].(string)
	id.ProfileHash, _ = engine["profile_hash"].(string)
	id.TimeScale, _ = engine["time_scale"].(float64)
	id.Quirks, _ = engine["quirks"].(string)
	noise, _ := engine["noise"].(string)
	id.Noise = NoiseWithoutSeed(noise)
}

// NoiseWithoutSeed drops the seed from an [engine] noise description ("step-cv=0.02,
// burst-cv=0.05,seed=7" → "step-cv=0.02,burst-cv=0.05"): repeats draw their own noise from
// derived seeds (genload run --repeat), and are repeats of the same noise model.
func NoiseWithoutSeed(s string) string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p != "" && !strings.HasPrefix(strings.TrimSpace(p), "seed=") {
			out = append(out, p)
		}
	}
	return strings.Join(out, ",")
}

// LabelText writes labels sorted by key as "k=v, k=v" (values as JSON: strings quoted), ""
// for none. JSON writes a number the same whether it was read as an int64 from TOML or a
// float64 from JSON, so a run's labels read back compare equal to the config's.
func LabelText(labels map[string]any) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		b, err := json.Marshal(labels[k])
		if err != nil {
			b = []byte(fmt.Sprint(labels[k]))
		}
		parts[i] = k + "=" + string(b)
	}
	return strings.Join(parts, ", ")
}

// Comparison fields, in the order they are checked and written.
const (
	FieldModel     = "model"
	FieldMaxTokens = "max_tokens"
	FieldLabels    = "labels"
	FieldTimeScale = "engine time scale"
	FieldProfile   = "engine profile"
	FieldQuirks    = "engine quirks"
	FieldNoise     = "engine noise"
	FieldKind      = "target kind"
	FieldTarget    = "target"
	FieldContext   = "context"
)

// AcrossInstances are the fields whose difference is stated but not held against runs read
// as repeats of one deployment (genload fit, consistency, a gate's side): the instance an
// external deployment was measured on — its URL, and the context its server reported. The
// same deployment shape on another host is still the deployment; how far its instances differ
// is what repeats measure.
var AcrossInstances = []string{FieldTarget, FieldContext}

// AcrossDeployments are the fields a comparison of two deployments compares (genload gate,
// diff, ab): another engine profile, quirk set or injected noise, another server or host. Their
// difference is stated in the first line, not held against the runs. What is never compared
// across — what makes the comparison meaningless — is the served model, max_tokens, the
// [labels] and the built-in engine's time scale (its figures are wall-clock at that scale: a
// run at 0.2 prices every step 4× one at 0.05).
var AcrossDeployments = []string{FieldProfile, FieldQuirks, FieldNoise, FieldKind, FieldTarget, FieldContext}

// Difference is one field the runs disagree on: Values is each distinct value with the first
// run that has it, "a.json 0.2 / b.json 0.05".
type Difference struct {
	Field  string
	Values string
}

// String writes the difference as messages state it, "different engine time scale: a.json
// 0.2 / b.json 0.05".
func (d Difference) String() string { return "different " + d.Field + ": " + d.Values }

// Comparability is the outcome of [CheckComparable]: the fields every run agrees on, with
// their value, and the fields that differ, each with every run's value.
type Comparability struct {
	Runs int
	// Subject is what [Comparability.Line] calls the inputs compared when they are not all
	// runs ("model m.json and replay r.json"); "" for "N runs".
	Subject string
	// Same holds "field value" for each field the runs agree on (the built-in engine's
	// settings when every run is of it, quirks and noise only when set; target and context
	// when some run is of an external server); Diffs the fields that differ, in field order.
	Same  []string
	Diffs []Difference
}

// Comparable reports that no field differs.
func (c Comparability) Comparable() bool { return len(c.Diffs) == 0 }

// Differs reports whether field (one of the Field constants) differs.
func (c Comparability) Differs(field string) bool {
	return slices.ContainsFunc(c.Diffs, func(d Difference) bool { return d.Field == field })
}

// Refused returns the differences not in compared, each as [Difference.String] writes it:
// what makes the runs not comparable for a command that compares across the fields compared.
func (c Comparability) Refused(compared ...string) []string {
	var out []string
	for _, d := range c.Diffs {
		if !slices.Contains(compared, d.Field) {
			out = append(out, d.String())
		}
	}
	return out
}

// Noted returns the differences in compared, each as "FIELD: a v / b w".
func (c Comparability) Noted(compared ...string) []string {
	var out []string
	for _, d := range c.Diffs {
		if slices.Contains(compared, d.Field) {
			out = append(out, d.Field+": "+d.Values)
		}
	}
	return out
}

// ComparableExcept reports that no field differs but those in compared.
func (c Comparability) ComparableExcept(compared ...string) bool {
	return len(c.Refused(compared...)) == 0
}

// Line is the one-line statement a comparing command prints first (wrapped by the caller).
// compared names the fields (Field constants, e.g. [AcrossDeployments]) whose difference is
// what the command compares: they are listed, but do not make the runs incomparable. For
// example
//
//	comparable: 2 runs of model "m", max_tokens 100, labels {gpu=8}, engine time scale 0.05, engine profile moe-30b-a3b (sha256:…)
//	comparable: 2 runs of model "m", max_tokens 100, labels {}, context 131072 (server /v1/models max_model_len); compared across target: a.json http://h1:8000 / b.json http://h2:8000
//	NOT comparable: different labels: a.json {gpu=8} / b.json {gpu=4}; same model "m", max_tokens 100, …
func (c Comparability) Line(compared ...string) string {
	bad, ok := c.Refused(compared...), c.Noted(compared...)
	var s string
	if len(bad) == 0 {
		runs := fmt.Sprintf("%d runs", c.Runs)
		switch {
		case c.Subject != "":
			runs = c.Subject
		case c.Runs == 1:
			runs = "1 run (its repeats)"
		}
		s = fmt.Sprintf("comparable: %s of %s", runs, strings.Join(c.Same, ", "))
	} else {
		s = "NOT comparable: " + strings.Join(bad, "; ")
		if len(c.Same) > 0 {
			s += "; same " + strings.Join(c.Same, ", ")
		}
	}
	if len(ok) > 0 {
		s += "; compared across " + strings.Join(ok, "; ")
	}
	return s
}

// CheckComparable compares the identities of two or more runs field by field: served model,
// max_tokens, labels; between the runs of the built-in engine its time scale, profile by name
// and hash (a hash missing from an older file is not compared, and said so), quirks and noise;
// between all runs whether the target is the built-in engine or an external server and the
// context length; between the runs of external servers their URL (the workers' in routed
// mode). It never fails: each caller
// decides which differences it refuses ([Comparability.Refused]).
func CheckComparable(ids []Identity) Comparability { return CheckFields(ids, allFields...) }

// allFields are the Field constants in the order they are checked and written.
var allFields = []string{FieldModel, FieldMaxTokens, FieldLabels, FieldTimeScale, FieldProfile,
	FieldQuirks, FieldNoise, FieldKind, FieldTarget, FieldContext}

// CheckFields is [CheckComparable] over fields alone (Field constants; checked and written in
// the order of allFields whatever their order here), for inputs that do not all record the
// others: a model file and a replay have no max_tokens or labels in common (genload gap).
func CheckFields(ids []Identity, fields ...string) Comparability {
	c := Comparability{Runs: len(ids)}
	for _, f := range fieldChecks(ids) {
		if !slices.Contains(fields, f.name) {
			continue
		}
		first, vals := f.values(ids)
		switch {
		case len(vals) > 1:
			c.Diffs = append(c.Diffs, Difference{Field: f.name, Values: strings.Join(vals, " / ")})
		case len(vals) == 1 && f.show(first):
			c.Same = append(c.Same, f.name+" "+first)
		}
	}
	return c
}

// fieldCheck is how one field of the runs is compared.
type fieldCheck struct {
	name  string
	among func(id Identity) bool // the runs the field is compared between
	show  func(v string) bool    // listed among the fields the runs agree on, with value v
	get   func(id Identity) string
}

// values returns the field's value in the first run it is compared among, and one
// "NAME VALUE" per distinct value, in the order of the runs (none when no run counts).
func (f fieldCheck) values(ids []Identity) (first string, vals []string) {
	seen := map[string]bool{}
	for _, id := range ids {
		if !f.among(id) {
			continue
		}
		v := f.get(id)
		if len(seen) == 0 {
			first = v
		}
		if !seen[v] {
			seen[v] = true
			vals = append(vals, id.Name+" "+v)
		}
	}
	return first, vals
}

// fieldChecks returns the checks of allFields, in its order, for the runs ids: whether a
// profile's hash is shown depends on every built-in run recording one, and which fields the
// runs agree on are listed depends on whether some run measured an external server.
func fieldChecks(ids []Identity) []fieldCheck {
	hashKnown, external := true, false
	for _, id := range ids {
		if id.Builtin && id.ProfileHash == "" {
			hashKnown = false
		}
		external = external || !id.Builtin
	}
	orNone := func(s string) string {
		if s == "" {
			return "none"
		}
		return strconv.Quote(s)
	}
	all := func(Identity) bool { return true }
	ofEngine := func(id Identity) bool { return id.Builtin }
	ofServer := func(id Identity) bool { return !id.Builtin }
	never := func(string) bool { return false }
	always := func(string) bool { return true }
	allBuiltin := func(string) bool { return !external }
	ifSet := func(v string) bool { return !external && v != "none" }
	ifExternal := func(string) bool { return external }
	return []fieldCheck{
		{FieldModel, all, always, func(id Identity) string { return strconv.Quote(id.Model) }},
		{FieldMaxTokens, all, always, func(id Identity) string { return strconv.Itoa(id.MaxTokens) }},
		{FieldLabels, all, always, func(id Identity) string { return "{" + LabelText(id.Labels) + "}" }},
		{FieldTimeScale, ofEngine, allBuiltin, func(id Identity) string {
			if id.TimeScale <= 0 {
				return "(not recorded)"
			}
			return strconv.FormatFloat(id.TimeScale, 'g', -1, 64)
		}},
		{FieldProfile, ofEngine, allBuiltin, func(id Identity) string {
			if hashKnown {
				return id.Profile + " (" + id.ProfileHash + ")"
			}
			return id.Profile + " (hash not recorded)"
		}},
		{FieldQuirks, ofEngine, ifSet, func(id Identity) string { return orNone(id.Quirks) }},
		{FieldNoise, ofEngine, ifSet, func(id Identity) string { return orNone(id.Noise) }},
		{FieldKind, all, never, func(id Identity) string {
			if id.Builtin {
				return "built-in engine"
			}
			return "external server"
		}},
		{FieldTarget, ofServer, ifExternal, func(id Identity) string {
			switch {
			case id.Target == "":
				return "(not recorded)"
			}
			return id.Target
		}},
		{FieldContext, all, ifExternal, func(id Identity) string {
			switch {
			case id.Context <= 0:
				return "(not recorded)"
			case id.ContextSource == "":
				return strconv.Itoa(id.Context)
			}
			return fmt.Sprintf("%d (%s)", id.Context, id.ContextSource)
		}},
	}
}

// RunsComparability is CheckComparable over runs, names[i] calling runs[i] (nil or "": its
// run id).
func RunsComparability(runs []*results.Run, names []string) Comparability {
	ids := make([]Identity, len(runs))
	for i, r := range runs {
		n := ""
		if i < len(names) {
			n = names[i]
		}
		ids[i] = IdentityOf(n, r.Header)
	}
	return CheckComparable(ids)
}
