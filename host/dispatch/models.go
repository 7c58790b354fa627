package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// Model is one entry of GET /v1/models.
type Model struct {
	// ID is the model name to send in requests.
	ID string `json:"id"`
	// MaxModelLen is the context in tokens (vLLM, SGLang and genload's engine report
	// "max_model_len"; 0 when the server does not say).
	MaxModelLen int `json:"max_model_len"`
}

// ModelsError is a failed GET /v1/models.
type ModelsError struct {
	URL string
	// Status is the HTTP status, 0 when no response arrived (unreachable, timeout).
	Status int
	// Msg says what happened (the server's message for an HTTP error).
	Msg string
	// NotOpenAI: the answer was an HTML page or another body that is not JSON; Msg is the
	// whole one-line message (NotOpenAI's).
	NotOpenAI bool
}

// Error is "GET <url>: HTTP <status>: <message>" ("GET <url>: <message>" without a response),
// or the whole one-line message of a NotOpenAI answer.
func (e *ModelsError) Error() string {
	if e.NotOpenAI {
		return e.Msg
	}
	if e.Status != 0 {
		return fmt.Sprintf("GET %s: HTTP %d: %s", e.URL, e.Status, e.Msg)
	}
	return fmt.Sprintf("GET %s: %s", e.URL, e.Msg)
}

// Retryable reports a failure worth retrying: no response, 429, or 5xx (a server still
// loading answers 503).
func (e *ModelsError) Retryable() bool { return e.Status == 0 || e.Status == 429 || e.Status >= 500 }

// ListModels asks base (a server's base URL, optionally ending in /v1) for GET /v1/models.
// An unreachable server or a non-200 status is a *ModelsError naming the URL (and the status
// and the server's message); a body that is not a model list is an error naming the URL.
// apiKey is sent as a Bearer token and never appears in errors. timeout bounds the whole
// request (0 = 30 s).
func ListModels(ctx context.Context, base, apiKey string, timeout time.Duration) ([]Model, error) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	url := strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1") + "/v1/models"
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod(fasthttp.MethodGet)
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	if err := fasthttp.DoTimeout(req, resp, timeout); err != nil {
		if errors.Is(err, fasthttp.ErrTimeout) {
			return nil, &ModelsError{URL: url, Msg: fmt.Sprintf("no answer within %v ([timeouts] connect)", timeout)}
		}
		return nil, &ModelsError{URL: url, Msg: fmt.Sprintf("server unreachable: %v", err)}
	}
	body := resp.Body()
	ct := string(resp.Header.ContentType())
	if sc := resp.StatusCode(); sc != fasthttp.StatusOK {
		if msg := NotOpenAI("GET", url, sc, ct, body); msg != "" {
			return nil, &ModelsError{URL: url, Status: sc, Msg: msg, NotOpenAI: true}
		}
		return nil, &ModelsError{URL: url, Status: sc, Msg: serverMessage(body)}
	}
	if msg := NotOpenAI("GET", url, fasthttp.StatusOK, ct, body); msg != "" {
		return nil, errors.New(msg)
	}
	var list struct {
		Data []Model `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET %s: expected a JSON model list ({\"data\": [{\"id\": …}]}), got %s: %s (%v)",
			url, contentType(resp), firstBytes(body), err)
	}
	return list.Data, nil
}

// contentType is the response's Content-Type, "no Content-Type" when it sent none.
func contentType(resp *fasthttp.Response) string {
	if ct := resp.Header.ContentType(); len(ct) > 0 {
		return string(ct)
	}
	return "no Content-Type"
}
