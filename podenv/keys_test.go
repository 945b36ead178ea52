package podenv_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"github.com/overbrainer/overbrainer-go/internal/shtest"
	"github.com/overbrainer/overbrainer-go/podenv"
)

// Security keys (FIDO) cannot be made without their hardware: these are
// valid public halves, built from fixed points, that ssh-keygen -l reads as
// ED25519-SK and ECDSA-SK keys.
const (
	skEd25519Key = "sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAIPtsTNyC3QONi4r18JOEAgK9/gz2vjTj2c7wkyl5pjxtAAAABHNzaDo="
	skECDSAKey   = "sk-ecdsa-sha2-nistp256@openssh.com AAAAInNrLWVjZHNhLXNoYTItbmlzdHAyNTZAb3BlbnNzaC5jb20AAAAIbmlzdHAyNTYAAABBBFNBEnGP6kqPEe2j3xztSx/4znNHMn+AjvY+lh86cz2doMRlhxcx/wNzOO++4ZPA0xJUn6lZJTvll+ws0DUuk5EAAAAEc3NoOg=="
)

type testKey struct {
	line string // type and base64, no comment
	pub  ssh.PublicKey
}

func keyLine(t *testing.T, pub any) testKey {
	t.Helper()
	p, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{strings.TrimSpace(string(ssh.MarshalAuthorizedKey(p))), p}
}

func parsedLine(t *testing.T, line string) testKey {
	t.Helper()
	p, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		t.Fatalf("%.40s: %v", line, err)
	}
	return testKey{line, p}
}

// allowedKeys has a freshly made key of every type a client may bring, the
// RSA one of the smallest size podenv takes.
func allowedKeys(t *testing.T) []testKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keys := []testKey{keyLine(t, pub)}
	for _, c := range []elliptic.Curve{elliptic.P256(), elliptic.P384(), elliptic.P521()} {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, keyLine(t, &k.PublicKey))
	}
	r, err := rsa.GenerateKey(rand.Reader, 3072)
	if err != nil {
		t.Fatal(err)
	}
	keys = append(keys, keyLine(t, &r.PublicKey))
	return append(keys, parsedLine(t, skEd25519Key), parsedLine(t, skECDSAKey))
}

func TestEveryAllowedKeyTypeIsAccepted(t *testing.T) {
	var types []string
	for _, k := range allowedKeys(t) {
		types = append(types, k.pub.Type())
		for _, line := range []string{k.line, k.line + " me@laptop (work)"} {
			s := seedSettings()
			s.AuthorizedKey = line
			env, err := s.Env()
			if err != nil {
				t.Errorf("%s refused: %v", k.pub.Type(), err)
				continue
			}
			if env["OVERBRAINER_AUTHORIZED_KEY"] != line {
				t.Errorf("OVERBRAINER_AUTHORIZED_KEY = %q, want %q", env["OVERBRAINER_AUTHORIZED_KEY"], line)
			}
		}
	}
	sameKeyTypes(t, "key types tried (-allowed +tried)", types)
}

// sameKeyTypes fails t when got is not, in any order, the types podenv
// allows.
func sameKeyTypes(t *testing.T, what string, got []string) {
	t.Helper()
	got = slices.Sorted(slices.Values(got))
	want := slices.Sorted(slices.Values(podenv.AuthorizedKeyTypes()))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s:\n%s", what, diff)
	}
}

