package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// row is one line of a result table: a metric measured in some columns.
type row struct {
	label  string
	metric string
	unit   string
	// lower says smaller is better (latency, CPU, bytes).
	lower bool
}

// ratios are the comparison columns: numerator / denominator, each side at
// its best (kvstore-apiserver's protobuf against the CRD's JSON, which is all
// a CRD serves) and like for like (JSON against JSON).
var ratios = []struct{ num, den, kind string }{
	{colBP, colA, "best vs best"},
	{colBJ, colA, "like for like"},
	{colBP, colAop, "best vs best"},
	{colBJ, colAop, "like for like"},
	{colDP, colA, "best vs best"},
	{colDJ, colA, "like for like"},
	{colDP, colE, ""},
	// The peer: both it and the CRD serve only JSON, so one ratio is both
	// readings; kvstore-apiserver against it, each way, through the same hop.
	{colS, colA, "both readings"},
	{colBP, colS, "best vs best"},
	{colBJ, colS, "like for like"},
	// The peer directly: what a generic k8s.io/apiserver server reaches
	// against raw etcd here, and ours against it with no hop on either side.
	{colDS, colE, ""},
	{colDP, colDS, "best vs best"},
	{colDJ, colDS, "like for like"},
}

func (b *bench) opRows() []row {
	var rows []row
	for _, conc := range []int{1, 16} {
		for _, op := range []string{"create", "get", "update", "delete"} {
			m := fmt.Sprintf("%s c%d", op, conc)
			rows = append(rows,
				row{fmt.Sprintf("%s, c=%d, p50", op, conc), m + " p50", "ms", true},
				row{fmt.Sprintf("%s, c=%d, p99", op, conc), m + " p99", "ms", true},
				row{fmt.Sprintf("%s, c=%d, rate", op, conc), m + " rate", "ops/s", false},
			)
		}
	}
	return rows
}

func (b *bench) sustainedRows() []row {
	return []row{
		{"create, c=16, p50", "sustained create p50", "ms", true},
		{"create, c=16, p99", "sustained create p99", "ms", true},
		{"create, c=16, rate", "sustained create rate", "ops/s", false},
	}
}

func (b *bench) listRows() []row {
	var rows []row
	for _, size := range b.cfg.listSizes {
		for _, enc := range []string{"gzip", "identity"} {
			m := fmt.Sprintf("LIST %d %s", size, enc)
			rows = append(rows,
				row{fmt.Sprintf("LIST %d, %s, latency", size, enc), m + " latency", "ms", true},
				row{fmt.Sprintf("LIST %d, %s, on the wire", size, enc), m + " wire", "KiB", true},
			)
		}
	}
	return rows
}

func (b *bench) watchRows() []row {
	var rows []row
	for _, n := range b.cfg.watchers {
		m := fmt.Sprintf("watch %d", n)
		rows = append(rows,
			row{fmt.Sprintf("%d watcher(s), send→event p50", n), m + " p50", "ms", true},
			row{fmt.Sprintf("%d watcher(s), send→event p99", n), m + " p99", "ms", true},
			row{fmt.Sprintf("%d watcher(s), send→event max", n), m + " max", "ms", true},
			row{fmt.Sprintf("%d watcher(s), ack→event p50 (unclamped: negative when the event comes first)", n), m + " from-ack p50", "ms", true},
			row{fmt.Sprintf("%d watcher(s), events before the ack", n), m + " before-ack share", "%", true},
		)
	}
	return rows
}

func (b *bench) cpuRows(window string) []row {
	rows := []row{{"total of the path's servers", "cpu " + window + " total", "CPU s/1000", true}}
	for _, p := range append(append([]string(nil), measuredProcs...), pOperator, pSample) {
		rows = append(rows, row{p, "cpu " + window + " " + p, "CPU s/1000", true})
	}
	return append(rows, row{"measured window", "cpu " + window + " window", "s", true})
}

func (b *bench) memRows() []row {
	return []row{
		{"RSS before", "mem RSS before", "MiB", true},
		{"RSS after", "mem RSS after", "MiB", true},
		{"RSS growth", "mem RSS growth", "MiB", true},
		{"RSS growth less free heap not yet returned to the OS", "mem RSS growth less unreturned", "MiB", true},
		{"live heap before (after a forced GC)", "mem heap before", "MiB", true},
		{"live heap after (after a forced GC)", "mem heap after", "MiB", true},
		{"live heap growth", "mem heap growth", "MiB", true},
		{"live heap growth per object", "mem heap growth per object", "KiB", true},
		{"free heap not yet returned to the OS at a reading (max)", "mem unscavenged at reading", "MiB", true},
	}
}

