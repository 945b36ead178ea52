package chaos_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
)

// The pod-state cells: Runpod does something to a pod while the launcher
// follows it (stops it, breaks it, restarts its container, kills its
// watchdog) or loses the answer to a call that worked, or runs out of
// quota. Each ends with no pod left running or stopped; its figures are
// the pods left and the dollars billed past the moment the launcher had
// what it needed to end the pod.

// stateCell is one such cell.
type stateCell struct {
	name string
	opts []runpodtest.Option
	// stubborn runs a job that never ends by itself (the event must end
	// the run), else the demo's three steps.
	stubborn bool
	// capUSD, when set, is the run's cost cap.
	capUSD float64
	// prep sets faults before the launch; event does the cell's thing once
	// the job runs and returns when it happened.
	prep  func(e *env)
	event func(t *testing.T, e *env, id string, l *launcher) time.Time
	// wantOK says the launcher must exit 0 (the run itself succeeded).
	wantOK bool
	// steps is the demo job's length (default 3); need429 says the
	// launcher itself must have met a 429.
	steps   int
	need429 bool
}

func TestChaosPodStates(t *testing.T) {
	t.Parallel()
	needPods(t)
	launcherBinary(t, "")
	cells := []stateCell{
		{name: "exited_on_its_own", stubborn: true, event: func(t *testing.T, e *env, id string, l *launcher) time.Time {
			// Runpod stopped the pod (a host maintenance, say): EXITED.
			call(t, e, "POST", "/v2/pods/"+id+"/action", `{"action":"stop"}`)
			return time.Now()
		}},
		{name: "error", stubborn: true, event: func(t *testing.T, e *env, id string, l *launcher) time.Time {
			if err := e.srv.BreakPod(id, "chaos: unrecoverable container"); err != nil {
				t.Fatal(err)
			}
			return time.Now()
		}},
		{name: "restart_loop", stubborn: true, opts: []runpodtest.Option{runpodtest.WithRestartDelay(200 * time.Millisecond)},
			event: func(t *testing.T, e *env, id string, l *launcher) time.Time {
				// The container crashes, and again once restarted.
				for i := 1; i <= 3; i++ {
					waitUntil(t, func() bool { return e.srv.CrashPod(id) == nil }, func() string { return "no command to crash" })
					waitUntil(t, func() bool { p, _ := e.srv.Pod(id); return p.Restarts >= i || p.Status == runpodtest.StatusTerminated },
						func() string { return "the container did not restart" })
					if p, _ := e.srv.Pod(id); p.Status == runpodtest.StatusTerminated {
						break
					}
				}
				return time.Now()
			}},
		{name: "watchdog_killed", stubborn: true, capUSD: podPrice * followCap.Hours(), event: func(t *testing.T, e *env, id string, l *launcher) time.Time {
			// The watchdog is the container's main process: killed, the
			// container restarts and the job is lost.
			killed := 0
			for _, pid := range podProcesses(id, "/.pod/watchdog.sh") {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed++
				}
			}
			if killed == 0 {
				t.Fatalf("no watchdog process found in pod %s", id)
			}
			// The bound is the cost cap, which the launcher enforces now.
			p, _ := e.srv.Pod(id)
			return time.Now().Add(time.Duration((podPrice*followCap.Hours() - p.Bill.USD) / podPrice * float64(time.Hour)))
		}},
		{name: "create_answer_lost", wantOK: true, prep: func(e *env) {
			e.srv.Fail("POST", "/v2/pods", runpodtest.Fault{Lost: true})
		}},
		{name: "delete_answer_lost", wantOK: true, prep: func(e *env) {
			e.srv.Fail("DELETE", "/v2/pods/*", runpodtest.Fault{Lost: true, Caller: runpodtest.CallerAccount})
		}},
		{name: "rate_limit_exhausted", wantOK: true, steps: 8, need429: true, opts: []runpodtest.Option{
			runpodtest.WithQuota(runpodtest.QuotaWindow{Name: "3s", Limit: 40, Window: 3 * time.Second}),
		}, event: func(t *testing.T, e *env, id string, l *launcher) time.Time {
			// Another tool of the account keeps its quota used up while
			// the launcher follows, collects and deletes: the launcher's
			// pacing cannot see it coming.
			go func() {
				for !l.exited() {
					for range 60 {
						if get(e, "/v2/pods") != http.StatusOK {
							break
						}
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			return time.Time{} // no bound: the run must simply succeed
		}},
		{name: "watchdog_hung", stubborn: true, capUSD: podPrice * followCap.Hours(), event: func(t *testing.T, e *env, id string, l *launcher) time.Time {
			// A watchdog that hangs (stopped, not dead: the container
			// goes on) leaves the cost cap to the launcher.
			stopped := 0
			for _, pid := range podProcesses(id, "/.pod/watchdog.sh") {
				if syscall.Kill(pid, syscall.SIGSTOP) == nil {
					stopped++
				}
			}
			if stopped == 0 {
				t.Fatalf("no watchdog process found in pod %s", id)
			}
			p, _ := e.srv.Pod(id)
			return time.Now().Add(time.Duration((podPrice*followCap.Hours() - p.Bill.USD) / podPrice * float64(time.Hour)))
		}},
	}
	for _, sc := range cells {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			holdPodSlot(t)
			runStateCell(t, sc)
		})
	}
}

