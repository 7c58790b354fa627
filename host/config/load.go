package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/genload/genload/host/exitcode"
)

// Load reads path over [Default]. Syntax errors, type errors and unknown keys are reported
// with path:line and the key; the returned error carries [exitcode.InvalidConfig]. Load does
// not call Validate (flags may still change the value).
func Load(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "read config: %w", err)
	}
	return Parse(path, src)
}

// jsonFile names what src is when it is JSON rather than TOML — "a genload results file" for a
// run's .json or .jsonl (a "schema" of genload.run), else "a JSON file" — and "" when it does
// not start with an object or an array of objects.
func jsonFile(src []byte) string {
	t := bytes.TrimSpace(src)
	if !bytes.HasPrefix(t, []byte("{")) && !bytes.HasPrefix(t, []byte("[{")) {
		return ""
	}
	head := t[:min(len(t), 4096)]
	if bytes.Contains(head, []byte(`"schema": "genload.`)) || bytes.Contains(head, []byte(`"schema":"genload.`)) {
		return "a genload results file (JSON)"
	}
	return "a JSON file"
}

// Parse decodes src (named path in messages) over [Default]. Errors as for [Load].
func Parse(path string, src []byte) (*Config, error) {
	c := Default()
	// Tables given in the file replace the defaults' plugin configs rather than merge into them.
	c.Lengths.Config, c.Router.Config = nil, nil
	md, err := toml.NewDecoder(bytes.NewReader(src)).Decode(c)
	c.File = path
	c.lines = keyLines(src)
	if err != nil {
		if what := jsonFile(src); what != "" {
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: %s, not a bench.toml (TOML): give the bench.toml to run with -c; a run's own configuration is in its results header, which genload run --resume FILE.jsonl reads", path, what)
		}
		var pe toml.ParseError
		if errors.As(err, &pe) {
			line := pe.Position.Line
			if strings.Contains(pe.Message, `'\n'`) && line > 1 {
				line-- // the parser stands on the next line when the newline itself is unexpected
			}
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s:%d: %s", path, line, cleanTOMLError(pe, c.lines))
		}
		// Decode-time type errors read "toml: line N (last key "k"): …" in Go's words
		// ("destination has type slice"): said again in TOML's where the key is known.
		if m := typeErrRe.FindStringSubmatch(err.Error()); m != nil {
			msg := m[3]
			if w, ok := typeMismatch(src, m[2]); ok {
				msg = w
			}
			return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s:%s: [%s] %s", path, m[1], m[2], msg)
		}
		return nil, exitcode.Errorf(exitcode.InvalidConfig, "%s: %v", path, err)
	}
	if c.Lengths.Config == nil {
		if c.Lengths.Plugin == "gamma" {
			c.Lengths.Config = map[string]any{"k": 0.9}
		} else {
			c.Lengths.Config = map[string]any{}
		}
	}
	if c.Router.Config == nil {
		c.Router.Config = map[string]any{}
	}
	c.resolvePaths(md)
	var errs []error
	// TOML integers are signed: a negative seed decodes into the unsigned field wrapped
	// (−1 as 2⁶⁴−1); read it signed to tell.
	var signed struct {
		Seed *int64 `toml:"seed"`
	}
	if _, err := toml.NewDecoder(bytes.NewReader(src)).Decode(&signed); err == nil && signed.Seed != nil && *signed.Seed < 0 {
		errs = append(errs, fmt.Errorf("%s: [seed] must be ≥ 0, got %d", c.Where("seed"), *signed.Seed))
	}
	for _, k := range md.Undecoded() {
		key := k.String()
		if strings.HasPrefix(key, "lengths.config.") || strings.HasPrefix(key, "router.config.") {
			continue // plugin tables are validated by the plugin itself
		}
		msg := fmt.Sprintf("%s: unknown key [%s]", c.Where(key), key)
		if k := suggestKey(key); k != "" {
			msg += fmt.Sprintf("; did you mean [%s]?", k)
		}
		errs = append(errs, errors.New(msg))
	}
	if len(errs) > 0 {
		return nil, exitcode.With(exitcode.InvalidConfig, errors.Join(errs...))
	}
	return c, nil
}

