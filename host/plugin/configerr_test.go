package plugin

import (
	"errors"
	"testing"

	"github.com/genload/genload/sdk/abi"
)

// A plugin's refusal of its config, as its message words it (the Go SDK's, serde's, its own),
// said in bench.toml's words with the key at fault; any other error is left alone.
func TestConfigErrorsInTOMLWords(t *testing.T) {
	config := map[string]any{"k": "abc", "kk": int64(2), "n": 1.5, "edges": []any{int64(1)}, "mode": "x"}
	for _, tc := range []struct {
		msg, key, want string
	}{
		{`config: json: unknown field "kk" (known keys: k, normalize)`, "lengths.config.kk",
			"unknown key [lengths.config.kk] of plugin p; did you mean [lengths.config.k]?"},
		{`config: json: unknown field "nrm" (known keys: k, normalize)`, "lengths.config.nrm",
			"unknown key [lengths.config.nrm] of plugin p; its keys are k, normalize"},
		{`config: json: unknown field "norm" (known keys: k, normalize)`, "lengths.config.norm",
			"unknown key [lengths.config.norm] of plugin p; did you mean [lengths.config.normalize]?"},
		{`config: json: unknown field "mena" (known keys: mean, sd)`, "lengths.config.mena",
			"unknown key [lengths.config.mena] of plugin p; did you mean [lengths.config.mean]?"},
		{`config: json: unknown field "kk" (known keys: none)`, "lengths.config.kk",
			"unknown key [lengths.config.kk] of plugin p; it takes no config keys"},
		{`config: json: unknown field "kk"`, "lengths.config.kk",
			"unknown key [lengths.config.kk] of plugin p (see the plugin's documentation for its keys)"},
		{"unknown field `kk`, expected one of `k`, `normalize` at line 1 column 5", "lengths.config.kk",
			"unknown key [lengths.config.kk] of plugin p; did you mean [lengths.config.k]?"},
		{"unknown field `kk`, there are no fields at line 1 column 5", "lengths.config.kk",
			"unknown key [lengths.config.kk] of plugin p; it takes no config keys"},
		{`config: plugin p takes no config keys, got ["kk" "n"]`, "lengths.config.kk",
			"unknown key [lengths.config.kk] of plugin p; it takes no config keys"},
		{`config: json: cannot unmarshal string into Go struct field config.k of type float64`, "lengths.config.k",
			`[lengths.config.k] must be a number, not a string ("abc") (plugin p)`},
		{`config: json: cannot unmarshal number 1.5 into Go struct field config.n of type int`, "lengths.config.n",
			`[lengths.config.n] must be an integer, not a float (1.5) (plugin p)`},
		{`config: json: cannot unmarshal array into Go struct field cfg.edges of type float64`, "lengths.config.edges",
			`[lengths.config.edges] must be a number, not an array ([1]) (plugin p)`},
		{`config: k = -1, want a shape in [0.01, 10000]`, "lengths.config.k",
			"[lengths.config.k]: plugin p: k = -1, want a shape in [0.01, 10000]"},
		{`config: edges[2] = 5; edges must be ascending`, "lengths.config.edges",
			"[lengths.config.edges]: plugin p: edges[2] = 5; edges must be ascending"},
		{`config: counts sum to 0, want at least one prompt`, "lengths.config",
			"[lengths.config]: plugin p: counts sum to 0, want at least one prompt; fix the plugin's table (see the plugin's documentation for its keys)"},
	} {
		perr := &Error{Plugin: "p", Export: abi.Init, Status: abi.BadInput, Err: errors.New(tc.msg)}
		ce, ok := AsConfigError(perr, "lengths.config", config)
		if !ok || ce.Key != tc.key || ce.Error() != tc.want || !errors.Is(ce, perr) {
			t.Errorf("%q: %v key %q\n%q\nwant key %q\n%q", tc.msg, ok, ce.Key, ce.Error(), tc.key, tc.want)
		}
	}
	for _, err := range []error{
		&Error{Plugin: "p", Export: abi.Init, Status: abi.PluginError, Err: errors.New("config: k = -1")},
		&Error{Plugin: "p", Export: abi.Lengths, Status: abi.BadInput, Err: errors.New("config: k = -1")},
		errors.New("plugin file x.wasm: no such file"),
		nil,
	} {
		if _, ok := AsConfigError(err, "lengths.config", config); ok {
			t.Errorf("%v is called a config error", err)
		}
	}
}
