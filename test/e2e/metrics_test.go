package e2e

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	family := families["kubernetes_feature_enabled"]
	require.NotNil(t, family, "no kubernetes_feature_enabled on /metrics")
	enabled := map[string]float64{}
	for _, m := range family.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" {
				enabled[l.GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	// Off by default in kvstore-apiserver (see docs/benchmarks.md), on in kube-apiserver.
	assert.Equal(t, 0.0, enabled["WatchListCompression"], "WatchListCompression")
}
