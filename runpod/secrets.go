package runpod

// Secrets are the one thing here that REST v2 (as of the OpenAPI document
// this client follows) cannot do, so this file, and only this file, speaks
// Runpod's GraphQL API: secretCreate, secretDelete and myself.secrets. A
// secret's value travels only in the GraphQL variables, never in the query
// text, and is scrubbed from every error and log line; requests that carry
// it are never dumped by WithDebug.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
)

// Secret is a Runpod secret's identity; its value is write-only. A pod env
// value "{{ RUNPOD_SECRET_<Name> }}" is replaced by the value at boot.
type Secret struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

const (
	createSecretQuery = `mutation CreateSecret($name: String!, $value: String!) { secretCreate(input: {name: $name, value: $value}) { id name } }`
	deleteSecretQuery = `mutation DeleteSecret($id: ID!) { secretDelete(id: $id) }`
	listSecretsQuery  = `query Secrets { myself { secrets { id name } } }`
)

type graphQLRequest struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables,omitempty"`
}

// graphQL runs one query or mutation and decodes its data into out.
// Errors in the answer become an *APIError, even with HTTP 200.
func (c *Client) graphQL(ctx context.Context, query string, vars map[string]any, secrets []string, retry bool, out any) error {
	r := &call{method: http.MethodPost, graphQL: true, body: graphQLRequest{query, vars}, secrets: secrets}
	resp, err := c.do(ctx, r, retry)
	if err != nil {
		return err
	}
	var env struct {
		Data   json.RawMessage `json:"data"`
		Errors []graphQLError  `json:"errors"`
	}
	if err := decode(r, resp, &env); err != nil {
		return err
	}
	if len(env.Errors) > 0 {
		e := graphQLAPIError(resp.status, resp.header, env.Errors)
		e.Attempts = 1
		c.scrubAPIError(e, secrets)
		return e
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			return fmt.Errorf("runpod: graphql: decoding data: %w", err)
		}
	}
	return nil
}

// CreateSecret stores value as a Runpod secret called name and returns it.
//
// A mutation is not resent blindly: when an attempt's outcome is unknown
// (timeout, dropped connection, 429, 502, 503, 504), CreateSecret waits and
// looks the name up; a secret of that name is taken as the one it made
// (names should be unique, such as "overbrainer_host_key_<run>"); only
// when there is none does it try again.
func (c *Client) CreateSecret(ctx context.Context, name, value string) (Secret, error) {
	if strings.TrimSpace(name) == "" {
		return Secret{}, invalidf("CreateSecret: empty name")
	}
	if value == "" {
		return Secret{}, invalidf("CreateSecret: empty value")
	}
	vars := map[string]any{"name": name, "value": value}
	secrets := []string{value}
	for attempt := 1; ; attempt++ {
		var out struct {
			SecretCreate *Secret `json:"secretCreate"`
		}
		err := c.graphQL(ctx, createSecretQuery, vars, secrets, false, &out)
		if err == nil {
			if out.SecretCreate == nil || out.SecretCreate.ID == "" {
				return Secret{}, fmt.Errorf("runpod: graphql secretCreate %q: no secret in the answer", name)
			}
			return *out.SecretCreate, nil
		}
		if ctx.Err() != nil {
			return Secret{}, ctx.Err()
		}
		if !c.retryable(err) {
			return Secret{}, err
		}
		r := &call{method: http.MethodPost, graphQL: true, secrets: secrets}
		if err := c.pause(ctx, r, attempt, err); err != nil {
			return Secret{}, err
		}
		s, ferr := c.FindSecret(ctx, name)
		switch {
		case ferr == nil:
			c.log.LogAttrs(ctx, slog.LevelInfo, "runpod: secret create attempt failed but made the secret; adopting it",
				slog.String("name", name), slog.String("id", s.ID))
			return s, nil
		case ctx.Err() != nil:
			return Secret{}, ctx.Err()
		case !errors.Is(ferr, ErrNotFound):
			return Secret{}, fmt.Errorf("runpod: create secret %q: outcome unknown: %w; looking it up: %w", name, err, ferr)
		case attempt >= c.maxAttempts:
			return Secret{}, err
		}
	}
}

// DeleteSecret deletes the secret with the given ID.
func (c *Client) DeleteSecret(ctx context.Context, id string) error {
	if id == "" {
		return invalidf("DeleteSecret: empty secret ID")
	}
	return c.graphQL(ctx, deleteSecretQuery, map[string]any{"id": id}, nil, true, nil)
}

// ListSecrets returns the account's secrets (names and IDs; values are
// write-only).
func (c *Client) ListSecrets(ctx context.Context) ([]Secret, error) {
	var out struct {
		Myself *struct {
			Secrets []Secret `json:"secrets"`
		} `json:"myself"`
	}
	if err := c.graphQL(ctx, listSecretsQuery, nil, nil, true, &out); err != nil {
		return nil, err
	}
	if out.Myself == nil {
		return nil, fmt.Errorf("runpod: graphql myself: no user in the answer")
	}
	return out.Myself.Secrets, nil
}

// FindSecret returns the secret called name; none is an *APIError matching
// ErrNotFound.
func (c *Client) FindSecret(ctx context.Context, name string) (Secret, error) {
	all, err := c.ListSecrets(ctx)
	if err != nil {
		return Secret{}, err
	}
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	return Secret{}, &APIError{Method: http.MethodPost, Path: "graphql", StatusCode: http.StatusNotFound,
		Title: "Not Found", Detail: fmt.Sprintf("no secret named %q", name), Attempts: 1}
}
