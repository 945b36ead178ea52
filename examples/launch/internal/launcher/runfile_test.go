package launcher

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// printRunFile runs "launch run -f FILE --print ARGS..." with env as the
// environment, in a state directory it checks stays unmade.
func printRunFile(t *testing.T, file string, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	stateDir := filepath.Join(t.TempDir(), "state")
	var out, errb bytes.Buffer
	full := append([]string{"--state-dir", stateDir, "run", "-f", file, "--print"}, args...)
	code = run(context.Background(), full, &out, &errb, func(k string) string { return env[k] })
	if _, err := os.Stat(stateDir); err == nil {
		t.Errorf("run --print made the state directory %s", stateDir)
	}
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A bad run file exits 2 naming the file, the line and the key, whatever
// is wrong: a value of the wrong type or shape, a key unknown or given
// twice, a global flag, YAML that does not parse.
func TestRunFileRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, text, want string }{
		{"float", "cmd: x\nmax-hours: six\n", `run.yaml:2: max-hours: want a number, not "six"`},
		{"int", "gpu-count: 1.5\n", `run.yaml:1: gpu-count: want a whole number, not "1.5"`},
		{"bool", "cmd: x\n\nkeep-pod: yes\n", `run.yaml:3: keep-pod: want true or false, not "yes"`},
		{"duration", "boot-grace: 10\n", `run.yaml:1: boot-grace: want a duration such as 90s, 30m or 2h, not "10"`},
		{"custom type", "stall-after: soon\n", `run.yaml:1: stall-after: want duration|off, not "soon"`},
		{"list for one value", "gpu:\n  - A\n  - B\n", "run.yaml:2: gpu: want one value (a string), not a list"},
		{"mapping for a list", "exclude: {a: b}\n", "run.yaml:1: exclude: want a value or a list of values, not a mapping"},
		{"null", "cmd:\n", "run.yaml:1: cmd: no value"},
		{"bad secret name", "secret: [OK, 1BAD]\n", `run.yaml:1: secret: want NAME[=VAR], not "1BAD"`},
		{"unknown key", "cmd: x\ngpus: A\n", `run.yaml:2: unknown key "gpus": a key is one of run's flags without -- (launch run -h lists them); did you mean gpu?`},
		{"unknown, nothing close", "\n\nfrobnicate: 1\n", `run.yaml:3: unknown key "frobnicate"`},
		{"global flag", "local: true\n", "run.yaml:1: local is not a run file's key: give --local on the command line"},
		{"the file itself", "print: true\n", "run.yaml:1: print is not a run file's key"},
		{"twice", "cmd: a\nmax-hours: 1\ncmd: b\n", "run.yaml:3: cmd given twice (first at line 1)"},
		{"not a mapping", "- cmd\n", "run.yaml:1: a run file is a mapping of run's flags"},
		{"syntax", "cmd: [a\n", "run.yaml:1: did not find expected"},
		{"checked after the merge", "max-hours: 0\n", "--max-hours: is not set, and Keep is not"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			file := writeFile(t, t.TempDir(), "run.yaml", c.text)
			code, out, errOut := printRunFile(t, file, nil)
			if code != ExitUsage || !strings.Contains(errOut, c.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", code, out, errOut, c.want)
			}
		})
	}
	code, _, errOut := printRunFile(t, filepath.Join(t.TempDir(), "missing.yaml"), nil)
	if code != ExitUsage || !strings.Contains(errOut, "missing.yaml") {
		t.Errorf("a missing file: exit %d:\n%s", code, errOut)
	}
}

// The command line wins over the file, a repeatable flag's values
// replacing the file's whole; --print says where each value came from.
func TestRunFileCommandLineWins(t *testing.T) {
	t.Parallel()
	file := writeFile(t, t.TempDir(), "run.yaml", "cmd: python train.py\nmax-hours: 6\nexclude: [a, b]\ngpu-count: 2\n")
	code, out, errOut := printRunFile(t, file, nil, "--max-hours", "2", "--exclude", "c", "--job", ".")
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	cwd, _ := os.Getwd()
	for _, want := range []string{
		"\nmax-hours: 2 # command line\n", "\nexclude: [c] # command line\n",
		"\ngpu-count: 2\n", "\ncmd: python train.py\n", "\ncloud: SECURE # default\n",
		"\njob: " + cwd + " # command line\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--print lacks %q:\n%s", want, out)
		}
	}
}

// A relative path in a run file is the file's directory's, wherever launch
// runs; the example file of the README prints whole, and what --print
// writes is a run file that reads back as the same run.
func TestRunFilePrintsTheExample(t *testing.T) {
	t.Parallel()
	example, err := filepath.Abs(filepath.Join("..", "..", "run.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := printRunFile(t, example, nil)
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	for _, want := range []string{
		"\njob: " + filepath.Join(filepath.Dir(example), "demo") + "\n",
		"\ncmd: DEMO_STEPS=20 sh train.sh\n", "\nmax-hours: 2\n", "\nstall-after: 30m0s\n",
		"\nexclude: [ckpt-*]\n", "\nsecret: [] # default\n", "\nmax-extension: 1h0m0s # default\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--print lacks %q:\n%s", want, out)
		}
	}
	again := writeFile(t, t.TempDir(), "merged.yaml", out)
	code, out2, errOut := printRunFile(t, again, nil)
	if code != ExitOK {
		t.Fatalf("the printed run does not read back: exit %d:\n%s\n%s", code, errOut, out)
	}
	strip := func(s string) string {
		s = strings.ReplaceAll(s, " # default\n", "\n")
		return s
	}
	if strip(out) != strip(out2) {
		t.Errorf("the printed run reads back as another:\n%s\n---\n%s", out, out2)
	}
}

// --print names a secret's variable, never its value, and reads none; a
// NAME: VAR mapping and a list give the same secrets.
func TestRunFilePrintShowsNoSecret(t *testing.T) {
	t.Parallel()
	const value = "hf_runfileSecretValue42"
	env := map[string]string{"HF_TOKEN": value, "MY_WANDB": value + "w"}
	dir := t.TempDir()
	for _, text := range []string{
		"secret: [HF_TOKEN, WANDB_API_KEY=MY_WANDB]\n",
		"secret:\n  HF_TOKEN: HF_TOKEN\n  WANDB_API_KEY: MY_WANDB\n",
	} {
		file := writeFile(t, dir, "run.yaml", text)
		code, out, errOut := printRunFile(t, file, env)
		if code != ExitOK {
			t.Fatalf("exit %d:\n%s", code, errOut)
		}
		if !strings.Contains(out, "\nsecret: [HF_TOKEN, WANDB_API_KEY=MY_WANDB]\n") {
			t.Errorf("--print of %q:\n%s", text, out)
		}
		if strings.Contains(out+errOut, value) {
			t.Errorf("--print shows a secret's value:\n%s%s", out, errOut)
		}
	}
}
