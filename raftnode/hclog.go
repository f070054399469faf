package raftnode

import (
	"bytes"
	"context"
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
// arguments become slog attributes. Lines less severe than level are
// dropped before any formatting: raft logs every election at WARN and much
// more at INFO and DEBUG.
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
	r.log.Log(context.Background(), l, msg, args...)
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
	c.log = r.log.With(args...)
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
