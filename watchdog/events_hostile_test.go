package watchdog_test

import (
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A watchdog.log is a file on the pod that anything running as root there
// can write to. Whatever precedes the watchdog's own lines (a huge line
// without a newline, binary junk), ParseLog still returns them, so that a
// client reading the log learns why its pod was deleted.
func TestParseLogAfterHostileContent(t *testing.T) {
	t.Parallel()
	tail := "1800000001 probe result=ready\n1800000002 delete_reason reason=cost_cap\n"
	for name, head := range map[string]string{
		"huge line": strings.Repeat("x", 2<<20) + "\n",
		"huge line, no newline before the watchdog's": strings.Repeat("7", 2<<20),
		"NUL bytes":        strings.Repeat("\x00", 4096) + "\n",
		"carriage returns": "1800000000 start a=1\r\r\n",
		"invalid UTF-8":    "\xff\xfe\xfd 1800000000 start\n",
	} {
		t.Run(name, func(t *testing.T) {
			events, _ := watchdog.ParseLog(strings.NewReader(head + tail))
			found := false
			for _, ev := range events {
				if ev.Kind == watchdog.KindDeleteReason && ev.Fields["reason"] == string(watchdog.DeleteCostCap) {
					found = true
				}
			}
			if !found {
				t.Errorf("the watchdog's delete_reason line was lost after %s: got %d events", name, len(events))
			}
		})
	}
}
