// Command kvsbench is the performance benchmark of kvstore-apiserver. On the
// local stack of hack/local-up.sh (reused, or brought up and torn down again)
// it runs the same workload against
//
//	A   the KeyValueStore API as a CRD (artifacts/bench/keyvaluestores-crd.yaml), served by kube-apiserver;
//	A+op  the same with the operator of test/bench/operator running (opcolumn.go);
//	B   kvstore-apiserver through kube-apiserver's aggregator (JSON and protobuf);
//	B′  kvstore-apiserver directly on 127.0.0.1:8443 (JSON and protobuf);
//	E   raw etcd puts of the bytes kvstore-apiserver stores, on its etcd;
//	S   the peer: k8s.io/sample-apiserver's Flunders through the same aggregator (JSON);
//	S′  the peer directly on its own port (JSON), to split what the hop costs it
//	    from what the generic server costs, and to set B′ against E;
//
// and writes a table of latencies, rates, LIST sizes, watch delivery, memory
// and CPU, with ratios, to stdout, <out>/results.md and <out>/results.json.
//
//	go run ./test/bench/cmd/kvsbench            # full: the counts of the issue, 3 repetitions
//	go run ./test/bench/cmd/kvsbench --quick    # tiny counts, 1 repetition, for CI
//	go run ./test/bench/cmd/kvsbench charts --from docs/bench/X.json   # redraw a saved run's SVG charts
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/kvstore-io/kvstore-apiserver/pkg/apis/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned"
	kvsclient "github.com/kvstore-io/kvstore-apiserver/pkg/generated/clientset/versioned/typed/kvstore/v1alpha1"
	"github.com/kvstore-io/kvstore-apiserver/test/framework"
)

// Columns of the result table.
const (
	colA  = "A"
	colBJ = "B json"
	colBP = "B proto"
	colDJ = "B′ json"
	colDP = "B′ proto"
	colE  = "E"
	colS  = "S json"
	colDS = "S′ json"
)

var columns = []string{colA, colAop, colBJ, colBP, colDJ, colDP, colE, colS, colDS}

// colSlug is a column's part of object names.
func colSlug(col string) string {
	return map[string]string{colA: "a", colAop: "aop", colBJ: "bj", colBP: "bp", colDJ: "dj", colDP: "dp", colE: "e", colS: "s", colDS: "ds"}[col]
}

// columnNamed is the column a --columns entry names: the column itself or
// its short name (no spaces, so that it survives make's BENCH_FLAGS).
func columnNamed(name string) string {
	for _, col := range columns {
		if name == col || name == colSlug(col) {
			return col
		}
	}
	return ""
}

func slugs() []string {
	var out []string
	for _, col := range columns {
		out = append(out, colSlug(col))
	}
	return out
}

const (
	kubeAPIURL    = "https://127.0.0.1:6443"
	kvstoreAPIURL = "https://127.0.0.1:8443"
	// kube-controller-manager's and kube-scheduler's secure ports
	// (hack/local-up.sh), for their /metrics.
	kcmURL       = "https://127.0.0.1:10257"
	schedulerURL = "https://127.0.0.1:10259"
	kubeEtcdURL  = "http://127.0.0.1:32379"
	ctJSON       = "application/json"
	ctProtobuf   = "application/vnd.kubernetes.protobuf"
	fieldManager = "kvsbench"
	// clientQPS < 0 turns client-go's rate limiter off.
	clientQPS = -1
)

type config struct {
	quick       bool
	reps        int
	opsC1       int
	opsC16      int
	watchers    []int
	watchWrites int
	listSizes   []int
	listRepeat  int
	idle        time.Duration
	memSettle   time.Duration
	scaleReps   int
	// steadyMemory reads memory only after the watch caches' history has
	// been shrunk (see quiesce); off with --quick, which cannot wait 80 s.
	steadyMemory bool
	phases       map[string]bool
	columns      map[string]bool
	namespace    string
	crdPath      string
	out          string
	keepCRD      bool
	seed         uint64
	systems      string
	operatorBin  string
	sampleBin    string
	// The controller phase: stores, replicas each, and how long to wait.
	ctrlStores   int
	ctrlDeletes  int
	ctrlReps     int
	ctrlReplicas int
	ctrlTimeout  time.Duration
	// freshStack: reset the stack before each run of the controller phase.
	freshStack bool
}

