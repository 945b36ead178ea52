//go:build linux

package localpod

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// podInitHere runs the pod's init when this process is one: this very
// binary, re-executed by the runner with RUNPODTEST_POD_INIT=1 as PID 1 of
// new mount, PID, UTS and IPC namespaces.
func podInitHere() {
	if os.Getenv(initEnvVar) != "1" || os.Getpid() != 1 {
		return
	}
	// syscall.Exit, not os.Exit: a binary built with -race would sleep a
	// second at exit (atexit_sleep_ms), holding the pod up.
	syscall.Exit(podInit())
}

// podInit builds the pod's root, runs its command as the container's main
// process, forwards signals to it and reaps every orphan, as docker-init
// does; it exits with the command's status, and with it the kernel ends
// every process of the namespace.
func podInit() int {
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	status := os.NewFile(4, "status")
	report := func(st initStatus) {
		_ = json.NewEncoder(status).Encode(st)
		_ = status.Close()
	}
	var cfg initConfig
	cfgFile := os.NewFile(3, "config")
	err := json.NewDecoder(cfgFile).Decode(&cfg)
	_ = cfgFile.Close()
	if err == nil && len(cfg.Words) == 0 {
		err = errors.New("no command")
	}
	if err != nil {
		report(initStatus{Error: "pod init: " + err.Error()})
		return 125
	}
	if cfg.HoldsPort {
		syscall.CloseOnExec(portHoldFD)
	}
	if err := buildRoot(&cfg); err != nil {
		report(initStatus{Error: "build the pod's root: " + err.Error()})
		return 125
	}
	if err := writeImageFiles(cfg.Files); err != nil {
		report(initStatus{Error: "write the image's files: " + err.Error()})
		return 125
	}
	if cfg.Hostname != "" {
		if err := syscall.Sethostname([]byte(cfg.Hostname)); err != nil {
			report(initStatus{Error: "set the pod's hostname: " + err.Error()})
			return 125
		}
	}
	// The bounding set is per thread, and the command is forked from
	// this one: keep it.
	runtime.LockOSThread()
	dropCapabilities()
	argv0, err := lookPath(cfg.Words[0], cfg.Env)
	if err != nil {
		report(initStatus{Error: err.Error()})
		return 127
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	if cfg.HoldsPort {
		// The last moment before the command, whose sshd may bind the
		// port right away: from here to that bind, another process could
		// take the port (no pod of this process: the fake keeps it reserved).
		_ = syscall.Close(portHoldFD)
	}
	pid, err := syscall.ForkExec(argv0, cfg.Words, &syscall.ProcAttr{
		Dir:   "/",
		Env:   cfg.Env,
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		report(initStatus{Error: fmt.Sprintf("exec %s: %v", cfg.Words[0], err)})
		return 126
	}
	report(initStatus{OK: true})
	go func() {
		for sig := range sigs {
			_ = syscall.Kill(pid, sig.(syscall.Signal))
		}
	}()
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 125
		}
		if wpid != pid {
			continue // an orphan the namespace handed to its init
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// buildRoot makes the pod's root: an overlay of the host's / whose writes go
// to a tmpfs of the pod's disk size, so that nothing the pod writes reaches
// the host; a /proc of its own PID namespace; the host's /dev and /sys; a
// fresh /tmp and /dev/shm; then the pod's mounts (its volumes, and empty
// tmpfs over /etc/ssh, /etc/overbrainer, /root and its workdir).
func buildRoot(cfg *initConfig) error {
	// First of all: nothing mounted from now on may propagate to the host.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	size := cfg.DiskGB
	if size <= 0 {
		size = 10
	}
	ns := cfg.NSDir
	if err := syscall.Mount("tmpfs", ns, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%dg,mode=0755", size)); err != nil {
		return fmt.Errorf("tmpfs at %s: %w", ns, err)
	}
	upper, work, root := ns+"/upper", ns+"/work", ns+"/root"
	for _, dir := range []string{upper, work, root} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
	}
	if err := syscall.Mount("overlay", root, "overlay", 0, "lowerdir=/,upperdir="+upper+",workdir="+work); err != nil {
		return fmt.Errorf("overlay of / (is overlayfs available?): %w", err)
	}
	old := root + "/.oldroot"
	if err := os.MkdirAll(old, 0o700); err != nil {
		return err
	}
	if err := syscall.PivotRoot(root, old); err != nil {
		// The host's / cannot be pivoted away from (an initramfs):
		// reach it through a bind mount and chroot instead.
		if err := syscall.Mount("/", old, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind the old root: %w", err)
		}
		if err := syscall.Chroot(root); err != nil {
			return fmt.Errorf("chroot: %w", err)
		}
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	// From here every path is inside the pod's root: a symlink on the way
	// to a mountpoint cannot lead out of it. Only /.oldroot still reaches
	// the host, and it goes at the end.
	type mnt struct {
		source, target, fstype string
		flags                  uintptr
		data                   string
	}
	var mounts []mnt
	for _, dir := range cfg.Hidden {
		if strings.HasPrefix(dir, "/.oldroot") || !path.IsAbs(dir) || dir == "/" {
			return fmt.Errorf("bad directory to hide %q", dir)
		}
		if _, err := os.Stat(dir); err == nil {
			mounts = append(mounts, mnt{"tmpfs", dir, "tmpfs", syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC, "mode=0700,size=1m"})
		}
	}
	mounts = append(mounts, []mnt{
		{"proc", "/proc", "proc", syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC, ""},
		{"/.oldroot/dev", "/dev", "", syscall.MS_BIND | syscall.MS_REC, ""},
		{"tmpfs", "/dev/shm", "tmpfs", syscall.MS_NOSUID | syscall.MS_NODEV, "mode=1777"},
		{"/.oldroot/sys", "/sys", "", syscall.MS_BIND | syscall.MS_REC, ""},
		{"tmpfs", "/tmp", "tmpfs", syscall.MS_NOSUID | syscall.MS_NODEV, "mode=1777"},
	}...)
	for _, m := range cfg.Mounts {
		if strings.HasPrefix(m.Target, "/.oldroot") || !path.IsAbs(m.Target) {
			return fmt.Errorf("bad mountpoint %q", m.Target)
		}
		if m.Source != "" {
			mounts = append(mounts, mnt{"/.oldroot" + m.Source, m.Target, "", syscall.MS_BIND | syscall.MS_REC, ""})
		} else {
			mounts = append(mounts, mnt{"tmpfs", m.Target, "tmpfs", syscall.MS_NOSUID | syscall.MS_NODEV, fmt.Sprintf("mode=%o", m.Mode)})
		}
	}
	for _, m := range mounts {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return err
		}
		if err := syscall.Mount(m.source, m.target, m.fstype, m.flags, m.data); err != nil {
			return fmt.Errorf("mount %s at %s: %w", m.source, m.target, err)
		}
	}
	if err := syscall.Unmount("/.oldroot", syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	return os.Remove("/.oldroot")
}

// lookPath finds the command as execvp would, with the pod's PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	dirs := BasePath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			dirs = v
		}
	}
	for _, dir := range strings.Split(dirs, ":") {
		if dir == "" {
			dir = "."
		}
		p := path.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found in the pod's PATH", name)
}

// podCaps are the capabilities a pod keeps: Docker's default set, which
// is what a Runpod container has, and all that the bootstrap, its sshd
// (setuid, chroot for privilege separation, audit) and a job need. The
// rest (CAP_SYS_ADMIN above all: mount, and with it a way out of the
// overlay; CAP_SYS_PTRACE, CAP_SYS_MODULE, CAP_NET_ADMIN...) leave the
// bounding set, so that nothing the command runs gets them back.
var podCaps = map[int]bool{
	0: true, 1: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, // CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP
	10: true, 13: true, 18: true, 27: true, 29: true, 31: true, // NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP
}

// dropCapabilities drops the capabilities a pod does not need from the
// calling thread's bounding set. A kernel that refuses (no CAP_SETPCAP)
// leaves the pod with what it has: the isolation is best effort there.
func dropCapabilities() {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	const prCapBSetDrop = 24
	for c := 0; c <= last; c++ {
		if !podCaps[c] {
			_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prCapBSetDrop, uintptr(c), 0)
		}
	}
}

// writeImageFiles puts the image's files into the pod's root (its overlay,
// never the host), as executables, as if the image held them.
func writeImageFiles(files map[string]string) error {
	for name, content := range files {
		if !path.IsAbs(name) || strings.HasPrefix(name, "/.oldroot") {
			return fmt.Errorf("bad image file %q", name)
		}
		if err := os.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, []byte(content), 0o755); err != nil {
			return err
		}
		if err := os.Chmod(name, 0o755); err != nil {
			return err
		}
	}
	return nil
}
