package framework

import (
	"maps"
	"strings"
	"testing"
)

func TestMetricsSum(t *testing.T) {
	metrics := mustParse(t,
		"# HELP rest_client_requests_total Number of HTTP requests",
		"# TYPE rest_client_requests_total counter",
		`rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 10`,
		`rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 3`,
		`rest_client_requests_total{code="404",host="127.0.0.1:6443",method="GET"} 2`,
		`rest_client_requests_totalx{method="GET"} 100`,
		`plain_counter 7`,
		// A histogram as servers expose it: its _sum and _count are
		// series of one family.
		"# TYPE rest_client_rate_limiter_duration_seconds histogram",
		`rest_client_rate_limiter_duration_seconds_bucket{host="h",verb="GET",le="0.005"} 3`,
		`rest_client_rate_limiter_duration_seconds_bucket{host="h",verb="GET",le="+Inf"} 4`,
		`rest_client_rate_limiter_duration_seconds_sum{host="h",verb="GET"} 1.5`,
		`rest_client_rate_limiter_duration_seconds_count{host="h",verb="GET"} 4`,
		`rest_client_rate_limiter_duration_seconds_bucket{host="h",verb="PATCH",le="+Inf"} 2`,
		`rest_client_rate_limiter_duration_seconds_sum{host="h",verb="PATCH"} 0.5`,
		`rest_client_rate_limiter_duration_seconds_count{host="h",verb="PATCH"} 2`,
		"# TYPE go_memstats_heap_alloc_bytes gauge",
		`go_memstats_heap_alloc_bytes 1.2e+07`,
	)
	got := metrics.Sum("rest_client_requests_total", "method")
	if want := map[string]float64{"GET": 12, "POST": 3}; !maps.Equal(got, want) {
		t.Errorf("by method: %v, want %v", got, want)
	}
	if all := metrics.Sum("rest_client_requests_total", "")[""]; all != 15 {
		t.Errorf("sum: %v, want 15", all)
	}
	if v := metrics.Sum("plain_counter", "")[""]; v != 7 {
		t.Errorf("unlabelled: %v, want 7", v)
	}
	if got, want := metrics.Sum("rest_client_rate_limiter_duration_seconds_sum", "verb"), map[string]float64{"GET": 1.5, "PATCH": 0.5}; !maps.Equal(got, want) {
		t.Errorf("histogram _sum by verb: %v, want %v", got, want)
	}
	if v := metrics.Sum("rest_client_rate_limiter_duration_seconds_count", "")[""]; v != 6 {
		t.Errorf("histogram _count: %v, want 6", v)
	}
	if len(metrics.Sum("absent_total", "")) != 0 {
		t.Error("an absent metric sums to something")
	}
	if v, err := metrics.Value("go_memstats_heap_alloc_bytes"); err != nil || v != 1.2e7 {
		t.Errorf("gauge: %v, %v; want 1.2e7", v, err)
	}
	if _, err := metrics.Value("rest_client_requests_total"); err == nil {
		t.Error("value of a labelled metric: no error")
	}
}

// mustParse parses the lines of a /metrics body.
func mustParse(t *testing.T, lines ...string) Metrics {
	t.Helper()
	metrics, err := ParseMetrics(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return metrics
}