func parseFlags(args []string) (config, error) {
	root := framework.RepoRoot()
	fs := flag.NewFlagSet("kvsbench", flag.ContinueOnError)
	c := config{}
	fs.BoolVar(&c.quick, "quick", false, "tiny counts and one repetition (under a minute); for CI")
	reps := fs.Int("reps", 0, "repetitions of every workload; each figure is their median (default 3, 1 with --quick)")
	scaleReps := fs.Int("scale-reps", 0, "how many of the repetitions also run the scale phase (LIST, memory, CPU at the largest list size); default: all")
	opsC1 := fs.Int("ops-c1", 0, "objects per create/get/update/delete run at concurrency 1 (default 200, 20 with --quick)")
	opsC16 := fs.Int("ops-c16", 0, "objects per run at concurrency 16 (default 800, 64 with --quick)")
	watchers := fs.String("watchers", "", "numbers of concurrent watchers (default 1,50,100; 1,10 with --quick)")
	fs.IntVar(&c.watchWrites, "watch-writes", 0, "timed writes per watch measurement (default 100, 10 with --quick)")
	lists := fs.String("list-sizes", "", "object counts at which LIST is measured; the largest is also the memory and CPU scale (default 1000,10000; 50,200 with --quick)")
	fs.IntVar(&c.listRepeat, "list-repeat", 0, "timed LISTs per variant and size in each repetition, after one warm-up (default 3, 1 with --quick)")
	phases := fs.String("phases", "ops,watch,scale,controller,profile", "which phases to run (profile: CPU profiles of every API server on each column's path during creates and GETs)")
	ctrlStores := fs.Int("controller-stores", 0, "live stores the controller phase creates (default 1000, 5 with --quick)")
	fs.IntVar(&c.ctrlReplicas, "controller-replicas", 3, "replicas of each store in the controller phase")
	ctrlDeletes := fs.Int("controller-deletes", 0, "stores the controller phase then deletes, waiting until they are gone with their final backups done (default 100, 2 with --quick)")
	fs.StringVar(&c.systems, "systems", sysKVS+","+sysOperatorFlag, "which systems the controller phase runs: "+sysKVS+" (with its embedded controller) and "+sysOperatorFlag+" (the CRD with test/bench/operator)")
	fs.StringVar(&c.operatorBin, "operator-bin", filepath.Join(root, "_output", "bin", "kvsbench-operator"), "where the operator of test/bench/operator is built to and run from")
	ctrlReps := fs.Int("controller-reps", 0, "repetitions of the controller phase, each in a fresh namespace (default 3, 1 with --quick)")
	fs.DurationVar(&c.ctrlTimeout, "controller-timeout", 30*time.Minute, "how long the controller phase waits for every store to be Ready")
	fs.BoolVar(&c.freshStack, "fresh-stack", false, "reset the stack (hack/local-up.sh reset: empty etcds, every process started again) before each system's run of the controller phase, so that neither inherits the other's state; only with --phases controller")
	cols := fs.String("columns", strings.Join(columns, ","), "which columns the ops and watch phases measure (the scale phase always needs A, B proto and E, and fills Flunders for the S and S′ LISTs when either is chosen)")
	fs.StringVar(&c.sampleBin, "sample-apiserver-bin", filepath.Join(root, "_output", "bin", pSample), "sample-apiserver, the S column's peer server (hack/build-tools.sh sample-apiserver)")
	fs.StringVar(&c.namespace, "namespace", "kvs-bench", "namespace of the benchmark's objects; deleted at the end")
	fs.StringVar(&c.crdPath, "crd", filepath.Join(root, "artifacts", "bench", "keyvaluestores-crd.yaml"), "the CRD of the A column")
	fs.StringVar(&c.out, "out", filepath.Join(root, "_output", "bench"), "where results.json and results.md go")
	fs.BoolVar(&c.keepCRD, "keep-crd", false, "leave the bench CRD installed at the end")
	fs.Uint64Var(&c.seed, "seed", 0, "seed of the column order of each phase and repetition (default: from the clock; the report records it)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	setFlags := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { setFlags[f.Name] = true })
	pick := func(flagValue, full, quick int) int {
		if flagValue > 0 {
			return flagValue
		}
		if c.quick {
			return quick
		}
		return full
	}
	c.reps = pick(*reps, 3, 1)
	c.scaleReps = min(pick(*scaleReps, c.reps, c.reps), c.reps)
	c.opsC1 = pick(*opsC1, 200, 20)
	c.opsC16 = pick(*opsC16, 800, 64)
	c.watchWrites = pick(c.watchWrites, 100, 10)
	c.listRepeat = pick(c.listRepeat, 3, 1)
	c.ctrlStores = pick(*ctrlStores, 1000, 5)
	c.ctrlDeletes = pick(*ctrlDeletes, 100, 2)
	c.ctrlReps = pick(*ctrlReps, 3, 1)
	c.idle, c.memSettle, c.steadyMemory = 5*time.Second, 90*time.Second, true
	if c.quick {
		c.idle, c.memSettle, c.steadyMemory = time.Second, 0, false
		if !setFlags["controller-timeout"] {
			c.ctrlTimeout = 3 * time.Minute
		}
	}
	var err error
	if c.watchers, err = intList(*watchers, "1,50,100", "1,10", c.quick); err != nil {
		return c, fmt.Errorf("--watchers: %w", err)
	}
	if c.listSizes, err = intList(*lists, "1000,10000", "50,200", c.quick); err != nil {
		return c, fmt.Errorf("--list-sizes: %w", err)
	}
	sort.Ints(c.listSizes)
	c.columns = map[string]bool{}
	for _, name := range strings.Split(*cols, ",") {
		col := columnNamed(strings.TrimSpace(name))
		if col == "" {
			return c, fmt.Errorf("--columns: unknown column %q (have %s, or their short names %s)", name, strings.Join(columns, ", "), strings.Join(slugs(), ", "))
		}
		c.columns[col] = true
	}
	c.phases = map[string]bool{}
	for _, p := range strings.Split(*phases, ",") {
		switch p = strings.TrimSpace(p); p {
		case "ops", "watch", "scale", "controller", "profile":
			c.phases[p] = true
		default:
			return c, fmt.Errorf("--phases: unknown phase %q", p)
		}
	}
	if c.freshStack && (len(c.phases) != 1 || !c.phases["controller"]) {
		return c, errors.New("--fresh-stack: only with --phases controller (a reset removes what the other phases set up)")
	}
	return c, nil
}

func intList(s, full, quick string, isQuick bool) ([]int, error) {
	if s == "" {
		s = full
		if isQuick {
			s = quick
		}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "charts" {
		if err := chartsMain(os.Args[2:]); err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "kvsbench:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "kvsbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "kvsbench:", err)
		os.Exit(1)
	}
}

type bench struct {
	cfg config
	// crdServedAt is when the bench CRD became Established (see
	// awaitGCDiscovery).
	crdServedAt time.Time
	// stack and crd, kept for --fresh-stack's resets.
	stack *framework.Stack
	crd   *unstructured.Unstructured
	log   io.Writer
	figs  *figures
	procs procs
	meta  meta
	// directCfg reaches kvstore-apiserver directly as the admin.
	directCfg *rest.Config
	// kvsControllerOff: kvstore-apiserver runs without its controller
	// (--controllers=false, a lever run): nothing writes the stores' status,
	// so nothing waits for it.
	kvsControllerOff bool

	targets []target
	a       *crTarget
	bp      *kvsTarget
	e       *etcdTarget
	s       *sampleTarget // the peer column, with sample-apiserver running
	ds      *sampleTarget // the peer directly
	sample  *samplePeer
	lists   []listVariant
	raw     map[string]*rawClient // by process, for /metrics and pprof

	kube       kubernetes.Interface
	dyn        dynamic.Interface
	kvsDirect  kvsclient.KeyValueStoreInterface
	kvsViaKube versioned.Interface // protobuf, through the aggregator
	// systems are the controller phase's; ctrl their results by name;
	// ctrlUsed the namespaces they still hold, for the cleanup.
	systems      []system
	operator     *operatorSystem
	ctrl         map[string]*controllerResult
	ctrlRuns     map[string][]*controllerResult
	ctrlUsed     map[string]system
	crClient     dynamic.ResourceInterface
	etcdKVS      *clientv3.Client
	etcdKube     *clientv3.Client
	kvsKeyPrefix string // etcd key prefix of the namespace's stores
	crKeyPrefix  string // and of its custom resources
	crStatus     map[string]interface{}

	// memKVS and memCR update one object each in the namespace <ns>-mem to
	// shrink the watch caches' history before memory readings.
	memKVS *kvsTarget
	memCR  *crTarget
	// memBaseline is the first scale repetition's reading before any of its
	// objects existed; every repetition's memory growth is measured from it
	// (see scalePhase).
	memBaseline *memSnap

	// rng orders the columns of every phase and repetition (seeded by
	// --seed, recorded with the order in meta).
	rng *rand.Rand

	contentTypes sync.Map
	mu           sync.Mutex
	problems     []string
	last         time.Time // of the last write through an API server
	// started is when the measured run began; done names the last part of
	// it whose results were written.
	started time.Time
	done    string
}

// touch records that the benchmark just wrote through an API server.
func (b *bench) touch() {
	b.mu.Lock()
	b.last = time.Now()
	b.mu.Unlock()
}

func (b *bench) lastWrite() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

func (b *bench) memNamespace() string { return b.cfg.namespace + "-mem" }

func (b *bench) logf(format string, args ...interface{}) {
	fmt.Fprintf(b.log, "%s kvsbench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// problem notes something that makes a figure less trustworthy; all of them
// are printed with the results.
func (b *bench) problem(format string, args ...interface{}) {
	msg := fmt.Sprintf(format, args...)
	b.logf("WARNING: %s", msg)
	b.mu.Lock()
	b.problems = append(b.problems, msg)
	b.mu.Unlock()
}

func run(ctx context.Context, cfg config) (err error) {
	if cfg.seed == 0 {
		cfg.seed = uint64(time.Now().UnixNano())
	}
	b := &bench{cfg: cfg, log: os.Stderr, figs: newFigures(), rng: rand.New(rand.NewPCG(cfg.seed, 0)),
		ctrl: map[string]*controllerResult{}, ctrlRuns: map[string][]*controllerResult{}, ctrlUsed: map[string]system{}}
	crd, err := loadCRD(cfg.crdPath)
	if err != nil {
		return err
	}
	if err := checkCRDMatchesTypes(crd); err != nil {
		return err
	}

	if (cfg.phases["controller"] && strings.Contains(cfg.systems, sysOperatorFlag)) || cfg.wantsOperatorColumn() {
		// Before the stack is up: a first build of controller-runtime takes a while.
		b.logf("building the operator into %s", cfg.operatorBin)
		if err := buildOperator(ctx, cfg.operatorBin, os.Stderr); err != nil {
			return err
		}
	}
	stack, err := framework.EnsureStack(ctx, os.Stderr)
	if err != nil {
		return err
	}
	// A stack this run brought up is torn down even after an interrupt.
	defer stack.Stop(context.WithoutCancel(ctx), os.Stderr)
	b.procs = procs{pidDir: filepath.Join(stack.Dir, "pids"), extra: map[string]int{}}
	b.stack, b.crd = stack, crd

	if err := b.connect(stack); err != nil {
		return err
	}
	defer b.etcdKVS.Close()
	defer b.etcdKube.Close()

	b.kvsControllerOff = b.kvsRunsWithoutController()
	b.started = time.Now()
	b.meta = collectMeta(ctx, b, cfg)
	if b.kvsControllerOff {
		b.logf("kvstore-apiserver runs with --controllers=false: no status writes; nothing waits for them")
	}
	b.logf("applying %s", cfg.crdPath)
	if err := b.applyCRD(ctx, crd); err != nil {
		return err
	}
	b.crdServedAt = time.Now()
	if err := b.prepareNamespace(ctx); err != nil {
		return err
	}
	// Whatever happens from here, leave no objects behind.
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Minute)
		defer cancel()
		if cerr := b.teardown(cctx); cerr != nil {
			b.logf("cleanup: %v", cerr)
			if err == nil {
				err = cerr
			}
		}
	}()
	if err := b.probe(ctx); err != nil {
		return err
	}
	if (cfg.columns[colS] || cfg.columns[colDS]) && (cfg.measuresAPIPath() || cfg.phases["profile"]) {
		stopPeer, err := b.startPeer(ctx, stack)
		// Deferred after the teardown's, so it runs first: the APIService
		// goes before the namespaces are deleted.
		defer stopPeer()
		if err != nil {
			return err
		}
	}
	if cfg.phases["controller"] {
		for _, name := range strings.Split(cfg.systems, ",") {
			switch strings.TrimSpace(name) {
			case sysKVS:
				b.systems = append(b.systems, kvsSystem{b})
			case sysOperatorFlag:
				b.operator = &operatorSystem{b: b, bin: cfg.operatorBin}
				if err := b.operator.credentials(ctx, stack); err != nil {
					return err
				}
				b.systems = append(b.systems, b.operator)
			default:
				return fmt.Errorf("--systems: unknown system %q", name)
			}
		}
	}
	if err := b.prepareOperatorColumn(ctx, stack); err != nil {
		return err
	}
	defer b.cleanupOperatorColumn(context.WithoutCancel(ctx))

	return b.finish(b.measure(ctx))
}

// measure runs the phases, writing what they measured so far after each
// one (see checkpoint).
func (b *bench) measure(ctx context.Context) error {
	cfg := b.cfg
	for rep := 1; rep <= cfg.apiRepetitions(); rep++ {
		var idle map[string]float64
		var err error
		if cfg.phases["scale"] && rep <= cfg.scaleReps {
			// First, so that its memory readings follow the quietest period.
			if idle, err = b.scalePhase(ctx, rep); err != nil {
				return fmt.Errorf("scale phase, repetition %d: %w", rep, err)
			}
		} else {
			b.logf("repetition %d of %d: measuring idle CPU for %s", rep, cfg.reps, cfg.idle)
			if idle, err = b.procs.idleRates(ctx, cfg.idle); err != nil {
				return fmt.Errorf("idle CPU, repetition %d: %w", rep, err)
			}
		}
		for p, r := range idle {
			b.figs.add("idle cpu "+p, "-", "CPU s/s", r)
		}
		if cfg.phases["ops"] {
			for _, conc := range []int{1, 16} {
				if err := b.opsPhase(ctx, rep, conc, idle); err != nil {
					return fmt.Errorf("ops phase at c=%d, repetition %d: %w", conc, rep, err)
				}
			}
		}
		if cfg.phases["watch"] {
			if err := b.watchPhase(ctx, rep); err != nil {
				return fmt.Errorf("watch phase, repetition %d: %w", rep, err)
			}
		}
		b.checkpoint(fmt.Sprintf("repetition %d of %d", rep, cfg.reps))
	}
	if cfg.phases["profile"] {
		if err := b.profilePhase(ctx); err != nil {
			return fmt.Errorf("profile phase: %w", err)
		}
		b.checkpoint("the profile phase")
	}
	if err := b.stopPeer(ctx); err != nil {
		b.problem("stopping the peer: %v", err)
	}
	if cfg.phases["controller"] {
		if err := b.controllerPhases(ctx); err != nil {
			return err
		}
	}
	return nil
}

// checkpoint writes the results measured so far, marked as a run still
// going, so that a run cut short (killed, or its machine taken away) leaves
// every phase it finished. The final report overwrites them.
func (b *bench) checkpoint(after string) {
	b.done = after
	b.meta.Incomplete = "the run was still going when these were written, after " + after
	b.meta.Duration = time.Since(b.started).Round(time.Second).String()
	if _, err := b.report(); err != nil {
		b.logf("checkpoint after %s: %v", after, err)
	}
	b.meta.Incomplete = ""
}

// finish writes the report of a run that ended, with measureErr when it
// ended early: a failed or interrupted phase must not take the phases
// before it with it.
func (b *bench) finish(measureErr error) error {
	for _, t := range b.targets {
		if n := t.Conflicts(); n > 0 {
			b.problem("%s: %d updates hit a conflict and were retried (latency includes the retry)", t.ID(), n)
		}
	}
	b.meta.Duration = time.Since(b.started).Round(time.Second).String()
	if measureErr != nil {
		b.meta.Incomplete = "stopped " + b.progress() + ": " + measureErr.Error()
	}
	md, err := b.report()
	if err != nil {
		return errors.Join(measureErr, err)
	}
	fmt.Println(md)
	return measureErr
}

// progress says how far a run got.
func (b *bench) progress() string {
	if b.done == "" {
		return "before its first phase ended"
	}
	return "after " + b.done
}

// kvsRunsWithoutController says the running kvstore-apiserver was started
// with --controllers=false (a lever run): nothing then writes status.
func (b *bench) kvsRunsWithoutController() bool {
	return controllerOff(b.procs.args(pKVSAPI))
}

// connect builds every client: the admin's through kube-apiserver, the admin
// client certificate directly against kvstore-apiserver, and etcd clients.
func (b *bench) connect(stack *framework.Stack) error {
	kubeCfg, err := clientcmd.BuildConfigFromFlags("", stack.Kubeconfig)
	if err != nil {
		return err
	}
	kubeCfg.QPS, kubeCfg.Burst = clientQPS, 0
	kubeCfg.UserAgent = "kvsbench"
	directCfg := &rest.Config{
		Host: kvstoreAPIURL,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: "localhost",
			CAFile:     filepath.Join(stack.CertDir, "ca.crt"),
			CertFile:   filepath.Join(stack.CertDir, "admin.crt"),
			KeyFile:    filepath.Join(stack.CertDir, "admin.key"),
		},
		QPS:       clientQPS,
		UserAgent: "kvsbench",
	}

	b.directCfg = directCfg
	if b.kube, err = kubernetes.NewForConfig(kubeCfg); err != nil {
		return err
	}
	if b.dyn, err = dynamic.NewForConfig(kubeCfg); err != nil {
		return err
	}
	kvsFor := func(col string, base *rest.Config, proto bool) (*kvsTarget, error) {
		cs, err := versioned.NewForConfig(b.wire(col, base, proto))
		if err != nil {
			return nil, err
		}
		return newKVSTarget(col, b.cfg.namespace, cs.KvstoreV1alpha1().KeyValueStores(b.cfg.namespace)), nil
	}
	crDyn, err := dynamic.NewForConfig(b.wire(colA, kubeCfg, false))
	if err != nil {
		return err
	}
	b.a = newCRTarget(colA, b.cfg.namespace, crDyn.Resource(crGVR).Namespace(b.cfg.namespace))
	bj, err := kvsFor(colBJ, kubeCfg, false)
	if err != nil {
		return err
	}
	if b.bp, err = kvsFor(colBP, kubeCfg, true); err != nil {
		return err
	}
	dj, err := kvsFor(colDJ, directCfg, false)
	if err != nil {
		return err
	}
	dp, err := kvsFor(colDP, directCfg, true)
	if err != nil {
		return err
	}
	aop, err := b.addOperatorColumn(kubeCfg)
	if err != nil {
		return err
	}

	// kvstore-apiserver's etcd admits only its client certificate.
	etcdTLS, err := stack.KVStoreEtcdTLS()
	if err != nil {
		return err
	}
	if b.etcdKVS, err = clientv3.New(clientv3.Config{Endpoints: []string{framework.KVStoreEtcdURL}, TLS: etcdTLS, DialTimeout: 5 * time.Second}); err != nil {
		return err
	}
	if b.etcdKube, err = clientv3.New(clientv3.Config{Endpoints: []string{kubeEtcdURL}, DialTimeout: 5 * time.Second}); err != nil {
		return err
	}
	b.e = &etcdTarget{id: colE, cli: b.etcdKVS, prefix: "/bench/" + b.cfg.namespace + "/"}
	// S joins the timed columns once its server runs (startPeer).
	// v1alpha1 Flunders answer every request with a deprecation warning
	// (sample-apiserver's own demonstration of one); not logged.
	sCfg := b.wire(colS, kubeCfg, false)
	sCfg.WarningHandler = rest.NoWarnings{}
	sDyn, err := dynamic.NewForConfig(sCfg)
	if err != nil {
		return err
	}
	b.s = newSampleTarget(colS, b.cfg.namespace, sDyn.Resource(flunderGVR).Namespace(b.cfg.namespace))
	dsCfg := b.wire(colDS, sampleDirectConfig(directCfg), false)
	dsCfg.WarningHandler = rest.NoWarnings{}
	dsDyn, err := dynamic.NewForConfig(dsCfg)
	if err != nil {
		return err
	}
	b.ds = newSampleTarget(colDS, b.cfg.namespace, dsDyn.Resource(flunderGVR).Namespace(b.cfg.namespace))
	for _, t := range []target{b.a, aop, bj, b.bp, dj, dp, b.e} {
		if b.cfg.columns[t.ID()] {
			b.targets = append(b.targets, t)
		}
	}

	// Untimed helpers: direct protobuf for stores, the admin's dynamic client for CRs.
	helper, err := versioned.NewForConfig(b.wire("", directCfg, true))
	if err != nil {
		return err
	}
	b.kvsDirect = helper.KvstoreV1alpha1().KeyValueStores(b.cfg.namespace)
	if b.kvsViaKube, err = versioned.NewForConfig(b.wire("", kubeCfg, true)); err != nil {
		return err
	}
	b.crClient = b.dyn.Resource(crGVR).Namespace(b.cfg.namespace)
	b.memKVS = newKVSTarget("mem", b.memNamespace(), helper.KvstoreV1alpha1().KeyValueStores(b.memNamespace()))
	b.memCR = newCRTarget("mem", b.memNamespace(), b.dyn.Resource(crGVR).Namespace(b.memNamespace()))

	// LIST variants and the raw clients for /metrics.
	b.raw = map[string]*rawClient{}
	rawFor := func(cfg *rest.Config) (*rawClient, error) {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		return &rawClient{host: cfg.Host, http: hc}, nil
	}
	kubeRaw, err := rawFor(rest.CopyConfig(kubeCfg))
	if err != nil {
		return err
	}
	// sample-apiserver's, for its profiles and the S′ LISTs.
	if b.raw[pSample], err = rawFor(sampleDirectConfig(directCfg)); err != nil {
		return err
	}
	directRaw, err := rawFor(rest.CopyConfig(directCfg))
	if err != nil {
		return err
	}
	b.raw[pKubeAPI], b.raw[pKVSAPI] = kubeRaw, directRaw
	// kube-controller-manager and kube-scheduler serve /metrics to the
	// admin with a self-signed certificate of their own.
	for proc, host := range map[string]string{pKCM: kcmURL, pScheduler: schedulerURL} {
		cfg := &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{Insecure: true,
			CertFile: directCfg.CertFile, KeyFile: directCfg.KeyFile}}
		if b.raw[proc], err = rawFor(cfg); err != nil {
			return err
		}
	}
	kvsPath := fmt.Sprintf("/apis/%s/namespaces/%s/keyvaluestores", v1alpha1.SchemeGroupVersion, b.cfg.namespace)
	crPath := fmt.Sprintf("/apis/%s/namespaces/%s/keyvaluestores", crGVR.GroupVersion(), b.cfg.namespace)
	for _, gz := range []bool{true, false} {
		b.lists = append(b.lists,
			listVariant{col: colA, raw: kubeRaw, path: crPath, gzip: gz},
			listVariant{col: colBJ, raw: kubeRaw, path: kvsPath, gzip: gz},
			listVariant{col: colBP, raw: kubeRaw, path: kvsPath, proto: true, gzip: gz},
			listVariant{col: colDJ, raw: directRaw, path: kvsPath, gzip: gz},
			listVariant{col: colDP, raw: directRaw, path: kvsPath, proto: true, gzip: gz},
		)
	}
	b.lists = append(b.lists, listVariant{col: colE})
	return nil
}

