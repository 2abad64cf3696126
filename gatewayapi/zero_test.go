package gatewayapi_test

import (
	"testing"

	"github.com/paduraksa/paduraksa/gatewayapi"
)

// TestZeroValues: the zero Objects and Options translate to an empty
// document, and a zero Result names no origin and writes nothing (the
// root module's zero-value test does not reach this module's types).
func TestZeroValues(t *testing.T) {
	for _, objs := range []*gatewayapi.Objects{nil, {}} {
		res, err := gatewayapi.Translate(objs, gatewayapi.Options{})
		if err != nil || len(res.Document.Hosts) != 0 || len(res.Document.Upstreams) != 0 || res.HTTP.Port != 0 || res.HTTPS.Port != 0 {
			t.Errorf("Translate(%v): %+v, %v", objs, res, err)
		}
	}
	var r gatewayapi.Result
	if o := r.Origin("hosts[0]"); o != "" {
		t.Errorf("Origin %q", o)
	}
	p := []*gatewayapi.ValidationError{{Code: "c", Path: "hosts[0]", Msg: "m"}}
	if got := r.Explain(p); len(got) != 1 || got[0] != p[0] {
		t.Errorf("Explain %v", got)
	}
	if err := r.WriteSecrets(); err != nil {
		t.Error(err)
	}
	objs, err := gatewayapi.Decode(nil)
	if err != nil || objs == nil {
		t.Errorf("Decode(nil): %v %v", objs, err)
	}
}
