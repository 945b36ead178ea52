package runpodtest

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/runpod/localpod"
)

// The pod runner: with WithPodRunner, each created pod's command really runs
// here, in namespaces of its own (package localpod runs it). This file
// drives a pod's runs from the fake's state: when one starts, what the pod
// shows meanwhile, and what its end makes of the pod.

// checkPodRunner is localpod.Check, a variable so that a test run as root
// can see what a user without root gets.
var checkPodRunner = localpod.Check

// launch is one run of a pod's command, from its start (after the
// provisioning delay) to the end of every process it made.
type launch struct {
	mu     sync.Mutex
	killed bool
	// starting is set once the run has begun to start the pod's processes:
	// from then on the command may already run (and write its log) before
	// proc is known, so a stop must reach it with SIGTERM, not cancel it.
	starting bool
	// termPending records a stop that came while starting: the run sends
	// the SIGTERM as soon as it has proc.
	termPending bool
	proc        localpod.Process
	cancel      chan struct{} // closed by kill: stop waiting to start
	done        chan struct{} // closed once nothing of the run is left
	// delay is the wait before the run starts anything: the provisioning
	// delay, or a container restart's back-off.
	delay time.Duration
}

func (l *launch) kill() {
	l.mu.Lock()
	if !l.killed {
		l.killed = true
		close(l.cancel)
	}
	proc := l.proc
	l.mu.Unlock()
	if proc != nil {
		proc.Kill()
	}
}

// stop asks the pod's command to end, and kills it after grace.
func (l *launch) stop(grace time.Duration) {
	l.mu.Lock()
	proc, starting := l.proc, l.starting
	if proc == nil && starting && !l.killed {
		// The command may be running already: the run terminates it
		// once it has it (publish), so that the SIGTERM is never lost.
		l.termPending = true
	}
	l.mu.Unlock()
	if proc == nil && !starting {
		// Nothing started yet: cancel the start, as stopping a container
		// that never ran.
		l.kill()
		return
	}
	if proc != nil {
		proc.Terminate()
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-l.done:
	case <-t.C:
		l.kill()
	}
}

// startLaunchLocked starts running the pod's command in the background.
// s.mu must be held and s not closed.
func (s *Server) startLaunchLocked(p *pod) {
	s.startLaunchAfterLocked(p, s.cfg.provisionDelay)
}

// startLaunchAfterLocked is startLaunchLocked with a wait of its own before
// the run starts. s.mu must be held and s not closed.
func (s *Server) startLaunchAfterLocked(p *pod, delay time.Duration) {
	l := &launch{cancel: make(chan struct{}), done: make(chan struct{}), delay: delay}
	p.launch = l
	s.runs.Add(1)
	go s.runLaunch(p, l)
}

