package launcher

import (
	"fmt"
	"github.com/overbrainer/overbrainer-go/internal/termtext"
	"os"
	"time"

	"golang.org/x/term"

	"github.com/overbrainer/overbrainer-go/guard"
)

// plainEvery is how often, by the run's own clock, a progress line comes
// again off a terminal: a long wait shows it moves, a log stays short.
const plainEvery = 30 * time.Second

// progress draws a long wait or a transfer: on a terminal one line redrawn
// in place, off it a plain line when the stage changes (another wait or
// status, a new transfer) and then every plainEvery.
func (d *driver) progress(e guard.Event) {
	line := eventText(e)
	if e.Kind == guard.EventTransfer {
		line += rateText(e)
	}
	if d.a.tty {
		d.a.live(&d.live, line)
		return
	}
	key := e.Kind.String() + " " + e.Stage.String() + " " + string(e.Status)
	if key != d.plainKey || e.Elapsed < d.plainAt || e.Elapsed-d.plainAt >= plainEvery {
		d.plainKey, d.plainAt = key, e.Elapsed
		d.a.say("%s", line)
	}
}

// rateText is a transfer's average rate so far and the time left at it.
func rateText(e guard.Event) string {
	secs := e.Elapsed.Seconds()
	if secs <= 0 || e.Bytes <= 0 {
		return ""
	}
	rate := float64(e.Bytes) / secs
	s := fmt.Sprintf(", %s/s", termtext.ByteSize(int64(rate)))
	if e.Total > e.Bytes {
		s += ", " + since(time.Duration(float64(e.Total-e.Bytes)/rate*float64(time.Second))) + " left"
	}
	return s
}

// jobOutput is where the job's output goes: a progress line on the
// terminal is erased first, so that the two never share a line.
type jobOutput struct{ a *app }

func (w jobOutput) Write(p []byte) (int, error) {
	w.a.sayMu.Lock()
	defer w.a.sayMu.Unlock()
	w.a.clearLiveLocked()
	return w.a.stdout.Write(p)
}

// fit cuts a line redrawn in place to the terminal's width: a line that
// wrapped could not be erased.
func (a *app) fit(line string) string {
	if f, ok := a.stderr.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 1 && len(line) >= w {
			return line[:w-1]
		}
	}
	return line
}
