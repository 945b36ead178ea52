package shtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestAllListsEveryShellOnce(t *testing.T) {
	all := All()
	if len(all) != len(Names) {
		t.Fatalf("All() = %d shells, want %d", len(all), len(Names))
	}
	for i, sh := range all {
		if sh.Name != Names[i] {
			t.Errorf("All()[%d] = %s, want %s", i, sh.Name, Names[i])
		}
	}
	if bb, _ := Lookup("busybox"); bb.Available() && (len(bb.Argv) != 2 || bb.Argv[1] != "sh") {
		t.Errorf("busybox argv = %v, want [... sh]", bb.Argv)
	}
}

func TestRunCleanEnvAndArgs(t *testing.T) {
	t.Setenv("SHTEST_LEAK", "outside")
	ForEach(t, func(t *testing.T, sh Shell) {
		bin := NewBin(t)
		bin.Stub("greet", `echo "hello $1"`)
		r := Run(t, sh, `greet "$1"; echo "leak=${SHTEST_LEAK:-} var=$MYVAR pwd=$(pwd)"; echo oops >&2; exit 3`,
			Opts{Bin: bin, Args: []string{"world"}, Env: map[string]string{"MYVAR": "x y"}})
		if r.Code != 3 {
			t.Errorf("exit code = %d, want 3", r.Code)
		}
		want := fmt.Sprintf("hello world\nleak= var=x y pwd=%s\n", r.Dir)
		if r.Stdout != want {
			t.Errorf("stdout = %q, want %q", r.Stdout, want)
		}
		if r.Stderr != "oops\n" {
			t.Errorf("stderr = %q", r.Stderr)
		}
	})
}

func TestStdin(t *testing.T) {
	ForShells(t, []string{"dash", "bash"}, func(t *testing.T, sh Shell) {
		r := Run(t, sh, `read -r line; echo "got $line"`, Opts{Stdin: "secret\n"})
		if r.Stdout != "got secret\n" {
			t.Errorf("stdout = %q", r.Stdout)
		}
	})
}

// The process group, background children included, dies when the test ends.
func TestGroupKilledOnCleanup(t *testing.T) {
	pid := 0
	t.Run("inner", func(t *testing.T) {
		sh, _ := Lookup("dash")
		// Renamed into place: WaitFile may read a file still empty.
		p := Start(t, sh, `sleep 300 & echo $! > child.tmp; mv child.tmp child.pid; wait`, Opts{})
		got := WaitFile(t, filepath.Join(p.Dir, "child.pid"), 30*time.Second)
		var err error
		if pid, err = strconv.Atoi(strings.TrimSpace(got)); err != nil || pid <= 1 {
			t.Fatalf("child.pid %q: %v", got, err)
		}
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("child not running: %v", err)
		}
	})
	if pid == 0 {
		t.Fatal("inner test did not start the child")
	}
	Eventually(t, 10*time.Second, func() bool {
		// A zombie no longer counts: its parent was killed too, so init
		// reaps it; until then /proc shows state Z.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err != nil || strings.Contains(string(b), ") Z ")
	}, "background child %d survived the test", pid)
}

func TestProcSignalAndExit(t *testing.T) {
	sh, _ := Lookup("bash")
	p := Start(t, sh, `trap 'echo term; exit 7' TERM; echo ready; while :; do sleep 0.05; done`, Opts{})
	// The trap is installed once the script says so.
	Eventually(t, time.Minute, func() bool { return p.Stdout() != "" || p.Exited() }, "the script never started")
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.Wait(t, time.Minute); code != 7 || p.Stdout() != "ready\nterm\n" {
		t.Errorf("code %d stdout %q", code, p.Stdout())
	}
}

func TestClockStub(t *testing.T) {
	sh, _ := Lookup("dash")
	bin := NewBin(t)
	c := bin.Clock(1000)
	r := Run(t, sh, `date +%s; sleep 5; date +%s; date -u -d @0 +%Y`, Opts{Bin: bin})
	if r.Stdout != "1000\n1005\n1970\n" {
		t.Errorf("stdout = %q", r.Stdout)
	}
	if c.Now() != 1005 {
		t.Errorf("clock = %d", c.Now())
	}
	c.Advance(10)
	if c.Now() != 1015 {
		t.Errorf("clock after Advance = %d", c.Now())
	}
}

