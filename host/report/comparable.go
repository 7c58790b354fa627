package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Identity is what makes two runs measure the same thing, as far as comparing their figures
// goes: the served model, max_tokens, the [labels] (deployment dimensions) and, for the
// built-in engine, its cost-model profile by name and by hash of its figures. Name is how
// messages call the run (its file, or its run id).
type Identity struct {
	Name      string
	Model     string
	MaxTokens int
	Labels    map[string]any
	// Profile and ProfileHash are the built-in engine's profile and the hash of its figures
	// (Header.Engine "profile" and "profile_hash"; ProfileHash "" in files that predate it);
	// Builtin is false for an external server, whose profile is "".
	Builtin     bool
	Profile     string
	ProfileHash string
}

// IdentityOf is the identity of a run with header h, called name ("" for its run id).
func IdentityOf(name string, h Header) Identity {
	if name == "" {
		name = h.RunID
	}
	id := Identity{Name: name, Model: h.Model, MaxTokens: cfgMaxTokens(h), Labels: h.Labels}
	if h.Engine != nil {
		id.Builtin = true
		id.Profile, _ = h.Engine["profile"].(string)
		id.ProfileHash, _ = h.Engine["profile_hash"].(string)
	}
	return id
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
	FieldProfile   = "engine profile"
)

// Comparability is the outcome of [CheckComparable]: the fields every run agrees on, with
// their value, and the fields that differ, each with every run's value.
type Comparability struct {
	Runs int
	// Same holds "field value" for each field the runs agree on; Differ "field differs:
	// NAME value / NAME value" for each that differs; DifferFields names the latter.
	Same         []string
	Differ       []string
	DifferFields []string
}

// Comparable reports that no field differs.
func (c Comparability) Comparable() bool { return len(c.Differ) == 0 }

// Differs reports whether field (one of the Field constants) differs.
func (c Comparability) Differs(field string) bool {
	return slices.Contains(c.DifferFields, field)
}

// Line is the one-line statement a comparing command prints first. compared names the
// fields (Field constants) whose difference is what the command compares (the engine profile
// for a gate or an A/B comparison): they are listed, but do not make the runs incomparable.
// For example
//
//	comparable: 2 runs of model "m", max_tokens 100, labels {gpu=8}, engine profile moe-30b-a3b (sha256:…)
//	comparable: 2 runs of model "m", max_tokens 100, labels {}; compared across engine profile: a.json moe-30b-a3b (sha256:…) / b.json slow (sha256:…)
//	NOT comparable: labels differs: a.json {gpu=8} / b.json {gpu=4}; same model "m", max_tokens 100, engine profile …
func (c Comparability) Line(compared ...string) string {
	var bad, ok []string
	for i, f := range c.DifferFields {
		if slices.Contains(compared, f) {
			ok = append(ok, strings.Replace(c.Differ[i], " differs: ", ": ", 1))
		} else {
			bad = append(bad, c.Differ[i])
		}
	}
	var s string
	if len(bad) == 0 {
		runs := fmt.Sprintf("%d runs", c.Runs)
		if c.Runs == 1 {
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

// ComparableExcept reports that no field differs but those in compared.
func (c Comparability) ComparableExcept(compared ...string) bool {
	for _, f := range c.DifferFields {
		if !slices.Contains(compared, f) {
			return false
		}
	}
	return true
}

// CheckComparable compares the identities of two or more runs field by field: served model,
// max_tokens, labels, and the built-in engine profile by name and hash (a run against an
// external server has none: "external server"; a hash missing from an older file is not
// compared, and said so). It never fails: each caller decides which differences it refuses.
func CheckComparable(ids []Identity) Comparability {
	c := Comparability{Runs: len(ids)}
	hashKnown := true
	for _, id := range ids {
		if id.Builtin && id.ProfileHash == "" {
			hashKnown = false
		}
	}
	fields := []struct {
		name string
		get  func(id Identity) string
	}{
		{FieldModel, func(id Identity) string { return strconv.Quote(id.Model) }},
		{FieldMaxTokens, func(id Identity) string { return strconv.Itoa(id.MaxTokens) }},
		{FieldLabels, func(id Identity) string { return "{" + LabelText(id.Labels) + "}" }},
		{FieldProfile, func(id Identity) string {
			switch {
			case !id.Builtin:
				return "(external server)"
			case hashKnown:
				return id.Profile + " (" + id.ProfileHash + ")"
			}
			return id.Profile + " (hash not recorded)"
		}},
	}
	for _, f := range fields {
		var vals []string
		seen := map[string]bool{}
		for _, id := range ids {
			v := f.get(id)
			if !seen[v] {
				seen[v] = true
				vals = append(vals, id.Name+" "+v)
			}
		}
		if len(seen) > 1 {
			c.Differ = append(c.Differ, f.name+" differs: "+strings.Join(vals, " / "))
			c.DifferFields = append(c.DifferFields, f.name)
		} else if len(ids) > 0 {
			c.Same = append(c.Same, f.name+" "+f.get(ids[0]))
		}
	}
	return c
}

// RunsComparability is CheckComparable over runs, names[i] calling runs[i] (nil or "": its
// run id).
func RunsComparability(runs []*Run, names []string) Comparability {
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
