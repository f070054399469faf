package gateway

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The OpenAPI (Swagger 2.0) document of the HTTP/JSON API, served at
// GET /openapi.json. `make proto` makes it in two steps: protoc-gen-openapiv2
// describes the HTTP rules and messages, then OpenAPIDocument (run by
// gateway/openapigen) adds what only the gateway knows: the error body and
// every reason of the error table with its status, the 202 of a queued
// hold, the admin token, and the routes served by hand (events, QR codes,
// health). The error table is the one source, so the document cannot
// drift from it (openapi_test.go checks that, and validates the document).

//go:embed openapi.json
var openAPIJSON []byte

// serveOpenAPI serves the document.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(openAPIJSON)
}

// OpenAPIDocument completes the document protoc-gen-openapiv2 generated.
// It is idempotent: completing its own output changes nothing.
func OpenAPIDocument(generated []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(generated))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("read the generated document: %w", err)
	}
	doc["info"] = map[string]any{
		"title":   "seatledger HTTP/JSON API",
		"version": "v1",
		"description": "The Booking, Catalog and Admin services of seatledger over HTTP/JSON (grpc-gateway). " +
			"JSON uses the proto field names; unknown fields are refused (400 naming the field). " +
			"64-bit integers are strings; times are RFC 3339. Every error answer is a googleRpcStatus " +
			"whose details hold a google.rpc.ErrorInfo: its reason (see googleRpcErrorInfo) picks the HTTP status.",
	}
	// Peer is internal (gRPC only, no HTTP rules).
	if tags, ok := doc["tags"].([]any); ok {
		doc["tags"] = slices.DeleteFunc(tags, func(t any) bool {
			m, _ := t.(map[string]any)
			return m["name"] == "Peer"
		})
	}
	defs, _ := doc["definitions"].(map[string]any)
	paths, _ := doc["paths"].(map[string]any)
	if defs == nil || paths == nil {
		return nil, fmt.Errorf("the generated document has no definitions or paths")
	}
	addErrorDefinitions(defs)
	doc["responses"] = errorResponses()
	doc["securityDefinitions"] = map[string]any{"adminToken": map[string]any{
		"type": "apiKey", "in": "header", "name": "Authorization",
		"description": "Admin calls need the cluster's admin token: `Authorization: Bearer TOKEN`.",
	}}
	for path, item := range handRoutes() {
		paths[path] = item
	}
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			if o, ok := op.(map[string]any); ok {
				completeOperation(o, defs)
			}
		}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// completeOperation gives an operation the error responses and, for
// admin calls, the admin token.
func completeOperation(op map[string]any, defs map[string]any) {
	responses, _ := op["responses"].(map[string]any)
	if responses == nil {
		responses = map[string]any{}
		op["responses"] = responses
	}
	if tags, _ := op["tags"].([]any); slices.Contains(tags, any("Node")) {
		return // the health routes answer their own bodies, not errors
	}
	for _, code := range errorStatuses() {
		responses[strconv.Itoa(code)] = map[string]any{"$ref": "#/responses/" + errorResponseName(code)}
	}
	responses["default"] = map[string]any{"description": "Any other error, in the same body.", "schema": ref("googleRpcStatus")}
	id, _ := op["operationId"].(string)
	if id == "Booking_Hold" {
		responses["202"] = map[string]any{
			"description": "QUEUED: with `wait` and too few free seats, the fan joined the show's waiting line. " +
				"The body is the entry, with its queue_token (poll GET /v1/shows/{show_id}/queue/{entry_id}?queue_token=).",
			"schema": ref("v1QueueEntry"),
		}
	}
	if firstSentOps[id] {
		addFirstSentParam(op)
	}
	if strings.HasPrefix(id, "Admin_") || id == "Booking_CreateShow" || strings.HasPrefix(id, "Catalog_Create") || id == "Catalog_ScheduleShow" {
		op["security"] = []any{map[string]any{"adminToken": []any{}}}
	}
}

// firstSentOps are the writes that take the first send time (Server.propose).
var firstSentOps = map[string]bool{"Booking_CreateShow": true, "Booking_Hold": true, "Booking_Confirm": true,
	"Booking_Release": true, "Booking_Extend": true, "Booking_Refund": true, "Booking_LeaveQueue": true,
	"WaitingRoom_JoinWaitingRoom": true, "WaitingRoom_SetWaitingRoom": true}

// addFirstSentParam describes the first send header, once.
func addFirstSentParam(op map[string]any) {
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		if m, _ := p.(map[string]any); m["name"] == FirstSentHeader {
			return
		}
	}
	op["parameters"] = append(params, map[string]any{
		"name": FirstSentHeader, "in": "header", "required": false, "type": "string", "pattern": "^[0-9]{1,16}$",
		"description": fmt.Sprintf("When the client first sent this request, in Unix milliseconds, the same on every retry of its request_id. "+
			"A retry the ledger has no record of that was first sent more than %v ago is refused with REQUEST_EXPIRED (422), "+
			"never executed: without this header such a late retry runs as a new request. A time more than %v ahead of the node's clock is a 400.",
			retryHorizon, time.Duration(fsm.FirstSentAheadMaxMs)*time.Millisecond),
	})
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/definitions/" + name} }

