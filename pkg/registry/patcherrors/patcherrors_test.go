package patcherrors

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	kvstoreapi "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
)

// failingObjInfo is a request whose UpdatedObject fails with err.
type failingObjInfo struct {
	rest.UpdatedObjectInfo
	err error
}

func (f failingObjInfo) UpdatedObject(context.Context, runtime.Object) (runtime.Object, error) {
	return nil, f.err
}

func TestAsBadRequest(t *testing.T) {
	patchCtx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{Verb: "patch"})
	updateCtx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{Verb: "update"})
	// What strategic merge patch returns for {"$patch": "explode"}.
	plain := fmt.Errorf("unknown patch type: explode in map: map[$patch:explode]")
	conflict := apierrors.NewConflict(kvstoreapi.Resource("keyvaluestores"), "demo", errors.New("stale"))
	for _, tc := range []struct {
		name       string
		ctx        context.Context
		err        error
		wantStatus int32 // 0: the error unchanged
	}{
		{"a patch's plain error", patchCtx, plain, 400},
		{"a wrapped plain error", patchCtx, fmt.Errorf("applying: %w", plain), 400},
		{"an API status", patchCtx, conflict, 0},
		{"a wrapped API status", patchCtx, fmt.Errorf("applying: %w", conflict), 0},
		{"a cancelled request", patchCtx, context.Canceled, 0},
		{"a request out of time", patchCtx, fmt.Errorf("admission: %w", context.DeadlineExceeded), 0},
		{"an update's plain error", updateCtx, plain, 0},
		{"no request info", context.Background(), plain, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AsBadRequest(tc.ctx, failingObjInfo{err: tc.err}).UpdatedObject(tc.ctx, nil)
			if tc.wantStatus == 0 {
				assert.Same(t, tc.err, err)
				return
			}
			require.True(t, apierrors.IsBadRequest(err), "got %v", err)
			assert.Equal(t, tc.err.Error(), err.(apierrors.APIStatus).Status().Message)
		})
	}
	_, err := AsBadRequest(patchCtx, failingObjInfo{}).UpdatedObject(patchCtx, nil)
	assert.NoError(t, err)
}
