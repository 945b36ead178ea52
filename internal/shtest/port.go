package shtest

import (
	"math/rand/v2"
	"net"
	"strconv"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/localport"
)

// FreePort returns a loopback TCP port that was free a moment ago, for a
// server a test starts that cannot be handed a listening socket (sshd). It
// is picked below the kernel's ephemeral range, as runpodtest picks its
// pods' ports: a port the kernel just gave and took back (net.Listen on
// port 0) is soon given to another socket, and on a busy machine, with
// other test processes connecting, one was taken before sshd bound it.
func FreePort(t testing.TB) int {
	t.Helper()
	lo, hi := localport.Range()
	for range 100 {
		port := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatalf("shtest: no free port in [%d, %d) after 100 tries", lo, hi)
	return 0
}
