// Package patcherrors serves the errors of applying a client's patch as
// 400 Bad Request, for every resource of this server.
package patcherrors

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// AsBadRequest makes the errors of applying a client's patch
// 400 Bad Request. k8s.io/apiserver returns some of them as plain Go errors,
// which it serves as 500 Internal Server Error: an unknown strategic merge
// patch directive ("$patch": "explode"), a directive of the wrong type, a
// server-side apply value of the wrong type, a /scale status.selector that
// does not parse, and a patch that panics the strategic merge. They are
// the request's fault; a 500 would tell the client
// to retry and whoever watches the server's error rate that it is broken.
// Errors that are already API statuses, and a cancelled request, stay as
// they are. Other requests than patches are passed through untouched.
func AsBadRequest(ctx context.Context, objInfo rest.UpdatedObjectInfo) rest.UpdatedObjectInfo {
	if info, ok := genericapirequest.RequestInfoFrom(ctx); !ok || info.Verb != "patch" {
		return objInfo
	}
	return badRequestPatch{objInfo}
}

type badRequestPatch struct {
	rest.UpdatedObjectInfo
}

func (p badRequestPatch) UpdatedObject(ctx context.Context, oldObj runtime.Object) (obj runtime.Object, err error) {
	// k8s.io/apimachinery's strategic merge panics on some patches (an
	// element order for a list of objects without a merge key compares
	// maps with ==): the request's fault too, served as 500, or as 503
	// through the aggregator. The panic is logged, with its stack.
	defer func() {
		if r := recover(); r != nil {
			utilruntime.HandleErrorWithContext(ctx, fmt.Errorf("%v\n%s", r, debug.Stack()), "Applying a patch panicked; refused as 400")
			obj, err = nil, apierrors.NewBadRequest(fmt.Sprintf("the patch cannot be applied: %v", r))
		}
	}()
	obj, err = p.UpdatedObjectInfo.UpdatedObject(ctx, oldObj)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return obj, err
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return obj, err
	}
	return nil, apierrors.NewBadRequest(err.Error())
}
