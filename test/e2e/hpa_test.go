package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// TestHorizontalPodAutoscalerResolvesScale: kube-controller-manager's HPA
// controller accepts a KeyValueStore as its target and reads its /scale
// through the aggregator (AbleToScale, SucceededGetScale). kwok runs no
// metrics server, so nothing scales; that the target was resolved is what
// this checks.
func TestHorizontalPodAutoscalerResolvesScale(t *testing.T) {
	ns := demo(t)
	manifest := filepath.Join(t.TempDir(), "hpa.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: demo
spec:
  scaleTargetRef:
    apiVersion: kvstore.io/v1beta1
    kind: KeyValueStore
    name: demo
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 50
`), 0o644))
	mustKubectl(t, "apply", "-n", ns, "-f", manifest)

	err := framework.WaitFor(context.Background(), readyTimeout, func(context.Context) error {
		got := mustKubectl(t, "get", "hpa", "demo", "-n", ns, "-o",
			`jsonpath={.status.conditions[?(@.type=="AbleToScale")].status} {.status.conditions[?(@.type=="AbleToScale")].reason}`)
		if got != "True SucceededGetScale" {
			return fmt.Errorf("AbleToScale: %q", got)
		}
		return nil
	})
	require.NoError(t, err)
}
