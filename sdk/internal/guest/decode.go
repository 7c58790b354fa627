package guest

import "github.com/genload/genload/sdk/abi"

// decoder is Env.Decode's JSON decoder (sdk/internal/jsonconfig.Decode), installed by package
// sdk: the guest runtime itself links neither encoding/json nor fmt nor reflect.
var decoder func(config []byte, v any) error

// SetDecoder installs Env.Decode's decoder (package sdk does, in an init function).
func SetDecoder(f func(config []byte, v any) error) { decoder = f }

// Decode decodes the plugin's config into v (a pointer to a struct with json tags; fields keep
// their values when the key is absent, so set defaults first). Unknown keys, wrong types and
// trailing data are errors of status abi.BadInput, e.g. `config: json: unknown field "meen"
// (known keys: mean, sd)` — the known keys are v's, so that the host can suggest the nearest.
// It uses encoding/json, which package sdk links in; a module that does not import package sdk
// gets an error of status abi.PluginError saying so (decode with DecodeFields instead).
func (e *Env) Decode(v any) error {
	e.decoded = true
	if len(e.config) == 0 || string(e.config) == "null" {
		return nil
	}
	if decoder == nil {
		return Error(abi.PluginError, "Env.Decode needs encoding/json: import github.com/genload/genload/sdk (or decode the config with Env.DecodeFields)")
	}
	if err := decoder(e.config, v); err != nil {
		return &StatusError{Status: abi.BadInput, Err: err}
	}
	return nil
}
