package quantityguard

import (
	"bytes"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Guarded is the resource whose quantities the filter checks; every other
// resource of its group gets its kind checked.
var Guarded = schema.GroupResource{Group: "kvstore.io", Resource: "keyvaluestores"}

// WithFilter checks the body of every create, update and patch in the
// group before the request is decoded: of a KeyValueStore and of its
// /status (CheckIn), and of a backup, its /status and a store's /scale
// (CheckKind: a body there may name KeyValueStore, and would be decoded as
// one). It answers 422 for a quantity it refuses, 400 for a body it cannot
// read or of another kind, as the decoder would. It runs inside
// authentication and authorization, so only a client allowed to write gets
// its body read. A body over maxBodyBytes is passed on unread, for the
// handler to refuse with 413. Errors are written with codecs.
func WithFilter(handler http.Handler, codecs runtime.NegotiatedSerializer, maxBodyBytes int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if !ok || req.Body == nil {
			handler.ServeHTTP(w, req)
			return
		}
		check := checkFor(info)
		if check == nil {
			handler.ServeHTTP(w, req)
			return
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, maxBodyBytes+1))
		if err != nil {
			responsewriters.ErrorNegotiated(apierrors.NewBadRequest("reading the request body: "+err.Error()),
				codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
			return
		}
		if int64(len(body)) > maxBodyBytes {
			req.Body = readCloser{io.MultiReader(bytes.NewReader(body), req.Body), req.Body}
			handler.ServeHTTP(w, req)
			return
		}
		if fieldErr := check(req.Header.Get("Content-Type"), body); fieldErr != nil {
			var err error = apierrors.NewInvalid(schema.GroupKind{Group: Guarded.Group, Kind: "KeyValueStore"}, info.Name, field.ErrorList{fieldErr})
			if fieldErr.Type == field.ErrorTypeTypeInvalid {
				err = apierrors.NewBadRequest(fieldErr.Error()) // a body that does not decode, as the decoder says
			}
			responsewriters.ErrorNegotiated(err, codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
			return
		}
		req.Body = readCloser{bytes.NewReader(body), req.Body}
		handler.ServeHTTP(w, req)
	})
}

// checkFor is the check of a request's body, nil for a request with none
// to check (a read, a delete, another group).
func checkFor(info *genericapirequest.RequestInfo) func(contentType string, body []byte) *field.Error {
	if !info.IsResourceRequest || info.APIGroup != Guarded.Group {
		return nil
	}
	switch info.Verb {
	case "create", "update", "patch":
	default:
		return nil
	}
	kindOf := func(kind string) func(string, []byte) *field.Error {
		return func(contentType string, body []byte) *field.Error { return CheckKind(contentType, body, kind) }
	}
	switch {
	case info.Resource == Guarded.Resource && (info.Subresource == "" || info.Subresource == "status"):
		return func(contentType string, body []byte) *field.Error { return CheckIn(contentType, body, info.APIVersion) }
	case info.Resource == Guarded.Resource && info.Subresource == "scale":
		return kindOf("Scale")
	case info.Resource == "keyvaluestorebackups" && (info.Subresource == "" || info.Subresource == "status"):
		return kindOf("KeyValueStoreBackup")
	}
	return nil
}

// readCloser reads from the buffered body and closes the original.
type readCloser struct {
	io.Reader
	io.Closer
}
