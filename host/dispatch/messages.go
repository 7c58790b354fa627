package dispatch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/genload/genload/host/sse"
)

// The server's own words, in one place: what an error body says (serverMessage, for the plain
// GET and POST endpoints), and the short form of a failed probe request (ShapeResult.Reason).
// A streamed request's error body is read by sse.ParseError, which serverMessage uses too, so
// that every server error is read by the same rule.

// maxMessage is the longest server message kept, in bytes.
const maxMessage = 200

// serverMessage extracts the message of an error body by sse.ParseError's rule (error.message,
// then message, then error as a string), else the body itself; either on one line (an HTML
// page's whitespace collapsed) and at most maxMessage bytes.
func serverMessage(body []byte) string {
	return short(strings.Join(strings.Fields(sse.ParseError(body).Message), " "))
}

// short cuts msg to maxMessage bytes, marking the cut with "…".
func short(msg string) string {
	if len(msg) > maxMessage {
		return msg[:maxMessage] + "…"
	}
	return msg
}

// Reason is the short form of a probe failure for a one-line summary: the server's message
// with its status when it sent one ("status 400: Token ids are not supported"), else the
// error without its URL and hint; at most maxMessage bytes.
func (r *ShapeResult) Reason() string {
	var re *RequestError
	if errors.As(r.Err, &re) {
		msg := re.Message
		if msg == "" {
			msg = strings.TrimPrefix(re.Error(), "POST "+re.URL+": ")
			if re.Hint != "" {
				msg = strings.TrimSuffix(msg, " ("+re.Hint+")")
			}
		} else if re.Status != 0 {
			msg = fmt.Sprintf("status %d: %s", re.Status, msg)
		}
		return short(msg)
	}
	return r.Error
}
