package api_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise/api"
)

// document is the OpenAPI document, decoded.
type document struct {
	Paths      map[string]map[string]operation `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

// operation is one operation of the document, in the parts the tests read.
type operation struct {
	OperationID string `json:"operationId"`
	RequestBody *struct {
		Content map[string]struct {
			Schema  json.RawMessage `json:"schema"`
			Example json.RawMessage `json:"example"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

// readDocument decodes api.Document.
func readDocument(t *testing.T) *document {
	t.Helper()
	var d document
	if err := json.Unmarshal(api.Document, &d); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return &d
}

// validate checks the JSON value v against schema, the subset of JSON
// Schema the document uses: type (one or several), properties, required,
// additionalProperties (false, true or a schema), items, enum, oneOf and
// $ref to a component. It returns the first mismatch, "" when none.
func (d *document) validate(schema json.RawMessage, v any, at string) string {
	var s struct {
		Ref                  string                     `json:"$ref"`
		Type                 json.RawMessage            `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
		Items                json.RawMessage            `json:"items"`
		Enum                 []any                      `json:"enum"`
		OneOf                []json.RawMessage          `json:"oneOf"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Sprintf("%s: the schema does not decode: %v", at, err)
	}
	if s.Ref != "" {
		name := strings.TrimPrefix(s.Ref, "#/components/schemas/")
		ref, found := d.Components.Schemas[name]
		if !found {
			return fmt.Sprintf("%s: $ref %s names no schema", at, s.Ref)
		}
		return d.validate(ref, v, at)
	}
	if s.OneOf != nil {
		matched := 0
		for _, alt := range s.OneOf {
			if d.validate(alt, v, at) == "" {
				matched++
			}
		}
		if matched != 1 {
			return fmt.Sprintf("%s: %d of oneOf's schemas match, want 1", at, matched)
		}
		return ""
	}
	if s.Type != nil {
		var types []string
		if json.Unmarshal(s.Type, &types) != nil {
			var one string
			json.Unmarshal(s.Type, &one)
			types = []string{one}
		}
		if got := typeOf(v); !slices.Contains(types, got) && !(got == "integer" && slices.Contains(types, "number")) {
			return fmt.Sprintf("%s: a %s, want %v", at, got, types)
		}
	}
	if s.Enum != nil && !slices.Contains(s.Enum, v) {
		return fmt.Sprintf("%s: %v is none of %v", at, v, s.Enum)
	}
	switch v := v.(type) {
	case map[string]any:
		for _, k := range s.Required {
			if _, found := v[k]; !found {
				return fmt.Sprintf("%s: no %q, which is required", at, k)
			}
		}
		for k, val := range v {
			if p, found := s.Properties[k]; found {
				if msg := d.validate(p, val, at+"."+k); msg != "" {
					return msg
				}
				continue
			}
			switch extra := string(s.AdditionalProperties); extra {
			case "false":
				return fmt.Sprintf("%s: %q is not a property of the schema", at, k)
			case "", "true":
			default:
				if msg := d.validate(s.AdditionalProperties, val, at+"."+k); msg != "" {
					return msg
				}
			}
		}
	case []any:
		if s.Items != nil {
			for i, item := range v {
				if msg := d.validate(s.Items, item, fmt.Sprintf("%s[%d]", at, i)); msg != "" {
					return msg
				}
			}
		}
	}
	return ""
}

// typeOf names v's JSON Schema type.
func typeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// The validator itself: it must tell a value that meets a schema from
// each way one can fail it, or the checks built on it prove nothing.
func TestTheValidatorFailsWhatItShould(t *testing.T) {
	d := readDocument(t)
	schema := json.RawMessage(`{"$ref": "#/components/schemas/Error"}`)
	for body, wantOK := range map[string]bool{
		`{"error": "x", "code": "agent_busy", "status": 409}`:                true,
		`{"error": "x", "code": "agent_busy", "status": 409, "busy": "y"}`:   true,
		`{"error": "x", "code": "agent_busy"}`:                               false, // required
		`{"error": "x", "code": "no_such_code", "status": 409}`:              false, // enum
		`{"error": "x", "code": "agent_busy", "status": "409"}`:              false, // type
		`{"error": "x", "code": "agent_busy", "status": 409.5}`:              false, // integer
		`{"error": "x", "code": "agent_busy", "status": 409, "extra": true}`: false, // additionalProperties
		`[]`: false,
	} {
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		if msg := d.validate(schema, v, "body"); (msg == "") != wantOK {
			t.Errorf("%s: %q, want ok=%v", body, msg, wantOK)
		}
	}
	message := json.RawMessage(`{"$ref": "#/components/schemas/Message"}`)
	for body, wantOK := range map[string]bool{
		`{"role": "user", "content": "hi"}`:                             true,
		`{"role": "user", "content": [{"type": "text", "text": "hi"}]}`: true,
		`{"role": "user", "content": 3}`:                                false, // oneOf
		`{"role": "user", "content": [{"text": "hi"}]}`:                 false, // items' required
	} {
		var v any
		json.Unmarshal([]byte(body), &v)
		if msg := d.validate(message, v, "body"); (msg == "") != wantOK {
			t.Errorf("%s: %q, want ok=%v", body, msg, wantOK)
		}
	}
}

// Every route the handler serves is in the document, every operation of
// the document is a route it serves (or, for reading, the read view's),
// each operation has an id and an error answer, and each example is
// valid against its schema.
func TestTheDocumentAndTheRoutesAgree(t *testing.T) {
	d := readDocument(t)
	documented := map[string]bool{}
	for path, ops := range d.Paths {
		for method, op := range ops {
			key := strings.ToUpper(method) + " " + path
			documented[key] = true
			if op.OperationID == "" {
				t.Errorf("%s has no operationId", key)
			}
			if _, found := op.Responses["default"]; !found && path != "/api/openapi.json" {
				t.Errorf("%s documents no error answer", key)
			}
			if op.RequestBody == nil {
				continue
			}
			body := op.RequestBody.Content["application/json"]
			if body.Example == nil {
				t.Errorf("%s has no example body", key)
				continue
			}
			var v any
			if err := json.Unmarshal(body.Example, &v); err != nil {
				t.Fatal(err)
			}
			if msg := d.validate(body.Schema, v, key+" example"); msg != "" {
				t.Error(msg)
			}
		}
	}
	served := map[string]bool{}
	for _, key := range readRoutes {
		served[key] = true
	}
	for _, r := range api.Routes() {
		key := r.Method + " " + r.Path
		served[key] = true
		if !documented[key] {
			t.Errorf("%s is served but not documented", key)
		}
	}
	for key := range documented {
		if !served[key] {
			t.Errorf("%s is documented but not served", key)
		}
	}
}

// readRoutes are the routes of the document that the read view serves;
// web's tests check its answers against the document's schemas.
var readRoutes = []string{"GET /api/sessions/{session}", "GET /api/events"}

// docs/api.md lists every route of the document, and every error code.
func TestTheDocsListEveryRouteAndCode(t *testing.T) {
	doc, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	d := readDocument(t)
	for path, ops := range d.Paths {
		for method := range ops {
			if route := "`" + strings.ToUpper(method) + " " + path + "`"; !strings.Contains(string(doc), route) {
				t.Errorf("docs/api.md lacks %s", route)
			}
		}
	}
	var codes struct {
		Enum []string `json:"enum"`
	}
	if err := json.Unmarshal(d.Components.Schemas["ErrorCode"], &codes); err != nil || len(codes.Enum) == 0 {
		t.Fatalf("ErrorCode: %v", err)
	}
	for _, c := range codes.Enum {
		if !strings.Contains(string(doc), "| `"+c+"` |") {
			t.Errorf("docs/api.md does not list the code %s", c)
		}
	}
}
