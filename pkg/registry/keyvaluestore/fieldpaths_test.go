package keyvaluestore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/resource"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// A 422 names the field as the client's version spells it.
func TestValidationPathsFollowTheRequestVersion(t *testing.T) {
	bad := newKVS()
	bad.Spec.Storage.Size = resource.MustParse("0")
	for version, want := range map[string]string{
		"v1alpha1": "spec.storage.size",
		"v1beta1":  "spec.storage.capacity",
		"":         "spec.storage.size", // no request info: internal names
	} {
		t.Run(version, func(t *testing.T) {
			ctx := context.Background()
			if version != "" {
				ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{APIGroup: "kvstore.io", APIVersion: version})
			}
			errs := testStrategy().Validate(ctx, bad.DeepCopy())
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			assert.Contains(t, fields, want)
		})
	}
}

func TestV1beta1PathsForStorageAndStatus(t *testing.T) {
	ctx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{APIVersion: "v1beta1"})
	bad := newKVS()
	bad.Spec.Storage.Size = resource.MustParse("0")
	errs := testStrategy().Validate(ctx, bad)
	for _, e := range errs {
		assert.NotContains(t, e.Field, "storage.size")
	}
	status := NewStatusStrategy(testStrategy())
	old := newKVS()
	old.ResourceVersion = "1"
	updated := old.DeepCopy()
	updated.Status.CurrentImage = string(make([]byte, 10000))
	errs = status.ValidateUpdate(ctx, updated, old)
	if assert.NotEmpty(t, errs) {
		assert.Equal(t, "metadata.annotations[kvstore.io/v1alpha1-status-current-image]", errs[0].Field)
	}
}
