package guest

import (
	"errors"
	"strconv"
	"strings"

	"github.com/genload/genload/sdk/abi"
)

// Field is one key of a flat config read by Env.DecodeFields: its JSON name and the variable
// its value goes to (made by FloatField, IntField, BoolField or StringField).
type Field struct {
	Key  string
	kind string // the Go type named in errors: "float64", "int64", "bool", "string"
	f    *float64
	i    *int64
	b    *bool
	s    *string
}

// FloatField is a key whose value is any JSON number, stored in *p.
func FloatField(key string, p *float64) Field { return Field{Key: key, kind: "float64", f: p} }

// IntField is a key whose value is a JSON integer (no fraction or exponent) in int64's range,
// stored in *p.
func IntField(key string, p *int64) Field { return Field{Key: key, kind: "int64", i: p} }

// BoolField is a key whose value is true or false, stored in *p.
func BoolField(key string, p *bool) Field { return Field{Key: key, kind: "bool", b: p} }

// StringField is a key whose value is a JSON string, stored in *p.
func StringField(key string, p *string) Field { return Field{Key: key, kind: "string", s: p} }

// DecodeFields decodes the plugin's config, a JSON object of numbers, booleans and strings,
// into fields, as Decode does into a struct of those fields' types (json tags the keys) — the
// same errors, of status abi.BadInput, which the host words in bench.toml's terms: an unknown
// key is `config: json: unknown field "kk" (known keys: k, normalize)`, a value of the wrong
// type `config: json: cannot unmarshal string into Go struct field config.k of type float64`.
// Keys match exactly or else case-insensitively (as encoding/json's); a key absent or null
// leaves its variable as it was, so set defaults first. It needs neither encoding/json nor fmt
// nor reflect, which a module that never calls Decode then does not contain.
func (e *Env) DecodeFields(fields ...Field) error {
	e.decoded = true
	err := members(e.config, func(key string, val []byte) error {
		f := findField(fields, key)
		if f == nil {
			known := "none"
			if len(fields) > 0 {
				ks := make([]string, len(fields))
				for i, f := range fields {
					ks[i] = f.Key
				}
				known = strings.Join(ks, ", ")
			}
			return errors.New(`json: unknown field "` + key + `" (known keys: ` + known + ")")
		}
		return f.set(val)
	})
	if err != nil {
		return &StatusError{Status: abi.BadInput, Err: errors.New("config: " + err.Error())}
	}
	return nil
}

// findField is the field of key: the one named exactly so, else the first whose name equals
// it case-insensitively; nil when none.
func findField(fields []Field, key string) *Field {
	for i := range fields {
		if fields[i].Key == key {
			return &fields[i]
		}
	}
	for i := range fields {
		if strings.EqualFold(fields[i].Key, key) {
			return &fields[i]
		}
	}
	return nil
}

// set stores the raw JSON value val in f's variable.
func (f *Field) set(val []byte) error {
	if string(val) == "null" {
		return nil
	}
	what := jsonType(val)
	switch {
	case f.f != nil && what == "number":
		v, err := strconv.ParseFloat(string(val), 64)
		if err != nil {
			return f.mismatch("number " + string(val))
		}
		*f.f = v
	case f.i != nil && what == "number":
		v, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil {
			return f.mismatch("number " + string(val))
		}
		*f.i = v
	case f.b != nil && what == "bool":
		*f.b = val[0] == 't'
	case f.s != nil && what == "string":
		s, err := unquote(val)
		if err != nil {
			return err
		}
		*f.s = s
	default:
		return f.mismatch(what)
	}
	return nil
}

// mismatch is encoding/json's error for a value (its JSON type, and for numbers the literal)
// that does not fit f.
func (f *Field) mismatch(what string) error {
	return errors.New("json: cannot unmarshal " + what + " into Go struct field config." + f.Key + " of type " + f.kind)
}

// jsonType names the JSON type of a raw value as encoding/json's errors do.
func jsonType(val []byte) string {
	switch val[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case '[':
		return "array"
	case '{':
		return "object"
	}
	return "number"
}
