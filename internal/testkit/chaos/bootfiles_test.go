package chaos_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/guard"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/internal/testkit/checkedfake"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod/runpodtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// The boot-file cells: a FIFO that an earlier pod or job left where the
// bootstrap writes first, in the run directory on a network volume (the
// watchdog's temporary file, the claim), and a network volume that hangs
// at boot (a FUSE mount whose server never answers, over the volume's
// overbrainer directory). A real guarded run boots on the fake's pod
// runner (the production bootstrap and watchdog, under dash, busybox sh and
// bash: the pod's PATH starts with a bash and an sh that run the shell of
// the cell); the launch is told to leave a failed pod, so that only the pod
// side can delete it.
func TestChaosBootFiles(t *testing.T) {
	t.Parallel()
	needPods(t)
	cases := []struct {
		name, file string
		// boots says the run must boot and finish; else the boot
		// guard must fail the bootstrap and the watchdog delete it.
		boots bool
		hang  bool // the volume hangs instead
	}{
		{name: "watchdog_tmp", file: "watchdog.sh.tmp", boots: true},
		{name: "claim", file: "claim"},
		{name: "hung_volume", hang: true},
	}
	left := make([]atomic.Int64, len(cases))
	t.Run("cases", func(t *testing.T) {
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				holdPodSlot(t)
				shtest.ForShells(t, []string{"dash", "busybox", "bash"}, func(t *testing.T, sh shtest.Shell) {
					srv := checkedfake.NewTestServer(t, runpodtest.WithPodRunner(), runpodtest.AllowPodsLeft())
					vol := srv.AddNetworkVolume("", 20)
					runID := "fifo-" + strings.ReplaceAll(c.name, "_", "-") + "-" + sh.Name
					podDir := filepath.Join(vol.Dir, "overbrainer", runID, watchdog.PodDir)
					if err := os.MkdirAll(podDir, 0o755); err != nil {
						t.Fatal(err)
					}
					if c.hang {
						hangDir(t, filepath.Join(vol.Dir, "overbrainer"))
					} else if err := syscall.Mkfifo(filepath.Join(podDir, c.file), 0o644); err != nil {
						t.Fatal(err)
					}
					// The boot guard fails a boot that must fail within 5 s. A
					// boot that must pass gets a minute: one that blocked on
					// the FIFO fails as well, and a loaded machine (the fault
					// matrix's pods beside it) took over 5 s to boot one.
					bootTimeout := "5"
					if c.boots {
						bootTimeout = "60"
					}
					jobDir := t.TempDir()
					if err := os.WriteFile(filepath.Join(jobDir, "job.sh"), []byte("echo done\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					api := checkedfake.Client(t, srv)
					ctx, cancel := context.WithTimeout(context.Background(), wait)
					defer cancel()
					spec := guard.Spec{
						RunID: runID, NetworkVolumeID: vol.ID,
						Job:   guard.Job{Dir: jobDir, Command: "sh job.sh"},
						Rules: podenv.Rules{Deadline: time.Now().Add(time.Hour)},
						PodEnv: map[string]string{"OVERBRAINER_BOOT_TIMEOUT": bootTimeout, "OVERBRAINER_CURL_TIMEOUT": "3",
							"PATH": podShell(t, sh) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
					}
					run, err := guard.Launch(ctx, api, spec, guard.WithPoll(500*time.Millisecond), guard.WithLeaveOnFailure(),
						guard.WithVerdictTimeout(time.Minute), guard.WithStartTimeout(time.Minute))
					switch {
					case c.boots && err != nil:
						t.Fatalf("the run did not boot past a FIFO at %s: %v", c.file, err)
					case c.boots:
						if err := run.Start(ctx, guard.Job{}); err != nil {
							t.Fatal(err)
						}
						end, err := run.Follow(ctx, io.Discard)
						if err != nil || end.Err() != nil {
							t.Fatalf("follow: %v %v", err, end.Err())
						}
						if _, err := run.Delete(ctx); err != nil {
							t.Fatal(err)
						}
					case err == nil:
						t.Fatalf("the run booted although its %s", cmp.Or(c.file, "volume hangs"))
					}
					shtest.Eventually(t, wait, func() bool { return len(srv.Billing()) == 0 }, "no pod left billing")
					if !c.boots && !c.hang {
						shtest.Eventually(t, wait, func() bool {
							b, _ := os.ReadFile(filepath.Join(podDir, "..", watchdog.BootstrapFailed))
							return strings.TrimSpace(string(b)) == "bootstrap_timeout"
						}, "%s is not bootstrap_timeout", watchdog.BootstrapFailed)
					}
					// The cell's shell ran the bootstrap and the watchdog
					// (bash execs the watchdog with $BASH, itself).
					var out strings.Builder
					for _, p := range srv.Pods() {
						out.WriteString(srv.PodLog(p.ID))
					}
					ran := []string{"bash", "sh"}
					if sh.Name == "bash" {
						ran = ran[:1]
					}
					for _, name := range ran {
						if want := "chaos shell: " + name + " runs " + sh.Name; !strings.Contains(out.String(), want) {
							t.Errorf("the pods' output lacks %q:\n%s", want, out.String())
						}
					}
					left[i].Add(int64(len(srv.Billing())))
				})
			})
		}
	})
	for i, c := range cases {
		record(t, "boot files (dash, busybox, bash)", c.name+": pods left billing", "%d", left[i].Load())
	}
}

// podShell returns a directory, visible inside the fake's pods (outside
// /tmp, which each pod gets empty), holding a bash and an sh that run sh (and say so on the pod's output):
// first on the pod's PATH, it makes the pod's command (bash -c) and the
// watchdog the bootstrap execs (bash, else sh) run under sh.
func podShell(t *testing.T, sh shtest.Shell) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "chaos-shell-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	quoted := make([]string, len(sh.Argv))
	for i, a := range sh.Argv {
		quoted[i] = "'" + a + "'"
	}
	for _, name := range []string{"bash", "sh"} {
		body := "#!/bin/sh\necho 'chaos shell: " + name + " runs " + sh.Name + "' >&2\nexec " + strings.Join(quoted, " ") + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// hangDir mounts at dir, on the host, a FUSE file system whose server (this
// test) never answers, as a network volume that stopped answering: every
// access under it blocks in the kernel, killably. The pods see it through
// their bind mount of the volume (recursive). At the end the descriptor
// closes, which aborts the mount (accesses then fail at once), and the
// mount is detached before anything removes the directory.
func hangDir(t *testing.T, dir string) {
	t.Helper()
	fs, _ := os.ReadFile("/proc/filesystems")
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil || !strings.Contains(string(fs), "\tfuse\n") {
		if shtest.Required() {
			t.Fatalf("no FUSE here (%v): a hung volume cannot be made", err)
		}
		t.Skipf("no FUSE here (%v): a hung volume cannot be made", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", f.Fd())
	if err := syscall.Mount("hung", dir, "fuse", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		f.Close()
		t.Fatalf("mount a FUSE file system at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		f.Close()
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
	})
}
