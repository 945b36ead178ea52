package main_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// readme is the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeSample is the README's block of sample output that follows the
// marker line (an HTML comment naming the test that checks it).
func readmeSample(t *testing.T, marker string) string {
	t.Helper()
	return readmeBlock(t, marker, "text")
}

// readmeBlock is the README's first block fenced as lang after the marker
// line (an HTML comment naming the test that checks it).
func readmeBlock(t *testing.T, marker, lang string) string {
	t.Helper()
	s := readme(t)
	i := strings.Index(s, marker)
	if i < 0 {
		t.Fatalf("the README has no %q", marker)
	}
	s = s[i:]
	fence := "```" + lang + "\n"
	start := strings.Index(s, fence)
	if start < 0 {
		t.Fatalf("no %s block after %q", fence, marker)
	}
	s = s[start+len(fence):]
	end := strings.Index(s, "```\n")
	if end < 0 {
		t.Fatalf("the README's %s block after %q does not end", lang, marker)
	}
	return s[:end]
}

// sampleRules normalise what differs from one run to the next, in the
// README's sample and in a real run alike: run ids, the pod's id, times,
// ports, process groups, the amounts of the cost, billed and worst case
// lines (a worst case counts from a second that varies) and the
// run's duration in the first, and the results' byte count (their logs
// hold times). Prices, file counts, steps and every word stay as they
// are. Each replacement is a regexp template.
var sampleRules = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{8}-\d{6}-[0-9a-f]{4}\b`), "RUN"},
	{regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?`), "TIME"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
	{regexp.MustCompile(`process group \d+`), "process group N"},
	{regexp.MustCompile(`(cost: ~|billed: |worst case [a-z ]+: )\$[0-9.]+`), "${1}$$AMOUNT"},
	{regexp.MustCompile(` x [0-9hms.]+ from the create call`), " x DURATION from the create call"},
	{regexp.MustCompile(`, \d+ bytes\)`), ", N bytes)"},
}

// podID finds the pod's id in a run's output.
var podID = regexp.MustCompile(`pod (\S+) \(overbrainer-`)

func normaliseSample(s string) string {
	if m := podID.FindStringSubmatch(s); m != nil {
		s = regexp.MustCompile(`\b`+regexp.QuoteMeta(m[1])+`\b`).ReplaceAllLiteralString(s, "POD")
	}
	for _, r := range sampleRules {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

// screenLines is what a terminal shows of out once it stops: each line's
// text after its last carriage return (a progress line redrawn in place
// and erased), lines erased whole left out.
func screenLines(out string) string {
	var b strings.Builder
	for line := range strings.Lines(strings.ReplaceAll(out, "\r\n", "\n")) {
		line = strings.TrimSuffix(line, "\n")
		if i := strings.LastIndexByte(line, '\r'); i >= 0 {
			line = strings.TrimRight(line[i+1:], " ")
			if line == "" {
				continue
			}
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// onTerminal runs the launcher with args on a terminal of its own, as a
// user does, and returns its exit status and what the terminal showed.
func (l *local) onTerminal(args ...string) (int, string) {
	l.t.Helper()
	cmd := l.command(args...)
	term, err := pty.Start(cmd) // a session leader, its terminal the pty
	if err != nil {
		l.t.Fatal(err)
	}
	defer term.Close()
	var screen shtest.SyncBuffer
	read := make(chan struct{})
	go func() {
		_, err := io.Copy(&screen, term)
		if err != nil && !errors.Is(err, syscall.EIO) { // EIO: the launcher closed its end
			l.t.Errorf("reading the terminal: %v", err)
		}
		close(read)
	}()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(2 * patience):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		l.t.Fatalf("launch %s did not exit on its terminal:\n%s", strings.Join(args, " "), screen.String())
	}
	<-read
	return cmd.ProcessState.ExitCode(), screen.String()
}

// The README stays readable and true to the tree: no table cell longer
// than maxCell, every link to one of its own sections names a heading,
// and the run file it shows is the example's (examples/launch/run.yaml,
// its header comment aside).
func TestReadmeShape(t *testing.T) {
	t.Parallel()
	const maxCell = 300
	s := readme(t)
	headings := map[string]bool{}
	fence := false
	for i, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		if fence {
			continue
		}
		if h, ok := strings.CutPrefix(line, "#"); ok {
			headings[slug(strings.TrimLeft(h, "#"))] = true
		}
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			continue
		}
		for _, cell := range regexp.MustCompile(`[^\\]\|`).Split(line, -1) {
			if n := len([]rune(strings.TrimSpace(cell))); n > maxCell {
				t.Errorf("README.md:%d: a table cell of %d characters (at most %d): %.60s...", i+1, n, maxCell, strings.TrimSpace(cell))
			}
		}
	}
	for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(s, -1) {
		if !headings[m[1]] {
			t.Errorf("README.md links to #%s, which no heading makes", m[1])
		}
	}
	if len(headings) < 20 {
		t.Fatalf("only %d headings read", len(headings))
	}

	b, err := os.ReadFile("run.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var example strings.Builder
	for line := range strings.Lines(string(b)) {
		if example.Len() > 0 || !strings.HasPrefix(line, "#") {
			example.WriteString(line)
		}
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```\n").FindStringSubmatch(s)
	if block == nil || block[1] != strings.TrimLeft(example.String(), "\n") {
		t.Errorf("the README's run file is not examples/launch/run.yaml's:\n%v\n---\n%s", block, example.String())
	}
}

// slug is GitHub's anchor of a heading: lower case, spaces to hyphens,
// punctuation but hyphens and underscores dropped.
func slug(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`).ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}