// What podenv accepts, the bootstrap's public_key_line accepts too, under
// every shell (else the pod would die of authorized_key_invalid).
func TestTheBootstrapTakesTheAcceptedKeys(t *testing.T) {
	keys := allowedKeys(t)
	shtest.ForEach(t, func(t *testing.T, sh shtest.Shell) {
		script := shtest.BootstrapFunctions(t) + `
for v in K0 K1 K2 K3 K4 K5 K6; do
  eval "line=\${$v}"
  public_key_line "$line" || { echo "refused $v"; exit 1; }
done
`
		cmd := exec.Command(sh.Argv[0], append(sh.Argv[1:], "-c", script)...)
		cmd.Env = []string{"PATH=" + shtest.SystemPath}
		if len(keys) != 7 {
			t.Fatalf("%d keys, the script checks 7", len(keys))
		}
		for i, k := range keys {
			cmd.Env = append(cmd.Env, "K"+strconv.Itoa(i)+"="+k.line+" comment")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
	})
}

// OpenSSH reads every accepted key line as the same key: sshd parses
// authorized_keys with the code ssh-keygen -l uses.
func TestOpenSSHReadsTheAcceptedKeys(t *testing.T) {
	keygen := shtest.NeedTool(t, "ssh-keygen")
	dir := t.TempDir()
	for i, k := range allowedKeys(t) {
		file := filepath.Join(dir, strconv.Itoa(i)+".pub")
		if err := os.WriteFile(file, []byte(k.line+" key"+strconv.Itoa(i)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(keygen, "-l", "-E", "sha256", "-f", file).CombinedOutput()
		if err != nil {
			t.Errorf("ssh-keygen -l on %s: %v: %s", k.pub.Type(), err, out)
			continue
		}
		if f := strings.Fields(string(out)); len(f) < 2 || f[1] != ssh.FingerprintSHA256(k.pub) {
			t.Errorf("ssh-keygen reads the %s key as %q, want fingerprint %s", k.pub.Type(), out, ssh.FingerprintSHA256(k.pub))
		}
	}
}

// The allowed types are exactly those sshd takes for a login by default
// (its certificate types aside): the bootstrap's sshd_config leaves
// PubkeyAcceptedAlgorithms alone.
func TestAuthorizedKeyTypesAreWhatSSHDAccepts(t *testing.T) {
	sshd := shtest.NeedSSHD(t)
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	hostKey := filepath.Join(t.TempDir(), "host_key")
	if err := os.WriteFile(hostKey, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sshd, "-T", "-f", "/dev/null", "-o", "HostKey="+hostKey).CombinedOutput()
	if err != nil {
		t.Fatalf("sshd -T: %v: %s", err, out)
	}
	var algs []string
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "pubkeyacceptedalgorithms "); ok {
			algs = strings.Split(strings.TrimSpace(v), ",")
		}
	}
	if len(algs) == 0 {
		t.Fatalf("sshd -T shows no pubkeyacceptedalgorithms:\n%s", out)
	}
	var types []string
	for _, a := range algs {
		switch {
		case strings.Contains(a, "-cert-"):
			continue
		case a == ssh.KeyAlgoRSASHA256 || a == ssh.KeyAlgoRSASHA512:
			// Signature algorithms of ssh-rsa keys.
			a = ssh.KeyAlgoRSA
		}
		if !slices.Contains(types, a) {
			types = append(types, a)
		}
	}
	sameKeyTypes(t, "key types (-podenv +sshd)", types)
}

func TestRefusedKeys(t *testing.T) {
	ed := keyLine(t, mustEd25519(t))
	edBlob := strings.Fields(ed.line)[1]
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p256Blob := strings.Fields(keyLine(t, &p256.PublicKey).line)[1]

	// A DSA key: well formed (a 1024-bit P, a 160-bit Q), of a type sshd
	// refuses. (x/crypto names the type in a deprecated constant.)
	const keyAlgoDSA = "ssh-dss"
	p, q := new(big.Int).Lsh(big.NewInt(1), 1023), new(big.Int).Lsh(big.NewInt(1), 159)
	dss := ssh.Marshal(struct {
		Name       string
		P, Q, G, Y *big.Int
	}{keyAlgoDSA, p.Add(p, big.NewInt(1)), q.Add(q, big.NewInt(1)), big.NewInt(2), big.NewInt(3)})
	dssLine := keyAlgoDSA + " " + base64.StdEncoding.EncodeToString(dss)
	if k := parsedLine(t, dssLine); k.pub.Type() != keyAlgoDSA {
		t.Fatalf("the DSA line parses as %s", k.pub.Type())
	}
	// RSA keys smaller than sshd's RequiredRSASize (1024 bits), and than
	// podenv's 3072 bits.
	rsaOf := func(bits int) string {
		k := &rsa.PublicKey{N: new(big.Int).SetBytes(append([]byte{0xc1}, make([]byte, bits/8-1)...)), E: 65537}
		k.N.SetBit(k.N, 0, 1)
		return keyLine(t, k).line
	}
	// A certificate: authorized_keys would need cert-authority for it.
	signer, err := ssh.NewSignerFromKey(mustEd25519Private(t))
	if err != nil {
		t.Fatal(err)
	}
	cert := &ssh.Certificate{Key: ed.pub, CertType: ssh.UserCert, ValidBefore: ssh.CertTimeInfinity}
	if err := cert.SignCert(rand.Reader, signer); err != nil {
		t.Fatal(err)
	}
	certLine := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(cert)))
	junk, _ := base64.StdEncoding.DecodeString(edBlob)
	junkLine := "ssh-ed25519 " + base64.StdEncoding.EncodeToString(append(junk, 0, 0, 0, 0))

	for _, c := range []struct {
		name, line, why string
	}{
		{"dsa", dssLine, `key type "ssh-dss" is not one of`},
		{"certificate", certLine, "is not one of"},
		{"rsa of 512 bits", rsaOf(512), "fewer than 3072 bits"},
		{"rsa of 2048 bits", rsaOf(2048), "fewer than 3072 bits"},
		{"rsa of 3064 bits", rsaOf(3064), "fewer than 3072 bits"},
		{"type word is not the blob's", "ssh-rsa " + edBlob, "does not hold a valid ssh-rsa public key"},
		{"other curve", "ecdsa-sha2-nistp384 " + p256Blob, "does not hold a valid ecdsa-sha2-nistp384"},
		{"truncated blob", "ssh-ed25519 " + edBlob[:40], "does not hold a valid ssh-ed25519"},
		{"trailing junk in the blob", junkLine, "does not hold a valid ssh-ed25519"},
		{"unknown type", "ssh-foo " + edBlob, `key type "ssh-foo"`},
		{"options", `no-pty,command="/bin/sh" ` + ed.line, "without options"},
		{"tab", strings.Replace(ed.line, " ", "\t", 1), "without options"},
		{"two spaces", strings.Replace(ed.line, " ", "  ", 1), "without options"},
		{"leading space", " " + ed.line, "without options"},
		{"control byte in the comment", ed.line + " me\x1b[2J", "without options"},
		{"two keys", ed.line + "\n" + skEd25519Key, "newline"},
		{"secret placeholder in the comment", ed.line + " {{ RUNPOD_SECRET_hf }}", "{{"},
		{"private key", string(pem.EncodeToMemory(mustPrivateBlock(t))), "newline"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := seedSettings()
			s.AuthorizedKey = c.line
			err := s.Validate()
			var fe *podenv.FieldError
			if !errors.As(err, &fe) || fe.Field != "Settings.AuthorizedKey" {
				t.Fatalf("Validate() = %v, want an AuthorizedKey error", err)
			}
			if !strings.Contains(err.Error(), c.why) {
				t.Errorf("error %q does not say %q", err, c.why)
			}
			if blob := strings.Fields(c.line + " x")[1]; len(blob) > 16 && strings.Contains(err.Error(), blob[:16]) {
				t.Errorf("error %q quotes the key", err)
			}
		})
	}
}

// The claim is the run's host key, which the bootstrap installs as sshd's
// ed25519 host key: no other type, whatever a client key may be.
func TestClaimIsAnEd25519Key(t *testing.T) {
	for _, k := range allowedKeys(t) {
		s := seedSettings()
		s.Claim = k.line + " host"
		err := s.Validate()
		if k.pub.Type() == ssh.KeyAlgoED25519 {
			if err != nil {
				t.Errorf("ed25519 claim refused: %v", err)
			}
			continue
		}
		var fe *podenv.FieldError
		if !errors.As(err, &fe) || fe.Field != "Settings.Claim" || !strings.Contains(err.Error(), "is not one of ssh-ed25519") {
			t.Errorf("%s claim: Validate() = %v, want a Claim error", k.pub.Type(), err)
		}
	}
}

func mustEd25519Private(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func mustEd25519(t *testing.T) ed25519.PublicKey {
	t.Helper()
	return mustEd25519Private(t).Public().(ed25519.PublicKey)
}

func mustPrivateBlock(t *testing.T) *pem.Block {
	t.Helper()
	block, err := ssh.MarshalPrivateKey(mustEd25519Private(t), "")
	if err != nil {
		t.Fatal(err)
	}
	return block
}
