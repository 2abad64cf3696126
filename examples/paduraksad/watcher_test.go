package main

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWatcherPublishesOnlySettledFiles(t *testing.T) {
	logs := &syncBuffer{}
	var published []string
	w := watcher{applied: []byte("v1"), log: slog.New(slog.NewTextHandler(logs, nil)),
		publish: func(b []byte) { published = append(published, string(b)) }}

	w.poll([]byte("v1"), nil)
	w.poll([]byte("v2 half"), nil) // caught while written
	w.poll([]byte("v2 half and the rest"), nil)
	assert.Empty(t, published, "no read was confirmed by a second one")
	w.poll([]byte("v2 half and the rest"), nil)
	assert.Equal(t, []string{"v2 half and the rest"}, published)
	w.poll([]byte("v2 half and the rest"), nil)
	assert.Len(t, published, 1, "an applied document is not published again")

	// A change that is undone before it settles is never published.
	w.poll([]byte("v3"), nil)
	w.poll([]byte("v2 half and the rest"), nil)
	w.poll([]byte("v2 half and the rest"), nil)
	assert.Len(t, published, 1)

	// A missing file is logged once until that changes.
	gone := errors.New("open paduraksa.yaml: no such file or directory")
	for range 3 {
		w.poll(nil, gone)
	}
	w.poll(nil, errors.New("open paduraksa.yaml: permission denied"))
	assert.Equal(t, 2, strings.Count(logs.String(), "config unreadable"), logs.String())
	w.poll([]byte("v2 half and the rest"), nil)
	w.poll(nil, gone)
	assert.Equal(t, 3, strings.Count(logs.String(), "config unreadable"), "logged again once it was readable in between")

	// A signal publishes what it reads.
	w.signal([]byte("v4"), nil)
	assert.Equal(t, []string{"v2 half and the rest", "v4"}, published)
}
