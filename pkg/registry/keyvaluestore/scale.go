package keyvaluestore

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	scalescheme "k8s.io/client-go/scale/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1beta1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/registry/patcherrors"
)

// replicasPaths says, for each served version, which field of a
// KeyValueStore /scale writes. It lets managedFields record a write through
// /scale as ownership of spec.replicas, so server-side apply conflicts on it
// as it would on a write through the main resource.
var replicasPaths = managedfields.ResourcePathMappings{
	v1alpha1.SchemeGroupVersion.String(): fieldpath.MakePathOrDie("spec", "replicas"),
	v1beta1.SchemeGroupVersion.String():  fieldpath.MakePathOrDie("spec", "replicas"),
}

// ScaleREST is the /scale subresource: spec.replicas, status.replicas and
// status.selector as an autoscaling/v1 Scale, for `kubectl scale` and the
// HorizontalPodAutoscaler. Writes go through the main store and its
// strategy, so they are validated, bump the generation and keep the
// finalizer as any spec update does; only spec.replicas can change.
type ScaleREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher                  = &ScaleREST{}
	_ rest.GroupVersionKindProvider = &ScaleREST{}
	_ rest.TableConvertor           = &ScaleREST{}
)

// GroupVersionKind is autoscaling/v1 Scale, whatever version serves the store.
func (*ScaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// New returns an empty Scale of the internal version requests are decoded to.
func (*ScaleREST) New() runtime.Object { return &scalescheme.Scale{} }

// Destroy does nothing: the main store owns and closes the storage.
func (*ScaleREST) Destroy() {}

// Get returns the Scale of a store.
func (r *ScaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return scaleOrInternalError(obj.(*kvstore.KeyValueStore))
}

// Update writes spec.replicas from a Scale. Creating through /scale is never
// allowed: a missing store is a 404.
func (r *ScaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name,
		&scaleUpdatedObjectInfo{name: name, reqObjInfo: patcherrors.AsBadRequest(ctx, objInfo)},
		toScaleCreateValidation(createValidation),
		toScaleUpdateValidation(updateValidation),
		false, options)
	if err != nil {
		return nil, false, err
	}
	scale, err := scaleOrInternalError(obj.(*kvstore.KeyValueStore))
	if err != nil {
		return nil, false, err
	}
	return scale, false, nil
}

// ConvertToTable prints NAME, DESIRED, AVAILABLE and AGE, as kube-apiserver
// does for the scale of its own workloads.
func (*ScaleREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return ScaleTableConvertor{}.ConvertToTable(ctx, object, tableOptions)
}

// scaleFromKeyValueStore is the Scale view of a store. It fails only when
// status.selector is not a label selector, which /status validation refuses.
func scaleFromKeyValueStore(kvs *kvstore.KeyValueStore) (*scalescheme.Scale, error) {
	var selector *metav1.LabelSelector
	if kvs.Status.Selector != "" {
		var err error
		if selector, err = metav1.ParseToLabelSelector(kvs.Status.Selector); err != nil {
			return nil, fmt.Errorf("keyvaluestore %s/%s: status.selector %q: %w", kvs.Namespace, kvs.Name, kvs.Status.Selector, err)
		}
	}
	return &scalescheme.Scale{
		// Only what a client needs to address the store and to send a
		// precondition back.
		ObjectMeta: metav1.ObjectMeta{
			Name:              kvs.Name,
			Namespace:         kvs.Namespace,
			UID:               kvs.UID,
			ResourceVersion:   kvs.ResourceVersion,
			CreationTimestamp: kvs.CreationTimestamp,
		},
		Spec: scalescheme.ScaleSpec{
			// Never nil once stored: defaulted on decode, required by validation.
			Replicas: ptr.Deref(kvs.Spec.Replicas, 0),
		},
		Status: scalescheme.ScaleStatus{
			Replicas: kvs.Status.Replicas,
			Selector: selector,
		},
	}, nil
}

