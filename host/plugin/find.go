package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// EnvPluginDir is the environment variable naming extra directories (separated by the OS path
// list separator, ':' on Unix) searched for plugins by name; the Makefile sets it to build/plugins.
const EnvPluginDir = "GENLOAD_PLUGIN_DIR"

// validName is the syntax of a plugin name: lower-case letters, digits, '-' and '_'.
var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// SearchDirs returns the directories Find searches for a plugin name, in order: extraDirs, each
// entry of $GENLOAD_PLUGIN_DIR, <directory of the genload executable>/plugins, ./build/plugins.
func SearchDirs(extraDirs ...string) []string {
	var dirs []string
	for _, d := range extraDirs {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	for _, d := range filepath.SplitList(os.Getenv(EnvPluginDir)) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Join(filepath.Dir(exe), "plugins"))
	}
	return append(dirs, filepath.Join("build", "plugins"))
}

// Find resolves a plugin reference to a file path. A reference ending in ".wasm" or containing a
// path separator is a path and is used as is (it must exist); otherwise it is a name such as
// "gamma", looked up as <dir>/<name>.wasm in SearchDirs(extraDirs...). The error for a name that
// is nowhere lists every place searched and says how to build the plugins.
func Find(nameOrPath string, extraDirs ...string) (string, error) {
	if strings.HasSuffix(nameOrPath, ".wasm") || strings.ContainsRune(nameOrPath, '/') || strings.ContainsRune(nameOrPath, filepath.Separator) {
		st, err := os.Stat(nameOrPath)
		if err != nil {
			return "", fmt.Errorf("plugin file %s: %w", nameOrPath, err)
		}
		if st.IsDir() {
			return "", fmt.Errorf("plugin file %s is a directory, want a .wasm file", nameOrPath)
		}
		return nameOrPath, nil
	}
	if !validName.MatchString(nameOrPath) {
		return "", fmt.Errorf("plugin name %q is invalid: want lower-case letters, digits, '-' or '_', or a path to a .wasm file", nameOrPath)
	}
	var tried []string
	for _, d := range SearchDirs(extraDirs...) {
		p := filepath.Join(d, nameOrPath+".wasm")
		st, err := os.Stat(p)
		if err == nil && !st.IsDir() {
			return p, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("plugin %q: %w", nameOrPath, err)
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("plugin %q not found; searched %s; build the plugins with `make plugins` or set %s to the directory holding %s.wasm",
		nameOrPath, strings.Join(tried, ", "), EnvPluginDir, nameOrPath)
}
