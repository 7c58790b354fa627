package tokenizer

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"
)

// The goldens in testdata/golden/ come from oracle/oracle.mjs (Hugging Face tokenizers 0.23.2,
// the Rust library) on the files oracle/fetch.sh puts in the cache; testdata/texts.json and
// texts_fuzz2.json are the corpora (oracle/gen_texts.mjs, gen_fuzz2.mjs).

// corpusText is one entry of testdata/texts*.json; long texts are a recipe.
type corpusText struct {
	Name     string  `json:"name"`
	Class    string  `json:"class"`
	Text     *string `json:"text"`
	Repeat   string  `json:"repeat"`
	MinUTF16 int     `json:"min_utf16"`
}

// expand mirrors expandText of oracle/texts.mjs: repeat until the UTF-16 length reaches
// min_utf16.
func (c corpusText) expand() string {
	if c.Text != nil {
		return *c.Text
	}
	var b strings.Builder
	n, unit := 0, len(utf16.Encode([]rune(c.Repeat)))
	for n < c.MinUTF16 {
		b.WriteString(c.Repeat)
		n += unit
	}
	return b.String()
}

var corpusOnce = sync.OnceValues(func() (map[string]string, error) {
	out := map[string]string{}
	// the project corpus rows (read as a file: the goldens pin their text by SHA-256)
	if b, err := os.ReadFile(filepath.Join("..", "..", "corpus", "prompts.jsonl")); err == nil {
		for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r struct{ ID, Text string }
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return nil, fmt.Errorf("corpus/prompts.jsonl:%d: %w", i+1, err)
			}
			out["corpus/"+r.ID] = r.Text
		}
	}
	for _, f := range []string{"texts.json", "texts_unicode.json", "texts_fuzz2.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			return nil, err
		}
		var ts []corpusText
		if err := json.Unmarshal(b, &ts); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, t := range ts {
			out[t.Name] = t.expand()
		}
	}
	return out, nil
})

type goldenHeader struct {
	Tokenizer string  `json:"tokenizer"`
	Source    string  `json:"source"`
	VocabSize int     `json:"vocab_size"`
	SpBefore  []int32 `json:"sp_before"`
	SpAfter   []int32 `json:"sp_after"`
}

type goldenText struct {
	Name          string  `json:"name"`
	TextSHA256    string  `json:"text_sha256"`
	IDs           []int32 `json:"ids"`
	N             int     `json:"n"`
	SHA256        string  `json:"sha256"`
	Dec           *string `json:"dec"`
	DecSHA256     string  `json:"dec_sha256"`
	DecSkip       *string `json:"dec_skip"`
	DecSkipSHA256 string  `json:"dec_skip_sha256"`
	Windows       []struct {
		IDs []int32 `json:"ids"`
		Dec string  `json:"dec"`
	} `json:"windows"`
}

func readGolden(t testing.TB, name string) (goldenHeader, []goldenText) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "golden", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	var h goldenHeader
	var rows []goldenText
	for i := 0; sc.Scan(); i++ {
		if i == 0 {
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
				t.Fatalf("golden %s header: %v", name, err)
			}
			continue
		}
		var g goldenText
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("golden %s line %d: %v", name, i+1, err)
		}
		rows = append(rows, g)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return h, rows
}

func idsSHA(ids []int32) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(id)))
	}
	s := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(s[:])
}

