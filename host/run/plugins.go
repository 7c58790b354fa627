package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/lengths"
	"github.com/genload/genload/host/plugin"
	"github.com/genload/genload/host/report"
)

func pluginInfo(i plugin.Info) report.PluginInfo {
	return report.PluginInfo{Name: i.Name, Version: i.Version, Kind: i.Kind, Path: i.Path, SHA256: i.SHA256}
}

// loadedPlugins is the outcome of loadPlugins.
type loadedPlugins struct {
	host    *plugin.Host
	lengths *plugin.LengthsPlugin
	err     error // carries exitcode.PluginRejected
}

// loadPlugins creates the plugin host, loads the length plugin and calls it once for every
// (L, B) of the configured grid and pairs with the range the run uses ([1, 2³¹−1]; the host
// clamps afterwards). Results of "pure" plugins are cached by the plugin host, so the per-cell
// calls of the run are answered from memory; for other plugins the calls only validate.
// The host is returned (to be closed) even on error.
func loadPlugins(ctx context.Context, cfg *config.Config) loadedPlugins {
	host, err := plugin.NewHost(ctx, plugin.Options{Dir: cfg.Plugins.Dir, CallTimeout: cfg.Plugins.CallTimeout.Duration,
		MemoryLimitPages: uint32(cfg.Plugins.MemoryLimitMiB * 16), Seed: cfg.Seed})
	if err != nil {
		return loadedPlugins{err: exitcode.With(exitcode.PluginRejected, err)}
	}
	lp, err := host.LoadLengths(ctx, cfg.Lengths.Plugin, cfg.Lengths.Config)
	if err != nil {
		key := "lengths.plugin"
		if pe := (*plugin.Error)(nil); errors.As(err, &pe) && pe.Export == "genload_init" {
			key = "lengths.config" // the plugin rejected its configuration
		}
		return loadedPlugins{host: host, err: exitcode.With(exitcode.PluginRejected, fmt.Errorf("%s: [%s]: %w", cfg.Where(key), key, err))}
	}
	if cfg.Mode == config.ModeN || !lp.Info().HasCap("pure") {
		return loadedPlugins{host: host, lengths: lp}
	}
	var pairs [][2]int
	for _, p := range cfg.Matrix.Pairs {
		pairs = append(pairs, [2]int{p[0], p[1]})
	}
	if !cfg.Matrix.AutoSeqLens {
		var grid [][2]int
		for _, l := range cfg.Matrix.SeqLens {
			for _, b := range cfg.Matrix.BatchSizes {
				grid = append(grid, [2]int{l, b})
			}
		}
		pairs = append(pairs, grid...)
	}
	if err := lengths.Prefetch(ctx, lp, pairs); err != nil {
		return loadedPlugins{host: host, err: exitcode.With(exitcode.PluginRejected, err)}
	}
	return loadedPlugins{host: host, lengths: lp}
}
