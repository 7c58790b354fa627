package run

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/scrape"
)

// newWatcher returns a /metrics watcher of the target, or nil — with a line on stderr saying
// why — when metrics are off, unreachable, of an unknown server, or when routed workers are on
// other servers (one server's occupancy would misreport the batch).
func newWatcher(ctx context.Context, cfg *config.Config, target, apiKey string, workers []config.Worker, stderr io.Writer) *scrape.Watcher {
	if cfg.Metrics != "auto" {
		return nil
	}
	base := func(u string) string { return strings.TrimSuffix(strings.TrimSuffix(u, "/"), "/v1") }
	for _, wk := range workers {
		if base(wk.URL) != base(workers[0].URL) || base(wk.URL) != base(target) {
			fmt.Fprintf(stderr, "metrics: not used (workers are on several servers; one server's /metrics would misreport batch occupancy)\n")
			return nil
		}
	}
	murl, err := scrape.MetricsURL(target)
	var w *scrape.Watcher
	if err == nil {
		w, err = scrape.NewWatcher(ctx, murl, apiKey, 0)
	}
	if err != nil {
		fmt.Fprintf(stderr, "metrics: not used (%v); set metrics = \"off\" to silence this\n", err)
		return nil
	}
	return w
}
