// Package keyvaluestore is the storage of the keyvaluestores resource: the
// strategies that decide what create, update and /status may change, the
// etcd-backed REST stores, field selectors and the table printed by kubectl.
package keyvaluestore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore"
	"github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/validation"
)

// Strategy governs create, update and delete of the main resource.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy returns the strategy of the main resource.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

var (
	_ rest.RESTCreateStrategy              = Strategy{}
	_ rest.RESTUpdateStrategy              = Strategy{}
	_ rest.RESTDeleteStrategy              = Strategy{}
	_ rest.ResetFieldsStrategy             = Strategy{}
	_ rest.RESTUpdateStrategy              = StatusStrategy{}
	_ rest.ResetFieldsStrategy             = StatusStrategy{}
	_ rest.GarbageCollectionDeleteStrategy = Strategy{}
)

// NamespaceScoped is true: a KeyValueStore lives in a namespace.
func (Strategy) NamespaceScoped() bool { return true }

// GetResetFields: the main endpoint never owns status, so server-side apply
// through it cannot claim or change status fields.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return everyVersion(fieldpath.NewSet(fieldpath.MakePathOrDie("status")))
}

// DefaultGarbageCollectionPolicy deletes owned objects in the background once
// the finalizer has let the store go.
func (Strategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.DeleteDependents
}

// PrepareForCreate wipes any client-sent status, starts the generation at 1
// and adds the teardown finalizer so that no store exists unprotected.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	kvs := obj.(*kvstore.KeyValueStore)
	kvs.Status = kvstore.KeyValueStoreStatus{}
	kvs.Generation = 1
	ensureTeardownFinalizer(kvs)
}

// PrepareForUpdate keeps the stored status, bumps the generation only when the
// spec changed and puts the finalizer back if a client removed it from a store
// that is not being deleted (only teardown may release it).
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newKVS := obj.(*kvstore.KeyValueStore)
	oldKVS := old.(*kvstore.KeyValueStore)
	newKVS.Status = oldKVS.Status
	keepStoredCommandBytes(&newKVS.Spec, &oldKVS.Spec)
	if specChanged(newKVS.Spec, oldKVS.Spec) {
		newKVS.Generation = oldKVS.Generation + 1
	}
	// Decided on the stored object: the request body's deletionTimestamp is
	// not authoritative (the store copies the stored one back later).
	if oldKVS.DeletionTimestamp == nil {
		ensureTeardownFinalizer(newKVS)
	}
}

// keepStoredCommandBytes puts the stored bytes of the bootstrap and backup
// commands back where the request carries them as JSON re-encoded them: a
// merge or JSON patch is applied to the stored object as JSON, which turns
// bytes that are not UTF-8 (accepted before the UTF-8 rule) into U+FFFD.
// Unchanged, they pass the immutability and ratchet checks and bump no
// generation.
func keepStoredCommandBytes(newSpec, oldSpec *kvstore.KeyValueStoreSpec) {
	if newSpec.Bootstrap != nil && oldSpec.Bootstrap != nil {
		keepStoredBytes(newSpec.Bootstrap.Command, oldSpec.Bootstrap.Command)
	}
	if newSpec.Backup != nil && oldSpec.Backup != nil {
		keepStoredBytes(newSpec.Backup.Command, oldSpec.Backup.Command)
	}
}

// keepStoredBytes sets cmd back to stored when every entry is its stored
// counterpart, as is or through JSON. All or nothing: restoring some
// entries of an edited command would refuse the edit for bytes the user
// never sent (a command that changes must be UTF-8).
func keepStoredBytes(cmd, stored []string) {
	if len(cmd) != len(stored) || slices.Equal(cmd, stored) {
		return
	}
	for i := range cmd {
		if cmd[i] != stored[i] && cmd[i] != throughJSON(stored[i]) {
			return
		}
	}
	copy(cmd, stored)
}

