// Package guest is the guest-side runtime of the genload plugin ABI v1 shared by sdk/lengths and
// sdk/router: the registry of the module's one plugin, pinned buffers, the info/init/last-error
// exports and the panic-to-status guard. Everything except the thin //go:wasmexport wrappers in
// exports_wasip1.go is plain Go, so it is tested natively.
package guest

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
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

	config  []byte // the envelope's "config" value, raw JSON
	decoded bool
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

// Error returns an error of the given status with message msg.
func Error(s abi.Status, msg string) error {
	return &StatusError{Status: s, Err: errors.New(msg)}
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
		panic("genload sdk: plugin " + strconv.Quote(info.Name) + " registered twice (already " + strconv.Quote(the.info.Name) + ")")
	}
	the = plugin{kind: kind, info: info, infoJSON: infoDoc(kind, info), setup: setup}
}

// infoDoc is the genload_info JSON of info (abi.InfoDoc's fields in order, caps [] when none),
// written without encoding/json.
func infoDoc(kind string, info Info) []byte {
	b := append([]byte(`{"name":`), nil...)
	b = appendString(b, info.Name)
	b = append(b, `,"version":`...)
	b = appendString(b, info.Version)
	b = append(b, `,"kind":`...)
	b = appendString(b, kind)
	b = append(b, `,"abi_minor":`...)
	b = strconv.AppendInt(b, int64(abi.Minor), 10)
	b = append(b, `,"caps":[`...)
	for i, c := range info.Caps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, c)
	}
	return append(b, "]}"...)
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
			return 0, Error(abi.Unsupported, "no plugin registered: call lengths.Register or router.Register from an init function")
		}
		if the.initialised {
			return 0, Error(abi.BadInput, abi.Init+" called twice")
		}
		e, err := parseEnvelope(envelope)
		if err != nil {
			return 0, Error(abi.BadInput, "init envelope: "+err.Error())
		}
		if e.abi != 0 && e.abi != abi.Major {
			return 0, Error(abi.Unsupported, "host speaks ABI v"+strconv.FormatInt(e.abi, 10)+", plugin v"+strconv.Itoa(abi.Major))
		}
		if err := the.setup(&e.Env); err != nil {
			var se *StatusError
			if errors.As(err, &se) {
				return 0, err
			}
			return 0, &StatusError{Status: abi.BadInput, Err: err}
		}
		if !e.decoded {
			var keys []string
			if members(e.config, func(k string, _ []byte) error { keys = append(keys, k); return nil }) == nil && len(keys) > 0 {
				slices.Sort(keys)
				q := make([]string, len(keys))
				for i, k := range keys {
					q[i] = strconv.Quote(k)
				}
				return 0, Error(abi.BadInput, "config: plugin "+the.info.Name+" takes no config keys, got ["+strings.Join(q, " ")+"]")
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
			the.lastErr = append(append(append(append(the.lastErr[:0], "panic: "...), panicText(r)...), '\n'), stack()...)
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

// stack is the calling goroutine's stack trace (runtime/debug.Stack's, without importing
// runtime/debug, which imports fmt).
func stack() []byte {
	buf := make([]byte, 1024)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// RequireInit returns an abi.NotInitialised error unless Init succeeded.
func RequireInit() error {
	if !the.initialised {
		return Error(abi.NotInitialised, abi.Init+" has not succeeded yet")
	}
	return nil
}

// reset forgets the registered plugin (tests only).
func reset() { the = plugin{}; pins = newPinned(); resetAddr() }
