package runpodtest

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// TestMain fails the run when goroutines outlive the tests: every server is
// closed by then, so whatever still runs leaked from the fake.
func TestMain(m *testing.M) {
	localpod.PodInit()
	if os.Getenv(leaveBehindEnv) == "1" {
		leaveBehind()
	}
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines left after the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

func leakedGoroutines() string {
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			fake := strings.Contains(g, "runpodtest.") || strings.Contains(g, "localpod.")
			if fake && !strings.Contains(g, "leakedGoroutines") && !strings.Contains(g, "TestMain") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
