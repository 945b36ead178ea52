package guard

import (
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
)

// TestNewRunIDsDiffer: runs launched at once from one program, in the same
// second, never get the same id, and every id has the documented form.
func TestNewRunIDsDiffer(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const n = 2000
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			id, err := podenv.NewRunID(now)
			if err != nil {
				t.Error(err)
			}
			ids <- id
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if len(id) != len("20260301-120000-a1b2") || id[:16] != "20260301-120000-" || podenv.CheckRunID(id) != nil {
			t.Errorf("run id %q", id)
		}
		if seen[id] {
			t.Errorf("run id %q made twice", id)
		}
		seen[id] = true
	}
}
