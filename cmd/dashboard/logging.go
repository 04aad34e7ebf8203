package main

import (
	"fmt"
	"io"
	"log/slog"
)

// logFlags are the logging flags every long-running command shares.
type logFlags struct {
	level  string
	format string
}

func (l *logFlags) register(f *envFlags) {
	f.String(&l.level, "log-level", "info", "minimum `level` logged: debug, info, warn or error")
	f.String(&l.format, "log-format", "text", "log `format`: text (logfmt) or json")
}

// logger returns the process's one logger, writing to w.
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, &usageError{err: fmt.Errorf("--log-level %q: want debug, info, warn or error", l.level)}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, &usageError{err: fmt.Errorf("--log-format %q: want text or json", l.format)}
}
