package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// A catalog file, as `seatctl show import` reads it: one YAML or JSON
// document with up to four lists, whose objects are the Catalog API's
// messages with their field names (catalog.proto):
//
//	cities:  [City]                 city_id, name, time_zone
//	cinemas: [Cinema]               cinema_id, city_id, name, address, screens
//	movies:  [Movie]                movie_id, title, duration_minutes
//	shows:   [ScheduleShowRequest]  cinema_id, screen_id, movie_id, starts_at, show_id
//
// Parsing has two passes over the YAML tree. The first checks every
// object's shape against its message's descriptor (unknown fields, a list
// where an object belongs, a number where a string does), so that each
// problem is reported with its path and line. Objects with a sound shape are
// then decoded by protojson, so a file means exactly what the same JSON
// means to the HTTP API: one set of names and rules, not a second mapping.

// Object kinds, in the order they are applied: a cinema needs its city,
// and a show its cinema and movie.
const (
	kindCity   = "city"
	kindMovie  = "movie"
	kindCinema = "cinema"
	kindShow   = "show"
)

// applyOrder lists the kinds in the order an import creates them.
var applyOrder = []string{kindCity, kindMovie, kindCinema, kindShow}

// catalogFileBytesMax bounds a catalog file: a season of a large chain
// (100 cinemas with 10 screens, 10,000 shows) is a few megabytes.
const catalogFileBytesMax = 16 << 20

// importObjectsMax bounds the objects of one file, so that a mistaken file
// (a generator gone wrong) is refused before it floods the catalog.
const importObjectsMax = 20000

// problemsShownMax bounds the problems printed for one file: past it the
// first ones say enough.
const problemsShownMax = 100

// section is one top-level list of a catalog file.
type section struct {
	key, kind string
	newMsg    func() proto.Message
}

var sections = []section{
	{"cities", kindCity, func() proto.Message { return &ledgerpb.City{} }},
	{"cinemas", kindCinema, func() proto.Message { return &ledgerpb.Cinema{} }},
	{"movies", kindMovie, func() proto.Message { return &ledgerpb.Movie{} }},
	{"shows", kindShow, func() proto.Message { return &ledgerpb.ScheduleShowRequest{} }},
}

// object is one object of a catalog file.
type object struct {
	kind string
	// id is the object's id; a show's is its show_id, or the one
	// ScheduleShow derives without it (gateway.ScheduledShowID).
	id   string
	path string // "cinemas[1]"
	node *yaml.Node
	// msg is what the file says: *ledgerpb.City, *ledgerpb.Movie,
	// *ledgerpb.Cinema or *ledgerpb.ScheduleShowRequest.
	msg proto.Message
}

// line is the line of the object, or of the field at rel below it
// ("screens[0].rows"), as far as the file has that field.
func (o *object) line(rel string) int {
	return lineAt(o.node, rel)
}

// catalogFile is a parsed catalog file.
type catalogFile struct {
	objects []*object // in file order within each section
}

