package runpod

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// PodReadError is why the API's description of a pod could not be read
// whole (a time that is not RFC 3339, a number where a string belongs, a
// fraction where a whole number does). ListPods keeps such a pod in its
// result with what could be read of it, its ID, Name and Status (each
// only when it is a JSON string), and this in its Unreadable field: one
// odd pod never fails a listing. GetPod returns it, wrapped, as its
// error.
type PodReadError struct {
	// ID is the pod's id, when it could be read.
	ID  string
	Err error
}

func (e *PodReadError) Error() string {
	if e.ID == "" {
		return "runpod: a pod the API describes could not be read: " + e.Err.Error()
	}
	return fmt.Sprintf("runpod: pod %s could not be read: %v", e.ID, e.Err)
}

func (e *PodReadError) Unwrap() error { return e.Err }

var errNoID = errors.New("it has no id")

// readPod decodes one pod. A number written with a fraction or an
// exponent whose value is whole (50.0, 1e3) is taken where a whole number
// belongs.
func readPod(raw []byte) (Pod, error) {
	var p Pod
	err := json.Unmarshal(raw, &p)
	if err == nil {
		return p, nil
	}
	if whole, ok := wholeNumbers(raw); ok {
		var q Pod
		if json.Unmarshal(whole, &q) == nil {
			return q, nil
		}
	}
	return Pod{}, err
}

// listedPod is one element of a listing: the pod, or what can be read of
// it with Unreadable saying why not the rest.
func listedPod(raw []byte) Pod {
	p, err := readPod(raw)
	if err == nil {
		return p
	}
	var head map[string]json.RawMessage
	_ = json.Unmarshal(raw, &head) // not an object: nothing is read
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(head[k], &s)
		return s
	}
	id := str("id")
	return Pod{ID: id, Name: str("name"), Status: PodStatus(str("status")), Unreadable: &PodReadError{ID: id, Err: err}}
}

// decodePod reads a 2xx answer that is one pod.
func decodePod(r *call, resp response) (*Pod, error) {
	p, err := readPod(resp.body)
	if err != nil {
		return nil, fmt.Errorf("runpod: %s %s: decoding %d response: %w", r.method, r.where(), resp.status, &PodReadError{ID: r.id, Err: err})
	}
	return &p, nil
}

// wholeNumbers rewrites each number of the JSON text raw that is written
// with a fraction or an exponent but whose value is a whole number an
// int64 holds exactly (50.0, 1e3) as an integer (50, 1000); ok says one
// was. Strings are left as they are.
func wholeNumbers(raw []byte) (out []byte, ok bool) {
	last, inStr, esc := 0, false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		if c == '"' {
			inStr = true
			continue
		}
		if c != '-' && (c < '0' || c > '9') {
			continue
		}
		j := i
		for j < len(raw) && bytes.IndexByte([]byte("+-0123456789.eE"), raw[j]) >= 0 {
			j++
		}
		if lit := raw[i:j]; bytes.ContainsAny(lit, ".eE") {
			f, err := strconv.ParseFloat(string(lit), 64)
			if err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				out = append(out, raw[last:i]...)
				out = strconv.AppendInt(out, int64(f), 10)
				last = j
			}
		}
		i = j - 1
	}
	if last == 0 {
		return raw, false
	}
	return append(out, raw[last:]...), true
}
