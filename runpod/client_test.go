package runpod

import (
	"context"
	"errors"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestNewValidatesOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		key  string
		opts []Option
	}{
		"empty key":          {"", nil},
		"blank key":          {"  ", nil},
		"key with newline":   {"abc\ndef", nil},
		"relative base URL":  {testKey, []Option{WithBaseURL("api.runpod.io/v2")}},
		"ftp base URL":       {testKey, []Option{WithBaseURL("ftp://api.runpod.io/v2")}},
		"no host":            {testKey, []Option{WithBaseURL("https:///v2")}},
		"credentials in URL": {testKey, []Option{WithBaseURL("https://user:pw@api.runpod.io/v2")}},
		"query in URL":       {testKey, []Option{WithBaseURL("https://api.runpod.io/v2?api_key=x")}},
		"unparseable URL":    {testKey, []Option{WithBaseURL("https://api.runpod.io/%zz")}},
		"nil http client":    {testKey, []Option{WithHTTPClient(nil)}},
		"nil logger":         {testKey, []Option{WithLogger(nil)}},
		"empty user agent":   {testKey, []Option{WithUserAgent(" ")}},
		"multi-line agent":   {testKey, []Option{WithUserAgent("a\r\nX-Evil: 1")}},
		"zero attempts":      {testKey, []Option{WithRetry(0, time.Second)}},
		"too many attempts":  {testKey, []Option{WithRetry(1000, time.Second)}},
		"negative wait":      {testKey, []Option{WithRetry(3, -time.Second)}},
		"zero wait":          {testKey, []Option{WithRetry(3, 0)}},
		"nil option":         {testKey, []Option{nil}},
		"one bad among good": {testKey, []Option{WithUserAgent("x"), WithRetry(0, 1)}},
	} {
		c, err := New(tc.key, tc.opts...)
		if c != nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: New = %v, %v; want ErrInvalid", name, c, err)
			continue
		}
		if strings.Contains(err.Error(), testKey) {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
}

func TestNewDefaults(t *testing.T) {
	c, err := New(testKey)
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL() != DefaultBaseURL || c.maxAttempts != DefaultMaxAttempts ||
		c.maxWait != DefaultMaxWait || c.userAgent != DefaultUserAgent {
		t.Errorf("defaults: %+v", c)
	}
	c, err = New(testKey, WithBaseURL("http://127.0.0.1:9/x/v2/"))
	if err != nil || c.BaseURL() != "http://127.0.0.1:9/x/v2" {
		t.Errorf("trailing slash kept: %v %v", c.BaseURL(), err)
	}
}

func TestWithHTTPClientIsNotModified(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}
	c, fs := setup(t, WithHTTPClient(hc))
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, wirePod(Pod{ID: "p1", Name: "n"}))
	})
	if _, err := c.GetPod(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	if hc.Transport != nil || hc.CheckRedirect != nil || hc.Jar != nil {
		t.Errorf("the caller's http.Client was changed: %+v", hc)
	}
}

func TestHeaders(t *testing.T) {
	c, fs := setup(t, WithUserAgent("launcher/2"))
	fs.handle("GET /pods", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"pods": []any{}, "pagination": lastPage})
	})
	if _, err := c.ListPods(context.Background(), ListPodsOptions{}); err != nil {
		t.Fatal(err)
	}
	h := fs.last().header
	if h.Get("Authorization") != "Bearer "+testKey || h.Get("User-Agent") != "launcher/2" ||
		!strings.Contains(h.Get("Accept"), "application/problem+json") {
		t.Errorf("headers %v", h)
	}
}

