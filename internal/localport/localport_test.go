package localport_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/localport"
)

// The range ends where the kernel's ephemeral ports begin, and holds the
// 12,000 ports below.
func TestRangeEndsBelowTheEphemeralPorts(t *testing.T) {
	lo, hi := localport.Range()
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral range to compare with: %v", err)
	}
	eph, err := strconv.Atoi(strings.Fields(string(data))[0])
	if err != nil {
		t.Fatal(err)
	}
	if hi != eph || lo != max(eph-12000, 1024) {
		t.Errorf("Range() = [%d, %d), want [%d, %d)", lo, hi, max(eph-12000, 1024), eph)
	}
}
