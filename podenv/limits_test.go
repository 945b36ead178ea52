package podenv_test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The largest deadline and graces podenv accepts are read as set by the
// real watchdog under every shell (mksh computes with 32 bits): no bad
// setting, and no rule takes the pod at its first ticks.
func TestTheWatchdogReadsTheLargestAccepted(t *testing.T) {
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		api := shtest.NewFakeAPI(t)
		s := seedSettings()
		s.APIURL = api.URL()
		s.Interval = time.Second
		s.RetrieveGrace = time.Hour
		s.Deadline = time.Unix(math.MaxInt32-3600, 0)
		s.BootGrace = math.MaxInt32 * time.Second
		env := mustEnv(t, s)
		dir := t.TempDir()
		env["OVERBRAINER_RUN_DIR"] = dir
		env["RUNPOD_POD_ID"], env["RUNPOD_API_KEY"] = "pod-1", "key"
		p := shtest.Start(t, sh, watchdog.Script(), shtest.Opts{Dir: dir, Env: env})

		verdict := shtest.WaitFile(t, filepath.Join(dir, watchdog.VerdictFile), time.Minute)
		if strings.TrimSpace(verdict) != "ready" {
			t.Fatalf("verdict %q", verdict)
		}
		// Three one-second ticks at least.
		time.Sleep(3 * time.Second)
		b, _ := os.ReadFile(filepath.Join(dir, watchdog.Log))
		if p.Exited() || api.Count("DELETE", "") != 0 {
			t.Fatalf("the watchdog deleted the pod at once:\n%s", b)
		}
		ev := startLine(t, dir, env)
		if ev.Fields["deadline"] != strconv.Itoa(math.MaxInt32-3600) || ev.Fields["boot_grace"] != strconv.Itoa(math.MaxInt32) {
			t.Errorf("start line %v", ev)
		}
	})
}
