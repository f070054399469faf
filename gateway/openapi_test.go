// This file proves the OpenAPI document: it is valid Swagger 2.0 by
// go-openapi/validate (the JSON schema of the spec plus its semantic rules:
// references resolve, path parameters are declared, operation ids are
// unique), it is what OpenAPIDocument makes of itself (so it is current with
// the error table), it has every HTTP rule of booking.yaml and every error
// reason, and the Allow header reads from it.
package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-openapi/loads"
	"github.com/go-openapi/strfmt"
	"github.com/go-openapi/validate"
	"go.yaml.in/yaml/v3"
)

func TestOpenAPIValid(t *testing.T) {
	doc, err := loads.Analyzed(json.RawMessage(openAPIJSON), "2.0")
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	if err := validate.Spec(doc, strfmt.Default); err != nil {
		t.Fatalf("openapi.json is not valid Swagger 2.0: %v", err)
	}
}

// TestOpenAPIValidatorBites makes sure the validator is not a no-op: a
// dangling reference and an undeclared path parameter are refused.
func TestOpenAPIValidatorBites(t *testing.T) {
	bad := []byte(`{"swagger":"2.0","info":{"title":"t","version":"1"},"paths":{"/v1/shows/{show_id}":{"get":{
		"responses":{"200":{"description":"ok","schema":{"$ref":"#/definitions/nope"}}}}}}}`)
	doc, err := loads.Analyzed(json.RawMessage(bad), "2.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Spec(doc, strfmt.Default); err == nil {
		t.Fatal("validate.Spec accepted a document with a dangling $ref and an undeclared path parameter")
	}
}

func TestOpenAPICurrent(t *testing.T) {
	got, err := OpenAPIDocument(openAPIJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, openAPIJSON) {
		t.Fatal("gateway/openapi.json is not what OpenAPIDocument makes of it (the error table or openapi.go changed): run make proto")
	}
}

func TestOpenAPIHasEveryRule(t *testing.T) {
	raw, err := os.ReadFile("../proto/ledgerpb/booking.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		HTTP struct {
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"http"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openAPIJSON, &doc); err != nil {
		t.Fatal(err)
	}
	var rules []map[string]any
	for _, r := range cfg.HTTP.Rules {
		rules = append(rules, r)
		bindings, _ := r["additional_bindings"].([]any)
		for _, b := range bindings {
			rules = append(rules, b.(map[string]any))
		}
	}
	for _, r := range rules {
		for _, m := range []string{"get", "post", "delete", "put", "patch"} {
			if p, ok := r[m].(string); ok && doc.Paths[p][m] == nil {
				t.Errorf("booking.yaml has %s %s; openapi.json does not (run make proto)", strings.ToUpper(m), p)
			}
		}
	}
	if len(rules) < 30 {
		t.Errorf("read %d HTTP rules from booking.yaml, want all of them", len(rules))
	}
}

func TestOpenAPIHasEveryReason(t *testing.T) {
	var doc struct {
		Definitions map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"definitions"`
		Responses map[string]struct {
			Description string `json:"description"`
		} `json:"responses"`
	}
	if err := json.Unmarshal(openAPIJSON, &doc); err != nil {
		t.Fatal(err)
	}
	enum := doc.Definitions["googleRpcErrorInfo"].Properties["reason"].Enum
	for name, r := range reasons {
		if !slices.Contains(enum, name) {
			t.Errorf("reason %s is not in googleRpcErrorInfo.reason", name)
		}
		if r.http >= 400 && !strings.Contains(doc.Responses[errorResponseName(r.http)].Description, "`"+name+"`") {
			t.Errorf("reason %s is not described in response %s", name, errorResponseName(r.http))
		}
		if r.doc == "" {
			t.Errorf("reason %s has no doc", name)
		}
	}
	for _, d := range []string{"googleRpcStatus", "googleRpcBadRequest", "googleRpcRetryInfo", "v1ErrorDetail", "v1QueueEntry"} {
		if _, ok := doc.Definitions[d]; !ok {
			t.Errorf("definition %s is missing", d)
		}
	}
}

func TestRouteTableAllow(t *testing.T) {
	routes, err := newRouteTable(openAPIJSON)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{"/v1/shows/demo/holds", "POST"},
		{"/v1/shows/demo/holds/h1-2-3", "DELETE, GET"},
		{"/v1/shows/demo/holds/h1-2-3:confirm", "DELETE, GET, POST"}, // also a hold id "h1-2-3:confirm"
		{"/v1/shows", "POST"},
		{"/v1/shows/demo/seats", "GET"},
		{"/v1/nothing", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(routes.allow(tt.path), ", "); got != tt.want {
			t.Errorf("allow(%s) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestServeOpenAPI(t *testing.T) {
	rec := httptest.NewRecorder()
	serveOpenAPI(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" || !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("GET /openapi.json = %d %s, want 200 and the JSON document", rec.Code, rec.Header().Get("Content-Type"))
	}
}