func (s *Server) runLaunch(p *pod, l *launch) {
	defer s.runs.Done()
	defer close(l.done)
	if d := l.delay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-l.cancel:
			t.Stop()
			return
		}
	}
	s.mu.Lock()
	if p.launch != l || s.closed {
		s.mu.Unlock()
		return
	}
	spec, sshPort, err := s.podSpecLocked(p)
	if err != nil {
		s.failLaunchLocked(p, l, err)
		s.mu.Unlock()
		return
	}
	// The run holds its port until its processes are gone (the pod may
	// show it for longer, see setSSHPort), and the probe's socket keeps
	// the port bound until the pod's init lets go of it, or the run ends
	// before it started anything.
	defer spec.PortHold.Close()
	port := sshPort
	releasePortOnce := func() {
		if port != 0 {
			releasePort(port)
			port = 0
		}
	}
	defer releasePortOnce()
	p.setSSHPort(sshPort)
	l.mu.Lock()
	if l.killed {
		l.mu.Unlock()
		s.mu.Unlock()
		return
	}
	l.starting = true
	l.mu.Unlock()
	s.mu.Unlock()

	proc, err := localpod.Start(spec, p.log)
	if err == nil && s.podStarted != nil {
		s.podStarted(l)
	}
	s.mu.Lock()
	if err != nil {
		s.failLaunchLocked(p, l, err)
		s.mu.Unlock()
		return
	}
	l.mu.Lock()
	killed, termPending := l.killed, l.termPending
	if !killed {
		l.proc = proc
	}
	l.mu.Unlock()
	if killed || p.terminating || (p.launch != l && p.dying != l) {
		s.mu.Unlock()
		proc.Kill()
		proc.Wait()
		return
	}
	// The command runs: so does the pod, even when a stop is ending this
	// run already (p.dying); the stop marks it EXITED once it is gone.
	// With a starting delay it first shows STARTING, without its ports.
	ranAt := time.Now()
	if s.cfg.startingDelay > 0 {
		p.setStatus(StatusStarting, s.cfg.now())
	} else {
		p.setStatus(StatusRunning, s.cfg.now())
	}
	s.notifyLocked()
	s.mu.Unlock()
	if termPending {
		// The stop came while the pod started, before proc was known;
		// the command may well have written its log already. It gets
		// its SIGTERM now, and the stop's grace runs on.
		proc.Terminate()
	}
	exited := make(chan int, 1)
	go func() { exited <- proc.Wait() }()
	var code int
	if d := s.cfg.startingDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
			s.mu.Lock()
			if (p.launch == l || p.dying == l) && !p.terminating && p.status == StatusStarting {
				p.setStatus(StatusRunning, s.cfg.now())
				s.notifyLocked()
			}
			s.mu.Unlock()
			code = <-exited
		case code = <-exited:
			t.Stop()
		}
	} else {
		code = <-exited
	}
	// Nothing of the pod listens any more: whoever sees it EXITED may see
	// its port free.
	releasePortOnce()

	s.mu.Lock()
	if p.launch == l && !p.terminating {
		// The command ended by itself: the container exited.
		p.launch = nil
		p.setSSHPort(0)
		if s.cfg.exitOnEnd || s.closed {
			p.setStatus(StatusExited, s.cfg.now())
			p.exitCode = code
		} else {
			// Runpod starts the container again, after a back-off
			// that grows while it keeps ending at once.
			if time.Since(ranAt) < 10*time.Second {
				p.quickRestarts = min(p.quickRestarts+1, 6)
			} else {
				p.quickRestarts = 1
			}
			p.restarts++
			p.setStatus(StatusStarting, s.cfg.now())
			p.exitCode = code
			s.startLaunchAfterLocked(p, s.cfg.restartDelay<<(p.quickRestarts-1))
		}
		s.notifyLocked()
	}
	s.mu.Unlock()
}

// failLaunchLocked puts the pod in ERROR with why it could not run.
func (s *Server) failLaunchLocked(p *pod, l *launch, err error) {
	if p.launch != l || p.terminating {
		return
	}
	p.launch = nil
	p.setSSHPort(0)
	p.errMsg = err.Error()
	p.setStatus(StatusError, s.cfg.now())
	p.log.write([]byte("runpodtest: "+err.Error()+"\n"), s.secretValuesLocked())
	s.notifyLocked()
}

var placeholderRE = regexp.MustCompile(`\{\{\s*RUNPOD_SECRET_([a-zA-Z_][a-zA-Z0-9_.\-/]*)\s*\}\}`)

// resolveLocked replaces the {{ RUNPOD_SECRET_name }} placeholders of value
// with the values of the account secrets (those made by POST
// /v2/account/secrets or AddSecret) as they are at boot; an unknown
// secret's placeholder stays as it is. s.mu must be held.
func (s *Server) resolveLocked(value string) string {
	return placeholderRE.ReplaceAllStringFunc(value, func(m string) string {
		name := placeholderRE.FindStringSubmatch(m)[1]
		if s.cfg.drift.DashUnresolved && strings.Contains(name, "-") {
			return m
		}
		if sec := s.secretByNameLocked(name); sec != nil {
			return sec.Value
		}
		return m
	})
}

