package keyvaluestore

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
)

// v1beta1Paths renames the field paths validation reports (in internal,
// that is v1alpha1, names) to where a v1beta1 client wrote the value, so a
// 422 points at a field of the request whatever version it was sent in.
var v1beta1Paths = []struct{ internal, external string }{
	{"spec.storage.size", "spec.storage.capacity"},
	{"status.currentImage", "metadata.annotations[" + kvstore.CurrentImageAnnotation + "]"},
}

// inRequestVersion rewrites errs for the version the request came in on.
func inRequestVersion(ctx context.Context, errs field.ErrorList) field.ErrorList {
	if !inV1beta1(ctx) || len(errs) == 0 {
		return errs
	}
	for _, err := range errs {
		for _, p := range v1beta1Paths {
			if err.Field == p.internal || strings.HasPrefix(err.Field, p.internal+".") || strings.HasPrefix(err.Field, p.internal+"[") {
				err.Field = p.external + strings.TrimPrefix(err.Field, p.internal)
				break
			}
		}
	}
	return errs
}

// inV1beta1 says the request came in on v1beta1.
func inV1beta1(ctx context.Context) bool {
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	return ok && info.APIVersion == v1beta1.SchemeGroupVersion.Version
}
