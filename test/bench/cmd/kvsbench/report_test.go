package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

func TestHeadlineNamesTheWeakerReading(t *testing.T) {
	f := func(v float64, met bool) side { return side{Value: &v, Met: &met} }
	for _, tc := range []struct {
		name string
		c    check
		want string
	}{
		{"higher is better, like for like weaker", check{Higher: true, Best: f(3.6, true), Like: f(2.5, false)}, "**missed**; weaker: like for like, 2.50"},
		{"lower is better, best vs best weaker", check{Best: f(3.6, false), Like: f(2.8, false)}, "**missed**; weaker: best vs best, 3.60"},
		{"both met", check{Best: f(0.81, true), Like: f(0.82, true)}, "**met**; weaker: like for like, 0.82"},
		{"equal", check{Best: f(0.4, false), Like: f(0.4, false)}, "**missed**; weaker: both readings, 0.40"},
		{"one side", check{Best: f(1.2, true), Like: side{Measured: "–"}}, "**met** (best vs best; like for like not measured)"},
		{"none", check{}, "not measured"},
	} {
		if got := headline(tc.c); got != tc.want {
			t.Errorf("%s: headline = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// mustScrape parses the lines of a /metrics body.
func mustScrape(t *testing.T, lines ...string) framework.Metrics {
	t.Helper()
	metrics, err := framework.ParseMetrics(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return metrics
}

func TestCellShowsRangeOfRepetitions(t *testing.T) {
	b := &bench{figs: newFigures()}
	b.figs.add("m", "A", "ms", 3)
	if got := b.cell("m", "A", "ms"); got != "3.00" {
		t.Errorf("one repetition: %q", got)
	}
	b.figs.add("m", "A", "ms", 5)
	b.figs.add("m", "A", "ms", 4)
	if got := b.cell("m", "A", "ms"); got != "4.00 (3.00–5.00)" {
		t.Errorf("three repetitions: %q", got)
	}
}

func TestPerStore(t *testing.T) {
	got := perStore(map[string]float64{"GET": 10, "PUT": 5}, map[string]float64{"GET": 30, "PUT": 5, "POST": 8}, 4)
	if got["GET"] != 5 || got["POST"] != 2 || len(got) != 2 {
		t.Errorf("perStore = %v", got)
	}
}

func TestControllerMarkdownShowsBothSystemsWithRanges(t *testing.T) {
	b := &bench{ctrl: map[string]*controllerResult{}, ctrlRuns: map[string][]*controllerResult{}}
	b.systems = []system{kvsSystem{b}, &operatorSystem{b: b}}
	run := func(sys string, ready float64) *controllerResult {
		return &controllerResult{System: sys, Stores: 10, Replicas: 3, ProxyReplicas: 1, Deleted: 2, Reconciles: 70,
			ReadySeconds: map[string]float64{"50%": ready / 2, "90%": ready * 0.9, "100%": ready},
			CPUSeconds:   map[string]float64{pKubeAPI: 2}, MemoryMiB: map[string]float64{pKubeAPI: 300}}
	}
	b.ctrlRuns[sysKVS] = []*controllerResult{run(sysKVS, 10), run(sysKVS, 12), run(sysKVS, 14)}
	b.ctrlRuns[sysOperator] = []*controllerResult{run(sysOperator, 15), run(sysOperator, 16), run(sysOperator, 20)}
	for _, sys := range []string{sysKVS, sysOperator} {
		b.ctrl[sys] = medianResult(b.ctrlRuns[sys])
	}
	md := b.controllerMarkdown()
	for _, want := range []string{
		"| metric | kvstore-apiserver | CRD + operator | kvstore-apiserver / CRD + operator |",
		// 10–14 against 15–20: apart, so no mark.
		"| 100% of the stores Ready | 12.0 s (10.0–14.0) | 16.0 s (15.0–20.0) | 0.75 |",
		// The same on both sides: the ranges overlap.
		"| reconciles per store | 7.00 (7.00–7.00) | 7.00 (7.00–7.00) | 1.00 (ranges overlap) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in:\n%s", want, md)
		}
	}
}

// The peer's ratios: S against the CRD (one ratio: both serve only JSON)
// and kvstore-apiserver against S both ways; S′ (the peer directly) against
// raw etcd and kvstore-apiserver directly against S′, no hop on either side.
func TestTableHasPeerRatios(t *testing.T) {
	for _, tc := range []struct {
		name   string
		metric row
		rates  map[string]float64
		want   []string
	}{
		{"through the aggregator", row{"create, c=16, rate", "create c16 rate", "ops/s", false},
			map[string]float64{colA: 200, colS: 180, colBJ: 90, colBP: 120},
			[]string{"| S json / A (both readings) | B proto / S json (best vs best) | B json / S json (like for like) |", "| 0.90 | 0.67 | 0.50 |"}},
		{"directly", row{"create, c=1, rate", "create c1 rate", "ops/s", false},
			map[string]float64{colE: 800, colDS: 200, colDP: 150, colDJ: 100},
			[]string{"| S′ json / E | B′ proto / S′ json (best vs best) | B′ json / S′ json (like for like) |", "| 0.25 | 0.75 | 0.50 |"}},
	} {
		b := &bench{figs: newFigures()}
		for col, rate := range tc.rates {
			b.figs.add(tc.metric.metric, col, "ops/s", rate)
		}
		got := b.table([]row{tc.metric}, columns, true)
		for _, want := range tc.want {
			if !strings.Contains(got, want) {
				t.Errorf("%s: table lacks %q:\n%s", tc.name, want, got)
			}
		}
	}
}

// The direct-create target names the peer's own ratio to raw etcd when S′
// ran, so a reader sees whether any k8s.io/apiserver server meets the bar.
func TestDirectTargetNamesThePeer(t *testing.T) {
	for _, withPeer := range []bool{false, true} {
		b := &bench{figs: newFigures(), cfg: config{listSizes: []int{10}, watchers: []int{1}}}
		rates := map[string]float64{colE: 800, colDP: 120, colDJ: 100}
		if withPeer {
			rates[colDS] = 200
		}
		for col, rate := range rates {
			b.figs.add("create c1 rate", col, "ops/s", rate)
		}
		i := slices.IndexFunc(b.checks(), func(c check) bool { return strings.HasSuffix(c.Target, "directly vs raw etcd puts") })
		if i < 0 {
			t.Fatal("no direct-create target")
		}
		c := b.checks()[i]
		const peer = "the peer directly (S′ json) 200 ops/s = 0.25×"
		for _, got := range []string{c.Best.Measured, c.Like.Measured} {
			if strings.Contains(got, peer) != withPeer {
				t.Errorf("with the peer measured %v: %q, want the peer's reading %q only when measured", withPeer, got, peer)
			}
		}
	}
}

func TestLeverSettings(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		protocol, cmdline, environ string
		want                       string
	}{
		{"defaults", "h2", "kvstore-apiserver\x00--secure-port\x008443\x00", "PATH=/bin\x00GOGC=\x00",
			"HTTP/2 serving on (the aggregator's hop is HTTP/2); GOGC unset (100), GOMEMLIMIT unset"},
		{"levers set", "http/1.1", "kvstore-apiserver\x00--disable-http2-serving\x00", "GOGC=200\x00GOMEMLIMIT=1GiB\x00",
			"HTTP/2 serving off (the aggregator's hop is HTTP/1.1); GOGC=200, GOMEMLIMIT=1GiB"},
		{"controller off", "h2", "kvstore-apiserver\x00--controllers=false\x00", "",
			"HTTP/2 serving on (the aggregator's hop is HTTP/2); GOGC unset (100), GOMEMLIMIT unset; embedded controller off (--controllers=false: no status writes, the B columns are the API alone)"},
	} {
		if got := leverSettings(tc.protocol, nulSplit([]byte(tc.cmdline)), nulSplit([]byte(tc.environ))); got != tc.want {
			t.Errorf("%s: leverSettings = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestColumnNamed(t *testing.T) {
	for name, want := range map[string]string{"B json": colBJ, "bj": colBJ, "B′ proto": colDP, "dp": colDP, "aop": colAop, "A+op": colAop, "s": colS, "ds": colDS, "S′ json": colDS, "Bjson": "", "": ""} {
		if got := columnNamed(name); got != want {
			t.Errorf("columnNamed(%q) = %q, want %q", name, got, want)
		}
	}
}

// The first bar is the peer's ratio to the CRD in the same run.
func TestPeerRatioTargets(t *testing.T) {
	b := &bench{figs: newFigures(), cfg: config{listSizes: []int{10}, watchers: []int{1}}}
	for col, rate := range map[string]float64{colA: 200, colS: 120, colBP: 126, colBJ: 100} {
		b.figs.add("get c16 rate", col, "ops/s", rate)
	}
	for _, c := range b.checks() {
		if !strings.HasPrefix(c.Target, "get rate at concurrency 16") {
			continue
		}
		if c.Best.Met == nil || !*c.Best.Met || c.Like.Met == nil || *c.Like.Met {
			t.Fatalf("best (126 ≥ 120) must be met and like for like (100 < 120) missed: %+v", c)
		}
		if want := "B proto / A 0.63× vs S json / A 0.60×"; !strings.Contains(c.Best.Measured, want) {
			t.Errorf("best reading %q lacks %q", c.Best.Measured, want)
		}
		return
	}
	t.Fatal("no target for the peer's GET ratio")
}

// Every run in the order it ran, with the machine probe taken before it.
func TestRepetitionsMarkdownInRunOrder(t *testing.T) {
	b := &bench{ctrlRuns: map[string][]*controllerResult{}}
	run := func(sys string, rep, pos int, ready float64) *controllerResult {
		return &controllerResult{System: sys, Rep: rep, Position: pos, DeleteSeconds: 9,
			ReadySeconds: map[string]float64{"100%": ready}, CPUSeconds: map[string]float64{pKubeAPI: 40, pKCM: 60},
			Probe: &machineProbe{CPUWorkMs: 150 + ready, FsyncP50Ms: 1.5, FsyncP99Ms: 4}}
	}
	b.ctrlRuns[sysKVS] = []*controllerResult{run(sysKVS, 1, 2, 70), run(sysKVS, 2, 1, 60)}
	b.ctrlRuns[sysOperator] = []*controllerResult{run(sysOperator, 1, 1, 50), run(sysOperator, 2, 2, 65)}
	md := b.repetitionsMarkdown()
	want := []string{
		"| 1 | 1 | CRD + operator | 200 ms | 1.50 / 4.00 ms | 50.0 s | 100 s | 9.00 s |",
		"| 1 | 2 | kvstore-apiserver | 220 ms | 1.50 / 4.00 ms | 70.0 s | 100 s | 9.00 s |",
		"| 2 | 1 | kvstore-apiserver | 210 ms |",
		"| 2 | 2 | CRD + operator | 215 ms |",
		"| repetition | position | system | unschedulable per store | kube-apiserver | kube-controller-manager |",
		"| 1 | 1 | CRD + operator | – | 40.0 | 60.0 |",
		"| 2 | 2 | CRD + operator | – | 40.0 | 60.0 |",
	}
	last := -1
	for _, w := range want {
		i := strings.Index(md, w)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order in:\n%s", w, md)
		}
		last = i
	}
}

func TestProbeMachine(t *testing.T) {
	p, err := probeMachine(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe: %+v", p)
	if p.CPUWorkMs <= 0 || p.FsyncP50Ms <= 0 || p.FsyncP99Ms < p.FsyncP50Ms {
		t.Errorf("probe = %+v", p)
	}
}

func TestControllerTimesOfTwoReadings(t *testing.T) {
	reading := func(limiter, limited, queue, work, items float64) framework.Metrics {
		return mustScrape(t, []string{
			fmt.Sprintf(`rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="GET"} %v`, limiter/2),
			fmt.Sprintf(`rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:6443",verb="PATCH"} %v`, limiter/2),
			fmt.Sprintf(`rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:6443",verb="GET"} %v`, limited),
			fmt.Sprintf(`workqueue_queue_duration_seconds_sum{controller="keyvaluestore",name="keyvaluestore"} %v`, queue),
			fmt.Sprintf(`workqueue_queue_duration_seconds_count{controller="keyvaluestore",name="keyvaluestore"} %v`, items),
			fmt.Sprintf(`workqueue_work_duration_seconds_sum{controller="keyvaluestore",name="keyvaluestore"} %v`, work),
			fmt.Sprintf(`workqueue_work_duration_seconds_count{controller="keyvaluestore",name="keyvaluestore"} %v`, items),
			// Another queue of the process is not the controller's.
			`workqueue_queue_duration_seconds_sum{name="DynamicServingCertificateController"} 1000`,
			`workqueue_queue_duration_seconds_count{name="DynamicServingCertificateController"} 1`,
		}...)
	}
	got := controllerTimes(timesOf(reading(10, 100, 50, 20, 10)), timesOf(reading(30, 300, 250, 60, 110)))
	want := map[string]float64{ctLimiterTotal: 20, ctLimiterPerRequest: 0.1, ctQueuePerItem: 2, ctWorkPerItem: 0.4, ctWorkTotal: 40}
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// No reconcile and no request in the window: no means, only totals.
	same := timesOf(reading(10, 100, 50, 20, 10))
	if got := controllerTimes(same, same); len(got) != 2 {
		t.Errorf("idle window: %v, want only the two totals", got)
	}
}

// One scrape of a controller's /metrics gives its reconciles, its requests
// and its waits.
func TestReadingOfOneScrape(t *testing.T) {
	r := readingOf(mustScrape(t,
		`controller_runtime_reconcile_total{controller="keyvaluestore",result="success"} 7`,
		`controller_runtime_reconcile_total{controller="keyvaluestore",result="error"} 2`,
		`rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 3`,
		`rest_client_requests_total{code="404",host="127.0.0.1:6443",method="GET"} 1`,
		`rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 5`,
		`workqueue_work_duration_seconds_count{controller="keyvaluestore",name="keyvaluestore"} 9`,
	), "controller_runtime_reconcile_total")
	if want := map[string]float64{"success": 7, "error": 2}; !maps.Equal(r.reconciles, want) {
		t.Errorf("reconciles = %v, want %v", r.reconciles, want)
	}
	if want := map[string]float64{"GET": 4, "POST": 5}; !maps.Equal(r.requests, want) {
		t.Errorf("requests = %v, want %v", r.requests, want)
	}
	if r.times[timeWorkCount] != 9 {
		t.Errorf("times = %v, want %s 9", r.times, timeWorkCount)
	}
}

// A total over processes is the median of the runs' totals, not the sum of
// each process's median: 235 here, where the sum of medians gives 238 (the
// figures of docs/bench/paces-200-3reps, rounded).
func TestControllerTotalIsMedianOfRunTotals(t *testing.T) {
	b := &bench{ctrl: map[string]*controllerResult{}, ctrlRuns: map[string][]*controllerResult{}}
	b.systems = []system{kvsSystem{b}}
	run := func(api, sched float64) *controllerResult {
		return &controllerResult{System: sysKVS, Stores: 10, Replicas: 3, ProxyReplicas: 1, Deleted: 2,
			ReadySeconds: map[string]float64{"100%": 100},
			CPUSeconds:   map[string]float64{pKubeAPI: api, pScheduler: sched}}
	}
	b.ctrlRuns[sysKVS] = []*controllerResult{run(200, 35), run(215, 31), run(203, 31)}
	b.ctrl[sysKVS] = medianResult(b.ctrlRuns[sysKVS])
	md := b.controllerMarkdown()
	want := "| CPU, all processes, create → all Ready | 235 s (234–246) |"
	if !strings.Contains(md, want) {
		t.Errorf("missing %q in:\n%s", want, md)
	}
}

// A run that fails or is interrupted after hours still writes what its
// finished phases measured, saying where it stopped; a checkpoint between
// phases says the run was still going.
func TestAFailedRunKeepsWhatItMeasured(t *testing.T) {
	b := &bench{figs: newFigures(), log: io.Discard, started: time.Now(),
		cfg:  config{listSizes: []int{10}, watchers: []int{1}, out: t.TempDir()},
		ctrl: map[string]*controllerResult{}, ctrlRuns: map[string][]*controllerResult{}}
	b.figs.add("create c1 rate", colA, "ops/s", 100)

	b.checkpoint("repetition 1 of 3")
	if got, want := readResults(t, b.cfg.out).Meta.Incomplete, "still going when these were written, after repetition 1 of 3"; !strings.Contains(got, want) {
		t.Errorf("checkpoint: incomplete %q, want it to contain %q", got, want)
	}

	measureErr := errors.New("watch phase, repetition 2: boom")
	if err := b.finish(measureErr); !errors.Is(err, measureErr) {
		t.Errorf("finish returned %v, want the phase's error", err)
	}
	got := readResults(t, b.cfg.out)
	if want := "stopped after repetition 1 of 3: watch phase, repetition 2: boom"; got.Meta.Incomplete != want {
		t.Errorf("incomplete %q, want %q", got.Meta.Incomplete, want)
	}
	if _, ok := got.Figures["create c1 rate"]; !ok {
		t.Error("the finished repetition's figures are gone")
	}
	md, err := os.ReadFile(filepath.Join(b.cfg.out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "**Incomplete**: stopped after repetition 1 of 3"; !strings.Contains(string(md), want) {
		t.Errorf("results.md does not say %q", want)
	}

	b.meta.Incomplete = ""
	if err := b.finish(nil); err != nil {
		t.Fatal(err)
	}
	if got := readResults(t, b.cfg.out).Meta.Incomplete; got != "" {
		t.Errorf("a run that ended reads as incomplete: %q", got)
	}
}

type savedResults struct {
	Meta    meta                       `json:"meta"`
	Figures map[string]json.RawMessage `json:"figures"`
}

func readResults(t *testing.T, dir string) savedResults {
	t.Helper()
	js, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r savedResults
	if err := json.Unmarshal(js, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// A run of the controller phase alone sends none of the requests whose
// Content-Type the report records; its header said "Wire formats seen: "
// with nothing after it.
func TestWireFormatsLineSaysWhenNoneWereRecorded(t *testing.T) {
	b := &bench{figs: newFigures(), cfg: config{listSizes: []int{10}, watchers: []int{1}},
		ctrl: map[string]*controllerResult{}, ctrlRuns: map[string][]*controllerResult{}}
	if md, want := b.markdown(nil), "- Wire formats seen: none recorded"; !strings.Contains(md, want) {
		t.Errorf("markdown has no %q line", want)
	}
	b.meta.WireFormats = []string{"A create: application/json"}
	if md, want := b.markdown(nil), "- Wire formats seen: A create: application/json\n"; !strings.Contains(md, want) {
		t.Errorf("markdown has no %q line", want)
	}
}

// A run of the controller phase alone measured idle CPU once per API
// repetition and wrote a checkpoint "after repetition N of 3" though no
// API phase ran.
func TestAPIRepetitionsOnlyWhenAnAPIPhaseRuns(t *testing.T) {
	for _, tc := range []struct {
		phases []string
		want   int
	}{
		{[]string{"controller"}, 0},
		{[]string{"profile", "controller"}, 0},
		{[]string{"ops"}, 3},
		{[]string{"watch", "controller"}, 3},
		{[]string{"scale"}, 3},
	} {
		c := config{reps: 3, phases: map[string]bool{}}
		for _, p := range tc.phases {
			c.phases[p] = true
		}
		if got := c.apiRepetitions(); got != tc.want {
			t.Errorf("phases %v: %d API repetitions, want %d", tc.phases, got, tc.want)
		}
	}
}
