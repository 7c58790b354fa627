package gap

import (
	"github.com/genload/genload/host/compare"
	"github.com/genload/genload/host/latmodel"
	"github.com/genload/genload/host/replay"
)

// comparedFields are the fields a model and a replay are compared on, in the order checked:
// the served model; the built-in engine's time scale, since its figures are wall-clock at that
// scale (a model fitted at 0.2 prices every pass 4× what a replay at 0.05 ran); its profile by
// name and by hash of its figures (a hash missing from an older file is not compared, and said
// so); and the target (the built-in engine or another server). The model's max_tokens and
// [labels] are not compared: a replay's requests carry their own output lengths (the model is
// evaluated at each pass's contexts), and a replay has no labels; nor are the engine's quirks
// and noise, which a replay does not record for certain.
var comparedFields = []string{compare.FieldModel, compare.FieldTimeScale, compare.FieldProfile, compare.FieldKind}

// modelIdentity is what the model file says of the server it was fitted on.
func modelIdentity(name string, m *latmodel.Model) compare.Identity {
	id := compare.Identity{Name: "model " + name, Model: m.Model}
	if m.Engine != nil {
		id.SetEngine(m.Engine)
	}
	return id
}

// replayIdentity is what the replay summary says of the server it replayed against: the time
// scale it ran at, else its engine description's.
func replayIdentity(name string, sum *replay.Summary) compare.Identity {
	id := compare.Identity{Name: "replay " + name, Model: sum.Header.Model}
	if eng, _ := sum.Header.Extra["engine"].(map[string]any); eng != nil {
		id.SetEngine(eng)
		if sum.TimeScale > 0 {
			id.TimeScale = sum.TimeScale
		}
	}
	return id
}

// CheckComparable compares the model file's server with the replay summary's on
// comparedFields ([compare.CheckFields]); its line calls them "model M and replay R". It never
// fails: [Run] refuses what differs unless told to compare anyway.
func CheckComparable(modelName string, m *latmodel.Model, replayName string, sum *replay.Summary) compare.Comparability {
	c := compare.CheckFields([]compare.Identity{modelIdentity(modelName, m), replayIdentity(replayName, sum)}, comparedFields...)
	c.Subject = "model " + modelName + " and replay " + replayName
	return c
}
