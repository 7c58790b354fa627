// Package plain is the Go SDK's names (see package github.com/genload/genload/sdk) for a plugin
// that links neither encoding/json nor fmt nor reflect: its config is decoded with
// Env.DecodeFields (flat keys of numbers, booleans and strings, with encoding/json's errors)
// and its errors are made with BadInput from a message, not a format. Those three packages are
// more than a third of a small Go plugin: uniform is 2.13 MB with this package against 3.40 MB
// with package sdk, and genload compiles, maps and keeps every byte of a loaded module (the bundled
// plugins gamma, uniform and router-rr use this package). Env.Decode is available only when
// package sdk is imported too.
package plain

import (
	"github.com/genload/genload/sdk/abi"
	"github.com/genload/genload/sdk/internal/guest"
)

// Info names and versions a plugin (sdk.Info: the same type).
type Info = guest.Info

// Env is what the plugin's setup function receives (sdk.Env: the same type).
type Env = guest.Env

// Field is one key of a flat config for Env.DecodeFields, made by Float, Int, Bool or String.
type Field = guest.Field

// Capabilities for Info.Caps (sdk.CapPure, sdk.CapCompletions).
const (
	CapPure        = abi.CapPure
	CapCompletions = abi.CapCompletions
)

// Float is the config key key, any JSON (TOML) number, stored in *p.
func Float(key string, p *float64) Field { return guest.FloatField(key, p) }

// Int is the config key key, an integer in int64's range, stored in *p.
func Int(key string, p *int64) Field { return guest.IntField(key, p) }

// Bool is the config key key, true or false, stored in *p.
func Bool(key string, p *bool) Field { return guest.BoolField(key, p) }

// String is the config key key, a string, stored in *p.
func String(key string, p *string) Field { return guest.StringField(key, p) }

// BadInput returns an error of status 1 "bad input" (the host's arguments or the config are
// wrong) with message msg, as sdk.BadInput does with a formatted one.
func BadInput(msg string) error { return guest.Error(abi.BadInput, msg) }
