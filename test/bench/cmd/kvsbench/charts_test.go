package main

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// svgElement is what the tests read of an SVG element.
type svgElement struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG checks that s is well-formed XML with an <svg> root and returns
// its elements in document order.
func parseSVG(t *testing.T, s string) []svgElement {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	var els []svgElement
	var stack []int
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, s)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := svgElement{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if len(els) == 0 && (e.name != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root is %v, want svg in the SVG namespace", tok.Name)
			}
			els = append(els, e)
			stack = append(stack, len(els)-1)
		case xml.CharData:
			if len(stack) > 0 {
				els[stack[len(stack)-1]].text += string(tok)
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if len(els) == 0 {
		t.Fatal("empty document")
	}
	return els
}

func fig(unit string, reps ...float64) *figure {
	return &figure{Unit: unit, Reps: reps, Median: median(reps)}
}

// fixture is a small result: three repetitions of A and B proto, one of
// B json, the sample-apiserver's and the CRD + operator's columns of
// another branch, one figure missing (B json has no delete c16 rate) and a
// column unknown to the charts.
func fixture() *chartInput {
	in := &chartInput{Meta: meta{Mode: "quick", Date: "2026-12-01T00:00:00Z", Config: "reps=3 scale-reps=1"}, Figures: map[string]map[string]*figure{}}
	for _, conc := range []string{"c1", "c16"} {
		for _, op := range []string{"create", "get", "update", "delete"} {
			for _, kind := range []string{"rate", "p50"} {
				m := op + " " + conc + " " + kind
				in.Figures[m] = map[string]*figure{
					"A":       fig("ops/s", 100, 120, 110),
					"B proto": fig("ops/s", 90, 95, 91),
					"B json":  fig("ops/s", 80),
					"S json":  fig("ops/s", 70, 75, 72),
					"A+op":    fig("ops/s", 99, 101, 100),
					"Z":       fig("ops/s", 5),
				}
			}
		}
	}
	delete(in.Figures["delete c16 rate"], "B json")
	in.Figures["LIST 50 gzip latency"] = map[string]*figure{"A": fig("ms", 3), "E": fig("ms", 1)}
	in.Figures["LIST 200 gzip latency"] = map[string]*figure{"A": fig("ms", 9), "E": fig("ms", 2)}
	in.Figures["watch 10 p99"] = map[string]*figure{"A": fig("ms", 4, 6, 5), "B proto": fig("ms", 3)}
	in.Figures["watch 1 p99"] = map[string]*figure{"A": fig("ms", 2)}
	return in
}

func bars(els []svgElement) []svgElement {
	var out []svgElement
	for _, e := range els {
		if e.attrs["class"] == "bar" {
			out = append(out, e)
		}
	}
	return out
}

func TestOpsChartHasOneBarPerOperationAndColumn(t *testing.T) {
	in := fixture()
	c := opsCharts(in, "sub")["ops-rate"]
	var metrics []string
	for _, g := range c.groups {
		metrics = append(metrics, g.metric)
	}
	c.columns = chartColumns(in, metrics)
	wantCols := []string{"A", "A+op", "B json", "B proto", "S json", "Z"}
	if !slices.Equal(c.columns, wantCols) {
		t.Fatalf("columns = %v, want the legend order %v", c.columns, wantCols)
	}
	els := parseSVG(t, c.svg(in))
	got := map[string]int{}
	for _, e := range bars(els) {
		got[e.attrs["data-group"]+"|"+e.attrs["data-column"]]++
		if h := e.attrs["height"]; strings.HasPrefix(h, "-") || h == "NaN" {
			t.Errorf("bar %v has height %s", e.attrs, h)
		}
	}
	for _, g := range c.groups {
		for _, col := range wantCols {
			want := 1
			if g.metric == "delete c16 rate" && col == "B json" {
				want = 0
			}
			if n := got[g.metric+"|"+col]; n != want {
				t.Errorf("%s, %s: %d bars, want %d", g.metric, col, n, want)
			}
		}
	}
	if n := len(bars(els)); n != 8*6-1 {
		t.Errorf("%d bars, want %d", n, 8*6-1)
	}
	var texts []string
	missing, whiskers := 0, 0
	for _, e := range els {
		if e.name == "text" {
			texts = append(texts, e.text)
			if e.attrs["class"] == "missing" {
				missing++
			}
		}
		if e.attrs["class"] == "whisker" {
			whiskers++
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{
		"Throughput per operation", "ops/s", "create c=1", "delete c=16",
		"CRD (A)", "CRD + operator (A+op)", "kvstore-apiserver via aggregator, JSON (B json)",
		"kvstore-apiserver via aggregator, protobuf (B proto)", "sample-apiserver via aggregator, JSON (S json)", "Z (Z)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no label %q in:\n%s", want, all)
		}
	}
	if missing != 1 {
		t.Errorf("%d n/a marks, want 1 (delete c16, B json)", missing)
	}
	// A, A+op, B proto and S json have three repetitions with a range, in 8 groups.
	if whiskers != 4*8 {
		t.Errorf("%d whiskers, want %d", whiskers, 4*8)
	}
}

func TestBarChartHandlesNaNAndNoData(t *testing.T) {
	in := &chartInput{Figures: map[string]map[string]*figure{
		"get c1 rate": {"A": {Unit: "ops/s", Reps: []float64{math.NaN()}, Median: math.NaN()}, "B json": fig("ops/s", 3)},
	}}
	c := barChart{title: "t <&> \"q\"", unit: "ops/s", groups: []barGroup{{"get", "get c1 rate"}, {"gone", "absent metric"}}, columns: []string{"A", "B json"}}
	els := parseSVG(t, c.svg(in))
	if n := len(bars(els)); n != 1 {
		t.Errorf("%d bars, want 1 (A's figure is NaN)", n)
	}
	if cols := chartColumns(in, []string{"get c1 rate"}); !slices.Equal(cols, []string{"B json"}) {
		t.Errorf("columns with data = %v, want [B json]", cols)
	}
	// Nothing at all: still a document.
	parseSVG(t, barChart{title: "empty"}.svg(&chartInput{}))
}

func TestReadyChartDrawsEveryRepetitionMedianBold(t *testing.T) {
	var curve []readyPoint
	for i, r := range []int{0, 0, 0, 1, 3, 3, 3, 3, 4} {
		curve = appendReady(curve, float64(i), r)
	}
	want := []readyPoint{{0, 0}, {2, 0}, {3, 1}, {4, 3}, {7, 3}, {8, 4}}
	if !slices.Equal(curve, want) {
		t.Fatalf("appendReady kept %v, want %v", curve, want)
	}
	slow := []readyPoint{{5, 0}, {20, 4}}
	fast := []readyPoint{{5, 1}, {9, 4}}
	in := &chartInput{Controller: map[string]*controllerResult{
		sysOperator: {System: sysOperator, Stores: 4, Replicas: 3, ReadyCurves: [][]readyPoint{slow, fast, curve}, ReadySeconds: map[string]float64{"100%": 8}},
		sysKVS:      {System: sysKVS, Stores: 4, Replicas: 3, ReadyCurves: [][]readyPoint{curve}},
	}}
	svg, ok := readyChart(in, "sub")
	if !ok {
		t.Fatal("no chart")
	}
	els := parseSVG(t, svg)
	bold := map[string]string{}
	n := 0
	for _, e := range els {
		if e.attrs["class"] != "curve" {
			continue
		}
		n++
		if e.attrs["stroke-width"] == "2.5" {
			bold[e.attrs["data-system"]] = e.attrs["data-rep"]
		}
	}
	if n != 4 {
		t.Errorf("%d curves, want 4", n)
	}
	// The operator's repetitions end at 20, 9 and 8 s: the median is the second.
	if bold[sysOperator] != "2" || bold[sysKVS] != "1" {
		t.Errorf("bold repetitions %v, want the operator's 2 and kvstore-apiserver's 1", bold)
	}
	if !strings.Contains(svg, "all Ready in 8.0 s (median") {
		t.Error("legend without the median time to all Ready")
	}
	if _, ok := readyChart(&chartInput{Controller: map[string]*controllerResult{sysKVS: {System: sysKVS}}}, ""); ok {
		t.Error("a chart from results without curves")
	}
}

func TestChartsFromSavedJSON(t *testing.T) {
	dir := t.TempDir()
	in := fixture()
	in.Controller = map[string]*controllerResult{sysKVS: {System: sysKVS, Stores: 2, ReadyCurves: [][]readyPoint{{{1, 0}, {3, 2}}}}}
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	from := filepath.Join(dir, "run.json")
	if err := os.WriteFile(from, js, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "charts")
	if err := chartsMain([]string{"--from", from, "--out", out}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"run-ops-rate.svg", "run-ops-p50.svg", "run-list.svg", "run-watch-p99.svg", "run-controller-ready.svg"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		parseSVG(t, string(b))
	}
	// LIST groups by size, smallest first; watch by watcher count.
	list, _ := os.ReadFile(filepath.Join(out, "run-list.svg"))
	if i, j := strings.Index(string(list), ">50, gzip<"), strings.Index(string(list), ">200, gzip<"); i < 0 || j < 0 || i > j {
		t.Errorf("LIST groups out of order or missing (%d, %d)", i, j)
	}
	// A run with only the controller phase gets only its curve.
	only := &chartInput{Controller: in.Controller}
	files, err := writeCharts(only, filepath.Join(dir, "only"), "c")
	if err != nil || len(files) != 1 || files[0].Name != "c-controller-ready.svg" {
		t.Errorf("controller-only charts = %v, %v", files, err)
	}
	if md := chartsMarkdown(files); !strings.Contains(md, "](c-controller-ready.svg)") {
		t.Errorf("markdown does not link the chart:\n%s", md)
	}
}
