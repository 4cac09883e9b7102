package keyvaluestore

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
)

// preferredVersionRecorder records events about the group's objects against
// the group's preferred version, as the owned objects' ownerReferences name
// them (ownerAPIVersion), not the version the controller reads: `kubectl
// events --for kvs/NAME` selects on the involved object's apiVersion.
type preferredVersionRecorder struct{ record.EventRecorder }

func (r preferredVersionRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	r.EventRecorder.Event(inPreferredVersion(obj), eventtype, reason, message)
}

func (r preferredVersionRecorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.EventRecorder.Eventf(inPreferredVersion(obj), eventtype, reason, messageFmt, args...)
}

func (r preferredVersionRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	r.EventRecorder.AnnotatedEventf(inPreferredVersion(obj), annotations, eventtype, reason, messageFmt, args...)
}

// inPreferredVersion is a reference to a store or a backup in the preferred
// version; any other object is returned as it is.
func inPreferredVersion(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *v1alpha1.KeyValueStore:
		return preferredRef(o, "KeyValueStore")
	case *v1alpha1.KeyValueStoreBackup:
		return preferredRef(o, "KeyValueStoreBackup")
	}
	return obj
}

func preferredRef(o metav1.Object, kind string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: ownerAPIVersion(), Kind: kind, Namespace: o.GetNamespace(),
		Name: o.GetName(), UID: o.GetUID(), ResourceVersion: o.GetResourceVersion()}
}

// newEventBroadcaster is client-go's broadcaster with the spam filter keyed
// also by reason (see eventSpamKey).
func newEventBroadcaster(ctx context.Context) record.EventBroadcaster {
	return record.NewBroadcaster(record.WithContext(ctx),
		record.WithCorrelatorOptions(record.CorrelatorOptions{SpamKeyFunc: eventSpamKey}))
}

// eventSpamKey is client-go's spam key with the event's reason. The
// default shares one budget (a burst of 25, then one every 5 minutes)
// among all of an object's events of a type, so a store's busy day of
// rollouts silenced its teardown's steps and its Final backup's outcome.
// Per reason, a loop telling one thing is still held back, and the rest
// of the store's story is told.
func eventSpamKey(e *corev1.Event) string {
	return strings.Join([]string{e.Source.Component, e.Source.Host, e.InvolvedObject.Kind, e.InvolvedObject.Namespace,
		e.InvolvedObject.Name, string(e.InvolvedObject.UID), e.InvolvedObject.APIVersion, e.Type, e.Reason}, "\x00")
}
