package guest

import (
	"errors"
	"strconv"
	"strings"
)

// envelope is genload_init's argument decoded: {"abi":1,"abi_minor":0,"host":"genload",
// "seed":N,"config":{…}} (sdk/ABI.md), the config kept raw for Decode and DecodeFields.
type envelope struct {
	Env
	abi int64
}

// parseEnvelope decodes the init envelope as encoding/json would into a struct of its fields:
// unknown keys ignored, keys matched case-insensitively, null or absent members left zero; a
// member of the wrong type or malformed JSON is an error.
func parseEnvelope(b []byte) (*envelope, error) {
	e := &envelope{}
	err := members(b, func(key string, val []byte) error {
		if string(val) == "null" {
			return nil
		}
		var err error
		switch strings.ToLower(key) {
		case "abi":
			e.abi, err = strconv.ParseInt(string(val), 10, 64)
		case "abi_minor":
			var v int64
			v, err = strconv.ParseInt(string(val), 10, 64)
			e.ABIMinor = int(v)
		case "host":
			if val[0] != '"' {
				return errors.New("host: want a string, got " + jsonType(val))
			}
			e.Host, err = unquote(val)
		case "seed":
			e.Seed, err = strconv.ParseUint(string(val), 10, 64)
		case "config":
			e.config = val
			return nil
		default:
			return nil
		}
		if err != nil {
			return errors.New(key + ": want an integer, got " + jsonType(val) + " " + string(val))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// panicText is a recovered panic value as the message of genload_last_error: an error's or a
// Stringer's text, a string, an integer, a float or a bool; other values (which only fmt and
// reflect could print) are named by their kind of nothing.
func panicText(r any) string {
	switch v := r.(type) {
	case error:
		return v.Error()
	case interface{ String() string }:
		return v.String()
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint:
		return strconv.FormatUint(uint64(v), 10)
	case uint32:
		return strconv.FormatUint(uint64(v), 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "nil"
	}
	return "a value of a type the SDK does not print (panic with an error or a string)"
}