// errorStatuses are the HTTP statuses of errors in the table, sorted.
func errorStatuses() []int {
	var codes []int
	for _, r := range reasons {
		if r.http >= 400 && !slices.Contains(codes, r.http) {
			codes = append(codes, r.http)
		}
	}
	slices.Sort(codes)
	return codes
}

func errorResponseName(code int) string { return "Error" + strconv.Itoa(code) }

// errorResponses describes each error status with the reasons it carries.
func errorResponses() map[string]any {
	out := map[string]any{}
	for _, code := range errorStatuses() {
		var names []string
		for name, r := range reasons {
			if r.http == code {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		var b strings.Builder
		fmt.Fprintf(&b, "%s. ErrorInfo.reason is one of:", statusText(code))
		for _, n := range names {
			fmt.Fprintf(&b, "\n- `%s`: %s", n, reasons[n].doc)
		}
		resp := map[string]any{"description": b.String(), "schema": ref("googleRpcStatus")}
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			resp["headers"] = map[string]any{"Retry-After": map[string]any{"type": "integer",
				"description": "Whole seconds to wait before retrying; equals RetryInfo.retry_delay when the body has one."}}
		}
		if code == http.StatusMethodNotAllowed {
			resp["headers"] = map[string]any{"Allow": map[string]any{"type": "string", "description": "The methods the path has."}}
		}
		out[errorResponseName(code)] = resp
	}
	return out
}

func statusText(code int) string {
	if code == 499 {
		return "Client Closed Request"
	}
	return http.StatusText(code)
}

// addErrorDefinitions describes the error body and its details.
func addErrorDefinitions(defs map[string]any) {
	defs["googleRpcStatus"] = map[string]any{
		"type": "object",
		"description": "The body of every error answer. `details` holds a google.rpc.ErrorInfo (googleRpcErrorInfo) " +
			"and, by reason, a google.rpc.BadRequest, a google.rpc.RetryInfo and a seatledger.v1.ErrorDetail, " +
			"each with its `@type`. Empty fields are left out.",
		"properties": map[string]any{
			"code":    map[string]any{"type": "integer", "format": "int32", "description": "The gRPC code."},
			"message": map[string]any{"type": "string", "description": "What happened and what to do, in words."},
			"details": map[string]any{"type": "array", "items": ref("protobufAny")},
		},
	}
	info := schemaOf((&errdetails.ErrorInfo{}).ProtoReflect().Descriptor(), 0)
	names := make([]string, 0, len(reasons))
	for n := range reasons {
		names = append(names, n)
	}
	slices.Sort(names)
	props := info["properties"].(map[string]any)
	var b strings.Builder
	b.WriteString("What happened; it picks the HTTP status:")
	for _, n := range names {
		fmt.Fprintf(&b, "\n- `%s` (%d): %s", n, reasons[n].http, reasons[n].doc)
	}
	props["reason"] = map[string]any{"type": "string", "enum": toAny(names), "description": b.String()}
	props["domain"] = map[string]any{"type": "string", "enum": []any{errorDomain}}
	info["description"] = "google.rpc.ErrorInfo (`@type`: type.googleapis.com/google.rpc.ErrorInfo), in every error's details."
	defs["googleRpcErrorInfo"] = info
	for name, m := range map[string]proto.Message{
		"googleRpcBadRequest": &errdetails.BadRequest{},
		"googleRpcRetryInfo":  &errdetails.RetryInfo{},
		"v1ErrorDetail":       &ledgerpb.ErrorDetail{},
	} {
		s := schemaOf(m.ProtoReflect().Descriptor(), 0)
		s["description"] = fmt.Sprintf("%s (`@type`: type.googleapis.com/%s), in the details of the errors that have one.",
			m.ProtoReflect().Descriptor().FullName(), m.ProtoReflect().Descriptor().FullName())
		defs[name] = s
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// schemaOf is the JSON schema of a message as protojson writes it, inline.
func schemaOf(md protoreflect.MessageDescriptor, depth int) map[string]any {
	props := map[string]any{}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		s := fieldSchema(fd, depth)
		if fd.IsList() {
			s = map[string]any{"type": "array", "items": s}
		}
		props[string(fd.Name())] = s
	}
	return map[string]any{"type": "object", "properties": props}
}

func fieldSchema(fd protoreflect.FieldDescriptor, depth int) map[string]any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return map[string]any{"type": "boolean"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return map[string]any{"type": "integer", "format": "int32"}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return map[string]any{"type": "integer", "format": "int64"}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return map[string]any{"type": "string", "format": "int64"}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return map[string]any{"type": "string", "format": "uint64"}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return map[string]any{"type": "number"}
	case protoreflect.BytesKind:
		return map[string]any{"type": "string", "format": "byte"}
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		names := make([]any, vals.Len())
		for i := range vals.Len() {
			names[i] = string(vals.Get(i).Name())
		}
		return map[string]any{"type": "string", "enum": names}
	case protoreflect.MessageKind:
		switch fd.Message().FullName() {
		case "google.protobuf.Timestamp":
			return map[string]any{"type": "string", "format": "date-time"}
		case "google.protobuf.Duration":
			return map[string]any{"type": "string", "description": "seconds with an s suffix, as \"1s\""}
		}
		if depth < 4 {
			return schemaOf(fd.Message(), depth+1)
		}
		return map[string]any{"type": "object"}
	}
	return map[string]any{"type": "string"}
}

// handRoutes describes the routes http.go serves without grpc-gateway.
func handRoutes() map[string]any {
	param := func(name, in, desc string) map[string]any {
		p := map[string]any{"name": name, "in": in, "type": "string", "description": desc}
		if in == "path" {
			p["required"] = true
		}
		return p
	}
	get := func(id, summary string, produces string, resp200 map[string]any, params ...any) map[string]any {
		if params == nil {
			params = []any{}
		}
		return map[string]any{"get": map[string]any{"operationId": id, "summary": summary, "produces": []any{produces},
			"parameters": params, "responses": map[string]any{"200": resp200}, "tags": []any{"Node"}}}
	}
	health := map[string]any{"type": "object", "properties": map[string]any{
		"status": map[string]any{"type": "string", "enum": []any{"ready", "not ready"}}, "node": map[string]any{"type": "string"},
		"reasons": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"groups": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
			"id": map[string]any{"type": "integer"}, "leader": map[string]any{"type": "string"},
			"committed": map[string]any{"type": "integer"}, "applied": map[string]any{"type": "integer"}}}},
	}}
	events := get("Booking_WatchEvents", "A show's live seat map as Server-Sent Events: a snapshot, then every change with its revision (the event id).",
		"text/event-stream", map[string]any{"description": "An event stream: `snapshot`, `changes` and `reset` events, " +
			"each data line a seatledger.v1.WatchEvent in JSON.", "schema": map[string]any{"type": "string"}},
		param("show_id", "path", ""), param("from_revision", "query", "resume after this revision"),
		param("Last-Event-ID", "header", "resume after this revision (EventSource sends it)"))
	events["get"].(map[string]any)["tags"] = []any{"Booking"}
	readyz := get("Node_Readyz", "Readiness: 200 when every group this node hosts has a leader it knows and this replica is at most 1000 committed entries behind in applying, else 503 with the reasons. For load balancers and readiness probes.",
		"application/json", map[string]any{"description": "Ready.", "schema": health})
	readyz["get"].(map[string]any)["responses"].(map[string]any)["503"] = map[string]any{
		"description": "Not ready: `reasons` says why.", "schema": health}
	qr := get("Booking_TicketQR", "A ticket's code as a QR PNG.", "image/png",
		map[string]any{"description": "The PNG.", "schema": map[string]any{"type": "file"}},
		param("show_id", "path", ""), param("hold_id", "path", ""), param("seat_id", "path", ""), param("hold_token", "query", "the hold's token"))
	qr["get"].(map[string]any)["tags"] = []any{"Booking"}
	return map[string]any{
		"/v1/shows/{show_id}/events":                                      events,
		"/v1/shows/{show_id}/bookings/{hold_id}/tickets/{seat_id}/qr.png": qr,
		"/healthz": get("Node_Healthz", "Liveness: the process serves HTTP. For a liveness probe; never 503 for the cluster's state.",
			"application/json", map[string]any{"description": "The node and each group's leader as it knows them.", "schema": map[string]any{"type": "object"}}),
		"/readyz": readyz,
		"/openapi.json": get("Node_OpenAPI", "This document.", "application/json",
			map[string]any{"description": "The OpenAPI 2.0 document.", "schema": map[string]any{"type": "object"}}),
	}
}

