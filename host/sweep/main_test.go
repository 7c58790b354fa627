package sweep

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/genload/genload/host/engine"
	"github.com/genload/genload/host/tokenizer"
)

// serveEnv makes the test binary a server: the built-in engine on --addr, as genload serve,
// which exits with status 3 after --die-after completions requests (0: never).
const serveEnv = "GENLOAD_SWEEP_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		os.Exit(serve(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func serve(args []string) int {
	cfg := engine.DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "")
	dieAfter := fs.Int64("die-after", 0, "")
	engine.RegisterFlags(fs, &cfg)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	tok, err := tokenizer.Default()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	eng, err := engine.New(cfg, tok)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var n atomic.Int64
	h := eng.Handler()
	srv := &http.Server{Addr: *addr, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" && *dieAfter > 0 && n.Add(1) > *dieAfter {
			fmt.Fprintln(os.Stderr, "test server: dying after", *dieAfter, "completions requests")
			os.Exit(3)
		}
		h.ServeHTTP(w, r)
	})}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "test server: SIGTERM")
		os.Exit(0)
	}()
	fmt.Fprintln(os.Stderr, "test server: listening on", *addr)
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
