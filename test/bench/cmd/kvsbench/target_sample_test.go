package main

import (
	"strings"
	"testing"
	"time"
)

// A Flunder's create request must be as large as the CRD's, so that S and A
// move the same JSON.
func TestFlunderSameSizeAsCustomResource(t *testing.T) {
	for _, name := range []string{"o1r1s-000000", "sr3s-009999"} {
		f, cr := jsonSize(newFlunder("kvs-bench", name, "o1r1s").Object), jsonSize(newCR("kvs-bench", name, "o1r1s").Object)
		if f != cr {
			t.Errorf("%s: Flunder %d B of JSON, custom resource %d B", name, f, cr)
		}
	}
	if got := newFlunder("ns", "n", "s").GetFinalizers(); len(got) != 1 {
		t.Errorf("finalizers %v: DELETE would remove the Flunder at once, unlike A and B", got)
	}
}

func TestSampleColumnIsSelectable(t *testing.T) {
	c, err := parseFlags([]string{"--quick", "--columns", "A," + colS})
	if err != nil {
		t.Fatal(err)
	}
	if !c.columns[colS] || !c.columns[colA] || c.columns[colBJ] {
		t.Errorf("columns = %v", c.columns)
	}
	if colSlug(colS) == "" || kindOf(colS) == kindOf(colBJ) || kindOf(colS) == kindOf(colA) {
		t.Errorf("S needs a slug and a LIST kind of its own")
	}
}

// The peer's process joins the CPU accounting only while it runs, and a
// window's per-process figures carry it through.
func TestPeerJoinsCPUAccounting(t *testing.T) {
	p := procs{extra: map[string]int{}}
	if strings.Contains(strings.Join(p.measured(), ","), pSample) {
		t.Errorf("measured %v before the peer runs", p.measured())
	}
	p.extra[pSample] = 42
	if got := p.measured(); got[len(got)-1] != pSample || len(got) != len(measuredProcs)+1 {
		t.Errorf("measured = %v", got)
	}
	now := time.Now()
	a := cpuSnap{at: now, pids: map[string]int{pKubeAPI: 1, pSample: 42}, secs: map[string]float64{pKubeAPI: 1, pSample: 2}}
	b := cpuSnap{at: now.Add(2 * time.Second), pids: map[string]int{pKubeAPI: 1, pSample: 42}, secs: map[string]float64{pKubeAPI: 2, pSample: 3}}
	d, err := diffCPU(a, b, map[string]float64{pSample: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	if d.Net[pSample] != 0.5 || d.Net[pKubeAPI] != 1 {
		t.Errorf("net = %v", d.Net)
	}
	if s := d.add(d); s.Raw[pSample] != 2 || s.Net[pSample] != 1 {
		t.Errorf("sum = %+v", s)
	}
	b.pids[pSample] = 43
	if _, err := diffCPU(a, b, nil); err == nil {
		t.Errorf("a restarted peer must have no CPU figure")
	}
}

// The report explains S only when it ran.
func TestPeerNoteOnlyWhenMeasured(t *testing.T) {
	b := &bench{}
	if got := b.peerNote(); got != "" {
		t.Errorf("peer note without a peer: %q", got)
	}
	b.sample = &samplePeer{requestJSON: 1065, objectJSON: 1636, storedBytes: 1612, storedFormat: "JSON"}
	got := b.peerNote()
	for _, want := range []string{"sample-apiserver " + sampleVersion, "no status write", "1065 B of JSON", "B json / S json"} {
		if !strings.Contains(got, want) {
			t.Errorf("peer note lacks %q: %s", want, got)
		}
	}
}
