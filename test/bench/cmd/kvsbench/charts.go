package main

// Charts of a run, drawn from its results (the JSON kvsbench writes) as
// plain SVG: bars per operation and column, LIST times, watch delivery, and
// the controller phase's readiness curve. kvsbench writes them beside
// results.json; `kvsbench charts --from X.json` redraws them from a saved
// JSON, so a committed JSON and its committed charts always agree.

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// chartInput is the part of results.json the charts read.
type chartInput struct {
	Meta       meta                          `json:"meta"`
	Figures    map[string]map[string]*figure `json:"figures"`
	Controller map[string]*controllerResult  `json:"controller,omitempty"`
}

// chartFile is one chart written: its file name and what it shows.
type chartFile struct {
	Name  string
	Title string
}

// columnSystems name the systems a column ID starts with, in the fixed order
// of every chart's legend; the wire format ("json", "proto") follows. IDs of
// no system here are drawn after them under their own ID.
var columnSystems = []struct{ id, name string }{
	{"A", "CRD"},
	{"A+op", "CRD + operator"},
	{"B", "kvstore-apiserver via aggregator"},
	{"B′", "kvstore-apiserver direct"},
	{"E", "raw etcd"},
	{"S", "sample-apiserver via aggregator"},
	{"S′", "sample-apiserver direct"},
}

// columnColors are fixed per column so that a column has the same colour in
// every chart (Okabe–Ito, distinguishable with colour blindness; the
// protobuf column of a server a darker shade of its JSON one).
var columnColors = map[string]string{
	"A":        "#E69F00",
	"A+op":     "#8C5A00",
	"B json":   "#56B4E9",
	"B proto":  "#0072B2",
	"B′ json":  "#7FD4B8",
	"B′ proto": "#009E73",
	"E":        "#999999",
	"S json":   "#E8A0C4",
	"S proto":  "#CC79A7",
	"S′ json":  "#F0C27A",
	"S′ proto": "#D55E00",
}

var fallbackColors = []string{"#444444", "#B8860B", "#6A5ACD", "#2E8B57"}

// systemColors are the controller phase's systems' colours.
var systemColors = map[string]string{sysKVS: "#0072B2", sysOperator: "#E69F00"}

// columnName is a column's human name: "B proto" → "kvstore-apiserver via
// aggregator, protobuf".
func columnName(col string) string {
	sys, wire, _ := strings.Cut(col, " ")
	for _, s := range columnSystems {
		if s.id == sys {
			switch wire {
			case "":
				return s.name
			case "proto":
				return s.name + ", protobuf"
			case "json":
				return s.name + ", JSON"
			default:
				return s.name + ", " + wire
			}
		}
	}
	return col
}

// columnRank orders columns: by system as in columnSystems, JSON before
// protobuf; unknown ones last, by ID.
func columnRank(col string) (int, int) {
	sys, wire, _ := strings.Cut(col, " ")
	for i, s := range columnSystems {
		if s.id == sys {
			return i, map[string]int{"": 0, "json": 1, "proto": 2}[wire]
		}
	}
	return len(columnSystems), 0
}

// chartColumns are the columns present in metrics' figures, in legend order.
func chartColumns(in *chartInput, metrics []string) []string {
	seen := map[string]bool{}
	for _, m := range metrics {
		for col, f := range in.Figures[m] {
			if f != nil && len(f.Reps) > 0 && !math.IsNaN(f.Median) {
				seen[col] = true
			}
		}
	}
	cols := make([]string, 0, len(seen))
	for c := range seen {
		cols = append(cols, c)
	}
	sort.Slice(cols, func(i, j int) bool {
		si, wi := columnRank(cols[i])
		sj, wj := columnRank(cols[j])
		if si != sj {
			return si < sj
		}
		if wi != wj {
			return wi < wj
		}
		return cols[i] < cols[j]
	})
	return cols
}

