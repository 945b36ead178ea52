package watchdog_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// procGroup returns the process group of pid, or -1.
func procGroup(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return -1
	}
	g, _ := strconv.Atoi(f[2])
	return g
}

// The pod's key reaches the API, yet appears in no process's command line
// (read from /proc while the watchdog and curl run), in no environment of
// the watchdog's children, in no file under the run directory, and not in the
// log. Every external command the watchdog could run is also wrapped, so a
// shell that ran an external echo or printf with the key would be caught
// even between two /proc scans.
func TestKeyNeverExposed(t *testing.T) {
	t.Parallel()
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		p := newPod(t, sh)
		p.setEnv("OVERBRAINER_BOOT_GRACE", "1")
		rec := filepath.Join(p.bin.Dir, ".argv")
		for _, c := range []string{"curl", "printf", "echo", "date", "stat", "mv", "rm", "mkdir", "kill", "timeout", "cat", "test", "[", "head"} {
			real, err := exec.LookPath(c)
			if err != nil {
				continue
			}
			p.bin.Stub(c, fmt.Sprintf(`{ echo "ARGV %s $*"; env; } >> %q 2>/dev/null
exec %q "$@"`, c, rec, real))
		}
		// Long enough for a /proc scan to catch curl on a loaded machine.
		hang := time.Second
		p.api.SetDefault("", "", shtest.Answer{Status: 200, Hang: hang})
		p.api.Queue("DELETE", "", shtest.Answer{Status: 500, Hang: hang})
		p.api.Queue("POST", "", shtest.Answer{Status: 500, Hang: hang}, shtest.Answer{Status: 200, Hang: hang})

		var (
			mu      sync.Mutex
			leaks   = map[string]bool{}
			sawCurl bool
		)
		stop := make(chan struct{})
		scanned := make(chan struct{})
		p.start()
		pgid := p.proc.Pgid
		// The watchdog's command line, shared by its forks: the argv it
		// was started with, not a read of its /proc entry, which is
		// empty once it is a zombie, while a fork may still live.
		self := []byte(strings.Join(p.proc.Cmd.Args, "\x00") + "\x00")
		go func() {
			defer close(scanned)
			for {
				select {
				case <-stop:
					return
				default:
				}
				ents, _ := os.ReadDir("/proc")
				for _, e := range ents {
					pid, err := strconv.Atoi(e.Name())
					if err != nil {
						continue
					}
					cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
					if err != nil {
						continue
					}
					mu.Lock()
					if bytes.Contains(cmd, []byte(apiKey)) {
						leaks["command line of "+strings.ReplaceAll(string(cmd), "\x00", " ")] = true
					}
					// The watchdog's own environment (and that of its forked
					// subshells, which run no other program) is the container's,
					// where the key comes from; every program it runs must
					// get an environment without it.
					if pid != pgid && !bytes.Equal(cmd, self) && procGroup(pid) == pgid {
						if bytes.Contains(cmd, []byte("curl")) && bytes.Contains(cmd, []byte(p.api.URL())) {
							sawCurl = true
						}
						if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil && bytes.Contains(env, []byte(apiKey)) {
							leaks["environment of "+strings.ReplaceAll(string(cmd), "\x00", " ")] = true
						}
					}
					mu.Unlock()
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
		p.exit()
		close(stop)
		<-scanned

		if !sawCurl {
			t.Error("the scan never saw curl running: it proves nothing")
		}
		for l := range leaks {
			t.Errorf("key exposed in the %s", l)
		}
		reqs := p.api.Requests()
		if len(reqs) != 5 {
			t.Errorf("%d requests, want probe, DELETE, terminate, stop and the GET that confirms it", len(reqs))
		}
		for _, r := range reqs {
			if r.Auth != "Bearer "+apiKey {
				t.Errorf("%s %s: Authorization %q", r.Method, r.Path, r.Auth)
			}
		}
		b, err := os.ReadFile(rec)
		if err != nil || !strings.Contains(string(b), "ARGV curl ") {
			t.Fatalf("wrappers recorded nothing: %v", err)
		}
		if strings.Contains(string(b), apiKey) {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, apiKey) {
					t.Errorf("a command got the key: %s", l)
				}
			}
		}
		_ = filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(apiKey)) {
				t.Errorf("key found in %s", path)
			}
			return nil
		})
		if log := p.logText(); log == "" || strings.Contains(log, apiKey) {
			t.Errorf("log empty or holding the key:\n%s", log)
		}
		if find(p.events(), -1, watchdog.KindStopped) < 0 {
			t.Errorf("the fallback chain did not run\n%s", p.logText())
		}
	})
}
