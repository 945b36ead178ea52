package bootstrap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// take_over's edges, the function alone under every shell: a link at
// .pod/earlier never sends the moves out of the run directory; a
// take-over cut short (the container restarted mid-move) is finished, not
// started over; without OVERBRAINER_TAKE_OVER nothing moves; and a run
// directory that cannot take the move fails the bootstrap rather than
// leave the lost job's files in place.
func TestTakeOverEdges(t *testing.T) {
	// fail and say stand in for the bootstrap's, which hand the pod to
	// the watchdog.
	const harness = `
fail() { echo "FAIL $1"; exit 7; }
say() { echo "SAY $*"; }
RUN_DIR=$PWD/run
POD_DIR=$RUN_DIR/.pod
mkdir -p "$POD_DIR" "$PWD/outside"
echo 4242 > "$RUN_DIR/job.pid"
echo container_restarted > "$RUN_DIR/cancelled"
: > "$POD_DIR/lease"
`
	for _, c := range []struct {
		name, setup string
		takeOver    bool
		code        int
		check       func(t *testing.T, dir, out string)
	}{
		{"link at earlier", `ln -s "$PWD/outside" "$POD_DIR/earlier"`, true, 0, func(t *testing.T, dir, out string) {
			if ents, _ := os.ReadDir(filepath.Join(dir, "outside")); len(ents) != 0 {
				t.Errorf("the move went through the link: outside holds %v", ents)
			}
			movedAside(t, filepath.Join(dir, "run"))
		}},
		{"cut short", `mkdir -p "$POD_DIR/earlier/pod1.partial/.pod" && mv "$RUN_DIR/job.pid" "$POD_DIR/earlier/pod1.partial/"`, true, 0, func(t *testing.T, dir, out string) {
			movedAside(t, filepath.Join(dir, "run"))
			if _, err := os.Stat(filepath.Join(dir, "run/.pod/earlier/pod1.partial")); !os.IsNotExist(err) {
				t.Errorf("the partial take-over is left (%v)", err)
			}
		}},
		{"not a take-over", "", false, 0, func(t *testing.T, dir, out string) {
			for _, f := range []string{"job.pid", "cancelled", ".pod/lease"} {
				if _, err := os.Stat(filepath.Join(dir, "run", f)); err != nil {
					t.Errorf("%s moved without OVERBRAINER_TAKE_OVER: %v", f, err)
				}
			}
		}},
		{"cannot move", `: > "$POD_DIR/earlier"`, true, 7, func(t *testing.T, dir, out string) {
			if !strings.Contains(out, "FAIL run_dir_unwritable") {
				t.Errorf("output %q, want the bootstrap failed with run_dir_unwritable", out)
			}
		}},
	} {
		for _, name := range shtest.Names {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				sh, ok := shtest.Lookup(name)
				if !ok {
					t.Fatalf("unknown shell %q", name)
				}
				env := map[string]string{"RUNPOD_POD_ID": "pod1"}
				if c.takeOver {
					env["OVERBRAINER_TAKE_OVER"] = "1"
				}
				res := shtest.Run(t, sh, bootstrap.Functions()+harness+c.setup+"\ntake_over\necho done\n", shtest.Opts{Env: env})
				if res.Code != c.code {
					t.Fatalf("exit %d, want %d\n%s%s", res.Code, c.code, res.Stdout, res.Stderr)
				}
				c.check(t, res.Dir, res.Stdout)
			})
		}
	}
}

// movedAside checks that the lost job's files of run directory dir are
// in .pod/earlier/pod1, out of the way.
func movedAside(t *testing.T, dir string) {
	t.Helper()
	for f, want := range map[string]string{"job.pid": "4242\n", "cancelled": "container_restarted\n", ".pod/lease": ""} {
		if got, err := os.ReadFile(filepath.Join(dir, ".pod/earlier/pod1", f)); err != nil || string(got) != want {
			t.Errorf("%s in .pod/earlier/pod1: %q, %v; want %q", f, got, err, want)
		}
		if _, err := os.Lstat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s is still in the run directory (%v)", f, err)
		}
	}
}
