package config

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/agnivade/levenshtein"
	"github.com/genload/genload/host/internal/tomlwords"
)

// This file words bench.toml's mistakes in TOML's terms: what a key must hold ("an array of
// integers") against what the file gives ("an integer (300)"), and the known key nearest to an
// unknown one.

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// fieldType returns the Go type bench.toml's dotted key decodes into (array-of-tables keys
// such as "workers.name" name the element's field), and false for a key genload does not know
// or one inside a free-form table ([labels], [lengths.config]).
func fieldType(key string) (reflect.Type, bool) {
	t := reflect.TypeFor[Config]()
	for _, part := range strings.Split(key, ".") {
		for t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil, false
		}
		f, ok := fieldByTag(t, part)
		if !ok {
			return nil, false
		}
		t = f.Type
	}
	return t, true
}

// fieldByTag finds the field of struct type t whose toml tag is name.
func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("toml"), ","); tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// wantWords describes in TOML's terms what a value of Go type t must be: "an integer", "a
// non-negative integer", "a float" (an integer is accepted), "a string", "a boolean", "a
// duration string such as \"2s\"", "an array of integers", "a table", "an array of tables".
func wantWords(t reflect.Type) string {
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		if t == reflect.TypeFor[Duration]() || t == reflect.TypeFor[time.Duration]() {
			return `a duration string such as "2s" or "500ms"`
		}
		return "a string"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Map, reflect.Interface:
		return "a table"
	case reflect.Struct:
		return "a table"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Struct {
			return "an array of tables"
		}
		return "an array of " + plural(wantWords(t.Elem()))
	}
	return t.String()
}

// plural turns "an integer" into "integers", "an array of integers" into "arrays of integers".
func plural(w string) string {
	w = strings.TrimPrefix(strings.TrimPrefix(w, "an "), "a ")
	head, rest, _ := strings.Cut(w, " ")
	if rest != "" {
		return head + "s " + rest
	}
	return head + "s"
}

// fits reports whether the decoded TOML value v is what Go type t takes, as the TOML decoder
// does (an integer for a float, a string for a text type).
func fits(v any, t reflect.Type) bool {
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		_, ok := v.(string)
		return ok
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		_, ok := v.(int64)
		return ok
	case reflect.Float32, reflect.Float64:
		switch v.(type) {
		case int64, float64:
			return true
		}
		return false
	case reflect.String:
		_, ok := v.(string)
		return ok
	case reflect.Bool:
		_, ok := v.(bool)
		return ok
	case reflect.Struct, reflect.Map:
		_, ok := v.(map[string]any)
		return ok
	case reflect.Slice, reflect.Array:
		switch x := v.(type) {
		case []map[string]any:
			return t.Elem().Kind() == reflect.Struct
		case []any:
			for _, e := range x {
				if !fits(e, t.Elem()) {
					return false
				}
			}
			return true
		}
		return false
	}
	return true
}

// typeMismatch words a type error of key (a dotted key of src) as "must be WANT, not GOT",
// pointing at the element at fault in an array ("element 2 is a string (\"a\")") and, for a
// scalar given where an array is wanted, at the fix ("write [300]"). ok is false when the
// value cannot be found or the key is unknown: the caller keeps the decoder's words.
func typeMismatch(src []byte, key string) (string, bool) {
	t, known := fieldType(key)
	if !known {
		return "", false
	}
	var doc map[string]any
	if _, err := toml.Decode(string(src), &doc); err != nil {
		return "", false
	}
	v, found := lookup(doc, strings.Split(key, "."), t)
	if !found {
		return "", false
	}
	want := wantWords(t)
	if arr, ok := v.([]any); ok && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		for i, e := range arr {
			if !fits(e, t.Elem()) {
				return fmt.Sprintf("must be %s; element %d is %s", want, i+1, tomlwords.Value(e)), true
			}
		}
	}
	msg := fmt.Sprintf("must be %s, not %s", want, tomlwords.Value(v))
	if t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Struct && fits(v, t.Elem()) {
		msg += fmt.Sprintf("; write [%v]", tomlScalar(v))
	}
	return msg, true
}

// tomlScalar writes a scalar as TOML would.
func tomlScalar(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// lookup finds the value at path in a decoded document; through an array of tables it
// returns the first element's value that does not fit t (else the first one found).
func lookup(doc map[string]any, path []string, t reflect.Type) (any, bool) {
	v, ok := doc[path[0]]
	if !ok {
		return nil, false
	}
	if len(path) == 1 {
		return v, true
	}
	switch x := v.(type) {
	case map[string]any:
		return lookup(x, path[1:], t)
	case []map[string]any:
		var first any
		found := false
		for _, e := range x {
			if ev, ok := lookup(e, path[1:], t); ok {
				if !fits(ev, t) {
					return ev, true
				}
				if !found {
					first, found = ev, true
				}
			}
		}
		return first, found
	}
	return nil, false
}

// knownKeys lists every dotted key of bench.toml genload reads (tables and their keys;
// array-of-tables keys without an index), not the free-form tables' contents.
func knownKeys() []string {
	var keys []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(textUnmarshaler) {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			k := tag
			if prefix != "" {
				k = prefix + "." + tag
			}
			keys = append(keys, k)
			walk(k, f.Type)
		}
	}
	walk("", reflect.TypeFor[Config]())
	return keys
}

// suggestKey returns the known key an unknown one was probably meant to be, or "": a key of
// the same table within 2 edits and fewer than half the name's characters ([max_tokns] →
// [max_tokens]), else the same name in another table ([seq_lens] at the top → [matrix.seq_lens]).
func suggestKey(key string) string {
	parent, name := "", key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		parent, name = key[:i], key[i+1:]
	}
	keys := knownKeys()
	best, bestD := "", 3
	for _, k := range keys {
		kp, kn := "", k
		if i := strings.LastIndexByte(k, '.'); i >= 0 {
			kp, kn = k[:i], k[i+1:]
		}
		if kp != parent {
			continue
		}
		if d := levenshtein.ComputeDistance(name, kn); d < bestD && 2*d < len([]rune(name)) {
			best, bestD = k, d
		}
	}
	if best != "" {
		return best
	}
	// A name cut short ([matrix.batch] for [matrix.batch_sizes]): the one key it begins.
	var longer []string
	for _, k := range keys {
		if strings.HasPrefix(k, key) && len(name) >= 3 && !strings.Contains(k[len(key):], ".") {
			longer = append(longer, k)
		}
	}
	if len(longer) == 1 {
		return longer[0]
	}
	var elsewhere []string
	for _, k := range keys {
		if strings.HasSuffix(k, "."+name) || (k == name && parent != "") {
			elsewhere = append(elsewhere, k)
		}
	}
	if len(elsewhere) == 1 {
		return elsewhere[0]
	}
	return ""
}
