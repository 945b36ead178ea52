package runpod

// Secrets use REST v2's account secrets (/v2/account/secrets). A secret's
// value travels only in the body of a create or a rotation, is scrubbed
// from every error and log line, and those bodies are never dumped by
// WithDebug.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Secret is a Runpod account secret's metadata; its value is write-only.
// A pod env value "{{ RUNPOD_SECRET_<Name> }}" is replaced by the value
// at boot.
type Secret struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// CreatedAt and ValueLastUpdatedAt are zero when Runpod sends none.
	CreatedAt          time.Time `json:"createdAt"`
	ValueLastUpdatedAt time.Time `json:"valueLastUpdatedAt"`
}

// Runpod's rules for a secret, checked before any request.
const (
	// MaxSecretNameLen is the longest name Runpod takes, in bytes.
	MaxSecretNameLen = 191
	// MaxSecretValueLen is the largest value Runpod takes: strictly
	// under 16 MiB of UTF-8 text.
	MaxSecretValueLen = 16<<20 - 1
	// SecretNameRule is the pattern a name must match; a name must also
	// not start with "RUNPOD" in any case.
	SecretNameRule = `^[a-zA-Z_][a-zA-Z0-9_.\-/]*$`
	// MaxSecretDescriptionLen is the longest description Runpod takes,
	// in bytes of UTF-8.
	MaxSecretDescriptionLen = 65535
)

var secretNameRE = regexp.MustCompile(SecretNameRule)

// SecretNameError is the error for a secret name that Runpod would refuse,
// returned before any request. It matches ErrInvalid.
type SecretNameError struct {
	Name   string
	Reason string
}

func (e *SecretNameError) Error() string {
	return fmt.Sprintf("runpod: secret name %q: %s (Runpod's rule: 1 to %d characters matching %s, not starting with RUNPOD in any case)",
		oneLine(e.Name, 200), e.Reason, MaxSecretNameLen, SecretNameRule)
}

// Is makes a *SecretNameError match ErrInvalid.
func (e *SecretNameError) Is(target error) bool { return target == ErrInvalid }

// CheckSecretName returns a *SecretNameError when Runpod would refuse
// name, nil when it is a valid secret name.
func CheckSecretName(name string) error {
	bad := func(reason string) error { return &SecretNameError{Name: name, Reason: reason} }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > MaxSecretNameLen:
		return bad(fmt.Sprintf("%d characters, more than %d", len(name), MaxSecretNameLen))
	case !secretNameRE.MatchString(name):
		return bad("must start with a letter or _ and hold only letters, digits and _ . - /")
	case len(name) >= 6 && strings.EqualFold(name[:6], "RUNPOD"):
		return bad("starts with the reserved prefix RUNPOD")
	}
	return nil
}

// checkSecretValue refuses a value Runpod would refuse. Its errors never
// quote the value.
func checkSecretValue(op, value string) error {
	switch {
	case value == "":
		return invalidf("%s: empty value (a secret holds 1 byte to 16 MiB)", op)
	case len(value) > MaxSecretValueLen:
		return invalidf("%s: value of %d bytes is not under Runpod's 16 MiB", op, len(value))
	case !utf8.ValidString(value):
		// JSON would turn the stray bytes into U+FFFD: the stored secret
		// would not be the one given. Encode binary (base64) first.
		return invalidf("%s: value is not valid UTF-8; encode binary values (base64) first", op)
	}
	return nil
}

// checkSecretDescription refuses a description Runpod would refuse.
func checkSecretDescription(op, description string) error {
	switch {
	case len(description) > MaxSecretDescriptionLen:
		return invalidf("%s: description of %d bytes is more than Runpod's %d", op, len(description), MaxSecretDescriptionLen)
	case !utf8.ValidString(description):
		return invalidf("%s: description is not valid UTF-8", op)
	}
	return nil
}

type createSecretBody struct {
	Name        string `json:"name"`
	Value       string `json:"value"`
	Description string `json:"description,omitempty"`
}

