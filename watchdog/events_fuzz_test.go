package watchdog_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

// FuzzParseLog checks that ParseLog reads a whole log as ParseLine reads
// each of its lines: the same events in order, one error per malformed
// line, and nothing lost around a bad line.
func FuzzParseLog(f *testing.F) {
	f.Add([]byte("1800000000 start deadline=none interval=60\n1800000001 probe result=ready\n"))
	f.Add([]byte("garbage\n1800000002 job_started\r\n\n  \n1800000003 job_ended by"))
	f.Add([]byte("1800000004 delete_reason reason=cost_cap\x00\n\xff\xfe\n1800000005 deleted method=delete"))
	f.Add([]byte("1 a msg=x=y z\n2 b k=v msg=\n3 c k==v\n"))
	f.Fuzz(func(t *testing.T, log []byte) {
		events, err := watchdog.ParseLog(bytes.NewReader(log))
		var want []watchdog.Event
		bad := 0
		lines := strings.Split(string(log), "\n")
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		for _, line := range lines {
			if strings.TrimSpace(line) == "" {
				continue
			}
			ev, err := watchdog.ParseLine(line)
			if err != nil {
				bad++
				continue
			}
			want = append(want, ev)
		}
		if diff := cmp.Diff(want, events); diff != "" {
			t.Fatalf("ParseLog differs from ParseLine line by line (-want +got):\n%s", diff)
		}
		if (bad > 0) != (err != nil) {
			t.Fatalf("%d malformed lines, error %v", bad, err)
		}
		if err != nil && !errors.Is(err, watchdog.ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
	})
}