// routeTable knows which methods each path of the document has, for the
// Allow header of a 405.
type routeTable []struct {
	pattern *regexp.Regexp
	methods []string
}

// pathParam matches a {name} in a path template.
var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// newRouteTable reads the paths of an OpenAPI document.
func newRouteTable(doc []byte) (routeTable, error) {
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("read the OpenAPI document: %w", err)
	}
	var t routeTable
	for tmpl, ops := range d.Paths {
		var expr strings.Builder
		expr.WriteString("^")
		last := 0
		for _, loc := range pathParam.FindAllStringIndex(tmpl, -1) {
			expr.WriteString(regexp.QuoteMeta(tmpl[last:loc[0]]) + "[^/]+")
			last = loc[1]
		}
		expr.WriteString(regexp.QuoteMeta(tmpl[last:]) + "$")
		var methods []string
		for m := range ops {
			if m != "parameters" {
				methods = append(methods, strings.ToUpper(m))
			}
		}
		t = append(t, struct {
			pattern *regexp.Regexp
			methods []string
		}{regexp.MustCompile(expr.String()), methods})
	}
	return t, nil
}

// allow lists the methods of every template path matches, sorted.
func (t routeTable) allow(path string) []string {
	var out []string
	for _, r := range t {
		if r.pattern.MatchString(path) {
			for _, m := range r.methods {
				if !slices.Contains(out, m) {
					out = append(out, m)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