func strSHA(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// cacheDir is where oracle/fetch.sh puts the tokenizer files.
func cacheDir() string {
	if d := os.Getenv("GENLOAD_TOKENIZER_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "genload", "tokenizers")
}

var loaded sync.Map // name -> *Tokenizer

// tokenizerFor returns the embedded tokenizer for "qwen3" and the cached files otherwise,
// skipping the test when the cache lacks them.
func tokenizerFor(t testing.TB, name string) *Tokenizer {
	t.Helper()
	if name == "qwen3" {
		tk, err := Default()
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	if v, ok := loaded.Load(name); ok {
		return v.(*Tokenizer)
	}
	variants := readVariants(t)
	base := name
	if v, ok := variants[name]; ok {
		base = v.Base
	}
	dir := filepath.Join(cacheDir(), base)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Skipf("tokenizer %s not in the cache %s: run host/tokenizer/oracle/fetch.sh (or set GENLOAD_TOKENIZER_CACHE)", base, cacheDir())
	}
	var tk *Tokenizer
	var err error
	if v, ok := variants[name]; ok {
		tk, err = loadVariant(dir, name, v.Set)
	} else {
		tk, err = Load(dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	loaded.Store(name, tk)
	return tk
}

var goldenTokenizers = []string{"llama3", "llama3_1", "qwen3", "deepseek_v3", "gptoss", "gemma3", "llama2",
	"llama2_metaspace_first", "llama2_metaspace_always", "llama2_metaspace_never", "llama2_metaspace_legacy"}

// variant is an entry of oracle/variants.json: a fetched tokenizer with top-level components
// replaced.
type variant struct {
	Base string                     `json:"base"`
	Set  map[string]json.RawMessage `json:"set"`
}

func readVariants(t testing.TB) map[string]variant {
	b, err := os.ReadFile(filepath.Join("oracle", "variants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string]variant{}
	for k, v := range raw {
		if strings.HasPrefix(k, "_") {
			continue
		}
		var x variant
		if err := json.Unmarshal(v, &x); err != nil {
			t.Fatalf("variants.json %s: %v", k, err)
		}
		out[k] = x
	}
	return out
}

// loadVariant builds the tokenizer.json of dir with the keys of set replaced, as
// oracle/texts.mjs loadTokenizerJSON does.
func loadVariant(dir, name string, set map[string]json.RawMessage) (*Tokenizer, error) {
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	for k, v := range set {
		top[k] = v
	}
	if b, err = json.Marshal(top); err != nil {
		return nil, err
	}
	tcPath := filepath.Join(dir, "tokenizer_config.json")
	tc, err := os.ReadFile(tcPath)
	if err != nil {
		return nil, err
	}
	return build(name, name+"/tokenizer.json", b, tcPath, tc, "", nil)
}

// TestGoldenIDs compares Encode, EncodeSpecial and Decode with the Rust reference on the
// 535-text main corpus (ids in full; the two 200k-character texts by count and SHA-256) and
// the 3000-string fuzz corpus (count and SHA-256), for every tokenizer.
func TestGoldenIDs(t *testing.T) {
	texts, err := corpusOnce()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range goldenTokenizers {
		t.Run(name, func(t *testing.T) {
			tk := tokenizerFor(t, name)
			h, rows := readGolden(t, name)
			if tk.VocabSize() != h.VocabSize {
				t.Errorf("VocabSize() = %d, golden %d", tk.VocabSize(), h.VocabSize)
			}
			var idsOK, decOK, total, fuzz, uni, corpusRows, stale int
			for _, g := range rows {
				if g.Windows != nil {
					for i, w := range g.Windows {
						if got := tk.Decode(w.IDs, false); got != w.Dec {
							t.Errorf("window %d %v: Decode = %q, want %q", i, w.IDs, got, w.Dec)
						}
					}
					continue
				}
				text, ok := texts[g.Name]
				if g.TextSHA256 != "" && (!ok || strSHA(text) != g.TextSHA256) {
					stale++ // a corpus row changed or vanished: regenerate with oracle/oracle.mjs
					continue
				}
				if !ok {
					t.Fatalf("golden text %q not in the corpus", g.Name)
				}
				if g.TextSHA256 != "" {
					corpusRows++
				}
				total++
				if strings.HasPrefix(g.Name, "fuzz2/") {
					fuzz++
				}
				if strings.HasPrefix(g.Name, "unicode/") {
					uni++
				}
				ids := tk.Encode(text)
				if g.IDs != nil || g.SHA256 == "" {
					if !slices.Equal(ids, g.IDs) && !(len(ids) == 0 && len(g.IDs) == 0) {
						t.Errorf("%s: Encode(%.80q) =\n  %v\nwant\n  %v", g.Name, text, ids, g.IDs)
						continue
					}
				} else if len(ids) != g.N || idsSHA(ids) != g.SHA256 {
					t.Errorf("%s: Encode(%.80q): %d ids (sha %s), want %d (sha %s); ids %v", g.Name, text, len(ids), idsSHA(ids)[:12], g.N, g.SHA256[:12], ids[:min(len(ids), 200)])
					continue
				}
				idsOK++
				// add_special_tokens=true on the short texts (doing it on the 3,258 hashed ones too would double the time)
				if g.IDs != nil {
					sp := tk.EncodeSpecial(text, true)
					if want := slices.Concat(h.SpBefore, ids, h.SpAfter); !slices.Equal(sp, want) && len(want) > 0 {
						t.Errorf("%s: EncodeSpecial(true) = %v, want %v", g.Name, sp[:min(len(sp), 20)], want[:min(len(want), 20)])
					}
				}
				dec, decSkip := tk.Decode(ids, false), tk.Decode(ids, true)
				ok = true
				switch {
				case g.Dec != nil:
					ok = dec == *g.Dec
				case g.DecSHA256 != "":
					ok = strSHA(dec) == g.DecSHA256
				default: // round trip
					ok = dec == text
				}
				switch {
				case g.DecSkip != nil:
					ok = ok && decSkip == *g.DecSkip
				case g.DecSkipSHA256 != "":
					ok = ok && strSHA(decSkip) == g.DecSkipSHA256
				default:
					ok = ok && decSkip == dec
				}
				if !ok {
					t.Errorf("%s: Decode(false) = %.200q, Decode(true) = %.200q; golden %v %v", g.Name, dec, decSkip, g.Dec, g.DecSkip)
					continue
				}
				decOK++
			}
			t.Logf("%s: %d/%d texts id-for-id (%d fuzz, %d unicode, %d corpus rows), %d/%d decodes", name, idsOK, total, fuzz, uni, corpusRows, decOK, total)
			if stale > 0 {
				t.Logf("%s: %d corpus rows changed since the goldens were made: regenerate with host/tokenizer/oracle/oracle.mjs", name, stale)
			}
			if total < 4300 {
				t.Errorf("only %d golden texts, want >= 4300", total)
			}
		})
	}
}
