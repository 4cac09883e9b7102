package workload

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kvstore-io/kvstore-apiserver/test/faults/history"
)

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "kvstore.io", Resource: "keyvaluestores"}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name    string
		err     error
		outcome history.Outcome
		reason  string
	}{
		{"ok", nil, history.OK, ""},
		{"conflict on the store", apierrors.NewConflict(gr, "kv-1", fmt.Errorf("modified")), history.Failed, history.ReasonConflict},
		{"exists", apierrors.NewAlreadyExists(gr, "kv-1"), history.Failed, history.ReasonAlreadyExists},
		{"not found", apierrors.NewNotFound(gr, "kv-1"), history.Failed, history.ReasonNotFound},
		// A 404 of the whole API (the aggregator before discovery is back)
		// proves nothing about the store.
		{"404 without the store's name", apierrors.NewNotFound(schema.GroupResource{}, ""), history.Unknown, ""},
		{"another store's conflict", apierrors.NewConflict(gr, "kv-2", fmt.Errorf("modified")), history.Unknown, ""},
		{"503", apierrors.NewServiceUnavailable("backend down"), history.Unknown, ""},
		{"timeout", context.DeadlineExceeded, history.Unknown, ""},
		{"refused connection", fmt.Errorf("Post: %w", refused), history.Failed, "ConnectionRefused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outcome, reason := classify(tc.err, "kv-1")
			if outcome != tc.outcome || (tc.reason != "" && reason != tc.reason) {
				t.Errorf("classify = %s %q, want %s %q", outcome, reason, tc.outcome, tc.reason)
			}
		})
	}
}
