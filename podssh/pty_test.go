package podssh

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// A session with a PTY has the size asked for, follows each resize, and
// passes the remote exit status on.
func TestShellPTYFollowsTheSize(t *testing.T) {
	client, host := keys(t)
	d := startSSHD(t, host, client.AuthorizedKey(""))
	c := dial(t, d.addr, client, host)
	in, typed := io.Pipe()
	var out shtest.SyncBuffer
	sizes := make(chan WindowSize)
	done := make(chan error, 1)
	go func() {
		done <- c.Shell(context.Background(), ShellOptions{
			Command: `stty size; while read -r line; do [ "$line" = q ] && exit 4; stty size; done`,
			Term:    "xterm", Size: WindowSize{Width: 100, Height: 30}, Resize: sizes,
			Stdin: in, Stdout: &out,
		})
	}()
	shtest.Eventually(t, time.Minute, func() bool { return strings.Contains(out.String(), "30 100") }, "no first size in %q", &out)
	sizes <- WindowSize{Width: 132, Height: 43}
	// The resize and the typing travel apart: each line asks again.
	shtest.Eventually(t, time.Minute, func() bool {
		_, _ = io.WriteString(typed, "go\r")
		return strings.Contains(out.String(), "43 132")
	}, "the PTY did not follow the resize: %q", &out)
	if _, err := io.WriteString(typed, "q\r"); err != nil {
		t.Fatal(err)
	}
	var ce *CommandError
	if err := <-done; !errors.As(err, &ce) || ce.Status != 4 {
		t.Fatalf("Shell = %v, want exit 4", err)
	}
}
