package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Strict JSON request bodies. protojson ignoring unknown fields turned a
// typo into a silent default ({"ttl":10} held seats for 5 minutes), and
// encoding/json's "unexpected EOF" did not say where a body broke. Bodies
// are therefore read whole (MaxBytesHandler bounds them), checked for JSON
// syntax with the offset of the first error, walked against the request
// message for unknown fields (with their path), and only then decoded.

// jsonBodyDepthMax bounds how deep the unknown-field walk descends; the
// requests have at most four levels (show.rows[i].category).
const jsonBodyDepthMax = 32

// bodyError says what is wrong with a request body: the field's path
// ("show.rows[0].seat") or "body", and where it broke.
type bodyError struct {
	field    string
	msg      string
	tooLarge bool
}

func (e *bodyError) Error() string { return e.field + ": " + e.msg }

// bodyReader wraps a request body so that the decoder can leave its
// structured error where writeError finds it: grpc-gateway's generated code
// keeps only the error's text. The decoder and writeError see the same
// request, so no lock is needed.
type bodyReader struct {
	io.ReadCloser
	err *bodyError
}

// withBodyReader wraps the bodies of requests to h.
func withBodyReader(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &bodyReader{ReadCloser: r.Body}
		}
		h.ServeHTTP(w, r)
	})
}

// decodeError returns the body error recorded for r, if any.
func decodeError(r *http.Request) *bodyError {
	if r == nil {
		return nil
	}
	if br, ok := r.Body.(*bodyReader); ok {
		return br.err
	}
	return nil
}

// strictJSON is jsonMarshaler with strict decoding of request bodies.
type strictJSON struct{ *runtime.JSONPb }

// NewDecoder decodes one request body into a proto message strictly.
func (m strictJSON) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		msg, ok := v.(proto.Message)
		if !ok {
			return m.JSONPb.NewDecoder(r).Decode(v)
		}
		err := decodeStrict(r, msg, m.UnmarshalOptions)
		var be *bodyError
		if errors.As(err, &be) {
			if br, ok := r.(*bodyReader); ok {
				br.err = be
			}
		}
		return err
	})
}

// decodeStrict reads r whole and decodes it into msg; an empty body is
// io.EOF, which grpc-gateway takes as "no body".
func decodeStrict(r io.Reader, msg proto.Message, opts protojson.UnmarshalOptions) error {
	b, err := io.ReadAll(r)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return &bodyError{field: "body", msg: fmt.Sprintf("larger than %d bytes", tooLarge.Limit), tooLarge: true}
	}
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return io.EOF
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return syntaxError(b, err)
	}
	if dec.More() {
		return &bodyError{field: "body", msg: "malformed JSON " + position(b, int(dec.InputOffset())) + ": more than one JSON value"}
	}
	if path := unknownField(msg.ProtoReflect().Descriptor(), tree, "", 0); path != "" {
		return &bodyError{field: path, msg: "unknown field (see /openapi.json for the request's fields)"}
	}
	opts.DiscardUnknown = false
	if err := opts.Unmarshal(b, msg); err != nil {
		// protojson's message says which field and where ("(line 1:10):
		// invalid value for uint32 field count: \"x\"").
		return &bodyError{field: "body", msg: strings.TrimPrefix(err.Error(), "proto: ")}
	}
	return nil
}

// syntaxError says where malformed JSON broke: at the offending byte, or
// past the last one when the body ends early.
func syntaxError(b []byte, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included.
		return &bodyError{field: "body", msg: "malformed JSON " + position(b, int(se.Offset)-1) + ": " + se.Error()}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &bodyError{field: "body", msg: "malformed JSON " + position(b, len(b)) + ": the body ends inside a value"}
	}
	return &bodyError{field: "body", msg: "malformed JSON: " + err.Error()}
}

// position is "at line L, column C (offset N)" for the byte at offset off
// (0-based; len(b) is just past the end), with lines and columns 1-based.
func position(b []byte, off int) string {
	off = min(max(off, 0), len(b))
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(b[:off], '\n')
	return fmt.Sprintf("at line %d, column %d (offset %d)", line, col, off)
}

// unknownField returns the path of the first field in tree (walking object
// keys in sorted order, so the answer is the same every time) that md does
// not have, by proto or JSON name, or "". Well-known types are left to
// protojson, which knows their JSON forms.
func unknownField(md protoreflect.MessageDescriptor, tree any, path string, depth int) string {
	obj, ok := tree.(map[string]any)
	if !ok || depth > jsonBodyDepthMax || strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return ""
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fd := md.Fields().ByName(protoreflect.Name(k))
		if fd == nil {
			fd = md.Fields().ByJSONName(k)
		}
		p := k
		if path != "" {
			p = path + "." + k
		}
		if fd == nil {
			return p
		}
		if bad := unknownInValue(fd, obj[k], p, depth); bad != "" {
			return bad
		}
	}
	return ""
}

// unknownInValue descends into a field's value: a message, a list of them,
// or a map whose values are messages.
func unknownInValue(fd protoreflect.FieldDescriptor, v any, path string, depth int) string {
	switch {
	case fd.IsMap():
		vd := fd.MapValue()
		m, _ := v.(map[string]any)
		if vd.Message() == nil || m == nil {
			return ""
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if bad := unknownField(vd.Message(), m[k], path+"["+strconv.Quote(k)+"]", depth+1); bad != "" {
				return bad
			}
		}
	case fd.Message() == nil:
	case fd.IsList():
		list, _ := v.([]any)
		for i, e := range list {
			if bad := unknownField(fd.Message(), e, path+"["+strconv.Itoa(i)+"]", depth+1); bad != "" {
				return bad
			}
		}
	default:
		return unknownField(fd.Message(), v, path, depth+1)
	}
	return ""
}