// podSpecLocked builds how the pod runs, with the port its sshd gets,
// reserved (see reservePort). s.mu must be held.
func (s *Server) podSpecLocked(p *pod) (_ *localpod.Spec, sshPort int, err error) {
	if err := checkPodRunner(); err != nil {
		return nil, 0, err
	}
	if len(p.entrypoint)+len(p.cmd) == 0 && strings.TrimSpace(p.args) != "" {
		// A shell string that did not split into words.
		if _, err := localpod.SplitArgs(p.args); err != nil {
			return nil, 0, err
		}
	}
	words, err := localpod.ContainerArgv(p.img, p.entrypoint, p.cmd)
	if err != nil {
		return nil, 0, err
	}
	for file := range p.img.Files {
		if !path.IsAbs(file) || path.Clean(file) != file || file == "/" {
			return nil, 0, fmt.Errorf("runpodtest: image file %q is not a clean absolute path", file)
		}
	}
	p.argv = words
	spec := &localpod.Spec{PodID: p.id, Argv: words, DiskGB: p.disk, Files: p.img.Files}
	if sshPort, spec.PortHold, err = reservePort(); err != nil {
		return nil, 0, err
	}
	defer func() {
		if err != nil {
			spec.PortHold.Close()
			releasePort(sshPort)
		}
	}()

	env := map[string]string{"PATH": localpod.BasePath, "HOME": "/root"}
	// The image's ENV, then the pod's over it, as Docker merges them.
	maps.Copy(env, p.img.Env)
	for k, v := range p.env {
		env[k] = s.resolveLocked(v)
	}
	port := strconv.Itoa(sshPort)
	env["RUNPOD_POD_ID"] = p.id
	env["RUNPOD_API_KEY"] = p.key
	spec.Hostname = p.id + "-runpodtest"
	env["RUNPOD_POD_HOSTNAME"] = spec.Hostname
	env["RUNPOD_PUBLIC_IP"] = "127.0.0.1"
	env["RUNPOD_TCP_PORT_22"] = port
	env["RUNPOD_DC_ID"] = p.dataCenter
	if p.gpuCount > 0 {
		env["RUNPOD_GPU_COUNT"] = strconv.Itoa(p.gpuCount)
	}
	env[podenv.APIURLEnv] = s.BaseURL()
	env["OVERBRAINER_SSH_PORT"] = port
	// The pod shares the host's network: its sshd listens on loopback only,
	// so a local pod is never reachable from another machine.
	env["OVERBRAINER_SSH_LISTEN"] = "127.0.0.1"
	if err := localpod.CheckFallbacks(env, p.img.Files); err != nil {
		return nil, 0, err
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		spec.Env = append(spec.Env, k+"="+env[k])
	}

	podDir := path.Join(s.tmp, "pods", p.id)
	spec.Dir = path.Join(podDir, "ns")
	if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
		return nil, 0, fmt.Errorf("runpodtest: %w", err)
	}
	var volumes []string
	if p.persistentGB > 0 {
		dir := path.Join(podDir, "persistent")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, 0, fmt.Errorf("runpodtest: %w", err)
		}
		spec.Mounts = append(spec.Mounts, localpod.Mount{Source: dir, Target: p.persistentPath})
		volumes = append(volumes, p.persistentPath)
	}
	if p.netVolID != "" {
		v, ok := s.volumes[p.netVolID]
		if !ok {
			return nil, 0, fmt.Errorf("runpodtest: network volume %s is gone", p.netVolID)
		}
		spec.Mounts = append(spec.Mounts, localpod.Mount{Source: v.Dir, Target: p.netVolPath})
		volumes = append(volumes, p.netVolPath)
	}
	// Private, empty directories over what the bootstrap writes, so that
	// the host's own never change and the pod starts as a fresh image
	// would. /root above all: the host's holds its keys, and a .bashrc
	// that may run pyenv or conda init in every SSH session into the pod.
	fresh := slices.Clone(volumes)
	for _, dir := range []string{"/etc/ssh", "/etc/overbrainer", "/root"} {
		if !underAny(dir, volumes) {
			mode := uint32(0o755)
			if dir == "/root" {
				mode = 0o700
			}
			spec.Mounts = append(spec.Mounts, localpod.Mount{Target: dir, Mode: mode})
			fresh = append(fresh, dir)
		}
	}
	if wd := p.env[podenv.WorkdirEnv]; wd != "" {
		wd = path.Clean(wd)
		if !path.IsAbs(wd) || wd == "/" {
			return nil, 0, fmt.Errorf("runpodtest: %s %q must be an absolute directory other than /", podenv.WorkdirEnv, wd)
		}
		if !underAny(wd, fresh) {
			spec.Mounts = append(spec.Mounts, localpod.Mount{Target: wd, Mode: 0o755})
		}
	}
	for _, m := range spec.Mounts {
		if m.Target == "/" || !path.IsAbs(m.Target) {
			return nil, 0, fmt.Errorf("runpodtest: cannot mount over %q in a pod", m.Target)
		}
	}
	// The fake's directory holds every pod's disk and volumes, and a
	// launcher's state directory its records and the account key of a
	// local-server: a pod sees none of them. A directory that holds one
	// of the pod's own mountpoints (or PATH) stays, as hiding it would
	// hide what the pod needs.
	targets := strings.Split(localpod.BasePath, ":")
	for _, m := range spec.Mounts {
		targets = append(targets, m.Target)
	}
	for _, dir := range append([]string{s.tmp}, s.cfg.hidden...) {
		dir = path.Clean(dir)
		if !path.IsAbs(dir) || dir == "/" || slices.ContainsFunc(targets, func(t string) bool { return hasPrefixPath(t, dir) }) {
			continue
		}
		spec.Hidden = append(spec.Hidden, dir)
	}
	// Parents before children, so that a volume inside the workdir stays
	// visible above the workdir's tmpfs.
	sort.SliceStable(spec.Mounts, func(i, j int) bool {
		return strings.Count(spec.Mounts[i].Target, "/") < strings.Count(spec.Mounts[j].Target, "/")
	})
	return spec, sshPort, nil
}