// TestBodilessRequest: a DELETE goes out with no body at all (no length,
// no chunked encoding, nothing to read) and the whole URL the client
// builds keeps the base path.
func TestBodilessRequest(t *testing.T) {
	c, fs := setup(t)
	var got struct {
		path, te string
		length   int64
		body     []byte
	}
	fs.handle("DELETE /pods/{id}", func(w http.ResponseWriter, r *http.Request) {
		got.path, got.length = r.URL.EscapedPath(), r.ContentLength
		got.te = strings.Join(r.TransferEncoding, ",")
		got.body, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	fs.handle("GET /pods/{id}", func(w http.ResponseWriter, r *http.Request) { writeProblem(w, 404, "pod not found") })
	if res, err := c.DeletePod(context.Background(), "pod1x"); err != nil || res != Deleted {
		t.Fatalf("DeletePod: %v %v", res, err)
	}
	if want := apiBase + "/pods/pod1x"; got.path != want || got.length != 0 || got.te != "" || len(got.body) != 0 {
		t.Errorf("DELETE seen as path %q (want %q), length %d, transfer encoding %q, body %q",
			got.path, want, got.length, got.te, got.body)
	}
}

// TestSecretsNeverLeak drives the client through the ways a key or a secret
// could escape (a server that echoes the Authorization header into its
// errors, problem documents that echo a secret's value, transport failures, debug
// dumps) and checks every error string and the whole debug log.
func TestSecretsNeverLeak(t *testing.T) {
	c, fs := setup(t, WithRetry(2, time.Second))
	fs.secrets = []string{hostKey}
	echo := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte("bad request; you sent " + r.Header.Get("Authorization")))
	}
	fs.handle("GET /pods/{id}", echo)
	fs.handle("DELETE /pods/{id}", func(w http.ResponseWriter, r *http.Request) { dropConnection(t, w) })
	fs.handle("POST /pods/{id}/action", echo)
	fs.handle("POST /pods", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusUnprocessableEntity, "bad key "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	})
	fs.handle("POST /account/secrets", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Value string }
		_ = jsonDecode(r, &req)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		// A JSON-escaped echo of the value and the key.
		_, _ = w.Write([]byte(mustJSON(map[string]any{"title": "Bad Request", "status": 400, "detail": "bad value",
			"errors": []string{"value " + req.Value + " for " + r.Header.Get("Authorization")}})))
	})
	ctx := context.Background()
	var errs []error
	_, err := c.GetPod(ctx, "p1")
	errs = append(errs, err)
	_, err = c.DeletePod(ctx, "p1")
	errs = append(errs, err)
	_, err = c.CreatePod(ctx, simpleCreate("n"))
	errs = append(errs, err)
	_, err = c.CreateSecret(ctx, "k", hostKey)
	errs = append(errs, err)
	_, err = c.CreateSecret(ctx, "k2", "multi\nline \"quoted\" "+hostKey)
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("%d: no error", i)
		}
		fs.checkNoLeak("error", err.Error())
		fs.checkNoLeak("unescaped error", strings.ReplaceAll(strings.ReplaceAll(err.Error(), `\"`, `"`), `\n`, "\n"))
	}
	var ae *APIError
	if errors.As(errs[0], &ae) && !strings.Contains(ae.Detail, "[REDACTED]") {
		t.Errorf("detail %q: the echo should show redacted", ae.Detail)
	}
	log := fs.logBuf.String()
	if !strings.Contains(log, "http dump") || !strings.Contains(log, "Authorization: Bearer [REDACTED]") {
		t.Errorf("no redacted debug dump in the log, so the check above proves nothing:\n%s", log)
	}
	if strings.Contains(log, `"value"`) {
		t.Errorf("a request carrying a secret was dumped:\n%s", log)
	}
}

// TestLogLines checks what a request logs at debug level.
func TestLogLines(t *testing.T) {
	var buf shtest.SyncBuffer
	c, fs := setup(t, WithLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))), WithDebug(false))
	fs.handle("GET /pods/{id}", failThen(1, retryAfter(503, "3")))
	if _, err := c.GetPod(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	log := buf.String()
	for _, want := range []string{
		`"msg":"runpod: request","method":"GET","path":"/pods/p1","attempt":1`, `"status":503`,
		`"msg":"runpod: retrying"`, `"wait":3000000000`, `"attempt":2`, `"status":200`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "http dump") {
		t.Errorf("dumps without WithDebug:\n%s", log)
	}
	fs.checkNoLeak("log", log)
}
