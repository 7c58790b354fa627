package plugin

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/genload/genload/host/internal/tomlwords"
	"github.com/genload/genload/sdk/abi"
)

// ConfigError is a plugin's refusal of its configuration (genload_init's bad-input status),
// said in bench.toml's words: the key at fault when the plugin's message names one, an unknown
// key with the nearest of the plugin's own keys when its message lists them (the Go SDK's
// "(known keys: …)", serde's "expected one of …"), a value of the wrong type as TOML types
// ("must be a number, not a string (\"abc\")"), and the plugin's own words for a value it
// judged invalid. Its error unwraps to the plugin's *Error.
type ConfigError struct {
	// Key is the dotted key at fault ("lengths.config.k"), or the table ("lengths.config")
	// when the plugin's message names none of the config's keys.
	Key string
	msg string
	err *Error
}

// Error is the message without the key's place: "unknown key [lengths.config.kk] of plugin
// gamma; did you mean [lengths.config.k]?", "[lengths.config.k] must be a number, not a string
// (\"abc\") (plugin gamma)", "[lengths.config.k]: plugin gamma: k = -1, want …".
func (e *ConfigError) Error() string { return e.msg }

// Unwrap returns the plugin's error.
func (e *ConfigError) Unwrap() error { return e.err }

var (
	// Go's encoding/json, as the SDK's Decode returns it (with the known keys it adds).
	goUnknownRe = regexp.MustCompile(`json: unknown field "([^"]*)"(?: \(known keys: ([^)]*)\))?`)
	goTypeRe    = regexp.MustCompile(`json: cannot unmarshal (\S+)(?: [^ ]+)? into Go struct field [^.\s]+\.(\S+) of type (\S+)`)
	// serde_json: "unknown field `kk`, expected one of `k`, `normalize`" / "expected `k`" /
	// "there are no fields".
	serdeUnknownRe = regexp.MustCompile("unknown field `([^`]*)`(?:, expected (?:one of )?(.*?)(?: at line \\d+ column \\d+)?$|, there are no fields)?")
	serdeNameRe    = regexp.MustCompile("`([^`]*)`")
	// The SDK's message for a plugin that never decodes its config.
	noKeysRe = regexp.MustCompile(`takes no config keys, got \["([^"]*)"`)
)

// AsConfigError words err, an error of loading a plugin with config (its bench.toml table,
// at the dotted key table, such as "lengths.config"), as a *ConfigError when it is the
// plugin's refusal of that config (genload_init returned bad input); ok is false for any
// other error.
func AsConfigError(err error, table string, config map[string]any) (*ConfigError, bool) {
	var pe *Error
	if !errors.As(err, &pe) || pe.Export != abi.Init || pe.Status != abi.BadInput {
		return nil, false
	}
	msg := strings.TrimSpace(pe.Err.Error())
	plugin := "plugin " + pe.Plugin
	ce := &ConfigError{Key: table, err: pe}
	at := func(k string) string { return "[" + table + "." + k + "]" }
	if name, known, said, ok := unknownKey(msg); ok {
		ce.Key = table + "." + name
		ce.msg = fmt.Sprintf("unknown key %s of %s", at(name), plugin)
		switch s := nearestKey(name, known); {
		case s != "":
			ce.msg += fmt.Sprintf("; did you mean %s?", at(s))
		case said && len(known) == 0:
			ce.msg += "; it takes no config keys"
		case said:
			ce.msg += "; its keys are " + strings.Join(known, ", ")
		default:
			ce.msg += " (see the plugin's documentation for its keys)"
		}
		return ce, true
	}
	if m := goTypeRe.FindStringSubmatch(msg); m != nil {
		key := m[2]
		if want, ok := goTypeWords(m[3]); ok {
			ce.Key = table + "." + key
			got := m[1]
			if v, found := lookupKey(config, key); found {
				got = tomlwords.Value(v)
			} else {
				got = "a JSON " + got
			}
			ce.msg = fmt.Sprintf("%s must be %s, not %s (%s)", at(key), want, got, plugin)
			return ce, true
		}
	}
	words := strings.TrimPrefix(msg, "config: ")
	if k := leadingKey(words, config); k != "" {
		ce.Key = table + "." + k
		ce.msg = fmt.Sprintf("%s: %s: %s", at(k), plugin, words)
		return ce, true
	}
	ce.msg = fmt.Sprintf("[%s]: %s: %s; fix the plugin's table (see the plugin's documentation for its keys)", table, plugin, words)
	return ce, true
}

// unknownKey reads an unknown-key message: the key, the plugin's known keys and whether the
// message lists them (an empty list: the plugin takes none).
func unknownKey(msg string) (name string, known []string, said, ok bool) {
	if m := goUnknownRe.FindStringSubmatch(msg); m != nil {
		if strings.Contains(msg, "(known keys: ") {
			said = true
			if m[2] != "none" {
				for _, k := range strings.Split(m[2], ",") {
					known = append(known, strings.TrimSpace(k))
				}
			}
		}
		return m[1], known, said, true
	}
	if m := serdeUnknownRe.FindStringSubmatch(msg); m != nil {
		switch {
		case strings.Contains(msg, "there are no fields"):
			said = true
		case m[2] != "":
			said = true
			for _, n := range serdeNameRe.FindAllStringSubmatch(m[2], -1) {
				known = append(known, n[1])
			}
		}
		return m[1], known, said, true
	}
	if m := noKeysRe.FindStringSubmatch(msg); m != nil {
		return m[1], nil, true, true
	}
	return "", nil, false, false
}

// nearestKey is the known key an unknown one was probably meant to be: within 2 edits and at
// most half its characters (kk → k, nromalize → normalize; plugin keys are often one letter),
// else the one known key it begins or that begins it (norm → normalize); "" when none.
func nearestKey(name string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := levenshtein.ComputeDistance(name, k); d < bestD && 2*d <= len([]rune(name)) {
			best, bestD = k, d
		}
	}
	if best != "" {
		return best
	}
	var near []string
	for _, k := range known {
		if strings.HasPrefix(k, name) || strings.HasPrefix(name, k) {
			near = append(near, k)
		}
	}
	if len(near) == 1 {
		return near[0]
	}
	return ""
}

// goTypeWords says a Go type of encoding/json's messages in TOML's words: "a number", "an
// integer", "a non-negative integer", "a string", "a boolean (true or false)", "an array", "a
// table"; ok is false for a type it does not know.
func goTypeWords(t string) (string, bool) {
	switch {
	case t == "float64" || t == "float32":
		return "a number", true
	case strings.HasPrefix(t, "uint"):
		return "a non-negative integer", true
	case strings.HasPrefix(t, "int"):
		return "an integer", true
	case t == "string":
		return "a string", true
	case t == "bool":
		return "a boolean (true or false)", true
	case strings.HasPrefix(t, "[]") || strings.HasPrefix(t, "["):
		return "an array", true
	case strings.HasPrefix(t, "map[") || strings.Contains(t, "."):
		return "a table", true
	}
	return "", false
}

// lookupKey finds a dotted key ("a.b") in a config table.
func lookupKey(config map[string]any, key string) (any, bool) {
	var v any = config
	for _, part := range strings.Split(key, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[part]; !ok {
			return nil, false
		}
	}
	return v, true
}

// leadingKey returns the key of config that words starts with, followed by " ", "[", ":" or
// "=" ("k = -1, want …", "edges[2] = …", "mode: …"), the longest first; "" when none.
func leadingKey(words string, config map[string]any) string {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(words, k); ok && rest != "" && strings.ContainsRune(" [:=", rune(rest[0])) {
			return k
		}
	}
	return ""
}