// sampleDirectConfig reaches sample-apiserver directly as the admin: the
// same certificate as kvstore-apiserver's direct config, on the peer's port
// (its serving certificate names localhost too).
func sampleDirectConfig(direct *rest.Config) *rest.Config {
	c := rest.CopyConfig(direct)
	c.Host = fmt.Sprintf("https://127.0.0.1:%d", samplePort)
	return c
}

// wire copies cfg for one wire format, recording the Content-Type of the
// column's first response so the report can show what was really used.
//
// client-go caches transports by TLS settings, so every config with the same
// certificates would share one *http.Transport (one HTTP/2 connection per
// server) whatever WrapTransport says. A Proxy function makes a config
// uncacheable: each column then gets a transport, and a connection, of its
// own. It returns no proxy, as the default would for 127.0.0.1.
func (b *bench) wire(col string, cfg *rest.Config, proto bool) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	if proto {
		c.ContentType, c.AcceptContentTypes = ctProtobuf, ctProtobuf
	} else {
		c.ContentType, c.AcceptContentTypes = ctJSON, ctJSON
	}
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && col != "" && resp.StatusCode < 300 {
				kind := req.Method
				if req.URL.Query().Get("watch") == "true" {
					kind = "WATCH"
				}
				b.contentTypes.LoadOrStore(col+" "+kind, resp.Header.Get("Content-Type"))
			}
			return resp, err
		})
	}
	return c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// applyCRD server-side applies the CRD and waits until it is Established and
