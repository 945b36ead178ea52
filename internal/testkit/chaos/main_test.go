package chaos_test

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// Most of the suite waits on sleeping shells and pods, not on the CPU: run
// many tests at once unless -parallel says otherwise, as many as the fault
// matrix runs cells (matrixParallel, what a 2-core machine was measured to
// carry). The load tests run alone, before the rest; every test that runs
// pods is parallel, and holds a pod slot (podSlots) while they run.
func TestMain(m *testing.M) {
	localpod.PodInit()
	shtest.DefaultParallel(matrixParallel)
	var err error
	if buildDir, err = os.MkdirTemp("", "chaos-bin-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(buildDir)
	recordBills()
	printFigures(os.Stdout)
	os.Exit(code)
}

// podSlots bounds the pods of the whole suite running at once, the fault
// matrix's cells and every other test's: each holds a slot while its pods
// run (holdPodSlot). The matrix and the rest share the machine, so that
// the suite's wall time is its pods' work over matrixParallel, not the
// matrix's then the rest's.
var podSlots = make(chan struct{}, matrixParallel)

// holdPodSlot waits for a pod slot, which t holds until it ends.
func holdPodSlot(t testing.TB) {
	podSlots <- struct{}{}
	t.Cleanup(func() { <-podSlots })
}

// buildDir holds the launcher binaries this package builds; TestMain
// removes it.
var buildDir string

// loadPods is how many pods the load tests run at once.
const loadPods = 50

// Slack is what a loaded 2-core CI machine may add to a rule's own bound
// before a timed assertion fails. CHAOS_SLACK (a Go duration) overrides it.
// The rules themselves are on time (a cell run alone ends 1 s or more inside
// its bound); under 16 cells at once a CI machine delayed a cost cap by
// 5.6 s past its bound, once, and 50 watchdogs at once by 5.1 s, so 5 s was
// too tight. The figures report the delays as measured, whatever the slack.
var Slack = envDuration("CHAOS_SLACK", 8*time.Second)

// wait bounds every poll for something that must happen; generous, since
// a late event is measured and reported against its bound separately.
var wait = envDuration("CHAOS_WAIT", 2*time.Minute)

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

// A figure is one measured number the suite reports.
type figure struct {
	group, name, value string
}

var figures struct {
	sync.Mutex
	list []figure
}

// record logs a figure on t (visible with -v) and keeps it for the summary
// printed when the package's tests end.
func record(t testing.TB, group, name, format string, args ...any) {
	t.Helper()
	v := fmt.Sprintf(format, args...)
	t.Logf("FIGURE %s | %s | %s", group, name, v)
	figures.Lock()
	defer figures.Unlock()
	figures.list = append(figures.list, figure{group, name, v})
}

func printFigures(w *os.File) {
	figures.Lock()
	defer figures.Unlock()
	if len(figures.list) == 0 {
		return
	}
	list := append([]figure(nil), figures.list...)
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].group != list[j].group {
			return list[i].group < list[j].group
		}
		return list[i].name < list[j].name
	})
	width := 0
	for _, f := range list {
		width = max(width, len(f.group)+len(f.name)+3)
	}
	fmt.Fprintln(w, "chaos figures")
	fmt.Fprintln(w, strings.Repeat("-", width+30))
	for _, f := range list {
		fmt.Fprintf(w, "%-*s %s\n", width, f.group+" | "+f.name, f.value)
	}
}

// seconds formats a duration as seconds with two decimals.
func seconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