// resolvePaths makes the relative paths the file gives relative to the file's folder, not to
// the working directory, so that a bench.toml works from wherever genload is started:
// [lengths.plugin] and [router.plugin] when they are paths (end in .wasm or hold a '/'; a
// plugin name such as "gamma" is not a path), [prompt.corpus], [tokenizer.path], [plugins.dir],
// [api_key_file], [engine.profile] when it is a path (ends in .toml or holds a '/'), and [out].
// Absolute paths, empty values and keys the file does not set are left alone; flags given
// later keep their meaning (relative to the working directory). Messages about these keys
// still name the key and its file:line ([Config.Where]).
func (c *Config) resolvePaths(md toml.MetaData) {
	dir := filepath.Dir(c.File)
	isPath := func(v, ext string) bool {
		return strings.HasSuffix(v, ext) || strings.ContainsRune(v, '/') || strings.ContainsRune(v, filepath.Separator)
	}
	for _, k := range []struct {
		key []string
		v   *string
		ext string // "" = always a path
	}{
		{[]string{"lengths", "plugin"}, &c.Lengths.Plugin, ".wasm"},
		{[]string{"router", "plugin"}, &c.Router.Plugin, ".wasm"},
		{[]string{"prompt", "corpus"}, &c.Prompt.Corpus, ""},
		{[]string{"tokenizer", "path"}, &c.Tokenizer.Path, ""},
		{[]string{"plugins", "dir"}, &c.Plugins.Dir, ""},
		{[]string{"api_key_file"}, &c.APIKeyFile, ""},
		{[]string{"engine", "profile"}, &c.Engine.Profile, ".toml"},
		{[]string{"out"}, &c.Out, ""},
	} {
		v := *k.v
		if v == "" || filepath.IsAbs(v) || !md.IsDefined(k.key...) || (k.ext != "" && !isPath(v, k.ext)) {
			continue
		}
		*k.v = filepath.Join(dir, v)
	}
}

// cleanTOMLError says a parse error in genload's words: a key or table given twice names
// the line that gave it first (lines: keyLines of the file), the rest is the parser's
// message with the key it stood on.
func cleanTOMLError(pe toml.ParseError, lines map[string]int) string {
	msg := pe.Message
	if msg == "" {
		msg = pe.Error()
	}
	if m := definedTwiceRe.FindStringSubmatch(msg); m != nil {
		what, where := "key ["+m[1]+"]", ""
		if first, ok := lines[m[1]]; ok {
			if tableLine(lines, m[1]) {
				what = "table [" + m[1] + "]"
			}
			where = fmt.Sprintf(" (first on line %d)", first)
		}
		return what + " is given twice" + where + ": give each key once; a table's keys go under one [table] header"
	}
	if pe.LastKey != "" && !strings.Contains(msg, pe.LastKey) {
		msg = fmt.Sprintf("[%s]: %s", pe.LastKey, msg)
	}
	return msg
}

// definedTwiceRe matches the TOML parser's message for a key or table given twice.
var definedTwiceRe = regexp.MustCompile(`^Key '([^']+)' has already been defined\.?$`)

// tableLine reports whether key is a table in lines: a key below it is there too.
func tableLine(lines map[string]int, key string) bool {
	for k := range lines {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// Where returns "flag --x" when a command-line flag set the key (or a key inside it, or the
// table holding it), else "file:line" for a dotted key when the key appears in the file, else
// "file" (or "config" when no file was read).
func (c *Config) Where(key string) string {
	// The flag that set the key or a table holding it, else the first (sorted) of the flags
	// that set keys inside it: the same answer every time.
	var inside []string
	for k, flag := range c.flags {
		if k == key || strings.HasPrefix(key, k+".") {
			return "flag " + flag
		}
		if strings.HasPrefix(k, key+".") {
			inside = append(inside, flag)
		}
	}
	if len(inside) > 0 {
		slices.Sort(inside)
		return "flag " + inside[0]
	}
	if c.File == "" {
		return "config"
	}
	for k := key; k != ""; {
		if n, ok := c.lines[k]; ok {
			return fmt.Sprintf("%s:%d", c.File, n)
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return c.File
}

var (
	typeErrRe = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)$`)
	tableRe   = regexp.MustCompile(`^\s*\[\[?\s*([A-Za-z0-9_.\-" ]+?)\s*\]\]?\s*(#.*)?$`)
	keyRe     = regexp.MustCompile(`^\s*("?[A-Za-z0-9_\-]+"?)\s*=`)
)

// keyLines maps each dotted key of a TOML document to the line where it is set (array-of-table
// keys are recorded without an index: the first occurrence wins). It is a best-effort scanner
// for messages, not a parser: the TOML library has already accepted the document.
func keyLines(src []byte) map[string]int {
	m := map[string]int{}
	prefix := ""
	for i, line := range strings.Split(string(src), "\n") {
		if t := tableRe.FindStringSubmatch(line); t != nil {
			prefix = strings.ReplaceAll(strings.ReplaceAll(t[1], `"`, ""), " ", "")
			if _, ok := m[prefix]; !ok {
				m[prefix] = i + 1
			}
			continue
		}
		if k := keyRe.FindStringSubmatch(line); k != nil {
			key := strings.Trim(k[1], `"`)
			if prefix != "" {
				key = prefix + "." + key
			}
			if _, ok := m[key]; !ok {
				m[key] = i + 1
			}
		}
	}
	return m
}