// throughJSON is s as encoding/json writes and reads it back.
func throughJSON(s string) string {
	data, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(data, &out)
	return out
}

// specChanged compares specs with validation.Semantic: this runs before
// validation, on whatever quantities the request carries.
func specChanged(newSpec, oldSpec kvstore.KeyValueStoreSpec) bool {
	return !validation.Semantic.DeepEqual(newSpec, oldSpec)
}

func ensureTeardownFinalizer(kvs *kvstore.KeyValueStore) {
	for _, f := range kvs.Finalizers {
		if f == kvstore.TeardownFinalizer {
			return
		}
	}
	kvs.Finalizers = append(kvs.Finalizers, kvstore.TeardownFinalizer)
}

// Validate validates a new object.
func (Strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return inRequestVersion(ctx, validation.ValidateKeyValueStore(obj.(*kvstore.KeyValueStore)))
}

// WarningsOnCreate returns advice that does not block the request.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	spec := &obj.(*kvstore.KeyValueStore).Spec
	warnings := append(specWarnings(spec), pullSecretWarnings(spec, nil)...)
	return append(warnings, exposureWarnings(spec, nil)...)
}

// Canonicalize has nothing to normalise: defaulting already ran on decode.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: PUT of a missing store is a 404, as for StatefulSets.
func (Strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate lets `kubectl replace` work without a resourceVersion.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// ValidateUpdate validates an update, including immutable fields.
func (Strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return inRequestVersion(ctx, validation.ValidateKeyValueStoreUpdate(obj.(*kvstore.KeyValueStore), old.(*kvstore.KeyValueStore)))
}

// WarningsOnUpdate repeats the create warnings, only when the spec changed.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	newKVS, oldKVS := obj.(*kvstore.KeyValueStore), old.(*kvstore.KeyValueStore)
	if newKVS.Generation == oldKVS.Generation {
		return nil
	}
	warnings := append(specWarnings(&newKVS.Spec), removalWarnings(&newKVS.Spec, &oldKVS.Spec)...)
	warnings = append(warnings, pullSecretWarnings(&newKVS.Spec, &oldKVS.Spec)...)
	warnings = append(warnings, spreadWarnings(&newKVS.Spec, &oldKVS.Spec)...)
	warnings = append(warnings, exposureWarnings(&newKVS.Spec, &oldKVS.Spec)...)
	warnings = append(warnings, unexposureWarnings(&newKVS.Spec, &oldKVS.Spec)...)
	return append(warnings, growthWarnings(&newKVS.Spec, &oldKVS.Spec)...)
}

// spreadWarnings say, when a running store gains a DoNotSchedule spread
// constraint or one is tightened, that it moves no replica: one whose
// volume is bound to a zone the constraint now rules out stays Pending
// when the rollout replaces its Pod.
func spreadWarnings(spec, old *kvstore.KeyValueStoreSpec) []string {
	if !slices.ContainsFunc(spreadConstraints(spec), func(c kvstore.TopologySpreadConstraint) bool {
		return c.WhenUnsatisfiable == kvstore.DoNotSchedule && !slices.ContainsFunc(spreadConstraints(old), func(o kvstore.TopologySpreadConstraint) bool {
			return loosens(c, o)
		})
	}) {
		return nil
	}
	return []string{"spec.scheduling.topologySpreadConstraints: a DoNotSchedule constraint moves no replica's volume; " +
		"a replica whose volume is bound to a zone or node the constraint rules out stays Pending when the rollout replaces its Pod, " +
		"one replica down, until the constraint is relaxed (ScheduleAnyway) or removed"}
}

// loosens says DoNotSchedule constraint c allows every placement o
// allowed: o is of the same domains and refuses too, with no larger skew
// allowed and at least as many domains asked for (unset is 1, as the
// scheduler reads it).
func loosens(c, o kvstore.TopologySpreadConstraint) bool {
	return o.WhenUnsatisfiable == kvstore.DoNotSchedule && o.TopologyKey == c.TopologyKey && c.MaxSkew >= o.MaxSkew &&
		ptr.Deref(c.MinDomains, 1) <= ptr.Deref(o.MinDomains, 1)
}

