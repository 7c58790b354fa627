package run

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/genload/genload/host/config"
	"github.com/genload/genload/host/recording"
)

// tokenPromptHint adds to err, the failure of genload's first request with token-id prompts
// (the token-count probe, or the first cell's first request), the likely fix when the server
// answered it with a client error and no known message's hint applies: a server that takes
// text prompts only refuses token ids with a 400 or 422 in words of its own ("token ids not
// supported"), so [prompt] format = "text" (--prompt-format text) is named with the server's
// status and message. Statuses with another cause — 401/403 (the API key), 404/405 (the URL),
// 408, 413 (the body's size, hinted by dispatch), 429 (rate limits) — and prompts sent as text
// leave err as it is; so does a nil err.
func tokenPromptHint(err error, format string) error {
	if h := promptHint(err, format); h != "" {
		return fmt.Errorf("%w: %s", err, h)
	}
	return err
}

// promptHint is tokenPromptHint's addition for err ("" for none): err may join several
// requests' errors, the first client error among them is named.
func promptHint(err error, format string) string {
	if err == nil || format == config.FormatText {
		return ""
	}
	var re *recording.RequestError
	if !errors.As(err, &re) || re.Kind != recording.KindHTTP || re.Hint != "" || re.Status < 400 || re.Status >= 500 {
		return ""
	}
	switch re.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return ""
	}
	return fmt.Sprintf("the server refused genload's first request with token-id prompts ([prompt] format = %q), status %d: %q; a server that takes text prompts only answers so: set [prompt] format = \"text\" (or --prompt-format text; \"auto\" tries both)",
		format, re.Status, re.Message)
}
