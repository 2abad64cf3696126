package edge

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The count of handlers in flight costs a request no allocation.
func TestTrackAllocs(t *testing.T) {
	s := &Server{idle: make(chan struct{}, 1)}
	h := s.track(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w, r := httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)
	if n := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Fatalf("%v allocations a request", n)
	}
	s.draining.Store(true)
	if n := testing.AllocsPerRun(1000, func() { h.ServeHTTP(w, r) }); n != 0 {
		t.Fatalf("%v allocations a request while draining", n)
	}
}

func BenchmarkTrack(b *testing.B) {
	s := &Server{idle: make(chan struct{}, 1)}
	h := s.track(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w, r := httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.ServeHTTP(w, r)
		}
	})
}
