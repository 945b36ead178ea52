// Package openapicheck holds HTTP exchanges with Runpod (real or fake) to
// Runpod's OpenAPI document, runpod/runpodtest/testdata/openapi_v2.json,
// with pb33f's libopenapi-validator: a full JSON Schema 2020-12 validator,
// which the OpenAPI 3.1 document needs (type arrays with "null",
// unevaluatedProperties, minProperties, if).
//
// It is for tests: Middleware wraps a fake's handler and fails the test
// on a request or an answer that does not validate; Exchange and Schema
// check what a test recorded. Programs never link it (runpodtest takes it
// through its WithMiddleware option), so the validator and its
// dependencies stay out of examples/launch.
package openapicheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/overbrainer/overbrainer-go/internal/testkit/modroot"
)

// DocPath is the document's path in the module's source tree, which the
// working directory must be in (a test's is its package's); outside it,
// the error says the module was not found.
func DocPath() (string, error) {
	root, err := modroot.Dir()
	if err != nil {
		return "", fmt.Errorf("the OpenAPI document: %w", err)
	}
	return filepath.Join(root, "runpod", "runpodtest", "testdata", "openapi_v2.json"), nil
}

var (
	once    sync.Once
	loadErr error
	model   *v3.Document
	// mu serializes validations: the validator keeps caches, and tests
	// are not where its speed matters.
	mu  sync.Mutex
	val validator.Validator
)

func load() error {
	once.Do(func() {
		path, err := DocPath()
		if err != nil {
			loadErr = err
			return
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			loadErr = err
			return
		}
		doc, err := libopenapi.NewDocument(raw)
		if err != nil {
			loadErr = err
			return
		}
		m, err := doc.BuildV3Model()
		if err != nil {
			loadErr = fmt.Errorf("building the OpenAPI model: %w", err)
			return
		}
		model = &m.Model
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			loadErr = errors.Join(errs...)
			return
		}
		val = v
	})
	return loadErr
}

// Exchange checks one exchange: the request (method, path under /v2,
// query, headers, body) and, when status is not 0, the answer. path may
// carry a prefix before "/v2/" (a test server's root); it is cut off. It
// returns what does not validate, one line each.
func Exchange(method, path, rawQuery string, reqHeader http.Header, reqBody []byte, status int, respHeader http.Header, respBody []byte) []string {
	if err := load(); err != nil {
		return []string{"OpenAPI document: " + err.Error()}
	}
	if i := strings.Index(path, "/v2/"); i > 0 {
		path = path[i:]
	}
	if path == "/v2/openapi.json" {
		// The document itself, which it does not describe.
		return nil
	}
	target := "https://api.runpod.io" + path
	if rawQuery != "" {
		target += "?" + rawQuery
	}
	req, err := http.NewRequest(method, target, bytes.NewReader(reqBody))
	if err != nil {
		return []string{err.Error()}
	}
	req.Header = reqHeader.Clone()
	if len(reqBody) == 0 {
		req.Body = http.NoBody
	}
	mu.Lock()
	defer mu.Unlock()
	var out []string
	_, errs := val.ValidateHttpRequestSync(req)
	for _, e := range errs {
		out = append(out, "request: "+describe(e.Message, e.Reason, e.SchemaValidationErrors))
	}
	if status == 0 || len(errs) > 0 && strings.Contains(out[0], "not found") {
		return out
	}
	resp := &http.Response{StatusCode: status, Header: respHeader.Clone(), Body: io.NopCloser(bytes.NewReader(respBody)), Request: req}
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	_, errs = val.ValidateHttpResponse(req, resp)
	for _, e := range errs {
		out = append(out, fmt.Sprintf("answer %d: %s", status, describe(e.Message, e.Reason, e.SchemaValidationErrors)))
	}
	return out
}

// Schema checks a JSON document against the named schema of
// components.schemas.
func Schema(name string, body []byte) []string {
	if err := load(); err != nil {
		return []string{"OpenAPI document: " + err.Error()}
	}
	proxy := model.Components.Schemas.GetOrZero(name)
	if proxy == nil {
		return []string{"no schema " + name}
	}
	mu.Lock()
	defer mu.Unlock()
	ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytesWithVersion(proxy.Schema(), body, 3.1)
	if ok {
		return nil
	}
	var out []string
	for _, e := range errs {
		out = append(out, describe(e.Message, e.Reason, e.SchemaValidationErrors))
	}
	return out
}

func describe[T interface{ Error() string }](msg, reason string, details []T) string {
	s := msg
	if reason != "" && reason != msg {
		s += ": " + reason
	}
	var ds []string
	for _, d := range details {
		ds = append(ds, d.Error())
	}
	sort.Strings(ds)
	if len(ds) > 0 {
		s += " [" + strings.Join(ds, "; ") + "]"
	}
	return s
}

// maxBody is how much of a body the middleware keeps to check; a longer
// answer (a long log stream) has its status checked, not its body.
const maxBody = 32 << 20

// Reporter is where Middleware reports: a *testing.T, or runpodtest.TB.
type Reporter interface {
	Errorf(format string, args ...any)
}

// Middleware wraps a fake's handler: every answer it gives, and every
// request it accepts (answers 2xx), are checked against the document, and
// each violation fails t (with t.Errorf, so the test goes on and shows
// them all). A request the fake refused with a 4xx may break the document:
// refusing it is the fake's job, and tests send such requests on purpose.
// Answers cut short (a dropped connection, a hang) are not checked.
func Middleware(t Reporter) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			rec := &recorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			status := rec.status
			if rec.hijacked || rec.over || r.Context().Err() != nil {
				status = 0
			}
			for _, m := range Exchange(r.Method, r.URL.Path, r.URL.RawQuery, r.Header, body, status, rec.Header(), rec.body.Bytes()) {
				if rec.status >= 400 && rec.status < 500 && strings.HasPrefix(m, "request: ") {
					continue
				}
				t.Errorf("OpenAPI: %s %s: %s", r.Method, r.URL.Path, m)
			}
		})
	}
}

type recorder struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
	over     bool
	hijacked bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.body.Len()+len(b) > maxBody {
		r.over = true
	} else {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush (a log stream) through it.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush passes a flush on.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack hands the connection over (a fault that drops it); the answer
// is then not checked.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.hijacked = true
	return http.NewResponseController(r.ResponseWriter).Hijack()
}