func TestFakeAPIWithCurl(t *testing.T) {
	NeedTool(t, "curl")
	ForEach(t, func(t *testing.T, sh Shell) {
		api := NewFakeAPI(t)
		api.SetDefault("GET", "/pods/p1", Answer{Status: 503})
		api.Queue("GET", "/pods/p1", Answer{Status: 429, Header: map[string]string{"Retry-After": "1"}})
		api.Queue("POST", "", Answer{Drop: true}, Answer{Hang: Forever})
		script := `call() { printf 'Authorization: Bearer %s\n' "$KEY" | curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H @- "$@"; echo; }
call "$API/pods/p1"; call "$API/pods/p1"; call -X POST --data '{"a":1}' "$API/x"; call -X POST "$API/x"; call -X DELETE "$API/pods/p1"`
		r := Run(t, sh, script, Opts{Env: map[string]string{"API": api.URL(), "KEY": "k3y"}})
		if r.Stdout != "429\n503\n000\n000\n204\n" {
			t.Errorf("codes = %q (stderr %q)", r.Stdout, r.Stderr)
		}
		reqs := api.WaitFor(t, func(rs []Request) bool { return len(rs) == 5 }, 10*time.Second)
		if reqs[2].Body != `{"a":1}` || reqs[2].Method != "POST" || reqs[2].Path != "/x" {
			t.Errorf("request 2 = %+v", reqs[2])
		}
		for _, q := range reqs {
			if q.Auth != "Bearer k3y" {
				t.Errorf("%s %s auth = %q", q.Method, q.Path, q.Auth)
			}
		}
		if n := api.Count("GET", "/pods/p1"); n != 2 {
			t.Errorf("Count = %d", n)
		}
	})
}

func TestFakeAPIHandle(t *testing.T) {
	api := NewFakeAPI(t)
	api.Handle(func(r Request) (Answer, bool) {
		return Answer{Status: 418, Body: "teapot"}, strings.Contains(r.Body, "tea")
	})
	sh, _ := Lookup("dash")
	NeedTool(t, "curl")
	r := Run(t, sh, `curl -s -w ' %{http_code}' --data tea "$API/a"; echo; curl -s -w ' %{http_code}' "$API/a"`,
		Opts{Env: map[string]string{"API": api.URL()}})
	if r.Stdout != "teapot 418\n{} 200" {
		t.Errorf("stdout = %q", r.Stdout)
	}
}

// CountTicks counts the creations between the first and the last sleep,
// resumed clones included, failed ones and exec-only lines not.
func TestCountTicks(t *testing.T) {
	log := `100 execve("/bin/dash", ["dash", "w.sh"], 0x7ffd /* 3 vars */) = 0
100 clone(child_stack=NULL, flags=SIGCHLD) = 101
101 execve("/usr/bin/sleep", ["sleep", "60"], 0x5 /* 3 vars */) = 0
100 clone(child_stack=NULL, flags=SIGCHLD) = 102
100 clone3({flags=CLONE_VM, exit_signal=SIGCHLD} <unfinished ...>
100 <... clone3 resumed>, 88) = 103
100 vfork() = -1 EAGAIN (Resource temporarily unavailable)
102 execve("/usr/bin/date", ["date"], 0x5 /* 3 vars */) = 0
100 clone(child_stack=NULL, flags=SIGCHLD) = 104
104 execve("/bin/sleep", ["sleep", "60"], 0x5 /* 3 vars */) = 0
100 clone(child_stack=NULL, flags=SIGCHLD) = 105
`
	path := filepath.Join(t.TempDir(), "strace")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	// After the first sleep: 102, 103 (resumed), 104; 105 is after the
	// last sleep (a turn not finished); the failed vfork is no process.
	if clones, sleeps := CountTicks(path); clones != 3 || sleeps != 2 {
		t.Errorf("CountTicks = %d clones, %d sleeps; want 3, 2", clones, sleeps)
	}
	if clones, sleeps := CountTicks(filepath.Join(t.TempDir(), "missing")); clones != 0 || sleeps != 0 {
		t.Errorf("a missing log counts %d, %d", clones, sleeps)
	}
}
