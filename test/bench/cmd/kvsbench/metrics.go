package main

import (
	"bytes"
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape is one read of a process's /metrics, parsed by Prometheus's own
// text parser: its metric families by name.
type scrape map[string]*dto.MetricFamily

func parseScrape(body []byte) (scrape, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	return families, nil
}

// sum adds up a metric's samples by the value of one of their labels (with
// label "", all of them under ""). name is a family, or a histogram's or
// summary's _sum or _count series.
func (s scrape) sum(name, label string) map[string]float64 {
	out := map[string]float64{}
	family, value := s.series(name)
	if family == nil {
		return out
	}
	for _, m := range family.GetMetric() {
		out[labelValue(m, label)] += value(m)
	}
	return out
}

// value is the one sample of an unlabelled metric.
func (s scrape) value(name string) (float64, error) {
	family, value := s.series(name)
	if family == nil || len(family.GetMetric()) != 1 {
		return 0, fmt.Errorf("metric %s not found, or not a single series", name)
	}
	return value(family.GetMetric()[0]), nil
}

// series finds the family of name and how to read one of its samples.
func (s scrape) series(name string) (*dto.MetricFamily, func(*dto.Metric) float64) {
	if f := s[name]; f != nil {
		// Only the field of the family's type is set; the others read 0.
		return f, func(m *dto.Metric) float64 {
			return m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	if base, ok := strings.CutSuffix(name, "_sum"); ok && s[base] != nil {
		return s[base], func(m *dto.Metric) float64 {
			return m.GetHistogram().GetSampleSum() + m.GetSummary().GetSampleSum()
		}
	}
	if base, ok := strings.CutSuffix(name, "_count"); ok && s[base] != nil {
		return s[base], func(m *dto.Metric) float64 {
			return float64(m.GetHistogram().GetSampleCount() + m.GetSummary().GetSampleCount())
		}
	}
	return nil, nil
}

// labelValue is the value of the metric's label name ("" without one).
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