// its resource is served.
func (b *bench) applyCRD(ctx context.Context, crd *unstructured.Unstructured) error {
	body, err := crd.MarshalJSON()
	if err != nil {
		return err
	}
	crds := b.dyn.Resource(crdGVR)
	if _, err := crds.Patch(ctx, crd.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: fieldManager, Force: ptr.To(true)}); err != nil {
		return fmt.Errorf("apply CRD: %w", err)
	}
	return framework.WaitFor(ctx, 2*time.Minute, func(ctx context.Context) error {
		got, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		established := false
		for _, c := range conds {
			m, _ := c.(map[string]interface{})
			if m["type"] == "Established" && m["status"] == "True" {
				established = true
			}
		}
		if !established {
			return fmt.Errorf("CRD %s not Established yet", crd.GetName())
		}
		_, err = b.dyn.Resource(crGVR).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
}

// prepareNamespace removes what an interrupted run left and creates the
// namespaces: one for the measured objects, one for the two objects quiesce
// updates.
func (b *bench) prepareNamespace(ctx context.Context) error {
	ns := b.cfg.namespace
	// Where the two API servers keep the namespace's objects (kvstore-apiserver's
	// default --etcd-prefix; kube-apiserver's <group>/<resource> for a CRD), to
	// count them cheaply while waiting for deletions and to read stored sizes.
	b.kvsKeyPrefix = fmt.Sprintf("/registry/kvstore.io/keyvaluestores/%s/", ns)
	b.crKeyPrefix = fmt.Sprintf("/registry/%s/keyvaluestores/%s/", benchGroup, ns)
	if existing, err := b.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
		b.logf("namespace %s exists (an earlier run?): removing it first", ns)
		if existing.DeletionTimestamp == nil {
			if err := b.cleanupObjects(ctx); err != nil {
				return err
			}
		}
	}
	for _, n := range []string{ns, b.memNamespace()} {
		if err := b.deleteNamespace(ctx, n); err != nil {
			return err
		}
		_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: n, Labels: map[string]string{"app.kubernetes.io/part-of": "kvstore-bench"},
		}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create namespace %s: %w", n, err)
		}
	}
	if _, err := b.memKVS.Create(ctx, memObject, "mem"); err != nil {
		return fmt.Errorf("create a store in %s: %w", b.memNamespace(), err)
	}
	// Without the finalizer: nobody would release it when the namespace goes.
	cr := newCR(b.memNamespace(), memObject, "mem")
	cr.SetFinalizers(nil)
	out, err := b.memCR.client.Create(ctx, cr, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create a custom resource in %s: %w", b.memNamespace(), err)
	}
	b.memCR.remember(out)
	return nil
}

