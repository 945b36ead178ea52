package bootstrap_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/overbrainer/overbrainer-go/bootstrap"
	"github.com/overbrainer/overbrainer-go/internal/shtest"
)

// hostileEnv returns values that a naive quoting would break or execute,
// and a file that exists only if something executed one of them.
func hostileEnv(t *testing.T) (env map[string]string, pwned string) {
	pwned = filepath.Join(t.TempDir(), "pwned")
	return map[string]string{
		"PATH":            "/usr/local/bin:/usr/bin:/bin",
		"Q1":              "it's",
		"Q2":              "'",
		"Q3":              "''",
		"Q4":              `a'\''b`,
		"DQ":              `say "hi"`,
		"SUBST":           "$(touch " + pwned + ")",
		"BACKTICK":        "`touch " + pwned + "`",
		"DOLLAR":          "$HOME ${PATH} $1 $$",
		"SPACES":          "  two  spaces  ",
		"TABS":            "a\tb",
		"NEWLINES":        "line 1\nline 2\n",
		"LEADING_NL":      "\nx",
		"BACKSLASH":       `c:\new\` + "\\",
		"GLOB":            "* ? [a-z]",
		"SEMI":            "; touch " + pwned + " #",
		"EMPTY":           "",
		"DASH_N":          "-n",
		"PERCENT":         "%s %d %%",
		"UTF8":            "héllo ☃ 日本",
		"BYTES":           "\xff\xfe\x01",
		"EQUALS":          "a=b=c",
		"lower_case":      "kept",
		"_UNDERSCORE_1":   "kept",
		"JUPYTER_DISABLE": "1",
	}, pwned
}

// jobEnv runs job_env_lines under shell with env and returns what it wrote.
func jobEnv(t *testing.T, shell string, env map[string]string) []byte {
	t.Helper()
	argv := shellArgv(t, shell)
	cmd := exec.Command(argv[0], append(argv[1:], "-c", bootstrap.Functions()+"\njob_env_lines\n")...)
	cmd.Env = nil
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("job_env_lines under %s: %v\n%s", shell, err, stderr.String())
	}
	return out
}

// sourced sources file under shell in an empty environment and returns the
// environment the shell then exports, read NUL-separated.
func sourced(t *testing.T, shell, file string) map[string]string {
	t.Helper()
	argv := shellArgv(t, shell)
	cmd := exec.Command(argv[0], append(argv[1:], "-c", `. "$1" && exec /usr/bin/env -0`, "sh", file)...)
	cmd.Env = []string{}
	if shell == "yash" {
		// yash reads its input as text of its locale.
		cmd.Env = []string{"LC_ALL=C.UTF-8"}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sourcing the job env under %s: %v\n%s", shell, err, stderr.String())
	}
	got := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	// What the sourcing shell itself adds.
	for _, k := range []string{"PWD", "OLDPWD", "SHLVL", "_", "LC_ALL"} {
		delete(got, k)
	}
	return got
}

// The job env round-trips hostile values through every shell, writes no
// secret, and skips names a shell could not source.
func TestJobEnvRoundTripsHostileValues(t *testing.T) {
	host := newKey(t, "host")
	client := newKey(t, "client")
	keep, pwned := hostileEnv(t)
	keep["PUBLIC_KEY"] = client.line + "\n" + host.line
	keep["OVERBRAINER_AUTHORIZED_KEY"] = client.line
	keep["OVERBRAINER_CLAIM"] = host.line
	drop := map[string]string{
		"RUNPOD_API_KEY":        "rpa_podkey_7c1e",
		"OVERBRAINER_HOST_KEY":  host.b64,
		"HF_TOKEN":              "hf_abc_7c1e",
		"hf_token":              "hf_lower_7c1e",
		"AWS_SECRET_ACCESS_KEY": "aws_7c1e",
		"MY_PRIVATE_KEY":        string(host.pem),
		"PUBLIC_KEY_NOT":        "ssh-ed25519 AAAA x\nnot a key",
		"DB_PASSWORD":           "pw_7c1e",
		"GOOGLE_CREDENTIALS":    "{}",
		"RUNPOD_SECRET_x":       "s",
		"BAD-NAME":              "x",
		"1LEADING_DIGIT":        "x",
	}
	env := map[string]string{}
	for k, v := range keep {
		env[k] = v
	}
	for k, v := range drop {
		env[k] = v
	}
	for _, writer := range []string{"dash", "bash"} {
		t.Run(writer, func(t *testing.T) {
			for _, reader := range shtest.Names {
				t.Run(reader, func(t *testing.T) {
					env, keep := env, keep
					if reader == "yash" {
						// yash refuses to read bytes that are not text in
						// its locale (UTF-8 here), whatever the quoting.
						env, keep = without(env, "BYTES"), without(keep, "BYTES")
					}
					out := jobEnv(t, writer, env)
					for _, secret := range append(host.secrets("rpa_podkey_7c1e"), "hf_abc_7c1e", "hf_lower_7c1e", "aws_7c1e", "pw_7c1e") {
						if bytes.Contains(out, []byte(secret)) {
							t.Fatalf("the job env holds a secret (%.12s...)", secret)
						}
					}
					file := filepath.Join(t.TempDir(), "job.env")
					if err := os.WriteFile(file, out, 0o600); err != nil {
						t.Fatal(err)
					}
					got := sourced(t, reader, file)
					if diff := cmp.Diff(keep, got); diff != "" {
						t.Errorf("written under %s, sourced under %s (-want +got):\n%s", writer, reader, diff)
					}
					if _, err := os.Stat(pwned); err == nil {
						t.Fatal("sourcing the job env executed a value")
					}
				})
			}
		})
	}
}

func without(m map[string]string, name string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if k != name {
			out[k] = v
		}
	}
	return out
}
