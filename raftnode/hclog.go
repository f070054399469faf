package raftnode

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"

	"github.com/hashicorp/go-hclog"
)

// RaftLogOff as Config.RaftLogLevel drops every line of hashicorp/raft's own.
const RaftLogOff = slog.Level(math.MaxInt32)

// raftLogger is an hclog.Logger writing into slog, so that hashicorp/raft's
// own lines come out in the node's format (JSON with --log-json) and carry
// the node and group attributes of the logger it wraps. Raft's key/value
// arguments become slog attributes, rendered as hclog would (attrs). Lines
// less severe than level are dropped before any formatting: raft logs every
// election at WARN and much more at INFO and DEBUG.
type raftLogger struct {
	log     *slog.Logger
	level   slog.Leveler
	name    string
	implied []any
}

var _ hclog.Logger = (*raftLogger)(nil)

func newRaftLogger(l *slog.Logger, level slog.Leveler) *raftLogger {
	return &raftLogger{log: l.With("component", "raft"), level: level, name: "raft"}
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default: // Info, NoLevel
		return slog.LevelInfo
	}
}

func (r *raftLogger) enabled(l slog.Level) bool { return l >= r.level.Level() }

// Log writes one line at level.
func (r *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off {
		return
	}
	r.emit(slogLevel(level), msg, args)
}

func (r *raftLogger) emit(l slog.Level, msg string, args []any) {
	if !r.enabled(l) {
		return
	}
	r.log.Log(context.Background(), l, msg, attrs(args)...)
}

// reservedKeys are attributes the wrapping logger sets; raft's own use of
// them (it logs its *Raft as "node") is renamed so lines never carry a key
// twice.
var reservedKeys = map[string]bool{"node": true, "group": true, "component": true}

// attrs renders hclog key/value arguments for slog: raft's values are
// formatted as hclog formats them (Stringers by String, hclog.Fmt by its
// format) instead of slog's reflection, which prints a *Raft as {}.
func attrs(args []any) []any {
	out := make([]any, 0, len(args))
	for i := 0; i+1 < len(args); i += 2 {
		k := args[i]
		if s, ok := k.(string); ok && reservedKeys[s] {
			k = "raft_" + s
		}
		out = append(out, k, attrValue(args[i+1]))
	}
	if len(args)%2 == 1 { // hclog allows a lone trailing value
		out = append(out, attrValue(args[len(args)-1]))
	}
	return out
}

func attrValue(v any) any {
	switch x := v.(type) {
	case hclog.Format:
		if f, ok := firstString(x); ok {
			return fmt.Sprintf(f, x[1:]...)
		}
		return fmt.Sprint(x...)
	case hclog.Hex:
		return fmt.Sprintf("0x%x", int(x))
	case hclog.Octal:
		return fmt.Sprintf("0%o", int(x))
	case hclog.Binary:
		return fmt.Sprintf("0b%b", int(x))
	case hclog.Quote:
		return fmt.Sprintf("%q", string(x))
	case error:
		return x
	case fmt.Stringer:
		return x.String()
	}
	return v
}

func firstString(f hclog.Format) (string, bool) {
	if len(f) == 0 {
		return "", false
	}
	s, ok := f[0].(string)
	return s, ok
}

func (r *raftLogger) Trace(msg string, args ...any) { r.emit(slogLevel(hclog.Trace), msg, args) }
func (r *raftLogger) Debug(msg string, args ...any) { r.emit(slog.LevelDebug, msg, args) }
func (r *raftLogger) Info(msg string, args ...any)  { r.emit(slog.LevelInfo, msg, args) }
func (r *raftLogger) Warn(msg string, args ...any)  { r.emit(slog.LevelWarn, msg, args) }
func (r *raftLogger) Error(msg string, args ...any) { r.emit(slog.LevelError, msg, args) }

func (r *raftLogger) IsTrace() bool { return r.enabled(slogLevel(hclog.Trace)) }
func (r *raftLogger) IsDebug() bool { return r.enabled(slog.LevelDebug) }
func (r *raftLogger) IsInfo() bool  { return r.enabled(slog.LevelInfo) }
func (r *raftLogger) IsWarn() bool  { return r.enabled(slog.LevelWarn) }
func (r *raftLogger) IsError() bool { return r.enabled(slog.LevelError) }

// ImpliedArgs returns the arguments given to With.
func (r *raftLogger) ImpliedArgs() []any { return r.implied }

// With returns a logger that adds args to every line.
func (r *raftLogger) With(args ...any) hclog.Logger {
	c := *r
	c.log = r.log.With(attrs(args)...)
	c.implied = append(append([]any(nil), r.implied...), args...)
	return &c
}

// Name is the logger's name ("raft", or a sub-name raft gave it).
func (r *raftLogger) Name() string { return r.name }

// Named returns a logger for a part of raft; the name becomes the
// component attribute.
func (r *raftLogger) Named(name string) hclog.Logger { return r.ResetNamed(r.name + "." + name) }

// ResetNamed returns a logger with the given name as its component.
func (r *raftLogger) ResetNamed(name string) hclog.Logger {
	c := *r
	c.name = name
	c.log = r.log.With("component", name)
	return &c
}

// SetLevel is ignored: the node's config owns the level.
func (r *raftLogger) SetLevel(hclog.Level) {}

// GetLevel reports the threshold as hclog's level.
func (r *raftLogger) GetLevel() hclog.Level {
	switch l := r.level.Level(); {
	case l >= RaftLogOff:
		return hclog.Off
	case l > slog.LevelWarn:
		return hclog.Error
	case l > slog.LevelInfo:
		return hclog.Warn
	case l > slog.LevelDebug:
		return hclog.Info
	case l > slog.LevelDebug-4:
		return hclog.Debug
	default:
		return hclog.Trace
	}
}

// StandardLogger returns a standard library logger writing INFO lines.
func (r *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(r.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer whose lines become INFO lines.
func (r *raftLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return lineWriter{r}
}

type lineWriter struct{ r *raftLogger }

func (w lineWriter) Write(p []byte) (int, error) {
	w.r.emit(slog.LevelInfo, string(bytes.TrimRight(p, "\n")), nil)
	return len(p), nil
}