// scaleOrInternalError is scaleFromKeyValueStore for a store read from
// storage, whose bad selector is the server's problem, not the client's.
func scaleOrInternalError(kvs *kvstore.KeyValueStore) (*scalescheme.Scale, error) {
	scale, err := scaleFromKeyValueStore(kvs)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return scale, nil
}

// applyScale writes what a Scale may change into a copy of the store:
// spec.replicas, and the resourceVersion a client sent as a precondition.
// It refuses a Scale whose UID names another object.
func applyScale(kvs *kvstore.KeyValueStore, scale *scalescheme.Scale) (*kvstore.KeyValueStore, error) {
	if scale.UID != "" && scale.UID != kvs.UID {
		return nil, apierrors.NewConflict(kvstore.Resource("keyvaluestores"), kvs.Name,
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", scale.UID, kvs.UID))
	}
	out := kvs.DeepCopy()
	out.Spec.Replicas = ptr.To(scale.Spec.Replicas)
	// An empty resourceVersion keeps the stored one: the write is then
	// unconditional, as for a PUT of the store without one.
	if scale.ResourceVersion != "" {
		out.ResourceVersion = scale.ResourceVersion
	}
	return out, nil
}

// scaleUpdatedObjectInfo turns the stored store into the old Scale, lets the
// request (a PUT body or a patch) make the new Scale from it, and writes that
// back into the store.
type scaleUpdatedObjectInfo struct {
	name       string
	reqObjInfo rest.UpdatedObjectInfo
}

func (i *scaleUpdatedObjectInfo) Preconditions() *metav1.Preconditions {
	return i.reqObjInfo.Preconditions()
}

func (i *scaleUpdatedObjectInfo) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	kvs, ok := oldObj.(*kvstore.KeyValueStore)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("expected a KeyValueStore, got %T", oldObj))
	}
	// The generic store passes an empty object when none is stored.
	if kvs.ResourceVersion == "" {
		return nil, apierrors.NewNotFound(kvstore.Resource("keyvaluestores"), i.name)
	}

	gv, err := requestGroupVersion(ctx)
	if err != nil {
		return nil, err
	}
	managedFields := managedfields.NewScaleHandler(kvs.ManagedFields, gv, replicasPaths)

	oldScale, err := scaleOrInternalError(kvs)
	if err != nil {
		return nil, err
	}
	if oldScale.ManagedFields, err = managedFields.ToSubresource(); err != nil {
		return nil, err
	}

	newObj, err := i.reqObjInfo.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	newScale, ok := newObj.(*scalescheme.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a Scale, got %T", newObj))
	}

	updated, err := applyScale(kvs, newScale)
	if err != nil {
		return nil, err
	}
	if updated.ManagedFields, err = managedFields.ToParent(newScale.ManagedFields); err != nil {
		return nil, err
	}
	return updated, nil
}

// requestGroupVersion is the kvstore.io version the request came in on, whose
// replicas path managedFields are recorded under.
func requestGroupVersion(ctx context.Context) (schema.GroupVersion, error) {
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok {
		return v1alpha1.SchemeGroupVersion, nil
	}
	gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	if _, ok := replicasPaths[gv.String()]; !ok {
		return schema.GroupVersion{}, apierrors.NewInternalError(fmt.Errorf("no replicas path for %s", gv))
	}
	return gv, nil
}

// Admission (validating webhooks included) sees a write through /scale as a
// Scale, as it does for kube's own workloads.
func toScaleCreateValidation(f rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		scale, err := scaleFromKeyValueStore(obj.(*kvstore.KeyValueStore))
		if err != nil {
			return err
		}
		return f(ctx, scale)
	}
}

func toScaleUpdateValidation(f rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	return func(ctx context.Context, obj, old runtime.Object) error {
		newScale, err := scaleFromKeyValueStore(obj.(*kvstore.KeyValueStore))
		if err != nil {
			return err
		}
		oldScale, err := scaleFromKeyValueStore(old.(*kvstore.KeyValueStore))
		if err != nil {
			return err
		}
		return f(ctx, newScale, oldScale)
	}
}
