package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// Processes of the local stack whose CPU and memory are measured, by the
// name of their PID file in <stack>/pids.
const (
	pEtcdKube   = "etcd-kube"
	pEtcdKVS    = "etcd-kvstore"
	pKubeAPI    = "kube-apiserver"
	pKVSAPI     = "kvstore-apiserver"
	pKCM        = "kube-controller-manager"
	pScheduler  = "kube-scheduler"
	pClient     = "kvsbench" // this process
	clockTicks  = 100        // USER_HZ: /proc/<pid>/stat counts in 1/100 s on Linux
	statUtime   = 14         // field numbers of /proc/<pid>/stat (man 5 proc)
	statStime   = 15
	kibPerBytes = 1024
)

var measuredProcs = []string{pEtcdKube, pEtcdKVS, pKubeAPI, pKVSAPI, pKCM, pClient}

// measured are measuredProcs plus sample-apiserver while the benchmark runs it.
func (p procs) measured() []string {
	if _, ok := p.extra[pSample]; ok {
		return append(append([]string(nil), measuredProcs...), pSample)
	}
	return measuredProcs
}

type procs struct {
	pidDir string
	// extra are processes the benchmark started itself (the operator).
	extra map[string]int
}

func (p procs) pid(name string) (int, error) {
	if name == pClient {
		return os.Getpid(), nil
	}
	if pid, ok := p.extra[name]; ok {
		return pid, nil
	}
	b, err := os.ReadFile(filepath.Join(p.pidDir, name+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// args are the command line of a process of the stack (nil if it is not
// running or cannot be read).
func (p procs) args(name string) []string {
	pid, err := p.pid(name)
	if err != nil {
		return nil
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return nulSplit(cmdline)
}

// cpuSeconds is utime+stime of a process, from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	// The command name (field 2) is in parentheses and may contain spaces.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(s[i+1:]) // starts at field 3
	if len(fields) < statStime-2 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	ut, err1 := strconv.ParseUint(fields[statUtime-3], 10, 64)
	st, err2 := strconv.ParseUint(fields[statStime-3], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return float64(ut+st) / clockTicks, nil
}

// rssBytes is VmRSS of a process, from /proc/<pid>/status.
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * kibPerBytes, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// cpuSnap is the CPU time of every measured process at one moment.
type cpuSnap struct {
	at   time.Time
	pids map[string]int
	secs map[string]float64
}

func (p procs) cpu() (cpuSnap, error) {
	s := cpuSnap{at: time.Now(), pids: map[string]int{}, secs: map[string]float64{}}
	for _, n := range p.measured() {
		pid, err := p.pid(n)
		if err != nil {
			return s, fmt.Errorf("pid of %s: %w", n, err)
		}
		sec, err := cpuSeconds(pid)
		if err != nil {
			return s, fmt.Errorf("%s: %w", n, err)
		}
		s.pids[n], s.secs[n] = pid, sec
	}
	// And the processes the benchmark started (the operator, while A+op
	// is measured).
	for n, pid := range p.extra {
		if sec, err := cpuSeconds(pid); err == nil {
			s.pids[n], s.secs[n] = pid, sec
		}
	}
	return s, nil
}

// cpuOf reads the CPU seconds of the named processes; -1 for one without a
// pid file or /proc entry (an optional process of the stack).
func (p procs) cpuOf(names []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, n := range names {
		out[n] = -1
		pid, err := p.pid(n)
		if err != nil {
			continue
		}
		if sec, err := cpuSeconds(pid); err == nil {
			out[n] = sec
		}
	}
	return out, nil
}

// cpuDelta is CPU seconds spent per process between two snapshots, less the
// idle rate measured beforehand times the window (never below zero). A
// process that restarted in between has no figure.
type cpuDelta struct {
	Window float64            `json:"window_s"`
	Raw    map[string]float64 `json:"raw_cpu_s"`
	Net    map[string]float64 `json:"net_cpu_s"`
}

func diffCPU(a, b cpuSnap, idle map[string]float64) (cpuDelta, error) {
	d := cpuDelta{Window: b.at.Sub(a.at).Seconds(), Raw: map[string]float64{}, Net: map[string]float64{}}
	for n := range b.pids {
		if a.pids[n] != b.pids[n] {
			return d, fmt.Errorf("%s restarted during the measurement (pid %d → %d)", n, a.pids[n], b.pids[n])
		}
		raw := b.secs[n] - a.secs[n]
		d.Raw[n] = raw
		d.Net[n] = max(0, raw-idle[n]*d.Window)
	}
	// A started process present at both ends (no idle rate: it was not
	// running when idle CPU was measured).
	for n, pid := range b.pids {
		if _, measured := d.Raw[n]; measured || a.pids[n] != pid {
			continue
		}
		d.Raw[n] = b.secs[n] - a.secs[n]
		d.Net[n] = d.Raw[n]
	}
	return d, nil
}

// add sums two deltas of separate windows (e.g. creates, then status writes).
func (d cpuDelta) add(o cpuDelta) cpuDelta {
	s := cpuDelta{Window: d.Window + o.Window, Raw: map[string]float64{}, Net: map[string]float64{}}
	for _, m := range []map[string]float64{d.Raw, o.Raw} {
		for n := range m {
			s.Raw[n] = d.Raw[n] + o.Raw[n]
			s.Net[n] = d.Net[n] + o.Net[n]
		}
	}
	return s
}

// idleRates samples each process's CPU use per second over d, with nothing
// of the benchmark running.
func (p procs) idleRates(ctx context.Context, d time.Duration) (map[string]float64, error) {
	a, err := p.cpu()
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(d):
	}
	b, err := p.cpu()
	if err != nil {
		return nil, err
	}
	delta, err := diffCPU(a, b, nil)
	if err != nil {
		return nil, err
	}
	rates := map[string]float64{}
	for n, v := range delta.Raw {
		rates[n] = v / delta.Window
	}
	rates[pClient] = 0 // the client's own idle is its measuring
	return rates, nil
}

// memSnap is the resident set and the live Go heap (after a forced GC) of
// both API servers.
type memSnap struct {
	RSS  map[string]int64 `json:"rss_bytes"`
	Heap map[string]int64 `json:"heap_after_gc_bytes"`
	// Unscavenged is free heap the Go runtime had not yet returned to the
	// OS when RSS was read (go_memstats_heap_idle_bytes - heap_released).
	Unscavenged map[string]int64 `json:"unscavenged_bytes"`
}

// scavengedEnough is how much free heap may still be resident when RSS is
// read: the Go runtime returns freed memory to the OS only gradually, and
// RSS right after a burst says more about the burst than about what stays.
const scavengedEnough = 32 << 20

// memReadings is how many readings memory takes in a steady state, 5 s
// apart, keeping the smallest: a server may be in the middle of a transient
// allocation at any one of them, such as the watch cache consistency check
// (DetectCacheInconsistency, on by default), which every 5 to 7.5 minutes
// lists and decodes every object of a resource from etcd.
const (
	memReadings   = 3
	memReadingGap = 5 * time.Second
)

// memory forces a GC in each API server through /debug/pprof/heap?gc=1 and
// reads go_memstats_heap_alloc_bytes from /metrics; then waits, up to
// maxWait, until each has returned its free heap to the OS (background
// scavenging), and reads VmRSS. With maxWait > 0 it takes memReadings such
// readings and keeps the smallest of each figure; saveHeap gets the heap
// profile of the smallest heap reading.
func (p procs) memory(ctx context.Context, servers map[string]*rawClient, maxWait time.Duration, saveHeap func(proc string, profile []byte)) (memSnap, error) {
	m := memSnap{RSS: map[string]int64{}, Heap: map[string]int64{}, Unscavenged: map[string]int64{}}
	stats := func(n string) (map[string]float64, error) {
		metrics, err := servers[n].metrics(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: /metrics: %w", n, err)
		}
		out := map[string]float64{}
		for _, name := range []string{"go_memstats_heap_alloc_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes"} {
			if out[name], err = metrics.Value(name); err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
		}
		return out, nil
	}
	sleep := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	servs := []string{pKubeAPI, pKVSAPI}
	readings := 1
	if maxWait > 0 {
		readings = memReadings
	}
	profiles := map[string][]byte{}
	for r := 0; r < readings; r++ {
		if r > 0 {
			if err := sleep(memReadingGap); err != nil {
				return m, err
			}
		}
		for _, n := range servs {
			prof, err := servers[n].get(ctx, "/debug/pprof/heap?gc=1", "", false)
			if err != nil {
				return m, fmt.Errorf("%s: force GC: %w", n, err)
			}
			st, err := stats(n)
			if err != nil {
				return m, err
			}
			if heap := int64(st["go_memstats_heap_alloc_bytes"]); r == 0 || heap < m.Heap[n] {
				m.Heap[n], profiles[n] = heap, prof.body
			}
		}
		// Only the first reading waits for the scavenger; the later ones
		// follow it closely enough.
		deadline := time.Now().Add(maxWait)
		unscavenged := map[string]int64{}
		for {
			done := true
			for _, n := range servs {
				st, err := stats(n)
				if err != nil {
					return m, err
				}
				unscavenged[n] = int64(st["go_memstats_heap_idle_bytes"] - st["go_memstats_heap_released_bytes"])
				if unscavenged[n] > scavengedEnough {
					done = false
				}
			}
			if r > 0 || done || time.Now().After(deadline) {
				break
			}
			if err := sleep(2 * time.Second); err != nil {
				return m, err
			}
		}
		for _, n := range servs {
			pid, err := p.pid(n)
			if err != nil {
				return m, err
			}
			rss, err := rssBytes(pid)
			if err != nil {
				return m, err
			}
			if r == 0 || rss < m.RSS[n] {
				m.RSS[n], m.Unscavenged[n] = rss, unscavenged[n]
			}
		}
	}
	if saveHeap != nil {
		for n, prof := range profiles {
			saveHeap(n, prof)
		}
	}
	return m, nil
}

// rawClient does plain HTTP GETs with a client-go transport (TLS, client
// certificate), for LISTs whose wire bytes are counted and for /metrics.
type rawClient struct {
	host string
	http *http.Client
}

// rawResp is a response body exactly as it came over the wire.
type rawResp struct {
	body        []byte
	took        time.Duration // until the last byte
	gzipped     bool
	contentType string
}

// metrics reads the server's Prometheus text exposition.
func (c *rawClient) metrics(ctx context.Context) (framework.Metrics, error) {
	resp, err := c.get(ctx, "/metrics", "text/plain", false)
	if err != nil {
		return nil, err
	}
	return framework.ParseMetrics(bytes.NewReader(resp.body))
}

// get reads path; with gzip it asks for a gzip-compressed body (as client-go
// does by default) and returns it still compressed.
func (c *rawClient) get(ctx context.Context, path, accept string, gzip bool) (rawResp, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.host+path, nil)
	if err != nil {
		return rawResp{}, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	// Setting Accept-Encoding ourselves stops net/http from adding gzip and
	// decompressing transparently, so the bytes read are the wire's.
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	} else {
		req.Header.Set("Accept-Encoding", "identity")
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return rawResp{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	r := rawResp{body: body, took: time.Since(start), gzipped: resp.Header.Get("Content-Encoding") == "gzip", contentType: resp.Header.Get("Content-Type")}
	if err != nil {
		return rawResp{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return rawResp{}, fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, body)
	}
	return r, nil
}

// awaitChild polls ready every interval until it succeeds, for at most two
// minutes, while watching exited (which it leaves as it found it) for the
// started child process name dying first; want says what is awaited.
func awaitChild(ctx context.Context, exited chan error, name, want, logName string, interval time.Duration, ready func(context.Context) error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("%s exited: %v (see %s)", name, err, logName)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
		err := ready(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not %s within 2 minutes: %v (see %s)", name, want, err, logName)
		}
	}
}
