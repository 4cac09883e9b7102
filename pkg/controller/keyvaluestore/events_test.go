package keyvaluestore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// A store's busy day does not silence the rest of its story: after 25
// events of one reason (rollouts' Updated), one of another reason (the
// teardown's) is still recorded. With client-go's default spam key, all of
// an object's Normal events shared one budget and it was dropped (found by
// live review).
func TestEventsOfAnotherReasonAreToldAfterABurst(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := kubefake.NewClientset()
	broadcaster := newEventBroadcaster(ctx)
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: FieldManager})
	store := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "uid-1"}} // any object

	for i := range 25 {
		recorder.Eventf(store, corev1.EventTypeNormal, "Updated", "Updated StatefulSet s to the desired state of generation %d", i)
	}
	recorder.Event(store, corev1.EventTypeNormal, "Terminating", "Phase Ready -> Terminating")
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "Terminating" {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "the 26th event, of another reason, was dropped")
}