type updateSecretBody struct {
	Value       string  `json:"value"`
	Description *string `json:"description,omitempty"`
}

// CreateSecret stores value as a Runpod account secret called name and
// returns it. The name must follow Runpod's rule (see CheckSecretName) and
// the value hold 1 byte to 16 MiB of UTF-8; either is refused before any
// request otherwise.
//
// A secret of that name that exists already (Runpod answers 409: a crashed
// earlier try of the same run made it) is given the new value and
// returned, so the call ends with one secret of that name holding value.
// Only a secret whose name is exactly name is ever rotated: when the
// taken name belongs to one spelt in another case (should Runpod compare
// names ignoring case), CreateSecret fails with an error matching
// ErrConflict and changes nothing.
//
// A create is not resent blindly: when an attempt's outcome is unknown
// (timeout, dropped connection, 502, 504) or refused (429, 503),
// CreateSecret waits and looks the name up first; only when there is none
// does it send the create again.
func (c *Client) CreateSecret(ctx context.Context, name, value string) (Secret, error) {
	return c.createSecret(ctx, "CreateSecret", name, value, "")
}

// CreateSecretWithDescription is CreateSecret with a description (at
// most 65,535 bytes of UTF-8, which Runpod shows and returns in lists),
// also set when a secret of that name exists already. An empty
// description is none.
func (c *Client) CreateSecretWithDescription(ctx context.Context, name, value, description string) (Secret, error) {
	return c.createSecret(ctx, "CreateSecretWithDescription", name, value, description)
}

func (c *Client) createSecret(ctx context.Context, op, name, value, description string) (Secret, error) {
	if err := CheckSecretName(name); err != nil {
		return Secret{}, err
	}
	if err := checkSecretValue(op, value); err != nil {
		return Secret{}, err
	}
	if err := checkSecretDescription(op, description); err != nil {
		return Secret{}, err
	}
	secrets := []string{value}
	r := &call{method: http.MethodPost, path: "/account/secrets", body: createSecretBody{name, value, description}, secrets: secrets}
	for attempt := 1; ; attempt++ {
		resp, err := c.once(ctx, r, attempt)
		if err == nil {
			var s Secret
			if err := decode(r, resp, &s); err != nil {
				return Secret{}, err
			}
			if s.ID == "" {
				return Secret{}, fmt.Errorf("runpod: POST %s: no secret id in the answer", r.where())
			}
			return s, nil
		}
		if ctx.Err() != nil {
			return Secret{}, ctx.Err()
		}
		if errors.Is(err, ErrConflict) {
			return c.rotateTaken(ctx, name, value, description)
		}
		if !c.retryable(err) {
			return Secret{}, c.finalError(r, err, attempt)
		}
		if err := c.pause(ctx, r, attempt, err); err != nil {
			return Secret{}, err
		}
		s, ferr := c.FindSecret(ctx, name)
		switch {
		case ferr == nil:
			c.log.LogAttrs(ctx, slog.LevelInfo, "runpod: secret create attempt failed but the name exists; setting its value",
				slog.String("name", name), slog.String("id", s.ID), slog.Int("attempt", attempt))
			return c.rotate(ctx, s, value, description)
		case ctx.Err() != nil:
			return Secret{}, ctx.Err()
		case !errors.Is(ferr, ErrNotFound):
			return Secret{}, fmt.Errorf("runpod: create secret %q: outcome unknown: %w; looking it up: %w", name, c.finalError(r, err, attempt), ferr)
		case attempt >= c.maxAttempts:
			return Secret{}, c.finalError(r, err, attempt)
		}
	}
}