func format(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case unit == "ops/s" || unit == "KiB" || math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func (b *bench) value(metric, col string) float64 {
	v, ok := b.figs.get(metric, col)
	if !ok {
		return math.NaN()
	}
	return v
}

// cell is a figure's median, with the range of its repetitions beside it
// when there were several.
func (b *bench) cell(metric, col, unit string) string {
	lo, hi, n := b.figs.span(metric, col)
	v := format(b.value(metric, col), unit)
	if n < 2 {
		return v
	}
	return fmt.Sprintf("%s (%s–%s)", v, format(lo, unit), format(hi, unit))
}

// table renders rows over cols, with ratio columns when withRatios.
func (b *bench) table(rows []row, cols []string, withRatios bool) string {
	var sb strings.Builder
	sb.WriteString("| metric | unit | better |")
	for _, c := range cols {
		sb.WriteString(" " + c + " |")
	}
	if withRatios {
		for _, r := range ratios {
			if r.kind != "" {
				fmt.Fprintf(&sb, " %s / %s (%s) |", r.num, r.den, r.kind)
			} else {
				fmt.Fprintf(&sb, " %s / %s |", r.num, r.den)
			}
		}
	}
	sb.WriteString("\n|---|---|---|")
	for range cols {
		sb.WriteString("--:|")
	}
	if withRatios {
		for range ratios {
			sb.WriteString("--:|")
		}
	}
	sb.WriteString("\n")
	rendered := 0
	for _, r := range rows {
		any := false
		for _, c := range cols {
			if !math.IsNaN(b.value(r.metric, c)) {
				any = true
			}
		}
		if !any {
			continue
		}
		better := "higher"
		if r.lower {
			better = "lower"
		}
		rendered++
		fmt.Fprintf(&sb, "| %s | %s | %s |", r.label, r.unit, better)
		for _, c := range cols {
			sb.WriteString(" " + b.cell(r.metric, c, r.unit) + " |")
		}
		if withRatios {
			for _, q := range ratios {
				num, den := b.value(r.metric, q.num), b.value(r.metric, q.den)
				if math.IsNaN(num) || math.IsNaN(den) || den == 0 || r.unit == "%" {
					sb.WriteString(" – |")
					continue
				}
				fmt.Fprintf(&sb, " %.2f |", num/den)
			}
		}
		sb.WriteString("\n")
	}
	if rendered == 0 {
		return "" // a phase that did not run: no table
	}
	return sb.String()
}

// check is one performance target of the issue, judged twice: each side at
// its best (kvstore-apiserver's protobuf, the CRD's JSON) and like for like
// (JSON on both sides).
type check struct {
	Target string `json:"target"`
	Want   string `json:"want"`
	// Higher says a larger value is better (a rate, a speed-up).
	Higher bool `json:"higher_is_better"`
	Best   side `json:"best_vs_best"`
	Like   side `json:"like_for_like"`
}

// side is one reading of a check.
type side struct {
	Measured string   `json:"measured"`
	Value    *float64 `json:"value"`
	Met      *bool    `json:"met"`
}

func verdict(s side) string {
	switch {
	case s.Met == nil:
		return "not measured"
	case *s.Met:
		return "**met**"
	default:
		return "**missed**"
	}
}

// headline is the weaker of a check's two readings, named: a target counts
// as met only if both readings meet it.
func headline(c check) string {
	switch {
	case c.Best.Value == nil && c.Like.Value == nil:
		return "not measured"
	case c.Best.Value == nil:
		return verdict(c.Like) + " (like for like; best vs best not measured)"
	case c.Like.Value == nil:
		return verdict(c.Best) + " (best vs best; like for like not measured)"
	}
	weaker, name := c.Best, "best vs best"
	if (c.Higher && *c.Like.Value < *c.Best.Value) || (!c.Higher && *c.Like.Value > *c.Best.Value) {
		weaker, name = c.Like, "like for like"
	}
	if *c.Best.Value == *c.Like.Value {
		name = "both readings"
	}
	met := *c.Best.Met && *c.Like.Met
	if met {
		return fmt.Sprintf("**met**; weaker: %s, %.2f", name, *weaker.Value)
	}
	return fmt.Sprintf("**missed**; weaker: %s, %.2f", name, *weaker.Value)
}

func (b *bench) checks() []check {
	largest := b.cfg.listSizes[len(b.cfg.listSizes)-1]
	watchN := b.cfg.watchers[len(b.cfg.watchers)-1]
	for _, n := range b.cfg.watchers {
		if n == 50 {
			watchN = 50
		}
	}
	mk := func(value float64, ok func(float64) bool, measured string) side {
		s := side{Measured: measured}
		if !math.IsNaN(value) && !math.IsInf(value, 0) {
			met := ok(value)
			s.Value, s.Met = &value, &met
		} else {
			s.Measured = "–" // its phase or column did not run
		}
		return s
	}
	v := b.value
	var cs []check
	atLeast := func(bar float64) func(float64) bool { return func(x float64) bool { return x >= bar } }
	atMost := func(bar float64) func(float64) bool { return func(x float64) bool { return x <= bar } }

	a, bp, bj := v("create c16 rate", colA), v("create c16 rate", colBP), v("create c16 rate", colBJ)
	cs = append(cs, check{Target: "create rate at concurrency 16, through the aggregator", Want: "≥ CRD's", Higher: true,
		Best: mk(bp/a, atLeast(1), fmt.Sprintf("B proto %s vs A %s ops/s = %.2f×; sustained (scale fill) %s vs %s ops/s",
			format(bp, "ops/s"), format(a, "ops/s"), bp/a, format(v("sustained create rate", colBP), "ops/s"), format(v("sustained create rate", colA), "ops/s"))),
		Like: mk(bj/a, atLeast(1), fmt.Sprintf("B json %s vs A %s ops/s = %.2f×", format(bj, "ops/s"), format(a, "ops/s"), bj/a)),
	})

	// The first bar: at least the peer's ratio to the CRD, measured
	// in the same run (S/A), i.e. at least the peer's rate.
	for _, op := range []string{"create", "get"} {
		m := op + " c16 rate"
		a, s, bp, bj := v(m, colA), v(m, colS), v(m, colBP), v(m, colBJ)
		cs = append(cs, check{Target: op + " rate at concurrency 16 through the aggregator, against the CRD: at least the peer's ratio", Want: "≥ S json / A", Higher: true,
			Best: mk(bp/s, atLeast(1), fmt.Sprintf("B proto / A %.2f× vs S json / A %.2f× (B proto %s, S json %s ops/s)", bp/a, s/a, format(bp, "ops/s"), format(s, "ops/s"))),
			Like: mk(bj/s, atLeast(1), fmt.Sprintf("B json / A %.2f× vs S json / A %.2f× (B json %s, S json %s ops/s)", bj/a, s/a, format(bj, "ops/s"), format(s, "ops/s"))),
		})
	}

	a, bp, bj = v("create c1 p50", colA), v("create c1 p50", colBP), v("create c1 p50", colBJ)
	cs = append(cs, check{Target: "create p50 at concurrency 1, through the aggregator", Want: "≤ CRD's + 1 ms",
		Best: mk(bp-a, atMost(1), fmt.Sprintf("B proto %s vs A %s ms: %+.2f ms", format(bp, "ms"), format(a, "ms"), bp-a)),
		Like: mk(bj-a, atMost(1), fmt.Sprintf("B json %s vs A %s ms: %+.2f ms", format(bj, "ms"), format(a, "ms"), bj-a)),
	})

	m := fmt.Sprintf("LIST %d gzip latency", largest)
	mi := fmt.Sprintf("LIST %d identity latency", largest)
	a, bp, bj = v(m, colA), v(m, colBP), v(m, colBJ)
	ai, bpi, bji := v(mi, colA), v(mi, colBP), v(mi, colBJ)
	cs = append(cs, check{Target: fmt.Sprintf("LIST of %d through the aggregator (gzip, as client-go asks)", largest), Want: "≥ 3× faster than the CRD", Higher: true,
		Best: mk(a/bp, atLeast(3), fmt.Sprintf("B proto %s vs A %s ms = %.2f× faster (uncompressed %.2f×)", format(bp, "ms"), format(a, "ms"), a/bp, ai/bpi)),
		Like: mk(a/bj, atLeast(3), fmt.Sprintf("B json %s vs A %s ms = %.2f× faster (uncompressed %.2f×)", format(bj, "ms"), format(a, "ms"), a/bj, ai/bji)),
	})

	a, bp = v("cpu scale creates total", colA), v("cpu scale creates total", colBP)
	c16a, c16j, c16p := v("cpu c16 creates total", colA), v("cpu c16 creates total", colBJ), v("cpu c16 creates total", colBP)
	cs = append(cs, check{Target: "CPU per 1000 creates: etcds + kube-apiserver + kvstore-apiserver vs etcd + kube-apiserver", Want: "≤ CRD's",
		Best: mk(bp/a, atMost(1), fmt.Sprintf("scale run, B proto %.2f vs A %.2f CPU s = %.2f× (each object also gets one status write on both sides: our controller's, an imitated operator's)", bp, a, bp/a)),
		Like: mk(c16j/c16a, atMost(1), fmt.Sprintf("c=16 run, B json %.2f vs A %.2f CPU s = %.2f× (creates only on the CRD side; our controller's status write included on ours; B proto: %.2f×)", c16j, c16a, c16j/c16a, c16p/c16a)),
	})

	kvsGrowth, kubeGrowth := v("mem RSS growth", colBP), v("mem RSS growth", colA)
	kvsAdj, kubeAdj := v("mem RSS growth less unreturned", colBP), v("mem RSS growth less unreturned", colA)
	kvsHeap, kubeHeap := v("mem heap growth", colBP), v("mem heap growth", colA)
	rssRatio := kvsGrowth / kubeGrowth
	if !(kubeGrowth > 0) {
		rssRatio = math.NaN() // kube-apiserver did not grow measurably: no ratio
	}
	memSide := mk(rssRatio, atMost(0.25),
		fmt.Sprintf("RSS %.1f vs %.1f MiB = %.0f%%; RSS less unreturned free heap %.1f vs %.1f MiB = %.0f%%; live heap %.1f vs %.1f MiB = %.0f%%",
			kvsGrowth, kubeGrowth, 100*kvsGrowth/kubeGrowth, kvsAdj, kubeAdj, 100*kvsAdj/kubeAdj, kvsHeap, kubeHeap, 100*kvsHeap/kubeHeap))
	memLike := memSide
	memLike.Measured = "the same reading: what a server holds does not depend on the wire format its clients use"
	cs = append(cs, check{Target: fmt.Sprintf("kvstore-apiserver memory growth for %d stores vs kube-apiserver's for %d CRs (RSS)", largest, largest), Want: "≤ 25%",
		Best: memSide, Like: memLike})

	m = fmt.Sprintf("watch %d p99", watchN)
	a, bp, bj = v(m, colA), v(m, colBP), v(m, colBJ)
	cs = append(cs, check{Target: fmt.Sprintf("watch delivery p99 (send→event) with %d watchers, through the aggregator", watchN), Want: "≤ CRD's",
		Best: mk(bp/a, atMost(1), fmt.Sprintf("B proto %s vs A %s ms = %.2f×", format(bp, "ms"), format(a, "ms"), bp/a)),
		Like: mk(bj/a, atMost(1), fmt.Sprintf("B json %s vs A %s ms = %.2f×", format(bj, "ms"), format(a, "ms"), bj/a)),
	})

	cs = append(cs, b.operatorChecks(mk, atLeast, atMost)...)

	dp, dj, e := v("create c1 rate", colDP), v("create c1 rate", colDJ), v("create c1 rate", colE)
	cs = append(cs, check{Target: "create rate at concurrency 1, directly vs raw etcd puts", Want: "≥ 0.35×", Higher: true,
		Best: mk(dp/e, atLeast(0.35), fmt.Sprintf("B′ proto %s vs E %s ops/s = %.2f×", format(dp, "ops/s"), format(e, "ops/s"), dp/e)+peerDirect(v)),
		Like: mk(dj/e, atLeast(0.35), fmt.Sprintf("B′ json %s vs E %s ops/s = %.2f× (etcd has no JSON: its bytes are the protobuf ours stores)", format(dj, "ops/s"), format(e, "ops/s"), dj/e)+peerDirect(v)),
	})
	return cs
}

// peerDirect is what the peer reached directly against raw etcd at c=1 in
// the same run, if it was measured: what a generic k8s.io/apiserver server
// reaches on the same machine.
func peerDirect(v func(metric, col string) float64) string {
	ds, e := v("create c1 rate", colDS), v("create c1 rate", colE)
	if math.IsNaN(ds) {
		return ""
	}
	return fmt.Sprintf("; the peer directly (S′ json) %s ops/s = %.2f×", format(ds, "ops/s"), ds/e)
}

func (b *bench) markdown(cs []check) string {
	var sb strings.Builder
	m := b.meta
	largest := b.cfg.listSizes[len(b.cfg.listSizes)-1]
	fmt.Fprintf(&sb, "## Results (%s mode, %s)\n\n", m.Mode, m.Date)
	if m.Incomplete != "" {
		fmt.Fprintf(&sb, "- **Incomplete**: %s. Every figure below is what the run measured until then.\n", m.Incomplete)
	}
	fmt.Fprintf(&sb, "- Command: `%s` (%s); took %s\n", m.Command, m.Config, m.Duration)
	fmt.Fprintf(&sb, "- Machine: %d CPUs (%s), %s RAM, %s; %s\n", m.CPUs, m.CPUModel, m.MemTotal, m.Kernel, m.GoVersion)
	fmt.Fprintf(&sb, "- kube-apiserver %s, kvstore-apiserver %s (%s); etcd fsync %s\n", m.KubeVersion, m.KVSVersion, m.KVSBinary, m.EtcdFsync)
	fmt.Fprintf(&sb, "- kvstore-apiserver levers: %s\n", m.KVSLevers)
	fmt.Fprintf(&sb, "- Client: %s\n", m.ClientQPS)
	o := m.Objects
	fmt.Fprintf(&sb, "- Objects: create request %d B of JSON; a store is %d B as JSON (with managedFields and status) and %d B stored (%s); a custom resource %d B as JSON and %d B stored (%s)\n",
		o.RequestJSON, o.StoreJSON, o.StoreStored, o.StoreStoredFormat, o.CRJSON, o.CRStored, o.CRStoredFormat)
	fmt.Fprintf(&sb, "- Wire formats seen: %s\n", wireFormatsLine(m.WireFormats))
	sb.WriteString("- Every figure is the median over the repetitions, with their range (min–max) beside it when there were several; ratios are of those medians.\n")
	fmt.Fprintf(&sb, "- Column order: drawn at random for every phase and repetition (seed %d): %s\n", m.Seed, strings.Join(m.Orders, "; "))
	fmt.Fprintf(&sb, "- Feature gates: %s. Gates that differ between the two servers: %s\n\n", m.Compression, orNone(m.FeatureGates))

	sb.WriteString("Columns: **A** CRD via kube-apiserver (JSON), no controller; **A+op** the same with the controller-runtime operator of test/bench/operator running (it adds its finalizer and writes status once per paused store); **B** kvstore-apiserver through kube-apiserver's aggregator; **B′** kvstore-apiserver directly on :8443; **E** raw etcd puts of the bytes kvstore-apiserver stores.\n")
	sb.WriteString(b.peerNote())
	// section writes a heading, an introduction and a table, or nothing when
	// the table is empty because its phase did not run.
	section := func(heading, intro, table string) {
		if table == "" {
			return
		}
		sb.WriteString("\n### " + heading + "\n\n" + intro + table)
	}
	section("Create, get, update, delete", "", b.table(b.opRows(), columns, true))
	section("LIST (whole namespace, to the last byte; not decoded)", "", b.table(b.listRows(), columns, true))
	section("Watch delivery (update sent → event at each watcher; one write at a time)", "", b.table(b.watchRows(), columns, true))
	section("CPU seconds per 1000 creates, c=16 run (creates; for B and B′ also the controller's status write)", "", b.table(b.cpuRows("c16 creates"), columns, true))
	fillFrom := 0
	if n := len(b.cfg.listSizes); n > 1 {
		fillFrom = b.cfg.listSizes[n-2]
	}
	section(fmt.Sprintf("Sustained creates: the scale run's fill of objects %d..%d at concurrency 16 (for B, the controller's status writes run alongside)", fillFrom, largest-1),
		"", b.table(b.sustainedRows(), []string{colA, colBP, colE, colS}, false))
	section(fmt.Sprintf("CPU seconds per 1000 objects, scale run to %d (create + one status write each, on both sides)", largest),
		"", b.table(b.cpuRows("scale creates"), []string{colA, colBP, colE, colS}, false))
	memIntro := "Quick mode: read right after the fills, after a forced GC only (not a steady state; the watch caches still hold the fill's events).\n\n"
	if b.cfg.steadyMemory {
		memIntro = "Read in a steady state: 80 s after the last write, a few updates to shrink the watch caches' event history, a forced GC, then RSS once the Go runtime has returned its free heap to the OS (at most 32 MiB left, waiting up to 90 s); then twice more 5 s apart, keeping the smallest of each figure (a periodic watch-cache consistency check can be decoding every object at any one reading). Live heap is go_memstats_heap_alloc_bytes right after a forced GC. \"Before\" is the first repetition's reading, before any of its objects existed: once a repetition has deleted its objects, the watch caches keep their last events (deleted objects included) until newer ones overwrite them, so neither server returns to it, while readings with the objects present are stable across repetitions.\n\n"
	}
	section(fmt.Sprintf("Memory from empty to %d objects: A = kube-apiserver with custom resources, B proto = kvstore-apiserver with stores", largest),
		memIntro, b.table(b.memRows(), []string{colA, colBP}, false))
	section("Profiles: CPU per request on each path (creates and GETs at c=16)", profileIntro, b.table(b.profileRows(), columns, true))
	sb.WriteString(b.controllerMarkdown())
	sb.WriteString("\n### Targets\n\n")
	if b.cfg.quick {
		sb.WriteString("Quick mode: counts far too small for these verdicts to mean anything; they only show the report works.\n\n")
	}
	sb.WriteString("Each target is judged twice: best vs best (kvstore-apiserver protobuf, the CRD's JSON) and like for like (JSON on both sides); the verdict column names the weaker reading.\n\n")
	sb.WriteString("| target | want | verdict | best vs best | like for like |\n|---|---|---|---|---|\n")
	for _, c := range cs {
		fmt.Fprintf(&sb, "| %s | %s | %s | %s: %s | %s: %s |\n", c.Target, c.Want, headline(c), verdict(c.Best), c.Best.Measured, verdict(c.Like), c.Like.Measured)
	}
	if len(b.problems) > 0 {
		sb.WriteString("\n### Problems during the run\n\n")
		for _, p := range b.problems {
			fmt.Fprintf(&sb, "- %s\n", p)
		}
	}
	return sb.String()
}

// wireFormatsLine lists the Content-Types the timed requests received, or
// says why there are none: only the ops, watch and LIST phases record them.
func wireFormatsLine(fs []string) string {
	if len(fs) == 0 {
		return "none recorded (the ops, watch and LIST phases record their responses' Content-Type; this run measured none of them)"
	}
	return strings.Join(fs, "; ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "; ")
}

// report writes results.json, its charts and results.md to --out and
// returns the Markdown.
func (b *bench) report() (string, error) {
	b.meta.WireFormats = b.wireFormats()
	cs := b.checks()
	md := b.markdown(cs)
	if err := os.MkdirAll(b.cfg.out, 0o755); err != nil {
		return "", err
	}
	out := struct {
		Meta       meta                          `json:"meta"`
		Figures    map[string]map[string]*figure `json:"figures"`
		Targets    []check                       `json:"targets"`
		Problems   []string                      `json:"problems"`
		Controller map[string]*controllerResult  `json:"controller,omitempty"`
		// ControllerRuns is every run of the controller phase in the order
		// it ran (the medians above are over them).
		ControllerRuns []*controllerResult `json:"controller_runs,omitempty"`
	}{b.meta, b.figs.m, cs, b.problems, b.ctrl, b.runsInOrder()}
	js, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(b.cfg.out, "results.json"), append(js, '\n'), 0o644); err != nil {
		return "", err
	}
	charts, err := writeCharts(&chartInput{Meta: b.meta, Figures: b.figs.m, Controller: b.ctrl}, b.cfg.out, "results")
	if err != nil {
		return "", fmt.Errorf("charts: %w", err)
	}
	md += chartsMarkdown(charts)
	if err := os.WriteFile(filepath.Join(b.cfg.out, "results.md"), []byte(md), 0o644); err != nil {
		return "", err
	}
	b.logf("wrote %s and %s", filepath.Join(b.cfg.out, "results.json"), filepath.Join(b.cfg.out, "results.md"))
	return md, nil
}

// wireFormats are the content types each column's responses came in.
func (b *bench) wireFormats() []string {
	var fs []string
	b.contentTypes.Range(func(k, v any) bool {
		fs = append(fs, fmt.Sprintf("%s: %s", k, v))
		return true
	})
	sort.Strings(fs)
	return fs
}
