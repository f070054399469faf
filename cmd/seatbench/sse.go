package main

import "bytes"

// sseParser reads a watcher's event stream as it arrives, in pieces cut
// anywhere: it takes each event's id and kind and skips its data line, as
// the watchers always did, but without a string per line, so the load
// tool's reading costs the cores it shares with the nodes little beside
// the read itself.
type sseParser struct {
	// cut holds the start of a line the last piece ended in, up to
	// sseLineKeep bytes; long reports that line is longer, so neither an
	// id nor an event line (a data line): it is skipped to its end.
	cut  []byte
	long bool
	id   uint64 // the last id line's (SSE: it stays until the next)
	kind string // the current event's kind; "" before its event line
}

// sseLineKeep bounds the line start a parser keeps across pieces: an id
// or event line is far shorter.
const sseLineKeep = 64

// The kinds an event line names, as the strings event compares (so that
// reading one allocates nothing); any other is sseKindOther.
const (
	sseKindSnapshot = "snapshot"
	sseKindReset    = "reset"
	sseKindChanges  = "changes"
	sseKindOther    = "other"
)

// feed parses the next piece of the stream, calling event with each event
// it completes: its kind and the last id.
func (p *sseParser) feed(b []byte, event func(kind string, id uint64)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.keep(b)
			return
		}
		line := b[:i]
		switch {
		case p.long:
			line = nil // the end of a long (data) line: nothing to read
			p.long = false
		case len(p.cut) > 0:
			if len(p.cut)+len(line) > sseLineKeep {
				line = nil
			} else {
				line = append(p.cut, line...)
			}
			p.cut = p.cut[:0]
		}
		p.line(line, event)
		b = b[i+1:]
	}
}

// keep holds the start of a line cut by the end of a piece.
func (p *sseParser) keep(b []byte) {
	if p.long {
		return
	}
	if len(p.cut)+len(b) > sseLineKeep {
		p.cut, p.long = p.cut[:0], true
		return
	}
	if p.cut == nil {
		p.cut = make([]byte, 0, sseLineKeep) // the line's rest fits too
	}
	p.cut = append(p.cut, b...)
}

// line reads one line without its newline (empty: the end of an event);
// nil is a long line's end.
func (p *sseParser) line(line []byte, event func(kind string, id uint64)) {
	switch {
	case line == nil:
	case hasPrefix(line, "id: "):
		p.id = parseRevision(line[4:])
	case hasPrefix(line, "event: "):
		switch string(line[7:]) { // compared, not allocated
		case sseKindSnapshot:
			p.kind = sseKindSnapshot
		case sseKindReset:
			p.kind = sseKindReset
		case sseKindChanges:
			p.kind = sseKindChanges
		default:
			p.kind = sseKindOther
		}
	case len(line) == 0 && p.kind != "":
		event(p.kind, p.id)
		p.kind = ""
	}
}

func hasPrefix(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && string(b[:len(prefix)]) == prefix
}

// parseRevision reads a decimal revision; anything else is 0, as
// strconv.ParseUint's error was.
func parseRevision(b []byte) uint64 {
	if len(b) == 0 || len(b) > 20 {
		return 0
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0
		}
		n = n*10 + d
	}
	return n
}