func runStateCell(t *testing.T, sc stateCell) {
	c := &cell{step: "states", fault: sc.name}
	e := &env{t: t, c: c, sec: newSecretSet(), stateDir: filepath.Join(t.TempDir(), "state"), hf: "hf_states" + strconv.Itoa(os.Getpid())}
	e.bin = launcherBinary(t, "")
	e.srv = checkedfake.NewTestServer(t, append([]runpodtest.Option{runpodtest.WithPodRunner()}, sc.opts...)...)
	e.vol = e.srv.AddNetworkVolume("", 20)
	e.bootGrace, e.retrieveGrace = longGrace, longGrace
	args := e.runArgs()
	args = args[:len(args)-4] // the default job
	if sc.stubborn {
		e.job = stubbornJob(t)
		args = append(args, "--max-hours", "1", "--job", e.job, "--cmd", "sh stubborn.sh")
	} else {
		args = append(args, "--max-hours", "1", "--cmd", fmt.Sprintf("DEMO_STEPS=%d sh train.sh", max(sc.steps, 3)))
	}
	if sc.capUSD > 0 {
		args = append(args, "--max-cost-usd", strconv.FormatFloat(sc.capUSD, 'f', -1, 64))
	}
	if sc.prep != nil {
		sc.prep(e)
	}
	l := startLauncher(t, e.bin, e.environ(), args...)
	bound := time.Time{}
	var usdAtBound float64
	if sc.event != nil {
		if !l.waitFor(l.says("job started")) {
			t.Fatalf("the job never started (%s)", l.state())
		}
		id := e.podID()
		bound = sc.event(t, e, id, l)
		if p, ok := e.srv.Pod(id); ok {
			usdAtBound = p.Bill.USD
		}
	}
	code := l.wait()
	if sc.wantOK && code != 0 {
		t.Errorf("launcher exit %d, want 0:\n%s", code, l.output())
	}
	served, launcher429 := 0, 0
	for _, r := range e.srv.Requests() {
		if r.Fault || r.Status == http.StatusTooManyRequests {
			served++
		}
		if r.Status == http.StatusTooManyRequests && r.Header.Get("User-Agent") != exhaustAgent {
			launcher429++
		}
	}
	if sc.event == nil && served == 0 {
		t.Errorf("no lost answer or 429 was served: the cell tested nothing")
	}
	if sc.need429 && launcher429 == 0 {
		t.Errorf("the launcher never met a 429: the cell tested nothing")
	}
	pods := e.srv.Pods()
	if len(pods) != 1 {
		t.Errorf("%d pods for one launch", len(pods))
	}
	var running, stopped int
	var past time.Duration
	var usdPast float64
	for _, p := range pods {
		switch p.Status {
		case runpodtest.StatusTerminated:
		case runpodtest.StatusExited, runpodtest.StatusError:
			stopped++
		default:
			running++
		}
		if end, ok := podEnd(e, p.ID); ok && !bound.IsZero() {
			past = max(past, end.Sub(bound))
			usdPast += max(p.Bill.USD-max(usdAtBound, sc.capUSD), 0)
		}
	}
	if running+stopped > 0 {
		t.Errorf("after the launcher ended (exit %d): %d pods left running, %d stopped:\n%s", code, running, stopped, l.output())
	}
	t.Logf("the launcher (exit %d) said:\n%s", code, lastLines(l.output(), 12))
	group := "pod states"
	record(t, group, sc.name+": pods left running / stopped", "%d / %d", running, stopped)
	record(t, group, sc.name+": past the bound, dollars past it", "%s, $%.6f", seconds(past), usdPast)
	e.cleanUp(l)
}

// exhaustAgent names the requests of the tool that uses up the quota.
const exhaustAgent = "chaos-quota-eater"

// get makes one GET with the account key as another tool of the account
// would, and returns the status.
func get(e *env, path string) int {
	req, err := http.NewRequest("GET", e.srv.URL+path, nil)
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+e.srv.APIKey())
	req.Header.Set("User-Agent", exhaustAgent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// podEnd is when the call that terminated the pod was answered.
func podEnd(e *env, id string) (time.Time, bool) {
	for _, r := range e.srv.Requests() {
		if r.Status == http.StatusNoContent && (r.Method == "DELETE" && r.Path == "/v2/pods/"+id ||
			r.Method == "POST" && r.Path == "/v2/pods/"+id+"/action" && strings.Contains(string(r.Body), "terminate")) {
			return r.Time, true
		}
	}
	return time.Time{}, false
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// call makes one API call with the account key, as Runpod's side of a
// cell, and fails the test unless it is answered 2xx.
func call(t *testing.T, e *env, method, path, body string) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.srv.APIKey())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
}

// podProcesses lists the host pids of the pod's processes whose command
// line holds word: those in the PID namespace of the pod's init.
func podProcesses(podID, word string) []int {
	entries, _ := os.ReadDir("/proc")
	var ns string
	for _, ent := range entries {
		cmd, _ := os.ReadFile("/proc/" + ent.Name() + "/cmdline")
		if string(cmd) == "runpodtest-pod-init\x00"+podID+"\x00" {
			ns, _ = os.Readlink("/proc/" + ent.Name() + "/ns/pid_for_children")
		}
	}
	if ns == "" {
		return nil
	}
	var pids []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if got, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); got != ns {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cmd), word) {
			pids = append(pids, pid)
		}
	}
	return pids
}
