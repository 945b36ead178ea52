package jobctl

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shscript"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"github.com/overbrainer/overbrainer-go/podenv"
	"github.com/overbrainer/overbrainer-go/podssh"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// Watcher is a long-lived look at a run over one session (watch.sh): each
// Poll is a request line and its answer, with no new session, so no new
// login shell and its rc files on the pod for every look.
type Watcher struct {
	in io.Writer
	br *bufio.Reader
	// stop closes the session; wait waits for its command's end; drop
	// takes the whole connection down.
	stop func()
	wait func() error
	drop func()
	// done closes when the session ended (nil: never told).
	done <-chan struct{}

	mu     sync.Mutex
	broken error
}

// abandonAfter is how long Poll waits for an exchange to end after closing
// its session on a done context, before it takes the connection down.
var abandonAfter = 10 * time.Second

// Watch starts watch.sh on the run directory runDir. ctx bounds the start;
// each Poll and Put then takes its own.
func Watch(ctx context.Context, c *podssh.Conn, runDir string) (*Watcher, error) {
	st, err := c.Stream(ctx, watchCommand(runDir, lookDir))
	if err != nil {
		return nil, err
	}
	w := newWatcher(st.In, st.Out, func() { st.Close() }, st.Wait, func() { c.Close() })
	w.done = st.Done()
	if err := w.open(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

func newWatcher(in io.Writer, out io.Reader, stop func(), wait func() error, drop func()) *Watcher {
	return &Watcher{in: in, br: bufio.NewReaderSize(out, 64<<10), stop: stop, wait: wait, drop: drop}
}

// WatchScript is watch.sh as the pod runs it: after the group_signal and
// wake_watchdog helpers, without comment lines. It travels to a pod once,
// packed (shscript.Pack), and is kept there as a file named by its hash
// (see watchOpen); a look's session then sends only the few lines that run
// that file.
func WatchScript() string { return watchText() }

var watchText = sync.OnceValue(func() string {
	return shscript.Compact(watchdog.GroupSignal() + watchdog.WakeFunction() + watchScript)
})

// lookDir is where a pod keeps watch.sh between sessions: the directory of
// its own files on the container's disk (a run directory on a network
// volume may hang), which the bootstrap makes.
var lookDir = path.Dir(podenv.JobEnv)

// watchCommand is the command line that opens a look's session on runDir,
// with watch.sh kept in dir.
func watchCommand(runDir, dir string) string {
	return podssh.Command(watchOpen(), runDir, dir)
}

// watchOpen is the script of that command (its arguments: the run
// directory, the directory of the kept script). It runs dir/watch-HASH.sh
// (HASH: of WatchScript, so that a pod never runs another version's) when
// the pod has it, after an "ob1-ready" line; else it says "ob1-need",
// reads the packed script (watchPacked) on one input line, unpacks it,
// keeps it (tmp + mv) for the next sessions, says "ob1-ready" and runs it.
// The client answers the need (Watcher.open) before its first request.
// The kept file is run with "." and the one just unpacked with eval: the
// same text, and no process either way.
var watchOpen = sync.OnceValue(func() string {
	return "ob1_look=$2/" + watchFile() + `
if [ -f "$ob1_look" ]; then
  echo ob1-ready
  . "$ob1_look"
else
  echo ob1-need
  IFS= read -r ob1_sh && ob1_sh=$(printf '%s\n' "$ob1_sh" | base64 -d | gzip -dc) && [ -n "$ob1_sh" ] || {
    echo "ob1-error cannot unpack watch.sh (base64 -d | gzip -d)"
    exit 1
  }
  { printf '%s\n' "$ob1_sh" >"$ob1_look.$$" && mv -f "$ob1_look.$$" "$ob1_look"; } 2>/dev/null ||
    rm -f "$ob1_look.$$" 2>/dev/null
  echo ob1-ready
  eval "$ob1_sh"
fi
`
})

// watchFile is the name of the kept watch.sh, by a hash of WatchScript.
var watchFile = sync.OnceValue(func() string {
	sum := sha256.Sum256([]byte(watchText()))
	return "watch-" + hex.EncodeToString(sum[:8]) + ".sh"
})

// watchPacked is what the client sends on an "ob1-need": WatchScript
// packed, on one line.
var watchPacked = sync.OnceValue(func() string { return shscript.Pack(watchText()) + "\n" })

// open ends the session's start: it answers watchOpen's need for the
// script, and waits until watch.sh reads requests.
func (w *Watcher) open(ctx context.Context) error {
	return w.do(ctx, func() error {
		sent := false
		for {
			line, _, err := termtext.ReadLine(w.br, maxLine)
			if err != nil {
				return w.ended(err)
			}
			switch {
			case strings.HasPrefix(line, "ob1-error"):
				return fmt.Errorf("jobctl: watch.sh: %s", strings.TrimSpace(line))
			case line == "ob1-ready\n":
				return nil
			case line == "ob1-need\n":
				if sent {
					return errors.New("jobctl: watch.sh asked for the script twice")
				}
				if _, err := io.WriteString(w.in, watchPacked()); err != nil {
					return w.ended(err)
				}
				sent = true
			}
			// Else what a login shell's rc file printed first.
		}
	})
}

// Close ends the watcher's session.
func (w *Watcher) Close() { w.stop() }

// Done is closed when the session ended, between two Polls too: watch.sh
// died with its pod (or by Close), and the next Poll fails.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Poll is one look at the run: the job's state, the verdict and up to max
// bytes of the job's log from offset on. With touchLease it first renews
// the lease. After an error the watcher is done: make a new one.
func (w *Watcher) Poll(ctx context.Context, offset int64, touchLease bool, max int) (State, []byte, error) {
	var st State
	var b []byte
	err := w.do(ctx, func() error {
		var err error
		st, b, err = w.look(offset, touchLease, max)
		return err
	})
	return st, b, err
}

// Put replaces the client's pod file name (one of the watchdog package's
// SnapshotAt, CostCapAt, VolumeGB, Retrieved, SnapshotRequest) with value,
// a word of [A-Za-z0-9_-] or nothing.
func (w *Watcher) Put(ctx context.Context, name, value string) error {
	base := strings.TrimPrefix(name, watchdog.PodDir+"/")
	if strings.ContainsAny(base+value, " \t\r\n/") {
		return fmt.Errorf("jobctl: put %q %q: not one word each", name, value)
	}
	return w.do(ctx, func() error {
		if _, err := fmt.Fprintf(w.in, "put %s %s\n", base, value); err != nil {
			return w.ended(err)
		}
		line, err := w.answer()
		if err != nil {
			return err
		}
		if line != "ob1-ok\n" {
			return fmt.Errorf("jobctl: watch.sh: put %s: %s", name, strings.TrimSpace(line))
		}
		return nil
	})
}

// do runs one exchange, bounded by ctx. After an error the watcher is
// broken.
func (w *Watcher) do(ctx context.Context, exchange func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != nil {
		return w.broken
	}
	done := make(chan error, 1)
	go func() { done <- exchange() }()
	select {
	case err := <-done:
		if err != nil {
			w.broken = err
			w.stop()
		}
		return err
	case <-ctx.Done():
	}
	w.broken = ctx.Err()
	w.stop()
	select {
	case <-done:
	case <-time.After(abandonAfter):
		// The session did not close: the connection goes, which ends
		// the exchange's read.
		w.drop()
		<-done
	}
	return ctx.Err()
}

// maxLine bounds a line read from watch.sh (an rc file's chatter, the
// verdict a job may have written): a longer one is cut, never an error.
const maxLine = 4 << 10

// answer reads the first line of an answer. What a login shell's rc file
// printed before watch.sh ran is skipped.
func (w *Watcher) answer() (string, error) {
	for {
		line, _, err := termtext.ReadLine(w.br, maxLine)
		if err != nil {
			return "", w.ended(err)
		}
		if strings.HasPrefix(line, "ob1-error") {
			return "", fmt.Errorf("jobctl: watch.sh: %s", strings.TrimSpace(line))
		}
		if strings.HasPrefix(line, "ob1 ") || strings.HasPrefix(line, "ob1-ok") {
			return line, nil
		}
	}
}

// look sends a poll request and reads its answer.
func (w *Watcher) look(offset int64, touchLease bool, max int) (State, []byte, error) {
	touch := 0
	if touchLease {
		touch = 1
	}
	if _, err := fmt.Fprintf(w.in, "poll %d %d %d\n", offset, touch, max); err != nil {
		return State{}, nil, w.ended(err)
	}
	header, err := w.answer()
	if err != nil {
		return State{}, nil, err
	}
	verdict, _, err := termtext.ReadLine(w.br, maxLine)
	if err != nil {
		return State{}, nil, w.ended(err)
	}
	progress, _, err := termtext.ReadLine(w.br, maxLine)
	if err != nil {
		return State{}, nil, w.ended(err)
	}
	st, n, err := parseHeader(header, verdict)
	if err != nil {
		return State{}, nil, err
	}
	st.Progress = printable(progress)
	if n > max {
		return State{}, nil, fmt.Errorf("jobctl: watch.sh sent %d bytes, asked at most %d", n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(w.br, b); err != nil {
		return State{}, nil, w.ended(err)
	}
	return st, b, nil
}

// ended explains a broken exchange: the command's exit when it ended (a
// failed watch.sh is a *podssh.CommandError), else the transport's error.
func (w *Watcher) ended(err error) error {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	werr := make(chan error, 1)
	go func() { werr <- w.wait() }()
	select {
	case e := <-werr:
		if e != nil {
			return e
		}
		return errors.New("jobctl: watch.sh ended")
	case <-time.After(abandonAfter):
		return err
	}
}
