// Package jsonconfig is the SDK's encoding/json decoding of a plugin's config (Env.Decode). It
// is apart from the guest runtime so that a module links encoding/json, fmt and reflect only
// when it imports package sdk, which installs it (guest.SetDecoder); the bundled plugins use
// Env.DecodeFields through package sdk/plain and contain none of them.
package jsonconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Decode decodes the config (raw JSON, not empty or null) into v, a pointer to a struct with
// json tags, rejecting unknown keys and trailing data. An unknown key's error lists v's keys,
// e.g. `config: json: unknown field "meen" (known keys: mean, sd)`, so that the host can
// suggest the nearest; every error starts with "config: ".
func Decode(config []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			known := "none"
			if ks := jsonKeys(reflect.TypeOf(v)); len(ks) > 0 {
				known = strings.Join(ks, ", ")
			}
			return fmt.Errorf("config: %w (known keys: %s)", err, known)
		}
		return fmt.Errorf("config: %w", err)
	}
	if len(bytes.TrimLeft(config[dec.InputOffset():], " \t\r\n")) != 0 { // Decoder.More misses a stray '}' or ']'
		return errors.New("config: trailing data after the JSON object")
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
