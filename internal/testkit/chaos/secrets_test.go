package chaos_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/bootstrap"
)

// Kinds of secret the suite looks for.
const (
	kindAccount = "account key"
	kindPod     = "pod key"
	kindHost    = "host private key"
	kindHF      = "HF token"
)

// secretSet is every secret value the runs of a test handed out, and what
// the samples found.
type secretSet struct {
	mu     sync.Mutex
	values map[string]string // value → kind
	// list is values as check reads them, replaced (never changed) by
	// add: the process sampler checks every process against every secret
	// ten times a second, without a copy or a lock each time.
	list    atomic.Pointer[[]secret]
	hits    map[string]int // where a secret showed up (never the value) → how often
	samples atomic.Int64
}

type secret struct {
	value []byte
	kind  string
}

func newSecretSet() *secretSet {
	return &secretSet{values: map[string]string{}, hits: map[string]int{}}
}

func (s *secretSet) add(kind, value string) {
	if len(value) < 8 {
		return
	}
	if strings.IndexByte(value, 0) >= 0 {
		panic("a secret with a NUL byte: check's skipping of NUL runs would miss it")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values[value] == kind {
		return
	}
	s.values[value] = kind
	list := make([]secret, 0, len(s.values))
	for v, k := range s.values {
		list = append(list, secret{[]byte(v), k})
	}
	s.list.Store(&list)
}

// addHostKey adds the base64 the secret holds and the lines of the decoded
// PEM body that carry the private key: any of them is the key leaking. The
// first lines (the header and the public key) and the last (the comment,
// the run's name, shared with the client key) are not secret, nor is any
// line that every OpenSSH key file has.
func (s *secretSet) addHostKey(b64 string) {
	s.add(kindHost, b64)
	pemText, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return
	}
	var body []string
	for _, line := range strings.Split(string(pemText), "\n") {
		if line != "" && !strings.HasPrefix(line, "-----") {
			body = append(body, line)
		}
	}
	if len(body) < 4 {
		return
	}
	common := referencePEM()
	for _, line := range body[2 : len(body)-1] {
		if len(line) >= 20 && !strings.Contains(common, line) {
			s.add(kindHost, line)
		}
	}
}

// referencePEM is an unrelated OpenSSH ed25519 key file, whose lines show
// what all such files have in common.
var referencePEM = sync.OnceValue(func() string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(block))
})

func (s *secretSet) hit(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[fmt.Sprintf(format, args...)]++
}

// hitList lists where secrets showed up, with how many samples saw each,
// and the total number of hits.
func (s *secretSet) hitList() (list []string, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for where, n := range s.hits {
		list = append(list, fmt.Sprintf("%s (%d samples)", where, n))
		total += n
	}
	sort.Strings(list)
	return list, total
}

// check counts one sample of data from where, and records a hit for every
// secret in it whose kind allowed does not accept (nil: none is).
func (s *secretSet) check(where string, data []byte, allowed func(kind string) bool) {
	s.samples.Add(1)
	list := s.list.Load()
	if list == nil {
		return
	}
	parts := nonNULParts(data)
	for _, sec := range *list {
		if allowed != nil && allowed(sec.kind) {
			continue
		}
		for _, part := range parts {
			if bytes.Contains(part, sec.value) {
				s.hit("%s in %s", sec.kind, where)
				break
			}
		}
	}
}

// nulChunk is the size of the runs of NUL bytes nonNULParts skips.
const nulChunk = 4 << 10

var nulBytes = make([]byte, nulChunk)

// nonNULParts cuts data into the parts that may hold a secret: it drops
// the aligned chunks of nulChunk NUL bytes (the matrix's big job files are
// all NULs), which no secret (no NUL in it) can overlap, so a secret in
// data lies whole within one part. Scanning 32 MiB of NULs for hundreds
// of secrets, one at a time, would take seconds.
func nonNULParts(data []byte) [][]byte {
	var parts [][]byte
	start := 0
	for i := 0; i+nulChunk <= len(data); i += nulChunk {
		if bytes.Equal(data[i:i+nulChunk], nulBytes) {
			if start < i {
				parts = append(parts, data[start:i])
			}
			start = i + nulChunk
		}
	}
	if start < len(data) {
		parts = append(parts, data[start:])
	}
	return parts
}

// scanTree samples every regular file under dir.
func (s *secretSet) scanTree(t testing.TB, label, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil // gone meanwhile
		}
		rel, _ := filepath.Rel(dir, p)
		s.check(label+"/"+rel, b, nil)
		return nil
	})
	if err != nil {
		t.Errorf("scanning %s: %v", dir, err)
	}
}

// process is what a /proc sample reads of one process.
type process struct {
	pid, ppid int
	exe       string
	argv      []string
	cmdline   []byte
	environ   []byte
}

func (p process) is(name string) bool {
	return filepath.Base(p.exe) == name || len(p.argv) > 0 && filepath.Base(p.argv[0]) == name
}