func columnColor(col string, i int) string {
	if c, ok := columnColors[col]; ok {
		return c
	}
	return fallbackColors[i%len(fallbackColors)]
}

// bar is one column's value in one group: the median of the repetitions and
// their range; ok false when the column has no figure there.
type bar struct {
	median, lo, hi float64
	reps           int
	ok             bool
}

func barOf(f *figure) bar {
	if f == nil || len(f.Reps) == 0 || math.IsNaN(f.Median) || math.IsInf(f.Median, 0) {
		return bar{median: math.NaN(), lo: math.NaN(), hi: math.NaN()}
	}
	lo, hi := f.Reps[0], f.Reps[0]
	for _, v := range f.Reps {
		lo, hi = min(lo, v), max(hi, v)
	}
	return bar{median: f.Median, lo: lo, hi: hi, reps: len(f.Reps), ok: true}
}

// barGroup is one cluster of bars: a metric (e.g. "create c16 rate") with a
// label.
type barGroup struct {
	label, metric string
}

// barChart is a grouped bar chart: for each group, one bar per column.
type barChart struct {
	title, subtitle, unit string
	groups                []barGroup
	columns               []string
}

// svgDoc accumulates an SVG document.
type svgDoc struct {
	sb   strings.Builder
	w, h float64
}

