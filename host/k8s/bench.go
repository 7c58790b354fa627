package k8s

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/genload/genload/host/config"
)

// SharedTarget names the server(s) every pod of the Job measures, for ChooseParallelism:
// target is the run flags' --target ("" when not given), which wins; else bench.toml's
// [[workers]] (each worker's url, or [target] when it has none) or target (cfg nil:
// genload's defaults). "" for the built-in engine, which each pod starts for itself.
func SharedTarget(target string, cfg *config.Config) string {
	if target != "" {
		if target == config.Builtin {
			return ""
		}
		return target
	}
	if cfg == nil {
		return ""
	}
	if len(cfg.Workers) > 0 {
		urls := make([]string, len(cfg.Workers))
		for i, w := range cfg.Workers {
			urls[i] = cmp.Or(w.URL, cfg.Target)
		}
		return "the same workers (" + strings.Join(urls, ", ") + ")"
	}
	if cfg.Target == "" || cfg.Target == config.Builtin {
		return ""
	}
	return cfg.Target
}

// PodPaths refuses a bench.toml (its source src, decoded as cfg) that names a file by a
// relative path: the pods mount only bench.toml itself (at ConfigMount), so a corpus,
// tokenizer, plugin, API key file or engine profile beside it on this machine is not there;
// it must be in the image, named by its absolute path. Plugin names ("gamma") and absolute
// paths pass. Each offending key is one error, naming its file:line (cfg.Where) and key.
func PodPaths(cfg *config.Config, src []byte) error {
	var raw struct {
		Lengths    struct{ Plugin string }  `toml:"lengths"`
		Router     struct{ Plugin string }  `toml:"router"`
		Prompt     struct{ Corpus string }  `toml:"prompt"`
		Tokenizer  struct{ Path string }    `toml:"tokenizer"`
		Plugins    struct{ Dir string }     `toml:"plugins"`
		APIKeyFile string                   `toml:"api_key_file"`
		Engine     struct{ Profile string } `toml:"engine"`
	}
	if _, err := toml.Decode(string(src), &raw); err != nil {
		return err
	}
	path := func(v, ext string) bool {
		return v != "" && !filepath.IsAbs(v) && (ext == "" || strings.HasSuffix(v, ext) || strings.ContainsRune(v, '/'))
	}
	var errs []error
	for _, k := range []struct{ key, v, ext string }{
		{"lengths.plugin", raw.Lengths.Plugin, ".wasm"}, {"router.plugin", raw.Router.Plugin, ".wasm"},
		{"prompt.corpus", raw.Prompt.Corpus, ""}, {"tokenizer.path", raw.Tokenizer.Path, ""},
		{"plugins.dir", raw.Plugins.Dir, ""}, {"api_key_file", raw.APIKeyFile, ""}, {"engine.profile", raw.Engine.Profile, ".toml"},
	} {
		if path(k.v, k.ext) {
			errs = append(errs, fmt.Errorf("%s: [%s] %q is a relative path: the pods mount only bench.toml (at %s), so the file must be in the image; give its absolute path there",
				cfg.Where(k.key), k.key, k.v, ConfigMount))
		}
	}
	return errors.Join(errs...)
}
