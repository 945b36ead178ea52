package bootstrap_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	shellName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	secretName = regexp.MustCompile(`TOKEN|SECRET|KEY|PASSW|CREDENTIAL`)
	publicKey  = regexp.MustCompile(`^(ssh-|ecdsa-|sk-)[A-Za-z0-9@.-]+ [A-Za-z0-9+/]+=*( .*)?$`)
)

// FuzzJobEnvRoundTrip writes a hostile variable into the job env with the
// bootstrap's job_env_lines (under dash, bash and busybox sh, with their
// awk) and sources it back under each of them: the value comes back
// byte for byte, nothing else appears (no injected variable), nothing runs,
// and a secret-looking name keeps its value out unless it is public keys.
func FuzzJobEnvRoundTrip(f *testing.F) {
	for _, v := range []string{
		"it's", "'", `a'\''b`, "$(touch PWNED)", "`touch PWNED`", "x'\nexport INJECTED=1\n'",
		"line 1\nline 2\n", `c:\new\`, "\xff\xfe\x01", "%s %n", "-n", "", " ", "\t", "=",
		"ssh-ed25519 AAAAC3Nz x\n$(touch PWNED)",
	} {
		f.Add("VALUE", v)
	}
	f.Add("HF_TOKEN", "hf_live_secret")
	f.Add("MY_KEY", "ssh-ed25519 AAAAC3Nz me@host")
	f.Add("my_key", "ssh-rsa AAAA\nssh-ed25519 BBBB c")
	f.Add("RUNPOD_API_KEY", "rpa_x")
	f.Add("OVERBRAINER_HOST_KEY", "LS0tLS1CRUdJTi")
	f.Add("BAD-NAME", "x")
	f.Add("_", "x")
	f.Fuzz(func(t *testing.T, name, value string) {
		if name == "" || strings.ContainsAny(name, "=\x00") || strings.ContainsRune(value, 0) || name == "PATH" {
			t.Skip("not a possible environment entry")
		}
		dir := t.TempDir()
		pwned := filepath.Join(dir, "PWNED")
		value = strings.ReplaceAll(value, "PWNED", pwned)
		env := map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", name: value}
		kept := shellName.MatchString(name) &&
			!regexp.MustCompile(`^(_|PWD|OLDPWD|SHLVL|RUNPOD_API_KEY|OVERBRAINER_HOST_KEY)$`).MatchString(name)
		secret := secretName.MatchString(strings.ToUpper(name))
		for _, writer := range []string{"dash", "bash", "busybox"} {
			out := jobEnv(t, writer, env)
			if !kept && bytes.Contains(out, []byte(name+"=")) {
				t.Fatalf("%s: %q should be dropped:\n%s", writer, name, out)
			}
			file := filepath.Join(dir, writer+".env")
			if err := os.WriteFile(file, out, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, reader := range []string{"dash", "bash", "busybox"} {
				got := sourced(t, reader, file)
				if _, err := os.Stat(pwned); err == nil {
					t.Fatalf("written under %s, sourced under %s: a value ran", writer, reader)
				}
				if got["PATH"] != env["PATH"] {
					t.Fatalf("written under %s, sourced under %s: PATH = %q", writer, reader, got["PATH"])
				}
				delete(got, "PATH")
				v, present := got[name]
				delete(got, name)
				if len(got) > 0 {
					t.Fatalf("written under %s, sourced under %s: extra variables %q", writer, reader, got)
				}
				switch {
				case !kept && present:
					t.Fatalf("written under %s, sourced under %s: %q should be dropped", writer, reader, name)
				case present && v != value:
					t.Fatalf("written under %s, sourced under %s: %s = %q, want %q", writer, reader, name, v, value)
				case present && secret && !allPublicKeys(value):
					t.Fatalf("written under %s: the secret-looking %s kept its value", writer, name)
				case kept && !secret && !present:
					t.Fatalf("written under %s, sourced under %s: %s lost", writer, reader, name)
				}
			}
		}
	})
}

// allPublicKeys: every line of v is an authorized_keys line without options.
func allPublicKeys(v string) bool {
	for _, line := range strings.Split(v, "\n") {
		if !publicKey.MatchString(line) {
			return false
		}
	}
	return v != ""
}
