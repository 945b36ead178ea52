package watchdog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// No rule fires on a clock read that failed. On the fake clock, date fails
// (or prints garbage, or nothing) while no job exists, then reads again:
// each tick with an unreadable clock logs clock_unreadable and deletes
// nothing, and once date reads, the rules apply as usual. At the start,
// the watchdog's start is the first time read (t0+300 here), so the boot
// grace ends 1000 s after it (a start read as 0 deleted the pod as
// never_started at the first good tick); at a later tick, a deadline due
// while date fails deletes at the first tick it reads again (the uptime
// sum alone deleted at the deadline).
func TestUnreadableDateDeletesNothing(t *testing.T) {
	const t0 = fakeT0
	cases := []struct {
		name       string
		mode       string // date's mode from the start
		brokenAt   int64  // when it breaks later (0: never)
		readsAt    int64  // when date reads again (0: never)
		env        []string
		reason     watchdog.DeleteReason
		deleteAt   int64
		how, atKey string
	}{
		{"start_failed", "fail", 0, t0 + 300,
			[]string{"OVERBRAINER_BOOT_GRACE", "1000"}, watchdog.DeleteNeverStarted, t0 + 1300, "failed", "start"},
		{"start_garbled", "garbage", 0, t0 + 300,
			[]string{"OVERBRAINER_BOOT_GRACE", "1000"}, watchdog.DeleteNeverStarted, t0 + 1300, "garbled", "start"},
		{"start_empty", "empty", 0, t0 + 300,
			[]string{"OVERBRAINER_BOOT_GRACE", "1000"}, watchdog.DeleteNeverStarted, t0 + 1300, "empty", "start"},
		// A failed bootstrap needs no time: the pod goes at the first
		// tick, at time 0 (no clock read), though date never reads.
		{"boot_failed_start_failed", "fail", 0, 0,
			[]string{"OVERBRAINER_BOOT_FAILED", "1"}, watchdog.DeleteBootstrapFailed, 0, "failed", "start"},
		{"later_failed", "ok", t0 + 550, t0 + 900,
			[]string{"OVERBRAINER_DEADLINE", itoa(t0 + 600)}, watchdog.DeleteDeadline, t0 + 900, "failed", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
				p := newPod(t, sh)
				clk := p.fakeClock(t0)
				mode := filepath.Join(p.bin.Dir, ".date-mode")
				writeAtomic(t, mode, c.mode+"\n")
				clockDate := filepath.Join(p.bin.Dir, "date.clock")
				if err := os.Rename(filepath.Join(p.bin.Dir, "date"), clockDate); err != nil {
					t.Fatal(err)
				}
				p.bin.Stub("date", fmt.Sprintf(`m=; read -r m < %q
case $m in
  fail) echo 'date: cannot read the clock' >&2; exit 1 ;;
  garbage) echo 'Sun Dec  6 08:00:55 UTC 2026'; exit 0 ;;
  empty) exit 0 ;;
esac
exec %q "$@"`, mode, clockDate))
				// One step file: a later break first, whose hook sets the
				// step that mends it.
				mend := fmt.Sprintf(`echo ok > %q`, mode)
				if c.brokenAt > 0 {
					clk.stepAt(c.brokenAt, 0, fmt.Sprintf(`echo fail > %q; echo '%d 0 %s' > %q`, mode, c.readsAt, mend, clk.step))
				} else if c.readsAt > 0 {
					clk.stepAt(c.readsAt, 0, mend)
				}
				p.startTimed(c.env, false, nil)
				p.exit()
				evs := p.events()
				i := find(evs, -1, watchdog.KindDeleteReason)
				if i < 0 {
					t.Fatalf("no delete\nlog:\n%s", p.logText())
				}
				if got := evs[i].Fields["reason"]; got != string(c.reason) {
					t.Errorf("deleted for %s, want %s\nlog:\n%s", got, c.reason, p.logText())
				}
				if got := evs[i].Time.Unix(); got != c.deleteAt {
					t.Errorf("deleted at t0%+d, want t0%+d\nlog:\n%s", got-t0, c.deleteAt-t0, p.logText())
				}
				kv := []string{"how", c.how}
				if c.atKey != "" {
					kv = append(kv, "at", c.atKey)
				}
				if find(evs, -1, watchdog.KindClockUnreadable, kv...) < 0 {
					t.Errorf("no clock_unreadable %v\nlog:\n%s", kv, p.logText())
				}
				// Ticks whose clock did not read came before the delete,
				// which followed the last of them.
				last := -1
				for j, e := range evs {
					if e.Kind == watchdog.KindClockUnreadable && e.Fields["at"] == "" {
						last = j
					}
				}
				if last < 0 || last > i {
					t.Errorf("no tick logged clock_unreadable before the delete\nlog:\n%s", p.logText())
				}
			})
		})
	}
}