// rotateTaken handles a create answered 409: the secret called exactly
// name gets value (and description, when there is one).
func (c *Client) rotateTaken(ctx context.Context, name, value, description string) (Secret, error) {
	s, err := c.FindSecret(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return Secret{}, &APIError{Method: http.MethodPost, Path: "/account/secrets", StatusCode: http.StatusConflict,
			Title: "Conflict", Attempts: 1,
			Detail: fmt.Sprintf("the name %q is taken, but by no secret of exactly that name (one differing in case?); left unchanged", name)}
	}
	if err != nil {
		return Secret{}, fmt.Errorf("runpod: create secret %q: the name is taken; looking it up: %w", name, err)
	}
	c.log.LogAttrs(ctx, slog.LevelInfo, "runpod: secret name taken; setting its value",
		slog.String("name", name), slog.String("id", s.ID))
	return c.rotate(ctx, s, value, description)
}

// rotate sets the value of the existing secret s, and its description
// when there is one.
func (c *Client) rotate(ctx context.Context, s Secret, value, description string) (Secret, error) {
	var desc *string
	if description != "" {
		desc = &description
	}
	out, err := c.updateSecret(ctx, "UpdateSecretValue", s.ID, updateSecretBody{value, desc})
	if err != nil {
		return Secret{}, fmt.Errorf("runpod: secret %q exists; setting its value: %w", s.Name, err)
	}
	return out, nil
}

// UpdateSecretValue replaces the value of the secret with the given ID
// (PATCH, which Runpod applies as a whole) and returns the secret.
func (c *Client) UpdateSecretValue(ctx context.Context, id, value string) (Secret, error) {
	return c.updateSecret(ctx, "UpdateSecretValue", id, updateSecretBody{Value: value})
}

func (c *Client) updateSecret(ctx context.Context, op, id string, body updateSecretBody) (Secret, error) {
	if err := checkID(op, "secret", id); err != nil {
		return Secret{}, err
	}
	if err := checkSecretValue(op, body.Value); err != nil {
		return Secret{}, err
	}
	r := &call{method: http.MethodPatch, path: "/account/secrets/{id}", id: id, body: body, secrets: []string{body.Value}}
	resp, err := c.do(ctx, r, true)
	if err != nil {
		return Secret{}, err
	}
	var s Secret
	if err := decode(r, resp, &s); err != nil {
		return Secret{}, err
	}
	return s, nil
}

// DeleteSecret deletes the secret with the given ID. A secret that is
// already gone (404) is a success: what the caller wants is true.
func (c *Client) DeleteSecret(ctx context.Context, id string) error {
	if err := checkID("DeleteSecret", "secret", id); err != nil {
		return err
	}
	r := &call{method: http.MethodDelete, path: "/account/secrets/{id}", id: id}
	_, err := c.do(ctx, r, true)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// ListSecrets returns the account's secrets (metadata only; values are
// write-only).
func (c *Client) ListSecrets(ctx context.Context) ([]Secret, error) {
	return c.listSecrets(ctx, nil)
}

func (c *Client) listSecrets(ctx context.Context, q url.Values) ([]Secret, error) {
	r := &call{method: http.MethodGet, path: "/account/secrets", query: q}
	resp, err := c.do(ctx, r, true)
	if err != nil {
		return nil, err
	}
	var out struct {
		Secrets *[]Secret `json:"secrets"`
	}
	if err := decode(r, resp, &out); err != nil {
		return nil, err
	}
	if out.Secrets == nil {
		return nil, fmt.Errorf("runpod: GET %s: no secrets list in the answer", r.where())
	}
	return *out.Secrets, nil
}

// FindSecret returns the secret called exactly name (Runpod's ?name=
// filter ignores case; a secret whose name differs in case is not
// returned, so a caller never deletes or rotates another's secret). None
// is an *APIError matching ErrNotFound.
func (c *Client) FindSecret(ctx context.Context, name string) (Secret, error) {
	if err := CheckSecretName(name); err != nil {
		return Secret{}, err
	}
	all, err := c.listSecrets(ctx, url.Values{"name": {name}})
	if err != nil {
		return Secret{}, err
	}
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	return Secret{}, &APIError{Method: http.MethodGet, Path: "/account/secrets", StatusCode: http.StatusNotFound,
		Title: "Not Found", Detail: fmt.Sprintf("no secret named %q", name), Attempts: 1}
}
