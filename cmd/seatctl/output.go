package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// table writes aligned columns with text/tabwriter.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

// row writes one line of cells.
func (t *table) row(cells ...string) {
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// flush aligns and writes the rows so far.
func (t *table) flush() { t.tw.Flush() }

// dash shows an empty cell as "-" so columns stay readable.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeJSON prints v as indented JSON (-o json of seatctl's own views).
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeProto prints an API message as the HTTP/JSON API would (proto field
// names), for -o json of the Booking calls.
func writeProto(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{UseProtoNames: true, Multiline: true, Indent: "  "}.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
