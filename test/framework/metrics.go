package framework

import (
	"fmt"
	"io"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is one read of a process's /metrics, parsed by Prometheus's own
// text parser: its metric families by name.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics parses a Prometheus text exposition.
func ParseMetrics(r io.Reader) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return families, nil
}

// Sum adds up a metric's samples by the value of one of their labels (with
// label "", all of them under ""). name is a family, or a histogram's or
// summary's _sum or _count series.
func (m Metrics) Sum(name, label string) map[string]float64 {
	out := map[string]float64{}
	family, value := m.series(name)
	if family == nil {
		return out
	}
	for _, s := range family.GetMetric() {
		out[labelValue(s, label)] += value(s)
	}
	return out
}

// Value is the one sample of an unlabelled metric.
func (m Metrics) Value(name string) (float64, error) {
	family, value := m.series(name)
	if family == nil || len(family.GetMetric()) != 1 {
		return 0, fmt.Errorf("metric %s not found, or not a single series", name)
	}
	return value(family.GetMetric()[0]), nil
}

// Sample is the value of the sample of name whose labels include want,
// and whether there is one.
func (m Metrics) Sample(name string, want map[string]string) (float64, bool) {
	family, value := m.series(name)
	if family == nil {
		return 0, false
	}
	for _, s := range family.GetMetric() {
		if matches(s, want) {
			return value(s), true
		}
	}
	return 0, false
}

func matches(s *dto.Metric, want map[string]string) bool {
	for name, v := range want {
		if labelValue(s, name) != v {
			return false
		}
	}
	return true
}

// series finds the family of name and how to read one of its samples.
func (m Metrics) series(name string) (*dto.MetricFamily, func(*dto.Metric) float64) {
	if f := m[name]; f != nil {
		// Only the field of the family's type is set; the others read 0.
		return f, func(s *dto.Metric) float64 {
			return s.GetCounter().GetValue() + s.GetGauge().GetValue() + s.GetUntyped().GetValue()
		}
	}
	if base, ok := strings.CutSuffix(name, "_sum"); ok && m[base] != nil {
		return m[base], func(s *dto.Metric) float64 {
			return s.GetHistogram().GetSampleSum() + s.GetSummary().GetSampleSum()
		}
	}
	if base, ok := strings.CutSuffix(name, "_count"); ok && m[base] != nil {
		return m[base], func(s *dto.Metric) float64 {
			return float64(s.GetHistogram().GetSampleCount() + s.GetSummary().GetSampleCount())
		}
	}
	return nil, nil
}

// labelValue is the value of the sample's label name ("" without one).
func labelValue(s *dto.Metric, name string) string {
	for _, l := range s.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