func newSVG(w, h float64) *svgDoc {
	d := &svgDoc{w: w, h: h}
	fmt.Fprintf(&d.sb, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&d.sb, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#ffffff"/>`+"\n", w, h)
	return d
}

func (d *svgDoc) printf(format string, args ...interface{}) { fmt.Fprintf(&d.sb, format, args...) }

// text writes s at (x, y); anchor is start, middle or end; attrs more
// attributes (trusted, not escaped).
func (d *svgDoc) text(x, y float64, anchor, attrs, s string) {
	d.printf(`<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, attrs, esc(s))
}

func (d *svgDoc) String() string { return d.sb.String() + "</svg>\n" }

func esc(s string) string {
	var sb strings.Builder
	_ = xml.EscapeText(&sb, []byte(s))
	return sb.String()
}

// niceMax returns an axis top at or above v and a tick step of 1, 2, 2.5
// or 5 × a power of ten giving four to eight ticks.
func niceMax(v float64) (top, step float64) {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1, 0.2
	}
	raw := v / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*p*(1+1e-9) {
			step = m * p
			break
		}
	}
	return math.Ceil(v/step-1e-9) * step, step
}

func tickLabel(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000 && math.Mod(v, 1000) == 0:
		return fmt.Sprintf("%.0fk", v/1000)
	case math.Abs(v) >= 10 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

// referenceColumns are drawn on the axis the others set: raw etcd puts
// are several times faster than any API server, and an axis scaled to them
// would flatten the comparison the chart is for. Their bars are cut at the
// top and labelled with their value.
var referenceColumns = map[string]bool{"E": true}

// svg draws the chart; it is well-formed however many groups, columns or
// missing values there are (a missing bar is an "n/a" mark).
func (c barChart) svg(in *chartInput) string {
	const (
		left, right, top = 64.0, 16.0, 56.0
		plotH            = 300.0
		gap              = 18.0
	)
	nc := max(len(c.columns), 1)
	plotW := max(float64(len(c.groups))*(float64(nc)*10+gap), 760)
	groupW := plotW / float64(max(len(c.groups), 1))
	barW := min(28, (groupW-gap)/float64(nc))
	legendRows := (len(c.columns) + 1) / 2
	h := top + plotH + 40 + 20*float64(legendRows) + 12
	w := left + plotW + right
	d := newSVG(w, h)
	d.text(left, 22, "start", ` font-size="15" font-weight="bold"`, c.title)
	if c.subtitle != "" {
		d.text(left, 40, "start", ` font-size="11" fill="#555555"`, c.subtitle)
	}

	// The axis: the largest value (whisker included) of the columns that
	// are not references, or of all if there are only references.
	maxV, maxRef := 0.0, 0.0
	for _, g := range c.groups {
		for _, col := range c.columns {
			if b := barOf(in.Figures[g.metric][col]); b.ok {
				if referenceColumns[col] {
					maxRef = max(maxRef, b.hi, b.median)
				} else {
					maxV = max(maxV, b.hi, b.median)
				}
			}
		}
	}
	if maxV == 0 {
		maxV = maxRef
	}
	yMax, step := niceMax(maxV)
	y := func(v float64) float64 { return top + plotH - min(v, yMax)/yMax*plotH }
	for i := 0; float64(i)*step <= yMax*(1+1e-9); i++ {
		t := float64(i) * step
		d.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", left, y(t), left+plotW, y(t))
		d.text(left-6, y(t)+4, "end", ` font-size="11"`, tickLabel(t))
	}
	d.text(16, top+plotH/2, "middle", fmt.Sprintf(` transform="rotate(-90 16 %.1f)"`, top+plotH/2), c.unit)

	for gi, g := range c.groups {
		x0 := left + float64(gi)*groupW + (groupW-float64(nc)*barW)/2
		for ci, col := range c.columns {
			b := barOf(in.Figures[g.metric][col])
			x := x0 + float64(ci)*barW
			cx := x + barW/2
			if !b.ok {
				d.text(cx, y(0)-3, "middle", ` font-size="7" fill="#999999" class="missing"`, "n/a")
				continue
			}
			tip := fmt.Sprintf("%s, %s: %s %s", g.label, columnName(col), tickValue(b.median), c.unit)
			if b.reps > 1 {
				tip += fmt.Sprintf(" (median of %d; %s–%s)", b.reps, tickValue(b.lo), tickValue(b.hi))
			}
			d.printf(`<rect class="bar" data-column="%s" data-group="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
				esc(col), esc(g.metric), x+1, y(b.median), barW-2, y(0)-y(b.median), columnColor(col, ci), esc(tip))
			labelY := y(b.median) - 4
			if b.median > yMax {
				// Cut: a white zigzag across the bar's top.
				d.printf(`<path class="cut" d="M%.1f %.1fl%.1f -4l%.1f 4l%.1f -4" stroke="#ffffff" stroke-width="2" fill="none"/>`+"\n",
					x+1, y(yMax)+8, (barW-2)/3, (barW-2)/3, (barW-2)/3)
				labelY = y(yMax) + 14
			}
			if b.reps > 1 && b.hi > b.lo {
				d.printf(`<path class="whisker" d="M%.1f %.1fV%.1fM%.1f %.1fh%.1fM%.1f %.1fh%.1f" stroke="#222222" stroke-width="1" fill="none"/>`+"\n",
					cx, y(b.lo), y(b.hi), cx-3, y(b.lo), 6.0, cx-3, y(b.hi), 6.0)
				if b.hi <= yMax {
					labelY = min(labelY, y(b.hi)-4)
				}
			}
			fill := "#333333"
			if b.median > yMax {
				fill = "#ffffff"
			}
			d.printf(`<text class="value" x="%.1f" y="%.1f" font-size="9" fill="%s" text-anchor="%s" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
				cx+3, labelY, fill, map[bool]string{true: "end", false: "start"}[b.median > yMax], cx+3, labelY, esc(tickValue(b.median)))
		}
		d.text(left+float64(gi)*groupW+groupW/2, top+plotH+16, "middle", ` font-size="11"`, g.label)
	}
	d.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333333"/>`+"\n", left, y(0), left+plotW, y(0))

	ly := top + plotH + 40
	for i, col := range c.columns {
		lx := left + float64(i%2)*plotW/2
		yy := ly + float64(i/2)*20
		d.printf(`<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", lx, yy-10, columnColor(col, i))
		label := fmt.Sprintf("%s (%s)", columnName(col), col)
		if referenceColumns[col] && maxRef > yMax {
			label += ", cut at the top"
		}
		d.text(lx+18, yy, "start", ` class="legend"`, label)
	}
	return d.String()
}

// tickValue formats a value for a tooltip.
func tickValue(v float64) string { return format(v, "") }

// opsCharts are the bars per operation: rate and p50 latency.
func opsCharts(in *chartInput, sub string) map[string]barChart {
	var rate, p50 []barGroup
	for _, conc := range []int{1, 16} {
		for _, op := range []string{"create", "get", "update", "delete"} {
			m := fmt.Sprintf("%s c%d", op, conc)
			l := fmt.Sprintf("%s c=%d", op, conc)
			rate = append(rate, barGroup{l, m + " rate"})
			p50 = append(p50, barGroup{l, m + " p50"})
		}
	}
	return map[string]barChart{
		"ops-rate": {title: "Throughput per operation (higher is better)", subtitle: sub, unit: "ops/s", groups: rate},
		"ops-p50":  {title: "p50 latency per operation (lower is better)", subtitle: sub, unit: "ms", groups: p50},
	}
}

// sizesOf returns the numbers n in metrics "<prefix> n <suffix…>", sorted.
func sizesOf(in *chartInput, prefix string) []int {
	seen := map[int]bool{}
	for m := range in.Figures {
		rest, ok := strings.CutPrefix(m, prefix+" ")
		if !ok {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(rest, "%d", &n); err == nil {
			seen[n] = true
		}
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

func listChart(in *chartInput, sub string) barChart {
	var gs []barGroup
	for _, n := range sizesOf(in, "LIST") {
		for _, enc := range []string{"gzip", "identity"} {
			gs = append(gs, barGroup{fmt.Sprintf("%d, %s", n, enc), fmt.Sprintf("LIST %d %s latency", n, enc)})
		}
	}
	return barChart{title: "LIST of the whole namespace, by object count and encoding (lower is better)", subtitle: sub, unit: "ms", groups: gs}
}

func watchChart(in *chartInput, sub string) barChart {
	var gs []barGroup
	for _, n := range sizesOf(in, "watch") {
		l := fmt.Sprintf("%d watchers", n)
		if n == 1 {
			l = "1 watcher"
		}
		gs = append(gs, barGroup{l, fmt.Sprintf("watch %d p99", n)})
	}
	return barChart{title: "Watch delivery p99, update sent → event at each watcher (lower is better)", subtitle: sub, unit: "ms", groups: gs}
}

// readyPoint is one poll of the controller phase: seconds since the first
// create, and how many stores were Ready then.
type readyPoint struct {
	Seconds float64 `json:"t_s"`
	Ready   int     `json:"ready"`
}

// appendReady adds a poll to a readiness curve, dropping the inner polls of
// a run of equal counts: a line through the kept points is the same line.
func appendReady(c []readyPoint, t float64, ready int) []readyPoint {
	p := readyPoint{Seconds: math.Round(t*1000) / 1000, Ready: ready}
	if n := len(c); n >= 2 && c[n-1].Ready == ready && c[n-2].Ready == ready {
		c[n-1] = p
		return c
	}
	return append(c, p)
}

// medianRun is the index of the curve whose last point (all Ready, or the
// time-out) is the median, the lower one of an even count.
func medianRun(curves [][]readyPoint) int {
	idx := make([]int, 0, len(curves))
	for i, c := range curves {
		if len(c) > 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return -1
	}
	end := func(i int) float64 { return curves[i][len(curves[i])-1].Seconds }
	sort.SliceStable(idx, func(a, b int) bool { return end(idx[a]) < end(idx[b]) })
	return idx[(len(idx)-1)/2]
}

// readyChart draws the fraction of stores Ready over time since the first
// create, one line per system and repetition, the median repetition bold;
// ok false when no result carries a curve.
func readyChart(in *chartInput, sub string) (string, bool) {
	var systems []string
	for name, r := range in.Controller {
		if r != nil && len(r.ReadyCurves) > 0 {
			systems = append(systems, name)
		}
	}
	if len(systems) == 0 {
		return "", false
	}
	sort.Slice(systems, func(i, j int) bool {
		// kvstore-apiserver first, then by name.
		if (systems[i] == sysKVS) != (systems[j] == sysKVS) {
			return systems[i] == sysKVS
		}
		return systems[i] < systems[j]
	})
	const (
		left, right, top = 64.0, 24.0, 72.0
		plotW, plotH     = 720.0, 300.0
	)
	maxT := 0.0
	for _, s := range systems {
		for _, c := range in.Controller[s].ReadyCurves {
			for _, p := range c {
				maxT = max(maxT, p.Seconds)
			}
		}
	}
	tMax, tStep := niceMax(maxT)
	h := top + plotH + 40 + 20*float64(len(systems)) + 24
	d := newSVG(left+plotW+right, h)
	d.text(left, 22, "start", ` font-size="15" font-weight="bold"`, "Stores Ready over time since the first create (controller phase)")
	first := in.Controller[systems[0]]
	d.text(left, 40, "start", ` font-size="11" fill="#555555"`, fmt.Sprintf("%s; %d stores × %d replicas (+%d proxy) per system", sub, first.Stores, first.Replicas, first.ProxyReplicas))
	d.text(left, 56, "start", ` font-size="11" fill="#555555"`, "bold: each system's median repetition by time to all Ready (the lower middle one of an even count), thin: the others")
	x := func(t float64) float64 { return left + t/tMax*plotW }
	y := func(f float64) float64 { return top + plotH - f*plotH }
	for f := 0.0; f <= 1.0001; f += 0.1 {
		stroke := "#eeeeee"
		if math.Abs(f-0.5) < 1e-6 || math.Abs(f-0.9) < 1e-6 || math.Abs(f-1) < 1e-6 {
			stroke = "#bbbbbb"
		}
		d.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", left, y(f), left+plotW, y(f), stroke)
		d.text(left-6, y(f)+4, "end", ` font-size="11"`, fmt.Sprintf("%.0f%%", 100*f))
	}
	for t := 0.0; t <= tMax*(1+1e-9); t += tStep {
		d.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eeeeee"/>`+"\n", x(t), top, x(t), top+plotH)
		d.text(x(t), top+plotH+16, "middle", ` font-size="11"`, tickLabel(t))
	}
	d.text(left+plotW/2, top+plotH+32, "middle", "", "seconds since the first create")
	d.text(16, top+plotH/2, "middle", fmt.Sprintf(` transform="rotate(-90 16 %.1f)"`, top+plotH/2), "stores Ready")
	d.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333333"/>`+"\n", left, top, plotW, plotH)

	for si, s := range systems {
		r := in.Controller[s]
		color := systemColors[s]
		if color == "" {
			color = fallbackColors[si%len(fallbackColors)]
		}
		med := medianRun(r.ReadyCurves)
		n := float64(max(r.Stores, 1))
		for i, c := range r.ReadyCurves {
			if len(c) == 0 {
				continue
			}
			var path strings.Builder
			// Before the first create no store exists: the curve starts at 0.
			fmt.Fprintf(&path, "M%.1f %.1f", x(0), y(0))
			for _, p := range c {
				fmt.Fprintf(&path, "L%.1f %.1f", x(p.Seconds), y(float64(p.Ready)/n))
			}
			width, opacity := "1", "0.45"
			if i == med {
				width, opacity = "2.5", "1"
			}
			last := c[len(c)-1]
			d.printf(`<path class="curve" data-system="%s" data-rep="%d" d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-opacity="%s"><title>%s</title></path>`+"\n",
				esc(s), i+1, path.String(), color, width, opacity,
				esc(fmt.Sprintf("%s, repetition %d: %d of %d Ready at %.1f s", s, i+1, last.Ready, r.Stores, last.Seconds)))
		}
		ly := top + plotH + 48 + 20*float64(si)
		d.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2.5"/>`+"\n", left, ly-4, left+24, ly-4, color)
		label := fmt.Sprintf("%s, %d repetition(s)", s, len(r.ReadyCurves))
		if v, ok := r.ReadySeconds["100%"]; ok {
			label += fmt.Sprintf(": all Ready in %.1f s (median of the repetitions)", v)
		}
		if r.TimedOut {
			label += "; timed out"
		}
		d.text(left+30, ly, "start", ` class="legend"`, label)
	}
	return d.String(), true
}

// chartSubtitle says which run the charts are of.
func chartSubtitle(in *chartInput, bars bool) string {
	m := in.Meta
	s := fmt.Sprintf("kvsbench, %s mode, %s", m.Mode, m.Date)
	if m.Config != "" && bars {
		if reps, _, ok := strings.Cut(m.Config, " "); ok {
			s += ", " + reps
		}
	}
	if bars {
		s += "; bars: median, whiskers: min–max of the repetitions"
	}
	return s
}

// writeCharts writes every chart the results have data for into dir, named
// <prefix>-<chart>.svg, and returns them in reading order.
func writeCharts(in *chartInput, dir, prefix string) ([]chartFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	sub := chartSubtitle(in, true)
	type named struct {
		key   string
		chart barChart
	}
	ops := opsCharts(in, sub)
	bars := []named{{"ops-rate", ops["ops-rate"]}, {"ops-p50", ops["ops-p50"]}, {"list", listChart(in, sub)}, {"watch-p99", watchChart(in, sub)}}
	var out []chartFile
	for _, n := range bars {
		var metrics []string
		for _, g := range n.chart.groups {
			metrics = append(metrics, g.metric)
		}
		n.chart.columns = chartColumns(in, metrics)
		if len(n.chart.columns) == 0 {
			continue // its phase did not run
		}
		f := chartFile{Name: prefix + "-" + n.key + ".svg", Title: n.chart.title}
		if err := os.WriteFile(filepath.Join(dir, f.Name), []byte(n.chart.svg(in)), 0o644); err != nil {
			return out, err
		}
		out = append(out, f)
	}
	if svg, ok := readyChart(in, chartSubtitle(in, false)); ok {
		f := chartFile{Name: prefix + "-controller-ready.svg", Title: "Stores Ready over time since the first create (controller phase)"}
		if err := os.WriteFile(filepath.Join(dir, f.Name), []byte(svg), 0o644); err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

// chartsMarkdown links the charts from a report in the same directory.
func chartsMarkdown(files []chartFile) string {
	if len(files) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("\n### Charts\n\nDrawn from results.json by kvsbench (`kvsbench charts --from results.json` redraws them).\n\n")
	for _, f := range files {
		fmt.Fprintf(&sb, "![%s](%s)\n\n", f.Title, f.Name)
	}
	return sb.String()
}

// chartsMain is `kvsbench charts`: redraw the charts of a saved results
// JSON without running the benchmark.
func chartsMain(args []string) error {
	fs := flag.NewFlagSet("kvsbench charts", flag.ContinueOnError)
	from := fs.String("from", "", "a results JSON written by kvsbench (required)")
	out := fs.String("out", "", "where the SVGs go (default: beside the JSON)")
	prefix := fs.String("prefix", "", "file name prefix of the SVGs (default: the JSON's name without .json)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" {
		return errors.New("charts: --from is required")
	}
	raw, err := os.ReadFile(*from)
	if err != nil {
		return err
	}
	var in chartInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return fmt.Errorf("charts: %s: %w", *from, err)
	}
	if *out == "" {
		*out = filepath.Dir(*from)
	}
	if *prefix == "" {
		*prefix = strings.TrimSuffix(filepath.Base(*from), ".json")
	}
	files, err := writeCharts(&in, *out, *prefix)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("charts: %s has nothing to draw", *from)
	}
	for _, f := range files {
		fmt.Printf("![%s](%s)\n", f.Title, f.Name)
	}
	return nil
}
