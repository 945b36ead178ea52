package chaos_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The careless-job cells: what a job running as root leaves in the run
// directory or its home (a directory where the watchdog writes a file, a
// FIFO at its log, a curl proxy for its own downloads, a client file
// swapped for a FIFO between the watchdog's check and its read). Under
// dash, busybox sh and bash, the real watchdog must still delete the pod by
// its cost cap, within the rule's bound.
var carelessCases = []struct {
	name    string
	prepare func(h *hostileRun)
}{
	{name: "directory_at_du_running", prepare: func(h *hostileRun) {
		h.withVolume()
		h.startJob()
		h.capIn(6)
		if err := os.Mkdir(h.path(watchdog.DuRunning), 0o755); err != nil {
			h.t.Fatal(err)
		}
	}},
	{name: "fifo_at_log", prepare: func(h *hostileRun) {
		h.startJob()
		h.capIn(6)
		h.fifo(watchdog.Log)
	}},
	{name: "curlrc_proxy", prepare: func(h *hostileRun) {
		h.startJob()
		h.capIn(6)
		home := h.t.TempDir()
		if err := os.WriteFile(filepath.Join(home, ".curlrc"), []byte("proxy = \"http://127.0.0.1:9\"\n"), 0o644); err != nil {
			h.t.Fatal(err)
		}
		h.env["HOME"] = home
		h.env["http_proxy"] = "http://127.0.0.1:9"
		h.env["HTTPS_PROXY"] = "http://127.0.0.1:9"
	}},
	{name: "fifo_swapped_in_a_race", prepare: func(h *hostileRun) {
		realHead, err := exec.LookPath("head")
		if err != nil {
			h.t.Fatal(err)
		}
		// The head stub swaps cost_cap_at for a FIFO once, after the
		// watchdog's regular-file check and just before its read.
		mark := filepath.Join(h.bin.Dir, ".swapped")
		h.bin.Stub("head", fmt.Sprintf(`if [ ! -e %[1]q ]; then : >%[1]q; f=$OVERBRAINER_RUN_DIR/.pod/cost_cap_at; rm -f "$f"; mkfifo "$f"; fi
exec %[2]q "$@"`, mark, realHead))
		// No job: a cap past due deletes at the first tick.
		h.due = h.base - 10
		h.write(watchdog.CostCapAt, itoa(h.due)+"\n")
	}},
}

func TestChaosCarelessJob(t *testing.T) {
	t.Parallel()
	var ran, deleted atomic.Int64
	var worst atomic.Int64
	// Per case: shells run, and pods deleted.
	caseRan := make([]atomic.Int64, len(carelessCases))
	caseDeleted := make([]atomic.Int64, len(carelessCases))
	t.Run("cases", func(t *testing.T) {
		for i, c := range carelessCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				shtest.ForShells(t, []string{"dash", "busybox", "bash"}, func(t *testing.T, sh shtest.Shell) {
					ran.Add(1)
					caseRan[i].Add(1)
					api := shtest.NewFakeAPI(t)
					h := &hostileRun{wd: newWD(t, sh, api, "pod-careless"), outside: t.TempDir(), base: time.Now().Unix()}
					c.prepare(h)
					h.start()
					at := h.waitDelete()
					deleted.Add(1)
					caseDeleted[i].Add(1)
					delay := at.Sub(time.Unix(h.due, 0))
					if c.name == "fifo_swapped_in_a_race" {
						delay = 0 // due before the start: the bound is the first tick
					}
					for {
						w := worst.Load()
						if int64(delay) <= w || worst.CompareAndSwap(w, int64(delay)) {
							break
						}
					}
					if delay < 0 {
						t.Errorf("deleted %s before the cap", seconds(-delay))
					}
					if delay > ruleBound+Slack {
						t.Errorf("deleted %s after the cap, bound %s + slack %s", seconds(delay), ruleBound, Slack)
					}
					shtest.Eventually(t, wait, func() bool { return h.reason() != "" }, "delete_reason in the log")
					if got := h.reason(); got != string(watchdog.DeleteCostCap) {
						t.Errorf("delete reason %q, want %q\n%s", got, watchdog.DeleteCostCap, h.logTail())
					}
					if fi, err := os.Lstat(h.path(watchdog.Log)); err != nil || !fi.Mode().IsRegular() {
						t.Errorf("the watchdog's log is not a regular file: %v %v", fi, err)
					}
					shtest.Eventually(t, wait, h.proc.Exited, "the watchdog exits after the delete")
					if _, err := os.Stat(filepath.Join(h.bin.Dir, ".swapped")); c.name == "fifo_swapped_in_a_race" && err != nil {
						t.Errorf("the FIFO was never swapped in: %v", err)
					}
				})
			})
		}
	})
	record(t, "careless job", "cases run (cases x dash, busybox, bash)", "%d", ran.Load())
	record(t, "careless job", "pods left billing", "%d", ran.Load()-deleted.Load())
	for i, c := range carelessCases {
		record(t, "careless job", c.name+": pods left billing", "%d", caseRan[i].Load()-caseDeleted[i].Load())
	}
	record(t, "careless job", "worst delay past the cost cap", "%s", seconds(time.Duration(worst.Load())))
}
