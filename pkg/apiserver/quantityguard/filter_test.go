package quantityguard

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestWithFilter(t *testing.T) {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	codecs := serializer.NewCodecFactory(scheme)
	const maxBody = 1024
	bad := withSize(`"` + hugeExponent + `"`)
	fine := withSize(`"1Gi"`)
	kvs := func(verb, subresource, name string) *genericapirequest.RequestInfo {
		return &genericapirequest.RequestInfo{
			IsResourceRequest: true, APIGroup: "kvstore.io", APIVersion: "v1alpha1",
			Resource: "keyvaluestores", Subresource: subresource, Verb: verb, Name: name,
		}
	}
	backups := func(verb, subresource string) *genericapirequest.RequestInfo {
		return &genericapirequest.RequestInfo{IsResourceRequest: true, APIGroup: "kvstore.io", APIVersion: "v1alpha1",
			Resource: "keyvaluestorebackups", Subresource: subresource, Verb: verb}
	}
	const (
		refusedKind = http.StatusBadRequest
		refused     = http.StatusUnprocessableEntity
	)
	for _, tc := range []struct {
		name string
		info *genericapirequest.RequestInfo
		body string
		code int // 0: passed on
	}{
		{"create", kvs("create", "", ""), bad, refused},
		{"update", kvs("update", "", "a"), bad, refused},
		{"patch", kvs("patch", "", "a"), bad, refused},
		{"update of /status", kvs("update", "status", "a"), bad, refused},
		{"a fine create", kvs("create", "", ""), fine, 0},
		// Every resource of the group shares the scheme: a store sent to
		// /scale or to the backups was decoded as a store, its quantities
		// parsed unchecked, before the handler refused the kind (found by
		// review).
		{"a store to /scale", kvs("update", "scale", "a"), fine, refusedKind},
		{"a Scale to /scale", kvs("update", "scale", "a"), `{"kind":"Scale","apiVersion":"autoscaling/v1","spec":{"replicas":3}}`, 0},
		{"a merge patch of /scale", kvs("patch", "scale", "a"), `{"spec":{"replicas":3}}`, 0},
		{"a store to the backups", backups("create", ""), fine, refusedKind},
		{"a store to a backup's /status", backups("update", "status"), fine, refusedKind},
		{"a backup", backups("create", ""), `{"kind":"KeyValueStoreBackup","spec":{"storeName":"a"}}`, 0},
		{"delete", kvs("delete", "", "a"), bad, 0},
		{"another group", &genericapirequest.RequestInfo{IsResourceRequest: true, APIGroup: "apps", Resource: "keyvaluestores", Verb: "create"}, bad, 0},
		{"not a resource", &genericapirequest.RequestInfo{Verb: "post", Path: "/apis/kvstore.io/v1alpha1/keyvaluestores"}, bad, 0},
		{"no request info", nil, bad, 0},
		{"over the body limit", kvs("create", "", ""), bad + strings.Repeat(" ", maxBody), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			next := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				var err error
				got, err = io.ReadAll(req.Body)
				require.NoError(t, err)
				require.NoError(t, req.Body.Close())
				w.WriteHeader(http.StatusTeapot)
			})
			req := httptest.NewRequest(http.MethodPost, "/apis/kvstore.io/v1alpha1/namespaces/ns/keyvaluestores", strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			if tc.info != nil {
				req = req.WithContext(genericapirequest.WithRequestInfo(req.Context(), tc.info))
			}
			rec := httptest.NewRecorder()
			WithFilter(next, codecs, maxBody).ServeHTTP(rec, req)

			if tc.code == 0 {
				assert.Equal(t, http.StatusTeapot, rec.Code)
				assert.Equal(t, tc.body, string(got), "the handler reads the body as it was sent")
				return
			}
			assert.Nil(t, got, "a refused request never reaches the handler")
			require.Equal(t, tc.code, rec.Code, rec.Body.String())
			if tc.code == refusedKind {
				assert.Contains(t, rec.Body.String(), `kind: Invalid value: \"KeyValueStore\": must be `)
				return
			}
			var status metav1.Status
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &status), rec.Body.String())
			assert.Equal(t, metav1.StatusReasonInvalid, status.Reason)
			require.NotNil(t, status.Details)
			assert.Equal(t, "KeyValueStore", status.Details.Kind)
			assert.Equal(t, tc.info.Name, status.Details.Name)
			require.Len(t, status.Details.Causes, 1)
			assert.Equal(t, "spec.storage.size", status.Details.Causes[0].Field)
		})
	}
}

// TestWithFilterNoBody: a write without a body is the handler's to refuse.
func TestWithFilterNoBody(t *testing.T) {
	called := false
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(nil))
	req.Body = nil
	info := &genericapirequest.RequestInfo{IsResourceRequest: true, APIGroup: "kvstore.io", Resource: "keyvaluestores", Verb: "create"}
	req = req.WithContext(genericapirequest.WithRequestInfo(req.Context(), info))
	WithFilter(next, serializer.NewCodecFactory(runtime.NewScheme()), 1024).ServeHTTP(httptest.NewRecorder(), req)
	assert.True(t, called)
}

// A protobuf body does not say which key it used (the versions share field
// numbers), so the refusal of a v1beta1 request names v1beta1's field, as
// for JSON (found by review: it named spec.storage.size, which v1beta1 does
// not have, to the generated clients, which send protobuf).
func TestWithFilterNamesTheVersionsFieldForProtobuf(t *testing.T) {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	for version, want := range map[string]string{"v1alpha1": "spec.storage.size", "v1beta1": "spec.storage.capacity"} {
		req := httptest.NewRequest(http.MethodPost, "/apis/kvstore.io/"+version+"/namespaces/ns/keyvaluestores",
			bytes.NewReader(protobufBody(nil, protobufSpec(hugeExponent))))
		req.Header.Set("Content-Type", protobufType)
		req = req.WithContext(genericapirequest.WithRequestInfo(req.Context(), &genericapirequest.RequestInfo{
			IsResourceRequest: true, APIGroup: "kvstore.io", APIVersion: version, Resource: "keyvaluestores", Verb: "create"}))
		rec := httptest.NewRecorder()
		WithFilter(http.NotFoundHandler(), serializer.NewCodecFactory(scheme), 1<<20).ServeHTTP(rec, req)
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, version)
		var status metav1.Status
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &status), rec.Body.String())
		require.NotNil(t, status.Details)
		require.Len(t, status.Details.Causes, 1)
		assert.Equal(t, want, status.Details.Causes[0].Field, version)
	}
}
