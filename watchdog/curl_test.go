package watchdog_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/watchdog"
)

// A proxy the job set up for its own downloads, in ~/.curlrc or in the
// variables the watchdog inherits, never reaches the watchdog's curl, and no
// child of the watchdog inherits a proxy variable.
func TestCurlIgnoresConfigAndProxies(t *testing.T) {
	t.Parallel()
	const deadProxy = "http://127.0.0.1:9"
	t.Run("curlrc", func(t *testing.T) {
		shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
			p := newPod(t, sh)
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, ".curlrc"), []byte("proxy = \""+deadProxy+"\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			p.setEnv("HOME", home, "OVERBRAINER_BOOT_GRACE", "2")
			p.start()
			if v := p.verdict(); v != "ready" {
				t.Fatalf("verdict %q\nlog:\n%s", v, p.logText())
			}
			p.deleted(watchdog.DeleteNeverStarted)
		})
	})
	t.Run("proxy_variables", func(t *testing.T) {
		shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
			p := newPod(t, sh)
			realCurl, err := exec.LookPath("curl")
			if err != nil {
				t.Fatal(err)
			}
			envs := filepath.Join(p.bin.Dir, ".curl-env")
			p.bin.Stub("curl", fmt.Sprintf(`env | grep -i '^[a-z_]*_proxy=' >> %q; exec %q "$@"`, envs, realCurl))
			names := []string{"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}
			for _, name := range names {
				p.setEnv(name, deadProxy)
			}
			p.setEnv("no_proxy", "example.com", "OVERBRAINER_BOOT_GRACE", "2")
			p.start()
			if v := p.verdict(); v != "ready" {
				t.Fatalf("verdict %q\nlog:\n%s", v, p.logText())
			}
			p.deleted(watchdog.DeleteNeverStarted)
			if b, _ := os.ReadFile(envs); len(b) != 0 {
				t.Errorf("curl inherited proxy variables:\n%s", b)
			}
		})
	})
}