func (b *bench) cleanupObjects(ctx context.Context) error {
	if err := b.cleanupKVS(ctx, ""); err != nil {
		return err
	}
	if err := b.cleanupCR(ctx, ""); err != nil {
		return err
	}
	_, err := b.etcdKVS.Delete(ctx, b.e.prefix, clientv3.WithPrefix())
	return err
}

// deleteNamespace deletes ns and waits until it is gone (its store's
// teardown is the controller's, quick for a paused store).
func (b *bench) deleteNamespace(ctx context.Context, ns string) error {
	err := b.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return framework.WaitFor(ctx, 15*time.Minute, func(ctx context.Context) error {
		_, err := b.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("namespace %s still exists (%v)", ns, err)
	})
}

// teardown removes every object, the namespaces and (unless kept) the CRD.
func (b *bench) teardown(ctx context.Context) error {
	b.logf("cleaning up namespaces %s and %s", b.cfg.namespace, b.memNamespace())
	if err := b.cleanupObjects(ctx); err != nil {
		return err
	}
	// The quiesce objects first: an empty namespace goes faster.
	if err := b.memKVS.Delete(ctx, memObject); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := b.memCR.Delete(ctx, memObject); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// The operator of the controller phase watches every namespace, so it
	// has put its finalizer on this one too; nobody runs it now.
	if _, err := b.memCR.client.Patch(ctx, memObject, types.MergePatchType, removeFinalizers, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	memKey := fmt.Sprintf("/registry/kvstore.io/keyvaluestores/%s/%s", b.memNamespace(), memObject)
	// Its finalizer is the controller's to release; with the controller off
	// (a lever run) nobody does, and after 30 s without progress the tool does.
	unstick := func() {
		if _, err := b.memKVS.client.Patch(ctx, memObject, types.MergePatchType, removeFinalizers, metav1.PatchOptions{}); ignoreNotFound(err) != nil {
			b.problem("release the quiesce store: %v", err)
		}
	}
	if err := b.waitGone(ctx, "quiesce store", func() (int64, error) { return countKeys(ctx, b.etcdKVS, memKey) }, unstick); err != nil {
		return err
	}
	var wg sync.WaitGroup
	nss := []string{b.cfg.namespace, b.memNamespace()}
	for ns, s := range b.ctrlUsed {
		// Live stores left by a failed run. Nobody runs the operator now:
		// its custom resources are released by the benchmark.
		b.logf("cleaning up namespace %s of %s", ns, s.name())
		if op, ok := s.(*operatorSystem); ok {
			if err := op.releaseCRs(ctx); err != nil {
				b.logf("cleanup: %v", err)
			}
		}
		nss = append(nss, ns)
	}
	if len(b.systems) > 0 {
		defer func() {
			if err := b.removeBenchNodes(ctx); err != nil {
				b.logf("cleanup: nodes: %v", err)
			}
			if b.operator != nil {
				if err := b.operator.removeCredentials(ctx); err != nil {
					b.logf("cleanup: operator credentials: %v", err)
				}
			}
		}()
	}
	errs := make([]error, len(nss))
	for i, ns := range nss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.deleteNamespace(ctx, ns)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if b.cfg.keepCRD {
		return nil
	}
	err := b.dyn.Resource(crdGVR).Delete(ctx, crGVR.Resource+"."+benchGroup, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// probe creates one store and one custom resource, waits for the
// controller's status write, and records the sizes of both as stored; the
// store's bytes are what raw etcd (E) writes, and its status is what the CRD
// side writes when it emulates the operator.
func (b *bench) probe(ctx context.Context) error {
	const set = "probe"
	name := objName(set, 0)
	kvs, err := b.kvsDirect.Create(ctx, newKVS(b.cfg.namespace, name, set), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create probe store: %w", err)
	}
	if err := b.settle(ctx, set, kvs.ResourceVersion); err != nil {
		return err
	}
	if kvs, err = b.kvsDirect.Get(ctx, name, metav1.GetOptions{}); err != nil {
		return err
	}
	stored, err := b.etcdKVS.Get(ctx, b.kvsKeyPrefix+name)
	if err != nil || len(stored.Kvs) != 1 {
		return fmt.Errorf("probe store not found in kvstore's etcd at %s: %v", b.kvsKeyPrefix+name, err)
	}
	b.e.value = stored.Kvs[0].Value
	status, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&kvs.Status)
	if err != nil {
		return err
	}
	b.crStatus = status

	cr := newCRTarget("probe", b.cfg.namespace, b.crClient)
	if _, err := cr.Create(ctx, name, set); err != nil {
		return fmt.Errorf("create probe custom resource: %w", err)
	}
	if err := cr.UpdateStatus(ctx, name, b.crStatus); err != nil {
		return fmt.Errorf("probe custom resource status: %w", err)
	}
	crStored, err := b.etcdKube.Get(ctx, b.crKeyPrefix+name)
	if err != nil || len(crStored.Kvs) != 1 {
		return fmt.Errorf("probe custom resource not found in kube's etcd at %s: %v", b.crKeyPrefix+name, err)
	}
	crObj, err := b.crClient.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	b.meta.Objects = objectSizes{
		RequestJSON:       jsonSize(newKVS(b.cfg.namespace, name, set)),
		StoreJSON:         jsonSize(kvs),
		StoreStored:       len(b.e.value),
		StoreStoredFormat: storedFormat(b.e.value),
		CRJSON:            jsonSize(crObj.Object),
		CRStored:          len(crStored.Kvs[0].Value),
		CRStoredFormat:    storedFormat(crStored.Kvs[0].Value),
	}
	b.logf("objects: request %d B of JSON; a store is %d B as JSON, %d B stored (%s); a custom resource is %d B as JSON, %d B stored (%s)",
		b.meta.Objects.RequestJSON, b.meta.Objects.StoreJSON, b.meta.Objects.StoreStored, b.meta.Objects.StoreStoredFormat,
		b.meta.Objects.CRJSON, b.meta.Objects.CRStored, b.meta.Objects.CRStoredFormat)
	if err := b.cleanupKVS(ctx, set); err != nil {
		return err
	}
	return b.cleanupCR(ctx, set)
}

func storedFormat(v []byte) string {
	switch {
	case strings.HasPrefix(string(v), "k8s\x00"):
		return "protobuf"
	case strings.HasPrefix(string(v), "{"):
		return "JSON"
	case strings.HasPrefix(string(v), "k8s:enc:"):
		return "encrypted"
	}
	return "unknown"
}

// order returns the columns ts in this repetition's order for phase,
// shuffled, and records it: a column measured first or last in every
// repetition would carry the machine's drift alone.
func (b *bench) order(phase string, rep int, ts []target) []target {
	ts = slices.Clone(ts)
	b.rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID()
	}
	b.mu.Lock()
	b.meta.Orders = append(b.meta.Orders, fmt.Sprintf("%s rep %d: %s", phase, rep, strings.Join(ids, ", ")))
	b.mu.Unlock()
	return ts
}

// featureGates compares the feature gates both API servers report and says
// which per-request-cost setting each runs with.
func featureGates(ctx context.Context, b *bench) ([]string, string) {
	gates := map[string]map[string]string{}
	for _, p := range []string{pKubeAPI, pKVSAPI} {
		metrics, err := b.raw[p].metrics(ctx)
		if err != nil {
			continue
		}
		for name, enabled := range metrics.Sum("kubernetes_feature_enabled", "name") {
			if gates[name] == nil {
				gates[name] = map[string]string{}
			}
			gates[name][p] = map[float64]string{1: "on", 0: "off"}[enabled]
		}
	}
	var diff []string
	for name, v := range gates {
		if v[pKubeAPI] != v[pKVSAPI] && v[pKubeAPI] != "" && v[pKVSAPI] != "" {
			diff = append(diff, fmt.Sprintf("%s: kube-apiserver %s, kvstore-apiserver %s", name, v[pKubeAPI], v[pKVSAPI]))
		}
	}
	sort.Strings(diff)
	kvsReports := false
	for _, v := range gates {
		if v[pKVSAPI] != "" {
			kvsReports = true
		}
	}
	wlc := gates["WatchListCompression"]
	if !kvsReports {
		// kvstore-apiserver exports no kubernetes_feature_enabled: its
		// setting is its default unless its command line says otherwise.
		flags := cmdlineFlags(b.procs, pKVSAPI, "--feature-gates")
		if wlc == nil {
			wlc = map[string]string{}
		}
		wlc[pKVSAPI] = "off (its default) unless its command line turns it on: " + orUnknown(flags)
		if flags == "" {
			wlc[pKVSAPI] = "off (its default; no --feature-gates on its command line)"
		}
		diff = []string{"not known: kvstore-apiserver does not export kubernetes_feature_enabled"}
	}
	compression := fmt.Sprintf("WatchListCompression is %s in kube-apiserver and %s in kvstore-apiserver (each server's default; the benchmark cannot change kube-apiserver's flags). "+
		"It gzips watch-list streams (informers' initial list and every later event) for clients that accept gzip. The ops and watch phases use plain GET/PUT/watch requests, which it does not touch; "+
		"LISTs are measured both with and without gzip; the controller phase's CPU includes it wherever an informer of a controller, of kube-controller-manager or of the operator watches kube-apiserver with client-go's defaults (gzip accepted)",
		orUnknown(wlc[pKubeAPI]), orUnknown(wlc[pKVSAPI]))
	return diff, compression
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// meta describes the machine and the run.
type meta struct {
	Mode        string `json:"mode"`
	Command     string `json:"command"`
	Date        string `json:"date"`
	Duration    string `json:"duration"`
	CPUs        int    `json:"cpus"`
	CPUModel    string `json:"cpu_model"`
	MemTotal    string `json:"mem_total"`
	GoVersion   string `json:"go_version"`
	Kernel      string `json:"kernel"`
	KubeVersion string `json:"kube_apiserver_version"`
	KVSVersion  string `json:"kvstore_apiserver_version"`
	KVSBinary   string `json:"kvstore_apiserver_binary"`
	// KVSLevers are kvstore-apiserver's settings of the levers the
	// benchmark measures (HTTP/2 serving, GOGC, GOMEMLIMIT).
	KVSLevers   string      `json:"kvstore_apiserver_levers"`
	EtcdFsync   string      `json:"etcd_fsync"`
	ClientQPS   string      `json:"client_qps"`
	Config      string      `json:"config"`
	Objects     objectSizes `json:"objects"`
	WireFormats []string    `json:"wire_formats"`
	Seed        uint64      `json:"seed"`
	// Orders are the column orders used, one line per phase and repetition.
	Orders []string `json:"orders"`
	// FeatureGates are the gates whose state differs between kube-apiserver
	// and kvstore-apiserver (from kubernetes_feature_enabled on /metrics).
	FeatureGates []string `json:"feature_gates_differing"`
	// Compression is what the report says about WatchListCompression.
	Compression string `json:"compression"`
	// Peer describes the S column's server when it ran.
	Peer string `json:"peer,omitempty"`
	// Incomplete says why the figures stop short of the run's phases: it
	// failed, was interrupted, or was still going (a checkpoint).
	Incomplete string `json:"incomplete,omitempty"`
}

type objectSizes struct {
	RequestJSON       int    `json:"request_json_bytes"`
	StoreJSON         int    `json:"store_json_bytes"`
	StoreStored       int    `json:"store_stored_bytes"`
	StoreStoredFormat string `json:"store_stored_format"`
	CRJSON            int    `json:"cr_json_bytes"`
	CRStored          int    `json:"cr_stored_bytes"`
	CRStoredFormat    string `json:"cr_stored_format"`
}

func collectMeta(ctx context.Context, b *bench, cfg config) meta {
	m := meta{
		ClientQPS: "client-go rest.Config QPS=-1 (client-side rate limiter off); HTTP/2; each timed column of the ops and watch phases has a transport and connection of its own (client-go's transport cache bypassed); the LIST variants of one server share one connection and run one after the other; admin (system:masters, exempt from priority and fairness)",
		Mode:      "full",
		// Not os.Args[0]: under `go run` (make bench) that is a temporary path.
		Command:   strings.TrimSpace("kvsbench " + strings.Join(os.Args[1:], " ")),
		Date:      time.Now().UTC().Format(time.RFC3339),
		CPUs:      runtime.NumCPU(),
		GoVersion: runtime.Version(),
	}
	if cfg.quick {
		m.Mode = "quick"
	}
	if out, err := exec.CommandContext(ctx, "go", "version").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "uname", "-srm").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	if b2, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b2), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b2, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b2), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if v, err := b.kube.Discovery().ServerVersion(); err == nil {
		m.KubeVersion = v.GitVersion
	}
	if resp, err := b.raw[pKVSAPI].get(ctx, "/version", ctJSON, false); err == nil {
		var v struct {
			GitVersion string `json:"gitVersion"`
		}
		if json.Unmarshal(resp.body, &v) == nil {
			m.KVSVersion = v.GitVersion
		}
	}
	if pid, err := b.procs.pid(pKVSAPI); err == nil {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
			if strings.HasSuffix(exe, " (deleted)") {
				m.KVSBinary = exe + ": rebuilt on disk since it started"
			} else if st, err := os.Stat(exe); err == nil {
				m.KVSBinary = fmt.Sprintf("%s, built %s", exe, st.ModTime().UTC().Format(time.RFC3339))
			}
		}
		if st, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			m.KVSBinary += fmt.Sprintf(", running since %s", st.ModTime().UTC().Format(time.RFC3339))
		}
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		protocol, err := servedProtocol(b.directCfg)
		if err != nil {
			protocol = err.Error()
		}
		m.KVSLevers = leverSettings(protocol, b.procs.args(pKVSAPI), nulSplit(environ))
	}
	m.Seed = cfg.seed
	m.FeatureGates, m.Compression = featureGates(ctx, b)
	m.EtcdFsync = "on (no --unsafe-no-fsync)"
	for _, n := range []string{pEtcdKube, pEtcdKVS} {
		if slices.ContainsFunc(b.procs.args(n), func(a string) bool { return strings.Contains(a, "unsafe-no-fsync") }) {
			m.EtcdFsync = n + " runs with --unsafe-no-fsync"
		}
	}
	m.Config = fmt.Sprintf("reps=%d scale-reps=%d ops-c1=%d ops-c16=%d watchers=%v watch-writes=%d list-sizes=%v list-repeat=%d controller-stores=%d×%d controller-deletes=%d controller-reps=%d systems=%s phases=%s",
		cfg.reps, cfg.scaleReps, cfg.opsC1, cfg.opsC16, cfg.watchers, cfg.watchWrites, cfg.listSizes, cfg.listRepeat, cfg.ctrlStores, cfg.ctrlReplicas, cfg.ctrlDeletes, cfg.ctrlReps, cfg.systems, phaseList(cfg.phases))
	return m
}

