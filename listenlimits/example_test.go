package listenlimits_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/listenlimits"
)

func ExampleLimits_Apply() {
	srv := &http.Server{}
	if err := (listenlimits.Limits{}).Apply(srv); err != nil {
		panic(err)
	}
	fmt.Println(srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes, srv.HTTP2.MaxConcurrentStreams)
	// Output: 15s 2m0s 32768 100
}

func ExampleLimits_Validate() {
	err := listenlimits.Limits{MinRequestBodyGrace: 1}.Validate()
	fmt.Println(err)
	// Output: minRequestBodyGrace: 1ns must exceed 1s (listenlimits.minRequestBodyGrace.invalid)
}

func ExampleUpgrades() {
	up := listenlimits.NewUpgrades(1)
	fmt.Println(up.TryAcquire(), up.TryAcquire()) // the second upgrade answers 503
	up.Release()                                  // when the upgraded connection ends
	fmt.Println(up.Active(), up.Refused())
	// Output:
	// true false
	// 0 1
}

func ExampleListener() {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ln := listenlimits.NewListener(raw, 1, 0)
	defer ln.Close()
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	next := func() net.Conn {
		select {
		case c := <-accepted:
			return c
		case <-time.After(10 * time.Second):
			panic("nothing accepted")
		}
	}
	first, _ := net.Dial("tcp", raw.Addr().String())
	defer first.Close()
	held := next()

	// At the cap, the next connection is closed at once.
	second, _ := net.Dial("tcp", raw.Addr().String())
	_ = second.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = second.Read(make([]byte, 1))
	fmt.Println("second:", err == io.EOF, "shed:", ln.Shed())
	second.Close()

	held.Close()
	third, _ := net.Dial("tcp", raw.Addr().String())
	defer third.Close()
	next().Close()
	fmt.Println("third accepted, shed:", ln.Shed())
	// Output:
	// second: true shed: 1
	// third accepted, shed: 1
}

// Handler wraps every request's body and ResponseWriter; the writer is an
// http.Hijacker only where the one it wraps is.
func ExampleLimits_Handler() {
	limits := listenlimits.Limits{}
	h := limits.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, hijacker := w.(http.Hijacker)
		fmt.Fprintf(w, "%T %v", r.Body, hijacker)
	}))
	w := httptest.NewRecorder() // not an http.Hijacker
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("x")))
	fmt.Println(w.Body.String())
	// Output: *listenlimits.MinRateReader false
}
