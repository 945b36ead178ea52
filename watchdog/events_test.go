package watchdog_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

func TestParseLine(t *testing.T) {
	t.Parallel()
	at := time.Unix(1800000000, 0).UTC()
	cases := []struct {
		line string
		want watchdog.Event
	}{
		{"1800000000 start deadline=none interval=60 keep=0\n",
			watchdog.Event{Time: at, Kind: "start", Fields: map[string]string{"deadline": "none", "interval": "60", "keep": "0"}}},
		{"1800000000 retrieved",
			watchdog.Event{Time: at, Kind: "retrieved", Fields: map[string]string{}}},
		{"1800000000 delete_code method=DELETE code=500",
			watchdog.Event{Time: at, Kind: "delete_code", Fields: map[string]string{"method": "DELETE", "code": "500"}}},
		{"1800000000 probe result=failed reason=bootstrap key=ready msg=claim belongs to r1: a=b  c",
			watchdog.Event{Time: at, Kind: "probe", Fields: map[string]string{"result": "failed", "reason": "bootstrap", "key": "ready", "msg": "claim belongs to r1: a=b  c"}}},
		{"1800000000 snapshot_requested reason=cost adopted=0 cap_in_min=",
			watchdog.Event{Time: at, Kind: "snapshot_requested", Fields: map[string]string{"reason": "cost", "adopted": "0", "cap_in_min": ""}}},
	}
	for _, c := range cases {
		got, err := watchdog.ParseLine(c.line)
		if err != nil {
			t.Errorf("ParseLine(%q): %v", c.line, err)
			continue
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("ParseLine(%q) (-want +got):\n%s", c.line, d)
		}
	}
}

// A ready probe says the key's right to delete the pod is unproven; an
// older watchdog's probe line, or another kind, says nothing.
func TestEventDeleteRight(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]watchdog.DeleteRight{
		"1800000000 probe result=ready delete_right=unproven": watchdog.UnprovenDeleteRight,
		"1800000000 probe result=ready":                       "",
		"1800000000 start delete_right=unproven":              "",
	} {
		e, err := watchdog.ParseLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.DeleteRight(); got != want {
			t.Errorf("%q: DeleteRight %q, want %q", line, got, want)
		}
	}
}

func TestParseLineRejects(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		"", "\n", "start x=1", "-5 start", "1800000000", "1800000000 ", "1800000000 bad-kind",
		"1800000000 start novalue", "1800000000 start =v", "1800000000 start a=1  b=2",
		"12345678901234567890 start", "18000x0000 start",
	} {
		if ev, err := watchdog.ParseLine(line); err == nil {
			t.Errorf("ParseLine(%q) = %v, want an error", line, ev)
		} else if !errors.Is(err, watchdog.ErrMalformed) {
			t.Errorf("ParseLine(%q) error %v does not wrap ErrMalformed", line, err)
		}
	}
}

func TestParseLogKeepsGoodLines(t *testing.T) {
	t.Parallel()
	log := "1800000000 start keep=0\n\n1800000001 probe result=ready\ngarbage\n1800000002 job_started\n1800000003 job_ended by"
	evs, err := watchdog.ParseLog(strings.NewReader(log))
	if err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), "line 6") {
		t.Errorf("error %v, want lines 4 and 6 reported", err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if got := strings.Join(kinds, ","); got != "start,probe,job_started" {
		t.Errorf("kinds %s", got)
	}
}

func TestEventStringRoundTrip(t *testing.T) {
	t.Parallel()
	e := watchdog.Event{Time: time.Unix(1800000042, 0).UTC(), Kind: "stopped",
		Fields: map[string]string{"method": "stop", "msg": "the volume keeps billing"}}
	if s := e.String(); s != "1800000042 stopped method=stop msg=the volume keeps billing" {
		t.Fatalf("String() = %q", s)
	}
	back, err := watchdog.ParseLine(e.String())
	if err != nil || !cmp.Equal(e, back) {
		t.Fatalf("round trip: %v %v", back, err)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"1800000000 start deadline=none interval=60",
		"1800000000 probe result=failed reason=bootstrap key=ready msg=x y  z",
		"1800000000 deleted method=delete",
		"1 a msg=",
		"1800000000 start a=1  b=2",
		"",
		"0 0 0=\n ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		e, err := watchdog.ParseLine(line)
		if err != nil {
			if !errors.Is(err, watchdog.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		back, err := watchdog.ParseLine(e.String())
		if err != nil {
			t.Fatalf("String() of a parsed line does not parse: %q: %v", e.String(), err)
		}
		if !cmp.Equal(e, back) {
			t.Fatalf("round trip changed the event:\n%v\n%v", e, back)
		}
	})
}

func ExampleParseLog() {
	log := `1800000000 start deadline=1800003600 interval=60 boot_grace=1800 retrieve_grace=3600 lease_ttl=900 keep=0 boot_failed=0
1800000001 probe result=ready
1800000005 job_started
1800003600 delete_reason reason=deadline
1800003600 delete_code method=DELETE code=500
1800003601 delete_code method=terminate code=204
1800003601 deleted method=terminate
`
	events, err := watchdog.ParseLog(strings.NewReader(log))
	if err != nil {
		panic(err)
	}
	for _, e := range events {
		switch e.Kind {
		case watchdog.KindDeleteReason:
			fmt.Println("deleted because:", e.Fields["reason"])
		case watchdog.KindDeleteCode:
			fmt.Println(e.Fields["method"], "answered", e.Fields["code"])
		case watchdog.KindDeleted:
			fmt.Println("gone at", e.Time.Format(time.RFC3339), "by", e.Fields["method"])
		}
	}
	// Output:
	// deleted because: deadline
	// DELETE answered 500
	// terminate answered 204
	// gone at 2027-01-15T09:00:01Z by terminate
}
