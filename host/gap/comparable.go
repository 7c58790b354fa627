package gap

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/genload/genload/host/latmodel"
	"github.com/genload/genload/host/replay"
)

// Comparability is whether a model and a replay measured the same server, field by field,
// in the order checked: the served model; the target (the built-in engine or another
// server); the built-in engine's profile by name and by hash of its figures (a hash missing
// from an older file is not compared, and said so); and its time scale, since the engine's
// figures are wall-clock at that scale (a model fitted at 0.2 prices every pass 4× what a
// replay at 0.05 ran). The model's max_tokens and [labels] are not compared: a replay's
// requests carry their own output lengths (the model is evaluated at each pass's contexts),
// and a replay has no labels.
type Comparability struct {
	// Same holds "field value" for each field both agree on; Differ "field differs: model
	// M v / replay R v" for each that differs.
	Same, Differ []string
	// Model and Replay name the two files.
	Model, Replay string
}

// Comparable reports that no field differs.
func (c Comparability) Comparable() bool { return len(c.Differ) == 0 }

// Line is the statement the report starts with, e.g.
//
//	comparable: model m.json and replay r.json: served model "genload-sim", target built-in engine, engine profile moe-30b-a3b (sha256:…), time scale 0.05
//	NOT comparable: time scale differs: model m.json 0.2 / replay r.json 0.05; same served model "genload-sim", …
func (c Comparability) Line() string {
	if c.Comparable() {
		return fmt.Sprintf("comparable: model %s and replay %s: %s", c.Model, c.Replay, strings.Join(c.Same, ", "))
	}
	s := "NOT comparable: " + strings.Join(c.Differ, "; ")
	if len(c.Same) > 0 {
		s += "; same " + strings.Join(c.Same, ", ")
	}
	return s
}

// side is what one file says of the server it measured.
type side struct {
	name, model       string
	builtin           bool
	profile, hash     string
	timeScale         float64
	timeScaleRecorded bool
}

func modelSide(name string, m *latmodel.Model) side {
	s := side{name: "model " + name, model: m.Model, builtin: m.Engine != nil}
	if m.Engine != nil {
		s.profile, _ = m.Engine["profile"].(string)
		s.hash, _ = m.Engine["profile_hash"].(string)
		s.timeScale, s.timeScaleRecorded = m.Engine["time_scale"].(float64)
	}
	return s
}

func replaySide(name string, sum *replay.Summary) side {
	s := side{name: "replay " + name, model: sum.Header.Model}
	eng, _ := sum.Header.Extra["engine"].(map[string]any)
	if s.builtin = eng != nil; !s.builtin {
		return s
	}
	s.profile, _ = eng["profile"].(string)
	s.hash, _ = eng["profile_hash"].(string)
	s.timeScale, s.timeScaleRecorded = sum.TimeScale, sum.TimeScale > 0
	if !s.timeScaleRecorded {
		s.timeScale, s.timeScaleRecorded = eng["time_scale"].(float64)
	}
	return s
}

// CheckComparable compares the model file's server with the replay summary's (see
// [Comparability]). It never fails: [Run] refuses what differs unless told to compare anyway.
func CheckComparable(modelName string, m *latmodel.Model, replayName string, sum *replay.Summary) Comparability {
	a, b := modelSide(modelName, m), replaySide(replayName, sum)
	c := Comparability{Model: modelName, Replay: replayName}
	field := func(name, va, vb string, note ...string) {
		if va == vb {
			c.Same = append(c.Same, strings.Join(append([]string{name, va}, note...), " "))
		} else {
			c.Differ = append(c.Differ, strings.Join(append([]string{fmt.Sprintf("%s differs: %s %s / %s %s", name, a.name, va, b.name, vb)}, note...), " "))
		}
	}
	field("served model", strconv.Quote(a.model), strconv.Quote(b.model))
	target := func(s side) string {
		if s.builtin {
			return "built-in engine"
		}
		return "another server (not the built-in engine)"
	}
	field("target", target(a), target(b))
	if !a.builtin || !b.builtin {
		return c
	}
	switch {
	case a.hash != "" && b.hash != "":
		field("engine profile", a.profile+" ("+a.hash+")", b.profile+" ("+b.hash+")")
	default:
		var missing []string
		for _, s := range []side{a, b} {
			if s.hash == "" {
				missing = append(missing, strings.Fields(s.name)[0])
			}
		}
		field("engine profile", a.profile, b.profile, "(by name: the "+strings.Join(missing, " and the ")+" records no hash)")
	}
	scale := func(s side) string {
		if !s.timeScaleRecorded {
			return "(not recorded)"
		}
		return strconv.FormatFloat(s.timeScale, 'g', -1, 64)
	}
	field("time scale", scale(a), scale(b))
	return c
}
