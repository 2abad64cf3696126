package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/paduraksa/paduraksa/telemetry"
)

// openAccessLog starts the access log the flags ask for: "stderr", "off"
// or a file, appended to, in JSON or logfmt-like text; sample > 1 keeps
// one 2xx record in sample. It returns nil for "off"; closing flushes the
// log and closes its file.
func openAccessLog(dest, format string, sample int, stderr io.Writer) (*telemetry.AccessLog, func(), error) {
	var w io.Writer
	var f *os.File
	switch dest {
	case "off":
		return nil, func() {}, nil
	case "stderr", "":
		w = stderr
	default:
		var err error
		if f, err = os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
			return nil, nil, fmt.Errorf("-access-log: %w", err)
		}
		w = f
	}
	var h slog.Handler
	switch format {
	case "json":
		h = slog.NewJSONHandler(w, nil)
	case "text":
		h = slog.NewTextHandler(w, nil)
	default:
		if f != nil {
			f.Close()
		}
		return nil, nil, fmt.Errorf("-access-log-format: %q is not json or text", format)
	}
	al := telemetry.NewAccessLog(telemetry.AccessLogConfig{Logger: slog.New(h), Sample2xx: sample})
	return al, func() {
		al.Close()
		if f != nil {
			f.Close()
		}
	}, nil
}
