package scenario

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A replica follows only when its gauge says 0: one whose /metrics does not
// answer has not been seen to stop leading (it read as stopped, and the
// leader-pause figure could pass measuring nothing).
func TestFollowsNeedsTheGauge(t *testing.T) {
	var gauge atomic.Value
	gauge.Store("1")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# HELP x\nkvstore_controller_leader %s\n", gauge.Load())
	}))
	e := &Env{HTTP: srv.Client()}
	r := Replica{Name: "r", Port: srv.Listener.Addr().(*net.TCPAddr).Port}
	if e.Follows(r) || !e.Leading(r) {
		t.Fatal("gauge 1: leads")
	}
	gauge.Store("0")
	if !e.Follows(r) || e.Leading(r) {
		t.Fatal("gauge 0: follows")
	}
	srv.Close()
	if e.Follows(r) || e.Leading(r) {
		t.Fatal("no answer: neither")
	}
}
