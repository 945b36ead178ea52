package podssh

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Key is an ed25519 key pair: the client's key of a run, or the run's host
// key.
type Key struct {
	Private ed25519.PrivateKey
	Public  ssh.PublicKey
}

// NewKey generates an ed25519 key pair.
func NewKey() (*Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("podssh: generating a key: %w", err)
	}
	return keyFrom(priv)
}

func keyFrom(priv ed25519.PrivateKey) (*Key, error) {
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		return nil, fmt.Errorf("podssh: %w", err)
	}
	return &Key{Private: priv, Public: pub}, nil
}

// PrivatePEM is the private key in the OpenSSH PEM format ("-----BEGIN
// OPENSSH PRIVATE KEY-----"), what sshd reads as a HostKey file and what
// ParseKey reads back.
func (k *Key) PrivatePEM(comment string) ([]byte, error) {
	block, err := ssh.MarshalPrivateKey(k.Private, comment)
	if err != nil {
		return nil, fmt.Errorf("podssh: %w", err)
	}
	return pem.EncodeToMemory(block), nil
}

// Signer is the key as an ssh.Signer, to authenticate with.
func (k *Key) Signer() (ssh.Signer, error) {
	s, err := ssh.NewSignerFromKey(k.Private)
	if err != nil {
		return nil, fmt.Errorf("podssh: %w", err)
	}
	return s, nil
}

// AuthorizedKey is the public half as one authorized_keys line without its
// newline: "ssh-ed25519 AAAA... comment".
func (k *Key) AuthorizedKey(comment string) string {
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k.Public)))
	if comment != "" {
		line += " " + comment
	}
	return line
}

// ParseKey reads an unencrypted OpenSSH PEM ed25519 private key. Its error
// never quotes the key.
func ParseKey(pemBytes []byte) (*Key, error) {
	raw, err := ssh.ParseRawPrivateKey(pemBytes)
	if err != nil {
		return nil, errors.New("podssh: the private key does not parse as an unencrypted OpenSSH key")
	}
	switch priv := raw.(type) {
	case ed25519.PrivateKey:
		return keyFrom(priv)
	case *ed25519.PrivateKey:
		return keyFrom(*priv)
	}
	return nil, fmt.Errorf("podssh: the private key is a %T, not ed25519", raw)
}

// ParsePublicKey reads one authorized_keys line.
func ParsePublicKey(line string) (ssh.PublicKey, error) {
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return nil, fmt.Errorf("podssh: not an authorized_keys line: %w", err)
	}
	return pub, nil
}