func spreadConstraints(spec *kvstore.KeyValueStoreSpec) []kvstore.TopologySpreadConstraint {
	if spec.Scheduling == nil {
		return nil
	}
	return spec.Scheduling.TopologySpreadConstraints
}

// exposureWarnings say, when a store's client Service is opened beyond
// the cluster (old is nil on create), who can reach it: the data store
// itself may ask no password.
func exposureWarnings(spec, old *kvstore.KeyValueStoreSpec) []string {
	w := exposureWarning(spec.Service)
	if w == "" || old != nil && exposureWarning(old.Service) == w {
		return nil
	}
	return []string{w}
}

// unexposureWarnings say, when spec.service that opened the store is
// removed, what server-side apply leaves: the controller gives up only
// what it alone set on the Service.
func unexposureWarnings(spec, old *kvstore.KeyValueStoreSpec) []string {
	if spec.Service != nil || old.Service == nil || old.Service.Type == kvstore.ServiceTypeClusterIP {
		return nil
	}
	return []string{"spec.service: removed; the client Service goes back to ClusterIP, but a type, source ranges or annotations " +
		"also set on it by hand (kubectl patch service) stay, and keep the store open: check it with kubectl get service"}
}

func exposureWarning(s *kvstore.ClientService) string {
	const password = "; give the store a password (spec.args with spec.envFrom)"
	switch {
	case s == nil:
		return ""
	case s.Type == kvstore.ServiceTypeNodePort:
		return "spec.service.type: NodePort opens the store's port on every Node's addresses, to whoever reaches them" + password
	case s.Type == kvstore.ServiceTypeLoadBalancer && len(s.LoadBalancerSourceRanges) == 0:
		return "spec.service: a LoadBalancer without loadBalancerSourceRanges takes clients from every address that reaches it, " +
			"set the ranges of the store's clients" + password
	}
	return ""
}

// pullSecretWarnings say, when a store's pull secrets are set or changed
// (old is nil on create), that they replace its Pods' ServiceAccount's:
// an image only that account's secret could pull would fail.
func pullSecretWarnings(spec, old *kvstore.KeyValueStoreSpec) []string {
	if len(spec.ImagePullSecrets) == 0 || old != nil && slices.Equal(spec.ImagePullSecrets, old.ImagePullSecrets) {
		return nil
	}
	return []string{"spec.imagePullSecrets: the store's Pods pull with these Secrets instead of their ServiceAccount's " +
		"(as any Pod that names its own): list every Secret the store's images need"}
}

// removalWarnings say what taking a store's Pod security context or its
// data replicas' resources away risks: where a namespace's policy asks for
// them, the rollout that follows stops with a replica down.
func removalWarnings(spec, old *kvstore.KeyValueStoreSpec) []string {
	var warnings []string
	if old.SecurityContext != nil && spec.SecurityContext == nil {
		warnings = append(warnings, "spec.securityContext: removed; in a namespace that enforces the Pod Security Standard \"restricted\" "+
			"the store's new Pods are refused, and the data replicas' rollout stops with one replica down")
	}
	if old.Resources != nil && spec.Resources == nil {
		warnings = append(warnings, "spec.resources: removed; in a namespace whose ResourceQuota limits cpu or memory "+
			"the data replicas' new Pods are refused, and their rollout stops with one replica down")
	}
	return warnings
}

