package runpodtest

import (
	_ "embed"
	"net/http"
)

// document is Runpod's OpenAPI text the fake follows, which it serves at
// /v2/openapi.json as Runpod serves its own (launch doctor compares it
// with the copy it embeds; WithDrift changes it as it changes answers).
//
//go:embed testdata/openapi_v2.json
var document []byte

func serveDocument(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(document)
}
