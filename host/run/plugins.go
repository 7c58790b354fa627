package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/matrix"
	"github.com/genload/genload/host/plugin"
	"github.com/genload/genload/host/results"
)

func pluginInfo(i plugin.Info) results.PluginInfo {
	return results.PluginInfo{Name: i.Name, Version: i.Version, Kind: i.Kind, Path: i.Path, SHA256: i.SHA256}
}

// loadedPlugins is the outcome of loadPlugins.
type loadedPlugins struct {
	host    *plugin.Host
	lengths *plugin.LengthsPlugin
	err     error // carries exitcode.PluginRejected
}

// loadPlugins creates the plugin host and loads the length plugin (while the corpus is
// tokenized). Its calls wait for the run's range of lengths: see checkLengths. The host is
// returned (to be closed) even on error.
func loadPlugins(ctx context.Context, cfg *config.Config) loadedPlugins {
	host, err := plugin.NewHost(ctx, plugin.Options{Dir: cfg.Plugins.Dir, CallTimeout: cfg.Plugins.CallTimeout.Duration,
		MemoryLimitPages: uint32(cfg.Plugins.MemoryLimitMiB * 16), Seed: cfg.Seed})
	if err != nil {
		return loadedPlugins{err: exitcode.With(exitcode.PluginRejected, err)}
	}
	lp, err := host.LoadLengths(ctx, cfg.Lengths.Plugin, cfg.Lengths.Config)
	if err != nil {
		if ce, ok := plugin.AsConfigError(err, "lengths.config", cfg.Lengths.Config); ok {
			// The plugin rejected its configuration: the key at fault, in bench.toml's words.
			return loadedPlugins{host: host, err: exitcode.With(exitcode.PluginRejected, fmt.Errorf("%s: %w", cfg.Where(ce.Key), ce))}
		}
		key := "lengths.plugin"
		if pe := (*plugin.Error)(nil); errors.As(err, &pe) && pe.Export == "genload_init" {
			key = "lengths.config" // the plugin rejected its configuration
		}
		return loadedPlugins{host: host, err: exitcode.With(exitcode.PluginRejected, fmt.Errorf("%s: [%s]: %w", cfg.Where(key), key, err))}
	}
	return loadedPlugins{host: host, lengths: lp}
}

// checkLengths holds a "pure" length plugin to the ABI before any request is sent, with the
// range [Lo, Hi] the cells use: the first cell's call made twice must give the same lengths
// (the host caches a pure plugin's answer per cell, so a plugin that is not pure would be
// measured with stale lengths), then every cell is asked once — a length out of range, a
// wrong count or a rejected cell fails the run here, with the message `genload plugin check`
// gives. A plugin that is not pure is held to the same checks at each cell, when it is called.
// Errors carry exitcode.PluginRejected and name the cell.
func checkLengths(ctx context.Context, lp *plugin.LengthsPlugin, st lengths.Stage, cells []matrix.Cell) error {
	if st.Source == nil || len(cells) == 0 || !lp.Info().HasCap("pure") {
		return nil
	}
	c := cells[0]
	if err := lp.VerifyPure(ctx, c.Batch, c.SeqLen, st.Lo, st.Hi); err != nil {
		return exitcode.With(exitcode.PluginRejected, fmt.Errorf("cell %s: %w", c.Key(), err))
	}
	if err := st.Prefetch(ctx, cells); err != nil {
		return exitcode.With(exitcode.PluginRejected, err)
	}
	// Every cell's lengths are cached now: the plugin's code and memory are freed for the
	// cells (a call the cache does not answer loads it again).
	lp.Release(ctx)
	return nil
}