func phaseList(p map[string]bool) string {
	var out []string
	for _, n := range []string{"ops", "watch", "scale", "controller", "profile"} {
		if p[n] {
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}

// servedProtocol is the protocol kvstore-apiserver agrees to when a client
// offers both HTTP/2 and HTTP/1.1, as the aggregator's transport does.
func servedProtocol(cfg *rest.Config) (string, error) {
	tc, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return "", err
	}
	tc.NextProtos = []string{"h2", "http/1.1"}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return "", err
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", u.Host, tc)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().NegotiatedProtocol, nil
}

// leverSettings states kvstore-apiserver's settings of the levers the
// benchmark compares, from its command line and environment.
func leverSettings(protocol string, cmdline, environ []string) string {
	var http2 string
	switch protocol {
	case "h2":
		http2 = "HTTP/2 serving on (the aggregator's hop is HTTP/2)"
	case "http/1.1":
		http2 = "HTTP/2 serving off (the aggregator's hop is HTTP/1.1)"
	default:
		http2 = fmt.Sprintf("served protocol unknown (%q)", protocol)
	}
	gc := []string{"GOGC unset (100)", "GOMEMLIMIT unset"}
	for _, e := range environ {
		switch k, v, _ := strings.Cut(e, "="); {
		case k == "GOGC" && v != "":
			gc[0] = e
		case k == "GOMEMLIMIT" && v != "":
			gc[1] = e
		}
	}
	settings := http2 + "; " + strings.Join(gc, ", ")
	if controllerOff(cmdline) {
		settings += "; embedded controller off (--controllers=false: no status writes, the B columns are the API alone)"
	}
	return settings
}

// controllerOff says whether kvstore-apiserver's command line turns its
// controller off.
func controllerOff(cmdline []string) bool {
	return slices.Contains(cmdline, "--controllers=false")
}

// nulSplit splits a /proc cmdline or environ file into its strings.
func nulSplit(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// apiRepetitions is how many times the API phases' loop runs: none when the
// run measures no API phase, so that a controller-only run spends no time
// on idle CPU it never uses and writes no checkpoint for a repetition that
// measured nothing.
func (c config) apiRepetitions() int {
	if c.measuresAPIPath() {
		return c.reps
	}
	return 0
}

// measuresAPIPath says whether a phase of the repetitions' loop (scale,
// ops, watch) runs.
func (c config) measuresAPIPath() bool {
	return c.phases["scale"] || c.phases["ops"] || c.phases["watch"]
}
