package runpodtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
)

// Drift is how the live API may differ from its OpenAPI text, for
// WithDrift: each set field makes the fake differ that way, so that a
// test can show a client (or launch doctor) notices.
type Drift struct {
	// PodKeyDelete, when set, answers this status to every pod key's
	// DELETE of its pod (a Server.Fail rule for CallerAnyPod).
	PodKeyDelete int
	// DashUnresolved leaves a {{ RUNPOD_SECRET_name }} placeholder whose
	// name has a dash as it is, whatever the account holds.
	DashUnresolved bool
	// MaxCreateBody, when above 0, answers 413 to a pod create body over
	// this many bytes instead of 102,400.
	MaxCreateBody int
	// WholeAsFraction writes every whole number of a GET's JSON answer
	// with a fraction: 50 as 50.0.
	WholeAsFraction bool
	// UnknownMember, when set, is added (true) to every object of a GET's
	// JSON answer.
	UnknownMember string
	// MissingMember, when set, is removed from every object of a GET's
	// JSON answer.
	MissingMember string
}

// WithDrift makes the fake differ from its document as d says.
func WithDrift(d Drift) Option { return func(c *config) { c.drift = d } }

// ParseDrift reads a Drift from its text form, a comma-separated list of
// pod-key-delete=STATUS, dash-unresolved, max-create-body=BYTES,
// whole-as-fraction, unknown-member=NAME and missing-member=NAME (for a
// program's flag or variable, such as the launcher's
// OVERBRAINER_LOCAL_DRIFT).
func ParseDrift(text string) (Drift, error) {
	var d Drift
	for _, item := range strings.Split(text, ",") {
		key, val, _ := strings.Cut(strings.TrimSpace(item), "=")
		num := func(dst *int) error {
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 {
				return fmt.Errorf("drift %s: want a positive number, not %q", key, val)
			}
			*dst = n
			return nil
		}
		var err error
		switch key {
		case "":
		case "pod-key-delete":
			err = num(&d.PodKeyDelete)
		case "max-create-body":
			err = num(&d.MaxCreateBody)
		case "dash-unresolved":
			d.DashUnresolved = true
		case "whole-as-fraction":
			d.WholeAsFraction = true
		case "unknown-member":
			d.UnknownMember = val
		case "missing-member":
			d.MissingMember = val
		default:
			err = fmt.Errorf("unknown drift %q", key)
		}
		if err != nil {
			return Drift{}, err
		}
	}
	return d, nil
}

// rewrites says the drift changes GET answers.
func (d Drift) rewrites() bool {
	return d.WholeAsFraction || d.UnknownMember != "" || d.MissingMember != ""
}

// driftAnswers rewrites the JSON answers of GETs as d says; the log
// stream passes as it is.
func (d Drift) driftAnswers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || strings.HasSuffix(r.URL.Path, "/logs") {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code/100 == 2 && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) == nil {
				if b, err := json.Marshal(d.rewrite(v)); err == nil {
					body = b
				}
			}
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	})
}

func (d Drift) rewrite(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = d.rewrite(e)
		}
		if d.MissingMember != "" {
			delete(v, d.MissingMember)
		}
		if d.UnknownMember != "" {
			v[d.UnknownMember] = true
		}
	case []any:
		for i, e := range v {
			v[i] = d.rewrite(e)
		}
	case json.Number:
		if d.WholeAsFraction && !strings.ContainsAny(v.String(), ".eE") {
			return json.Number(v.String() + ".0")
		}
	}
	return v
}

// DeleteStatuses are the statuses the fake answered to pod id's own key's
// DELETE /v2/pods/id, in order: what a pod's watchdog got when it deleted
// its pod.
func (s *Server) DeleteStatuses(id string) []int {
	var codes []int
	for _, r := range s.Requests() {
		if r.Method == http.MethodDelete && r.Path == "/v2/pods/"+id && r.Caller == id {
			codes = append(codes, r.Status)
		}
	}
	return codes
}