// ownRole says what a process of the suite is by itself, "" when only its
// ancestors can tell.
func (p process) ownRole() string {
	self, _ := os.Executable()
	switch {
	case p.exe != "" && buildDir != "" && strings.HasPrefix(p.exe, buildDir):
		return "launcher"
	case p.pid == os.Getpid():
		return "test"
	case p.exe == self || hasEnv(p.environ, "RUNPODTEST_POD_INIT"):
		return "podinit" // a pod's PID 1: this binary re-executed by runpodtest
	case hasEnv(p.environ, "OVERBRAINER_SNAPSHOT_REQUEST"),
		len(p.argv) >= 4 && p.argv[1] == "-c" && p.argv[3] == "overbrainer-job":
		// The job's top shell (start.sh names it overbrainer-job, its $0)
		// sets the variable for the job's whole tree, and nothing else
		// has either: the job is known even when its pod is torn down and
		// the kernel reparents it outside the pod (the top shell's own
		// environment, from before it set the variable, lacks it).
		return "job"
	case len(p.argv) >= 3 && p.argv[1] == "-c" &&
		(strings.Contains(p.argv[2], "bootstrap_main") || strings.HasPrefix(p.argv[2], bootstrapHead())):
		return "bootstrap" // and its subshells, which share its command line
	case len(p.argv) >= 2 && strings.HasSuffix(p.argv[len(p.argv)-1], "/.pod/watchdog.sh"):
		return "watchdog"
	case p.is("sshd") || len(p.argv) > 0 && strings.HasPrefix(p.argv[0], "sshd"):
		return "sshd"
	case p.is("curl"):
		return "curl"
	}
	return ""
}

// hasEnv says whether environ (a /proc/PID/environ) sets name.
func hasEnv(environ []byte, name string) bool {
	return bytes.HasPrefix(environ, []byte(name+"=")) || bytes.Contains(environ, []byte("\x00"+name+"="))
}

// bootstrapHead is how the pod's bootstrap command starts (a cmdline read
// while the process execs may come back cut short).
var bootstrapHead = sync.OnceValue(func() string {
	s := bootstrap.Command()[2]
	return s[:min(len(s), 32)]
})

// roles names every process: its own role, else its nearest ancestor's
// with "_child" (a job is an sshd_child).
func roles(procs map[int]process) map[int]string {
	out := make(map[int]string, len(procs))
	for pid, p := range procs {
		if r := p.ownRole(); r != "" {
			out[pid] = r
			continue
		}
		out[pid] = "other"
		for q, hops := p, 0; hops < 64; hops++ {
			parent, ok := procs[q.ppid]
			if !ok {
				if q.ppid > 1 {
					// The parent ended during the sample.
					out[pid] = "unknown"
				}
				break
			}
			if r := parent.ownRole(); r != "" {
				out[pid] = r + "_child"
				break
			}
			q = parent
		}
	}
	return out
}

// mayHold is who may have a secret in its environment. The launcher holds
// the account key and the HF token it hands to the job over SSH; the job
// holds that token: a job (by its environment or its $0), an sshd_child, or
// a podinit_child once its session ended (it runs in a session of its own,
// and the pod's init inherits it). The bootstrap holds the pod key and the
// host key (unexported at once: its own subshells only); the programs it
// runs inherit the pod key, which it keeps for the watchdog, which holds it
// too but unsets it for its children. sshd, curl, the test and the pods'
// init hold nothing.
func mayHold(role, kind string) bool {
	switch kind {
	case kindAccount:
		return role == "launcher"
	case kindPod:
		return role == "bootstrap" || role == "bootstrap_child" || role == "watchdog"
	case kindHost:
		return role == "bootstrap"
	case kindHF:
		// A process whose parent ended while the sample was taken could
		// be a job's: it may hold the token, not the keys.
		return role == "launcher" || role == "job" || role == "sshd_child" || role == "podinit_child" || role == "unknown"
	}
	return false
}

// sampleProcs reads every process's command line (no secret, ever) and
// environment (only where mayHold says).
func (s *secretSet) sampleProcs() {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	// Parents (mostly lower pids) are read before their children, so that
	// a child is never judged by what its parent exec'd into later.
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	procs := map[int]process{}
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid)
		p := process{pid: pid}
		p.exe, _ = os.Readlink(dir + "/exe")
		if p.cmdline, err = os.ReadFile(dir + "/cmdline"); err != nil {
			continue
		}
		p.argv = strings.Split(strings.TrimSuffix(string(p.cmdline), "\x00"), "\x00")
		p.environ, _ = os.ReadFile(dir + "/environ")
		// Read after the environment, stat gives the parent and says
		// whether the process outlived that read.
		var state byte
		if stat, err := os.ReadFile(dir + "/stat"); err == nil {
			// pid (comm) state ppid ...: comm may hold spaces and parens.
			if i := bytes.LastIndexByte(stat, ')'); i > 0 {
				if f := strings.Fields(string(stat[i+1:])); len(f) > 1 {
					state = f[0][0]
					p.ppid, _ = strconv.Atoi(f[1])
				}
			}
		}
		if !stillAsRead(dir, state, p.cmdline) {
			// ReadFile takes a /proc file in several reads (512 bytes
			// first), and once the process exits or execs the next
			// read returns nothing, as at the end: the environment
			// looks whole. A job's sleep so lost the variable that
			// names it a job, not its secrets, and was taken for a
			// leak. A process that did not outlive the read is not
			// judged by it.
			p.environ = nil
		}
		procs[pid] = p
	}
	for pid, role := range roles(procs) {
		p := procs[pid]
		what := fmt.Sprintf("pid %d (%s, %.40q)", pid, role, strings.Join(p.argv, " "))
		s.check("the command line of "+what, p.cmdline, nil)
		if p.environ != nil {
			s.check("the environment of "+what, p.environ, func(kind string) bool { return mayHold(role, kind) })
		}
	}
}

