package guest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/genload/genload/sdk/abi"
	"github.com/genload/genload/sdk/internal/jsonconfig"
)

// The guest's own tests decode as package sdk does.
func init() { SetDecoder(jsonconfig.Decode) }

// Without package sdk's decoder, Decode says what to import instead of decoding nothing.
func TestDecodeWithoutDecoder(t *testing.T) {
	defer SetDecoder(decoder)
	SetDecoder(nil)
	e := &Env{config: []byte(`{"k":1}`)}
	var c cfg
	err := e.Decode(&c)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != abi.PluginError || !strings.Contains(err.Error(), "import github.com/genload/genload/sdk") {
		t.Errorf("Decode without a decoder = %v, want a plugin error naming package sdk", err)
	}
	if err := (&Env{}).Decode(&c); err != nil {
		t.Errorf("Decode of no config without a decoder = %v, want nil", err)
	}
}

// The info document is encoding/json's marshalling of abi.InfoDoc, byte for byte, for names
// that need escaping too.
func TestInfoDocIsJSONs(t *testing.T) {
	for _, info := range []Info{
		{Name: "rr", Version: "1.2.3", Caps: []string{"completions"}},
		{Name: "", Version: ""},
		{Name: "a\"b\\c\n\t<&>\x01é\u2028\xff", Version: "v\u2029", Caps: []string{"pure", "x y"}},
	} {
		doc := abi.InfoDoc{Name: info.Name, Version: info.Version, Kind: abi.KindLengths, ABIMinor: abi.Minor, Caps: info.Caps}
		if doc.Caps == nil {
			doc.Caps = []string{}
		}
		want, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if got := infoDoc(abi.KindLengths, info); string(got) != string(want) {
			t.Errorf("infoDoc(%+v) = %s, want %s", info, got, want)
		}
	}
}

// config is DecodeFields' counterpart struct for the differential tests: the same keys,
// decoded by encoding/json.
type config struct {
	K         float64 `json:"k"`
	Start     int64   `json:"start"`
	Normalize bool    `json:"normalize"`
	Mode      string  `json:"mode"`
}

func (c *config) fields() []Field {
	return []Field{FloatField("k", &c.K), IntField("start", &c.Start), BoolField("normalize", &c.Normalize), StringField("mode", &c.Mode)}
}

// decodeBoth decodes config with DecodeFields and with encoding/json (Decode) from the same
// defaults.
func decodeBoth(raw []byte) (gotC, wantC config, got, want error) {
	gotC = config{K: 0.9, Normalize: true, Mode: "m"}
	wantC = gotC
	got = (&Env{config: raw}).DecodeFields(gotC.fields()...)
	want = (&Env{config: raw}).Decode(&wantC)
	return
}

// DecodeFields agrees with Decode (encoding/json) on values, on which configs are refused, and
// word for word on the errors the host reads: unknown keys and wrong types.
func TestDecodeFieldsAgreesWithDecode(t *testing.T) {
	for _, c := range []string{
		`{}`, `null`, ` { "k" : 2.5 , "start":7,"normalize":false,"mode":"a\"\u00e9\ud83d\ude00"} `,
		`{"K":3}`, `{"k":1e3,"k":4}`, `{"start":null}`, `{"k":-0.0}`, `{"start":-9223372036854775808}`,
		`{"kk":2}`, `{"k":"x"}`, `{"k":true}`, `{"k":[1]}`, `{"k":{}}`, `{"start":1.5}`, `{"start":1e2}`,
		`{"start":9223372036854775808}`, `{"normalize":1}`, `{"mode":3}`, `{"k":1e999}`,
		`{"k":1`, `{"k":1}x`, `[1]`, `{"k":01}`, `{"k":.5}`, `{"k":1.}`, `{"k":-}`, `{"k":1,}`, `{,}`, `{"a\x01":1}`, "{\"mode\":\"a\x01\"}",
	} {
		gotC, wantC, got, want := decodeBoth([]byte(c))
		if (got == nil) != (want == nil) {
			t.Errorf("%s: DecodeFields %v, Decode %v", c, got, want)
			continue
		}
		if got == nil && gotC != wantC {
			t.Errorf("%s: DecodeFields %+v, Decode %+v", c, gotC, wantC)
		}
		var se *StatusError
		if got != nil && (!errors.As(got, &se) || se.Status != abi.BadInput) {
			t.Errorf("%s: DecodeFields error %v is not bad input", c, got)
		}
		if w := errString(want); got != nil && (strings.Contains(w, "unknown field") || strings.Contains(w, "Go struct field")) && !strings.HasPrefix(w, got.Error()) {
			t.Errorf("%s: DecodeFields says %q, Decode %q", c, got, w)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzDecodeFields holds DecodeFields to encoding/json on arbitrary configs: the same values
// when both accept, and both refuse the same inputs.
func FuzzDecodeFields(f *testing.F) {
	for _, s := range []string{`{"k":2,"start":3,"normalize":false,"mode":"x"}`, `{"kk":1}`, `{"k":"\u00"}`, `{"mode":"\ud800\udc00\ud800"}`, `{"k":[{"a":[]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, config []byte) {
		if len(config) == 0 || string(config) == "null" {
			return // Decode's early return; DecodeFields treats them alike (tested above)
		}
		gotC, wantC, got, want := decodeBoth(config)
		if (got == nil) != (want == nil) {
			t.Fatalf("%q: DecodeFields %v, Decode %v", config, got, want)
		}
		if got == nil && gotC != wantC {
			t.Fatalf("%q: DecodeFields %+v, Decode %+v", config, gotC, wantC)
		}
	})
}

// envStruct is parseEnvelope's encoding/json counterpart.
type envStruct struct {
	ABI      int             `json:"abi"`
	ABIMinor int             `json:"abi_minor"`
	Host     string          `json:"host"`
	Seed     uint64          `json:"seed"`
	Config   json.RawMessage `json:"config"`
}

// FuzzEnvelope holds parseEnvelope to encoding/json's decoding into the envelope's struct.
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{`{"abi":1,"abi_minor":0,"host":"genload","seed":18446744073709551615,"config":{"k":2}}`, `{"SEED":3,"Host":"h\u0041","x":[1,{}]}`, `{"seed":-1}`, `{"abi":"1"}`, `null`, `{"config":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want envStruct
		werr := json.Unmarshal(b, &want)
		got, gerr := parseEnvelope(b)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: parseEnvelope %v, encoding/json %v", b, gerr, werr)
		}
		if gerr != nil {
			return
		}
		if got.abi != int64(want.ABI) || got.ABIMinor != want.ABIMinor || got.Host != want.Host || got.Seed != want.Seed || string(got.config) != string(want.Config) && !(len(got.config) == 0 && string(want.Config) == "null") {
			t.Fatalf("%q: parseEnvelope %+v (abi %d), encoding/json %+v", b, got.Env, got.abi, want)
		}
	})
}
