// Package guest is the guest-side runtime of the genload plugin ABI v1 shared by sdk/lengths and
// sdk/router: the registry of the module's one plugin, pinned buffers, the info/init/last-error
// exports and the panic-to-status guard. Everything except the thin //go:wasmexport wrappers in
// exports_wasip1.go is plain Go, so it is tested natively.
package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/genload/genload/sdk/abi"
)

// Info describes a plugin; the SDK adds the kind and ABI minor version and serves it as the
// genload_info JSON.
type Info struct {
	// Name is the plugin's short name, e.g. "gamma"; the host shows it in every error.
	Name string
	// Version is the plugin's own version, e.g. "1.0.0".
	Version string
	// Caps lists ABI capabilities such as abi.CapPure or abi.CapCompletions.
	Caps []string
}

// Env is what a plugin's setup function receives at genload_init: the run seed, the host's ABI
// minor version, and its config (the plugin's bench.toml table) to decode with Decode.
type Env struct {
	// Seed is the run seed (same seed → same plugin output).
	Seed uint64
	// ABIMinor is the host's ABI minor version.
	ABIMinor int
	// Host names the host program, e.g. "genload".
	Host string

	config  json.RawMessage
	decoded bool
}

// Decode decodes the plugin's config into v (a pointer to a struct with json tags; fields keep
// their values when the key is absent, so set defaults first). Unknown keys, wrong types and
// trailing data are errors of status abi.BadInput, e.g. `config: json: unknown field "meen"
// (known keys: mean, sd)` — the known keys are v's, so that the host can suggest the nearest.
func (e *Env) Decode(v any) error {
	e.decoded = true
	if len(e.config) == 0 || bytes.Equal(e.config, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(e.config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			known := "none"
			if ks := jsonKeys(reflect.TypeOf(v)); len(ks) > 0 {
				known = strings.Join(ks, ", ")
			}
			return &StatusError{Status: abi.BadInput, Err: fmt.Errorf("config: %w (known keys: %s)", err, known)}
		}
		return &StatusError{Status: abi.BadInput, Err: fmt.Errorf("config: %w", err)}
	}
	if dec.More() {
		return &StatusError{Status: abi.BadInput, Err: errors.New("config: trailing data after the JSON object")}
	}
	return nil
}

// jsonKeys lists the keys encoding/json decodes into struct type t (through pointers and
// embedded structs): each exported field's json name, in field order; none for a type that is
// not a struct.
func jsonKeys(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			keys = append(keys, jsonKeys(f.Type)...)
		case !f.IsExported():
		case name == "":
			keys = append(keys, f.Name)
		default:
			keys = append(keys, name)
		}
	}
	return keys
}

// StatusError carries an ABI status code; errors without one map to abi.PluginError.
type StatusError struct {
	Status abi.Status
	Err    error
}

// Error returns the wrapped message.
func (e *StatusError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *StatusError) Unwrap() error { return e.Err }

// Errorf returns an error of the given status with a formatted message.
func Errorf(s abi.Status, format string, args ...any) error {
	return &StatusError{Status: s, Err: fmt.Errorf(format, args...)}
}

// plugin is the module's one registered plugin.
type plugin struct {
	kind        string
	info        Info
	infoJSON    []byte
	setup       func(env *Env) error
	initialised bool
	lastErr     []byte
}

var the plugin

// Register records the module's plugin; kind packages call it from their Register functions,
// which plugin authors call from an init function (c-shared modules never run main). A second
// registration panics, which makes _initialize trap with the message on stderr.
func Register(kind string, info Info, setup func(env *Env) error) {
	if the.setup != nil {
		panic(fmt.Sprintf("genload sdk: plugin %q registered twice (already %q)", info.Name, the.info.Name))
	}
	doc := abi.InfoDoc{Name: info.Name, Version: info.Version, Kind: kind, ABIMinor: abi.Minor, Caps: info.Caps}
	if doc.Caps == nil {
		doc.Caps = []string{}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	the = plugin{kind: kind, info: info, infoJSON: b, setup: setup}
}

// HasCap reports whether the registered plugin declared capability c.
func HasCap(c string) bool {
	for _, x := range the.info.Caps {
		if x == c {
			return true
		}
	}
	return false
}

// InfoJSON returns the info document (genload_info); a module without a registered plugin
// returns {"name":"","kind":""}, which the host rejects with a message.
func InfoJSON() []byte {
	if the.infoJSON == nil {
		return []byte(`{"name":"","version":"","kind":"","abi_minor":0,"caps":[]}`)
	}
	return the.infoJSON
}

// LastError returns the message of the last failed call (empty after a successful one).
func LastError() []byte { return the.lastErr }

// Initialised reports whether Init succeeded.
func Initialised() bool { return the.initialised }

// Init implements genload_init on the envelope bytes: decode, run the plugin's setup, and check
// that a non-empty config was decoded.
func Init(envelope []byte) int32 {
	return Guard(func() (int32, error) {
		if the.setup == nil {
			return 0, Errorf(abi.Unsupported, "no plugin registered: call lengths.Register or router.Register from an init function")
		}
		if the.initialised {
			return 0, Errorf(abi.BadInput, "%s called twice", abi.Init)
		}
		var env struct {
			ABI      int             `json:"abi"`
			ABIMinor int             `json:"abi_minor"`
			Host     string          `json:"host"`
			Seed     uint64          `json:"seed"`
			Config   json.RawMessage `json:"config"`
		}
		if err := json.Unmarshal(envelope, &env); err != nil {
			return 0, Errorf(abi.BadInput, "init envelope: %w", err)
		}
		if env.ABI != 0 && env.ABI != abi.Major {
			return 0, Errorf(abi.Unsupported, "host speaks ABI v%d, plugin v%d", env.ABI, abi.Major)
		}
		e := &Env{Seed: env.Seed, ABIMinor: env.ABIMinor, Host: env.Host, config: env.Config}
		if err := the.setup(e); err != nil {
			var se *StatusError
			if errors.As(err, &se) {
				return 0, err
			}
			return 0, &StatusError{Status: abi.BadInput, Err: err}
		}
		if !e.decoded {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(env.Config, &m); err == nil && len(m) > 0 {
				keys := make([]string, 0, len(m))
				for k := range m {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				return 0, Errorf(abi.BadInput, "config: plugin %s takes no config keys, got %q", the.info.Name, keys)
			}
		}
		the.initialised = true
		return 0, nil
	})
}

// Guard runs one export body: it clears the last error, converts a returned error into a negated
// status (setting the last error) and a panic into -abi.PluginError with the panic value and
// stack as the last error. The instance stays usable either way.
func Guard(body func() (int32, error)) (rc int32) {
	the.lastErr = the.lastErr[:0]
	defer func() {
		if r := recover(); r != nil {
			the.lastErr = fmt.Appendf(the.lastErr[:0], "panic: %v\n%s", r, debug.Stack())
			rc = -int32(abi.PluginError)
		}
	}()
	n, err := body()
	if err != nil {
		status := abi.PluginError
		var se *StatusError
		if errors.As(err, &se) {
			status = se.Status
		}
		the.lastErr = append(the.lastErr[:0], err.Error()...)
		return -int32(status)
	}
	return n
}

// RequireInit returns an abi.NotInitialised error unless Init succeeded.
func RequireInit() error {
	if !the.initialised {
		return Errorf(abi.NotInitialised, "%s has not succeeded yet", abi.Init)
	}
	return nil
}

// reset forgets the registered plugin (tests only).
func reset() { the = plugin{}; pins = newPinned(); resetAddr() }