// stillAsRead says whether the process of dir, in state (from its stat, 0
// when unread), still runs (not a zombie) the program whose command line
// was read before.
func stillAsRead(dir string, state byte, cmdline []byte) bool {
	if state == 0 || state == 'Z' || state == 'X' {
		return false
	}
	again, err := os.ReadFile(dir + "/cmdline")
	return err == nil && bytes.Equal(again, cmdline)
}

// sampleProcsUntil samples /proc every 100 ms until stop is closed.
func (s *secretSet) sampleProcsUntil(stop <-chan struct{}) (done <-chan struct{}) {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for {
			began := time.Now()
			s.sampleProcs()
			// A pass over every process is slow on a loaded machine (and
			// under the race detector): pausing twice its time keeps the
			// sampler to a third of a core, so that it does not starve
			// the pods it watches.
			select {
			case <-stop:
				return
			case <-time.After(max(100*time.Millisecond, 2*time.Since(began))):
			}
		}
	}()
	return ch
}

// TestChaosSecretScanAcrossNULs: check skips runs of NULs, not secrets: a
// secret between them, across a chunk's edge, at either end or alone is
// found once, and NULs alone hold none.
func TestChaosSecretScanAcrossNULs(t *testing.T) {
	const v = "hf_chaosScanToken0123456789"
	s := newSecretSet()
	s.add(kindHF, v)
	at := func(size int, offs ...int) []byte {
		b := make([]byte, size)
		for _, o := range offs {
			copy(b[o:], v)
		}
		return b
	}
	cases := map[string]struct {
		data []byte
		want int
	}{
		"NULs only":           {make([]byte, 5*nulChunk), 0},
		"across a chunk edge": {at(5*nulChunk, 2*nulChunk-7), 1},
		"first bytes":         {at(5*nulChunk, 0), 1},
		"last bytes":          {at(5*nulChunk+3, 5*nulChunk+3-len(v)), 1},
		"twice, far apart":    {at(9*nulChunk, 10, 7*nulChunk+1), 1},
		"no NULs":             {[]byte("x=" + v + "\n"), 1},
		"in a short file":     {at(40, 5), 1},
	}
	for name, c := range cases {
		before := total(s)
		s.check(name, c.data, nil)
		if got := total(s) - before; got != c.want {
			t.Errorf("%s: %d hits, want %d", name, got, c.want)
		}
	}
}

func total(s *secretSet) int {
	_, n := s.hitList()
	return n
}

// TestChaosRolesKnowAReparentedJob: the job's processes may hold the HF
// token even when the pod's teardown has the kernel reparent them outside
// the pod, where their ancestry names nothing: its top shell by its $0,
// its children by the variable the top shell exports. An unknown process
// under the test may hold no secret.
func TestChaosRolesKnowAReparentedJob(t *testing.T) {
	const test = 1000
	procs := map[int]process{
		test: {pid: test, ppid: 1, exe: "/usr/bin/not-the-test"},
		// The job's top shell, reparented to the test.
		2001: {pid: 2001, ppid: test, exe: "/usr/bin/dash",
			argv:    []string{"sh", "-c", "# wake_watchdog RUN_DIR: ...", "overbrainer-job", "/w/run", "/w/job.env"},
			environ: []byte("HF_TOKEN=x\x00PATH=/bin\x00")},
		// A child of the job whose parent already went.
		2002: {pid: 2002, ppid: test, exe: "/usr/bin/python3",
			argv:    []string{"python3", "train.py"},
			environ: []byte("HF_TOKEN=x\x00OVERBRAINER_SNAPSHOT_REQUEST=/w/run/snapshot.request\x00")},
		// A shell of the same look that is not the job.
		2003: {pid: 2003, ppid: test, exe: "/usr/bin/dash",
			argv: []string{"sh", "-c", "# wake_watchdog RUN_DIR: ...", "other", "/w/run"}},
	}
	got := roles(procs)
	for pid, want := range map[int]string{2001: "job", 2002: "job", 2003: "other"} {
		if got[pid] != want {
			t.Errorf("pid %d: role %q, want %q", pid, got[pid], want)
		}
		if may := mayHold(got[pid], kindHF); may != (want == "job") {
			t.Errorf("pid %d (%s): may hold the HF token = %v", pid, got[pid], may)
		}
	}
}