// growthWarnings say what a new storage size does: a larger one grows
// every claim, which does not shrink back; a smaller one shrinks nothing.
func growthWarnings(spec, old *kvstore.KeyValueStoreSpec) []string {
	size := spec.Storage.Size
	switch {
	case validation.SizesEqual(size, old.Storage.Size):
		return nil
	case size.Cmp(old.Storage.Size) > 0: // both cheap to compare: validation refused the change otherwise
		return []string{fmt.Sprintf("spec.storage: every data replica's claim is asked for %s, and a claim does not shrink back; "+
			"its StorageClass must allow volume expansion, see the store's StorageResized condition", size.String())}
	default:
		return []string{fmt.Sprintf("spec.storage: lowered to %s, which shrinks no claim: each keeps what it holds and asks for "+
			"(a growth a claim cannot get stays asked for until its request is lowered by hand, see the docs)", size.String())}
	}
}

func specWarnings(spec *kvstore.KeyValueStoreSpec) []string {
	var warnings []string
	for _, img := range []struct {
		path, image string
	}{
		{"spec.image", spec.Image},
		{"spec.proxy.image", proxyImage(spec)},
	} {
		if img.image != "" && floatingTag(img.image) {
			warnings = append(warnings, fmt.Sprintf("%s: %q has no tag or the tag \"latest\"; pin a version so replicas cannot drift apart", img.path, img.image))
		}
	}
	if spec.Replicas != nil && *spec.Replicas%2 == 0 {
		warnings = append(warnings, fmt.Sprintf("spec.replicas: %d is even; an odd number tolerates the same number of failures with one replica fewer", *spec.Replicas))
	}
	return warnings
}

func proxyImage(spec *kvstore.KeyValueStoreSpec) string {
	if spec.Proxy == nil {
		return ""
	}
	return spec.Proxy.Image
}

// floatingTag reports an image that names no tag, or "latest", and no digest.
func floatingTag(image string) bool {
	if strings.Contains(image, "@") {
		return false
	}
	lastPart := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(lastPart, ":")
	return i < 0 || lastPart[i+1:] == "latest"
}

// StatusStrategy governs the /status subresource: only status may change.
type StatusStrategy struct {
	Strategy
}

// NewStatusStrategy returns the strategy of the /status subresource.
func NewStatusStrategy(s Strategy) StatusStrategy { return StatusStrategy{s} }

// GetResetFields: /status never owns spec or the metadata it does not write.
func (StatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return everyVersion(fieldpath.NewSet(
		fieldpath.MakePathOrDie("spec"),
		fieldpath.MakePathOrDie("metadata", "labels"),
		fieldpath.MakePathOrDie("metadata", "annotations"),
		fieldpath.MakePathOrDie("metadata", "finalizers"),
		fieldpath.MakePathOrDie("metadata", "ownerReferences"),
	))
}

// PrepareForUpdate keeps everything but status from the stored object, so a
// controller's stale copy can never roll back a user's spec or metadata.
func (StatusStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	newKVS := obj.(*kvstore.KeyValueStore)
	oldKVS := old.(*kvstore.KeyValueStore)
	newKVS.Spec = oldKVS.Spec
	newKVS.Labels = oldKVS.Labels
	newKVS.Annotations = oldKVS.Annotations
	newKVS.Finalizers = oldKVS.Finalizers
	newKVS.OwnerReferences = oldKVS.OwnerReferences
	if inV1beta1(ctx) {
		// v1beta1 does not offer currentImage: its carry annotation is the
		// server's, and a v1beta1 writer leaving it out must not erase it.
		newKVS.Status.CurrentImage = oldKVS.Status.CurrentImage
	}
	setReadyCondition(&newKVS.Status, oldKVS.Status.Conditions)
}

// ValidateUpdate validates the new status.
func (StatusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return inRequestVersion(ctx, validation.ValidateKeyValueStoreStatusUpdate(obj.(*kvstore.KeyValueStore), old.(*kvstore.KeyValueStore)))
}

// WarningsOnUpdate has nothing to say about status.
func (StatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// everyVersion names the same reset fields in every served version: the
// field paths are the same in both, and a client of either version must
// own (and be refused) the same fields.
func everyVersion(set *fieldpath.Set) map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		"kvstore.io/v1alpha1": set,
		"kvstore.io/v1beta1":  set,
	}
}
