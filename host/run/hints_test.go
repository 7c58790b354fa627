package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/genload/genload/host/exitcode"
	"github.com/genload/genload/host/internal/testplugins"
	"github.com/genload/genload/host/recording"
)

// textOnlyServer answers a completion whose prompt holds token ids with 400 and a message of
// its own, one genload's table of known messages does not hold.
func textOnlyServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, `{"object":"list","data":[{"id":"m","max_model_len":4096}]}`)
		case "/v1/completions":
			if bytes.Contains(body, []byte(`"prompt":[`)) {
				w.WriteHeader(400)
				io.WriteString(w, `{"error":{"message":"prompt ids unsupported here"}}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"text\":\" t\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A server that refuses token ids in words genload does not know: the run's first request
// (the token-count probe) names [prompt] format = "text" and the flag, with the status and
// the server's message.
func TestRunNamesTheTextFormatWhenTokenIDsAreRefused(t *testing.T) {
	t.Setenv(testplugins.EnvPluginDir, testplugins.Dir(t))
	srv := textOnlyServer(t)
	cfg := probeCfg(t, fmt.Sprintf("target = %q\nmode = \"array\"\nmax_tokens = 4\nout = %q\n[matrix]\nseq_lens = [100]\nbatch_sizes = [2]\n[prompt]\nformat = \"tokens\"\n",
		srv.URL, t.TempDir()))
	_, err := Run(context.Background(), cfg, Options{Stderr: io.Discard, RunID: "t"})
	want := `token-count probe: POST ` + srv.URL + `/v1/completions: status 400: prompt ids unsupported here: the server refused genload's first request with token-id prompts ([prompt] format = "tokens"), status 400: "prompt ids unsupported here"; a server that takes text prompts only answers so: set [prompt] format = "text" (or --prompt-format text; "auto" tries both)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err\n got %v\nwant it to contain %s", err, want)
	}
	if c := exitcode.Of(err); c == exitcode.OK {
		t.Fatalf("exit code %d", c)
	}
}

// Which failures get the fix: a client error with no hint of its own, to token-id prompts,
// before any request succeeded.
func TestPromptHintOnlyForTokenIDsRefused(t *testing.T) {
	refused := func(status int, hint string) error {
		return errors.Join(&recording.RequestError{Kind: recording.KindHTTP, URL: "http://s/v1/completions", Status: status, Message: "bad prompt", Hint: hint})
	}
	cases := []struct {
		name   string
		err    error
		format string
		want   bool
	}{
		{"400 to token ids", refused(400, ""), "tokens", true},
		{"422 to token ids", refused(422, ""), "tokens", true},
		{"text prompts", refused(400, ""), "text", false},
		{"a known message's hint", refused(400, "set mode"), "tokens", false},
		{"the API key", refused(401, ""), "tokens", false},
		{"the URL", refused(404, ""), "tokens", false},
		{"the body's size", refused(413, ""), "tokens", false},
		{"rate limited", refused(429, ""), "tokens", false},
		{"a server error", refused(500, ""), "tokens", false},
		{"a stream error", &recording.RequestError{Kind: recording.KindStream, Status: 200, Err: errors.New("x")}, "tokens", false},
	}
	for _, tc := range cases {
		if got := promptHint(tc.err, tc.format); (got != "") != tc.want || tc.want && !strings.Contains(got, `status `+fmt.Sprint(tc.err.(interface{ Unwrap() []error }).Unwrap()[0].(*recording.RequestError).Status)+`: "bad prompt"`) {
			t.Errorf("%s: hint %q, want one: %v", tc.name, got, tc.want)
		}
	}
	r := &cellRunner{cfg: probeCfg(t, "[prompt]\nformat = \"tokens\"\n")}
	if got := r.firstHint(refused(400, "")).Error(); !strings.Contains(got, `set [prompt] format = "text"`) {
		t.Fatalf("first request: %q", got)
	}
	r.answered = true
	if got := r.firstHint(refused(400, "")).Error(); got != "POST http://s/v1/completions: status 400: bad prompt" {
		t.Fatalf("after an answered request: %q", got)
	}
}
