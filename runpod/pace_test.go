package runpod

import (
	"net/http"
	"testing"
	"time"
)

func rateHeader(policy, state string) http.Header {
	h := http.Header{}
	if policy != "" {
		h.Set("RateLimit-Policy", policy)
	}
	h.Set("RateLimit", state)
	return h
}

// The pacer's reading of the headers, answer by answer, on a fixed clock.
func TestPacerReadsTheHeaders(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	p := &pacer{windows: map[string]*paceWindow{}}
	if d := p.take(t0); d != 0 {
		t.Fatalf("no answer yet: wait %s, want none", d)
	}
	p.observe(rateHeader(`"minute";q=3;w=60`, `"minute";r=2;t=60`), t0)
	for i := range 2 {
		if d := p.take(t0); d != 0 {
			t.Fatalf("request %d of 2 left: wait %s", i+1, d)
		}
	}
	if d := p.take(t0.Add(10 * time.Second)); d != 50*time.Second {
		t.Fatalf("window used up: wait %s, want 50s", d)
	}
	// An answer made before the two requests went says r=2 of the same
	// period: what was counted since stands.
	p.observe(rateHeader("", `"minute";r=2;t=59`), t0.Add(time.Second))
	if d := p.take(t0.Add(10 * time.Second)); d == 0 {
		t.Fatal("a stale answer gave back requests already spent")
	}
	// The next period has the policy's quota again.
	for i := range 3 {
		if d := p.take(t0.Add(61 * time.Second)); d != 0 {
			t.Fatalf("new period, request %d of 3: wait %s", i+1, d)
		}
	}
	if d := p.take(t0.Add(61 * time.Second)); d != 59*time.Second {
		t.Fatalf("new period used up: wait %s, want 59s", d)
	}
	// Without a policy, a period that ended leaves nothing known.
	p = &pacer{windows: map[string]*paceWindow{}}
	p.observe(rateHeader("", `"minute";r=0;t=5, "hour";r=9;t=3000`), t0)
	if d := p.take(t0); d != 5*time.Second {
		t.Fatalf("minute used up: wait %s, want 5s", d)
	}
	if d := p.take(t0.Add(5 * time.Second)); d != 0 {
		t.Fatalf("minute reset, quota unknown: wait %s, want none", d)
	}
	if _, ok := p.windows["minute"]; ok {
		t.Error("a period that ended without a policy is still counted")
	}
	// Headers that say nothing usable change nothing.
	p.observe(rateHeader("", `"x";r=1, garbage, "y";t=3`), t0)
	if _, ok := p.windows["x"]; ok {
		t.Error("a window without t was taken")
	}
}

// Clients of one key and API share a pacer; another key or API does not.
func TestPacerIsSharedByKeyAndAPI(t *testing.T) {
	a := pacerFor("http://127.0.0.1:1/v2", "key-a")
	if pacerFor("http://127.0.0.1:1/v2", "key-a") != a {
		t.Error("the same key and API got another pacer")
	}
	if pacerFor("http://127.0.0.1:1/v2", "key-b") == a || pacerFor("http://127.0.0.1:2/v2", "key-a") == a {
		t.Error("another key or API shares the pacer")
	}
}
