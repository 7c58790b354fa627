package run

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/scrape"
)

// newWatcher returns a /metrics watcher, or nil — with a line on stderr saying why — when
// metrics are off, or a server is unreachable or of an unknown family. In routed mode it
// watches every distinct server the workers are on (one /metrics each, combined per cell;
// see scrape.CellMetrics), else the target.
func newWatcher(ctx context.Context, cfg *config.Config, target, apiKey string, workers []config.Worker, stderr io.Writer) *scrape.Watcher {
	if cfg.Metrics != "auto" {
		return nil
	}
	var ws []scrape.Worker
	if cfg.Mode == config.ModeRouted {
		for _, wk := range workers {
			murl, err := scrape.MetricsURL(wk.URL)
			if err != nil {
				fmt.Fprintf(stderr, "metrics: not used (worker %s: %v); set metrics = \"off\" to silence this\n", wk.Name, err)
				return nil
			}
			ws = append(ws, scrape.Worker{Name: wk.Name, MetricsURL: murl})
		}
	} else {
		murl, err := scrape.MetricsURL(target)
		if err != nil {
			fmt.Fprintf(stderr, "metrics: not used (%v); set metrics = \"off\" to silence this\n", err)
			return nil
		}
		ws = []scrape.Worker{{Name: "target", MetricsURL: murl}}
	}
	w, err := scrape.NewRoutedWatcher(ctx, ws, apiKey, 0)
	if err != nil {
		fmt.Fprintf(stderr, "metrics: not used (%v); set metrics = \"off\" to silence this\n", err)
		return nil
	}
	if n := w.Servers(); n > 1 {
		fmt.Fprintf(stderr, "metrics: %d servers (%s), each scraped around every cell and combined\n", n, strings.Join(w.URLs(), ", "))
	}
	return w
}
