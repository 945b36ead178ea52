package localport

import (
	"os"
	"strconv"
	"strings"
)

// Range is [lo, hi): the 12,000 ports below the kernel's ephemeral range
// (its low end, from /proc/sys/net/ipv4/ip_local_port_range, else 32768).
func Range() (lo, hi int) {
	hi = 32768
	if data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(data)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				hi = n
			}
		}
	}
	return max(hi-12000, 1024), hi
}
