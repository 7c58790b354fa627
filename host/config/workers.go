package config

import (
	"fmt"
)

// Worker is one routing target in routed mode: a base URL and/or extra headers (e.g. routing
// headers such as a service index).
type Worker struct {
	// Name labels the worker in results. Default "w<i>".
	Name string `toml:"name" json:"name"`
	// URL is the worker's base URL. Default: [Config.Target].
	URL string `toml:"url" json:"url"`
	// Headers are added to every request sent to this worker.
	Headers map[string]string `toml:"headers" json:"headers,omitempty"`
}

// WorkerGrid expands to Servers × Generators workers in server-first order: worker w is
// server w mod Servers, generator w div Servers, so consecutive workers (and a round-robin
// router) cycle through the servers first.
type WorkerGrid struct {
	// Servers is the number of servers. Default 0 (no grid).
	Servers int `toml:"servers" json:"servers"`
	// ServerURLs optionally gives each server its base URL (len must equal Servers).
	ServerURLs []string `toml:"server_urls" json:"server_urls,omitempty"`
	// ServerHeader carries the server index. Default "x-service-index".
	ServerHeader string `toml:"server_header" json:"server_header"`
	// Generators is the number of generators per server. Default 1.
	Generators int `toml:"generators" json:"generators"`
	// GeneratorHeader carries the generator index. Default "x-local-index".
	GeneratorHeader string `toml:"generator_header" json:"generator_header"`
}

// ResolvedWorkers returns the routing workers: [[workers]] as given, the [worker_grid]
// expanded server-first, or one worker at target. Empty URLs are replaced by target. c must
// have passed Validate.
func (c *Config) ResolvedWorkers(target string) []Worker {
	var ws []Worker
	switch {
	case len(c.Workers) > 0:
		ws = append(ws, c.Workers...)
	case c.Grid.Servers > 0:
		g := c.Grid
		for gen := 0; gen < g.Generators; gen++ {
			for s := 0; s < g.Servers; s++ {
				w := Worker{Name: fmt.Sprintf("s%d-g%d", s, gen), Headers: map[string]string{
					g.ServerHeader: fmt.Sprint(s), g.GeneratorHeader: fmt.Sprint(gen)}}
				if len(g.ServerURLs) > 0 {
					w.URL = g.ServerURLs[s]
				}
				ws = append(ws, w)
			}
		}
	default:
		ws = []Worker{{Name: "w0"}}
	}
	for i := range ws {
		if ws[i].URL == "" {
			ws[i].URL = target
		}
		if ws[i].Name == "" {
			ws[i].Name = fmt.Sprintf("w%d", i)
		}
	}
	return ws
}
