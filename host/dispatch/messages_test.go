package dispatch

import (
	"strings"
	"testing"
)

// Every error body is read by one rule: error.message, then message, then error as a string,
// else the body; on one line, at most 200 bytes.
func TestServerMessage(t *testing.T) {
	long := strings.Repeat("x", 250)
	for _, c := range []struct{ body, want string }{
		{`{"error":{"message":"model not found","code":404}}`, "model not found"}, // vLLM, OpenAI
		{`{"message":"busy","error":{"code":503}}`, "busy"},
		{`{"error":"Input validation error"}`, "Input validation error"}, // TGI
		{"<html>\n  <body>502   Bad Gateway</body>\n</html>", "<html> <body>502 Bad Gateway</body> </html>"},
		{long, strings.Repeat("x", 200) + "…"},
	} {
		if got := serverMessage([]byte(c.body)); got != c.want {
			t.Errorf("serverMessage(%.40q) = %q, want %q", c.body, got, c.want)
		}
	}
}
