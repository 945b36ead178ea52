package runpod

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
)

// maxDumpBody is how much of a body a debug dump shows: a pod list of a
// large account would drown the log.
const maxDumpBody = 64 << 10

// dump logs one exchange for WithDebug, redacted as its doc says.
func (c *Client) dump(ctx context.Context, r *call, raw *http.Response, reqBody, respBody []byte) {
	var b strings.Builder
	req := raw.Request
	fmt.Fprintf(&b, "%s %s\n", req.Method, req.URL.Redacted())
	dumpHeader(&b, req.Header)
	switch {
	case len(r.secrets) > 0 && len(reqBody) > 0:
		b.WriteString("\n[body not dumped: it carries a secret]\n")
	case len(reqBody) > 0:
		b.WriteString("\n" + c.redactBody(reqBody, r.secrets) + "\n")
	}
	fmt.Fprintf(&b, "---\n%s %s\n", raw.Proto, raw.Status)
	dumpHeader(&b, raw.Header)
	if len(respBody) > 0 {
		b.WriteString("\n" + c.redactBody(respBody, r.secrets) + "\n")
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "runpod: http dump",
		slog.String("method", r.method), slog.String("path", r.where()),
		slog.String("dump", c.scrub(b.String(), r.secrets...)))
}

func dumpHeader(b *strings.Builder, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			if http.CanonicalHeaderKey(k) == "Authorization" {
				scheme, _, _ := strings.Cut(v, " ")
				v = scheme + " [REDACTED]"
			}
			fmt.Fprintf(b, "%s: %s\n", k, v)
		}
	}
}

// redactBody returns a body for a dump: a JSON body with the values of
// every "env" object replaced, the key and secrets scrubbed, cut at
// maxDumpBody.
func (c *Client) redactBody(body []byte, secrets []string) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if d.Decode(&v) == nil {
		redactEnv(v)
		if out, err := json.Marshal(v); err == nil {
			body = out
		}
	}
	s := c.scrub(string(body), secrets...)
	if len(s) > maxDumpBody {
		s = fmt.Sprintf("%s… [%d more bytes]", strings.ToValidUTF8(s[:maxDumpBody], ""), len(s)-maxDumpBody)
	}
	return s
}

// redactEnv replaces, in place, the values of each "env" object in v.
func redactEnv(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if env, ok := x.(map[string]any); ok && k == "env" {
				for name := range env {
					env[name] = "[REDACTED]"
				}
				continue
			}
			redactEnv(x)
		}
	case []any:
		for _, x := range v {
			redactEnv(x)
		}
	}
}
