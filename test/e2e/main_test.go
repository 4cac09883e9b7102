// Package e2e drives the real kubectl through kube-apiserver against the
// local stack of hack/local-up.sh, reusing a running one or bringing one up.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

var stack *framework.Stack

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	var err error
	stack, err = framework.EnsureStack(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer stack.Stop(ctx, os.Stderr)
	return m.Run()
}