// underAny reports whether p is one of dirs or lies under one.
func underAny(p string, dirs []string) bool {
	for _, dir := range dirs {
		if hasPrefixPath(p, dir) {
			return true
		}
	}
	return false
}

// removePodFiles removes what the fake kept on the host for a terminated
// pod: its persistent volume and the mountpoint of its root.
func (s *Server) removePodFiles(id string) {
	_ = os.RemoveAll(path.Join(s.tmp, "pods", id))
}

const redacted = "[REDACTED]"

// podLog keeps a pod's output, with every key and secret value the fake knows
// redacted. It redacts whole lines, so a secret is never split across two
// writes; a partial last line is held back until its newline (or String).
type podLog struct {
	s       *Server
	mu      sync.Mutex
	done    bytes.Buffer
	pending []byte
	// lines is the log line by line, as GET /v2/pods/{id}/logs serves
	// it; changed is closed (and replaced) when a line is added.
	lines   []logLine
	changed chan struct{}
}

func newPodLog(s *Server) *podLog { return &podLog{s: s} }

// maxPending bounds a line held back for its newline.
const maxPending = 64 << 10

// Write takes the fake's secrets before its own lock: the order is always
// s.mu, then l.mu.
func (l *podLog) Write(b []byte) (int, error) {
	return l.write(b, l.s.secretValues())
}

func (l *podLog) write(b []byte, secrets []string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, b...)
	i := bytes.LastIndexByte(l.pending, '\n')
	if i < 0 && len(l.pending) < maxPending {
		return len(b), nil
	}
	if i < 0 {
		i = len(l.pending) - 1
	}
	text := redact(string(l.pending[:i+1]), secrets)
	l.done.WriteString(text)
	l.pending = append(l.pending[:0], l.pending[i+1:]...)
	l.addLocked(text)
	return len(b), nil
}

func redact(text string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 6 {
			text = strings.ReplaceAll(text, sec, redacted)
		}
	}
	return text
}

func (l *podLog) String() string {
	secrets := l.s.secretValues()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done.String() + redact(string(l.pending), secrets)
}
