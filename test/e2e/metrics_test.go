package e2e

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// kvstore-apiserver exports its feature gates the way kube-apiserver does
// (kubernetes_feature_enabled), so a reader of both, such as the
// benchmark's report, can tell where the two servers differ.
func TestFeatureGatesExported(t *testing.T) {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: adminTLS(t)}}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/metrics", mainReplica.port))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	metrics, err := framework.ParseMetrics(resp.Body)
	require.NoError(t, err)
	enabled := metrics.Sum("kubernetes_feature_enabled", "name")
	require.NotEmpty(t, enabled, "no kubernetes_feature_enabled on /metrics")
	// Off by default in kvstore-apiserver (see docs/benchmarks.md), on in kube-apiserver.
	assert.Equal(t, 0.0, enabled["WatchListCompression"], "WatchListCompression")
}