// ofKind returns the objects of one kind, in file order.
func (f *catalogFile) ofKind(kind string) []*object {
	var out []*object
	for _, o := range f.objects {
		if o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// find returns the object of a kind with an id, or nil.
func (f *catalogFile) find(kind, id string) *object {
	for _, o := range f.objects {
		if o.kind == kind && o.id == id {
			return o
		}
	}
	return nil
}

// problem is one thing wrong with a catalog file, at a path into it.
type problem struct {
	Path    string `json:"path"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

func (p problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", p.Line, p.Path, p.Message)
	}
	return p.Path + ": " + p.Message
}

// problems collects a file's problems.
type problems []problem

func (ps *problems) add(path string, line int, format string, args ...any) {
	*ps = append(*ps, problem{Path: path, Line: line, Message: fmt.Sprintf(format, args...)})
}

// parseCatalog parses a catalog file and checks every object's shape. It
// returns the objects whose shape is sound and every problem found.
func parseCatalog(b []byte) (*catalogFile, problems) {
	var ps problems
	var doc, next yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		ps.add("(file)", 0, "not YAML or JSON: %v", err)
		return nil, ps
	}
	if err := dec.Decode(&next); err != io.EOF {
		// A second document would be ignored, and with it part of a
		// program the operator meant to load.
		ps.add("(file)", next.Line, "has more than one YAML document: put every list in one")
		return nil, ps
	}
	if len(doc.Content) == 0 {
		ps.add("(file)", 0, "is empty: want cities, cinemas, movies and shows")
		return nil, ps
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		ps.add("(file)", root.Line, "must be an object with the lists cities, cinemas, movies and shows")
		return nil, ps
	}
	f := &catalogFile{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], resolve(root.Content[i+1])
		s := slices.IndexFunc(sections, func(s section) bool { return s.key == key.Value })
		if s < 0 {
			ps.add(key.Value, key.Line, "unknown list (want cities, cinemas, movies or shows)")
			continue
		}
		f.parseSection(sections[s], val, &ps)
	}
	if len(f.objects) == 0 && len(ps) == 0 {
		ps.add("(file)", 0, "has no objects: want cities, cinemas, movies or shows")
	}
	if len(f.objects) > importObjectsMax {
		ps.add("(file)", 0, "has %d objects, at most %d are imported at once: split it", len(f.objects), importObjectsMax)
	}
	return f, ps
}

// parseSection parses one top-level list.
func (f *catalogFile) parseSection(s section, list *yaml.Node, ps *problems) {
	if list.Tag == "!!null" {
		return
	}
	if list.Kind != yaml.SequenceNode {
		ps.add(s.key, list.Line, "must be a list")
		return
	}
	for i, n := range list.Content {
		n = resolve(n)
		path := fmt.Sprintf("%s[%d]", s.key, i)
		msg := s.newMsg()
		before := len(*ps)
		checkShape(path, n, msg.ProtoReflect().Descriptor(), ps)
		if len(*ps) > before {
			continue
		}
		j, err := json.Marshal(nodeValue(n))
		if err == nil {
			err = protojson.Unmarshal(j, msg)
		}
		if err != nil {
			ps.add(path, n.Line, "%v", err)
			continue
		}
		f.objects = append(f.objects, &object{kind: s.kind, path: path, node: n, msg: msg})
	}
}

// resolve follows a YAML alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// timestampName is the one message field type that is a scalar in JSON.
const timestampName protoreflect.FullName = "google.protobuf.Timestamp"

// checkShape reports every field of an object that its message does not
// have and every value of the wrong shape, each with its path.
func checkShape(path string, n *yaml.Node, md protoreflect.MessageDescriptor, ps *problems) {
	if n.Kind != yaml.MappingNode {
		ps.add(path, n.Line, "must be an object (%s)", fieldNames(md))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], resolve(n.Content[i+1])
		fd := md.Fields().ByName(protoreflect.Name(key.Value))
		if fd == nil {
			fd = md.Fields().ByJSONName(key.Value)
		}
		p := path + "." + key.Value
		switch {
		case fd == nil:
			ps.add(p, key.Line, "unknown field (%s has %s)", md.Name(), fieldNames(md))
		case val.Tag == "!!null":
			// null means unset, as in protojson.
		case fd.IsList():
			if val.Kind != yaml.SequenceNode {
				ps.add(p, val.Line, "must be a list")
				continue
			}
			for j, e := range val.Content {
				checkValue(fmt.Sprintf("%s[%d]", p, j), resolve(e), fd, ps)
			}
		default:
			checkValue(p, val, fd, ps)
		}
	}
}

// fieldNames lists a message's fields for a hint: "city_id, name, time_zone".
func fieldNames(md protoreflect.MessageDescriptor) string {
	var names []string
	for i := range md.Fields().Len() {
		names = append(names, string(md.Fields().Get(i).Name()))
	}
	return strings.Join(names, ", ")
}

// checkValue checks one value (not a list) against its field's kind.
func checkValue(path string, n *yaml.Node, fd protoreflect.FieldDescriptor, ps *problems) {
	if fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() == timestampName {
		if _, err := time.Parse(time.RFC3339Nano, n.Value); n.Kind != yaml.ScalarNode || err != nil {
			ps.add(path, n.Line, "must be an RFC 3339 time such as 2027-01-15T20:00:00+01:00")
		}
		return
	}
	if fd.Kind() == protoreflect.MessageKind {
		checkShape(path, n, fd.Message(), ps)
		return
	}
	if n.Kind != yaml.ScalarNode {
		ps.add(path, n.Line, "must be a %s, not a list or an object", kindWord(fd.Kind()))
		return
	}
	var ok bool
	switch fd.Kind() {
	case protoreflect.StringKind:
		ok = n.Tag == "!!str"
	case protoreflect.BoolKind:
		ok = n.Tag == "!!bool"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		ok = intFits(n, 32, true)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		ok = intFits(n, 64, true)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		ok = intFits(n, 32, false)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		ok = intFits(n, 64, false)
	default:
		ok = true // no such field in the catalog's messages: protojson judges
	}
	if !ok {
		hint := ""
		if fd.Kind() == protoreflect.StringKind {
			hint = fmt.Sprintf(" (quote it: %q)", n.Value)
		}
		ps.add(path, n.Line, "must be a %s, not %q%s", kindWord(fd.Kind()), n.Value, hint)
	}
}

// intFits reports whether a scalar is an integer that fits the field.
func intFits(n *yaml.Node, bits int, signed bool) bool {
	if n.Tag != "!!int" {
		return false
	}
	if signed {
		_, err := strconv.ParseInt(n.Value, 0, bits)
		return err == nil
	}
	_, err := strconv.ParseUint(n.Value, 0, bits)
	return err == nil
}

// kindWord names a field kind for a problem.
func kindWord(k protoreflect.Kind) string {
	switch k {
	case protoreflect.StringKind:
		return "string"
	case protoreflect.BoolKind:
		return "boolean (true or false)"
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return "whole number in 0..4294967295"
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return "whole number, not negative"
	default:
		return "whole number"
	}
}

// nodeValue turns a YAML node whose shape checkShape accepted into the
// value encoding/json writes as the same JSON.
func nodeValue(n *yaml.Node) any {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = nodeValue(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			l = append(l, nodeValue(e))
		}
		return l
	}
	switch n.Tag {
	case "!!null":
		return nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err == nil {
			return v
		}
	}
	return n.Value // strings and timestamps, as written
}

// lineAt returns the line of the field or element at rel below n
// ("screens[0].rows": the line of the key rows), or of the deepest one on
// the way that the file has.
func lineAt(n *yaml.Node, rel string) int {
	n = resolve(n)
	line := n.Line
	for _, seg := range pathSegments(rel) {
		var next *yaml.Node
		switch {
		case seg.key != "" && n.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg.key {
					next, line = n.Content[i+1], n.Content[i].Line
				}
			}
		case seg.key == "" && n.Kind == yaml.SequenceNode && seg.index < len(n.Content):
			next = n.Content[seg.index]
			line = resolve(next).Line
		}
		if next == nil {
			return line
		}
		n = resolve(next)
	}
	return line
}

// pathSegment is a field name or a list index of a path.
type pathSegment struct {
	key   string
	index int
}

// pathSegments splits "screens[0].rows" into screens, [0], rows.
func pathSegments(p string) []pathSegment {
	var out []pathSegment
	for _, part := range strings.Split(p, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			out = append(out, pathSegment{key: key})
		}
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if err != nil {
				break
			}
			out = append(out, pathSegment{index: i})
			_, rest, _ = strings.Cut(after, "[")
		}
	}
	return out
}
