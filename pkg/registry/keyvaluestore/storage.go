package keyvaluestore

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/registry/patcherrors"
)

// REST is the keyvaluestores resource. Its Delete and DeleteCollection
// (delete.go) decide which deletions the ordered teardown allows.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.StandardStorage    = &REST{}
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get kvs` work.
func (*REST) ShortNames() []string { return []string{"kvs"} }

// Categories lets `kubectl get kvstore` list every kvstore.io resource.
func (*REST) Categories() []string { return []string{"kvstore"} }

// Update answers a patch that cannot be applied with 400 (see
// patcherrors.AsBadRequest).
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.Store.Update(ctx, name, patcherrors.AsBadRequest(ctx, objInfo), createValidation, updateValidation, forceAllowCreate, options)
}

// Storage is the keyvaluestores resource and its subresources, all on one
// etcd storage so they never disagree.
type Storage struct {
	KeyValueStore *REST
	Status        *StatusREST
	Scale         *ScaleREST
}

// NewStorage returns the main store, its /status store and its /scale store.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &kvstore.KeyValueStore{} },
		NewListFunc:               func() runtime.Object { return &kvstore.KeyValueStoreList{} },
		PredicateFunc:             MatchKeyValueStore,
		DefaultQualifiedResource:  kvstore.Resource("keyvaluestores"),
		SingularQualifiedResource: kvstore.Resource("keyvaluestore"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: TableConvertor{},
	}
	options := &generic.StoreOptions{
		RESTOptions: optsGetter,
		AttrFunc:    GetAttrs,
		TriggerFunc: storage.IndexerFuncs{fieldPhase: phaseTrigger},
		Indexers:    indexers(),
	}
	if err := store.CompleteWithOptions(options); err != nil {
		return Storage{}, err
	}

	statusStrategy := NewStatusStrategy(strategy)
	statusStore := *store
	statusStore.UpdateStrategy = statusStrategy
	statusStore.ResetFieldsStrategy = statusStrategy
	return Storage{
		KeyValueStore: &REST{store},
		Status:        &StatusREST{store: &statusStore},
		// /scale writes spec through the main strategy: the main store as is.
		Scale: &ScaleREST{store: store},
	}, nil
}

// StatusREST is the /status subresource: get and update of status only.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher             = &StatusREST{}
	_ rest.TableConvertor      = &StatusREST{}
	_ rest.ResetFieldsStrategy = &StatusREST{}
)

// New returns an empty KeyValueStore.
func (r *StatusREST) New() runtime.Object { return &kvstore.KeyValueStore{} }

// Destroy does nothing: the main store owns and closes the storage.
func (r *StatusREST) Destroy() {}

// Get retrieves the object, for PATCH and `kubectl get --subresource=status`.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes status. Creating through /status is never allowed.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, patcherrors.AsBadRequest(ctx, objInfo), createValidation, updateValidation, false, options)
}

// GetResetFields returns the fields /status never owns.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the same columns as the main resource.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
