package history

import (
	"fmt"
	"sort"
	"time"
)

// The checks, as named in a Violation.
const (
	CheckDurability   = "durability"   // (a) acknowledged writes present, deletes stay deleted
	CheckPrecondition = "precondition" // (b) one success per resourceVersion precondition
	CheckMonotonic    = "monotonic"    // (c) a client's resourceVersions only grow
	CheckWatch        = "watch"        // (c) watches in order, no gaps, no duplicates
	CheckLinearizable = "linearizable" // (d) porcupine, per object
)

// Violation is one thing a History shows that must not happen.
type Violation struct {
	Check  string `json:"check"`
	Object string `json:"object,omitempty"`
	Detail string `json:"detail"`
}

func (v Violation) String() string { return fmt.Sprintf("[%s] %s: %s", v.Check, v.Object, v.Detail) }

// Result is the outcome of Check.
type Result struct {
	Counts     Counts      `json:"counts"`
	Violations []Violation `json:"violations"`
	// LostWrites counts acknowledged creates/updates whose value is missing
	// from the final state (a subset of the durability violations).
	LostWrites int `json:"acknowledgedWritesLost"`
	// Linearizability is porcupine's verdict over all objects: Ok, Illegal,
	// or Unknown (it ran out of time).
	Linearizability string `json:"linearizability"`
	// Objects is how many objects the history touched.
	Objects int `json:"objects"`
}

// OK says whether no check failed.
func (r Result) OK() bool { return len(r.Violations) == 0 && r.Linearizability != "Illegal" }

// Check runs every check on h. The final state is the FinalClient's gets,
// taken after the workload stopped; objects without one are not checked
// for durability. timeout bounds the linearizability search.
func Check(h History, timeout time.Duration) Result {
	res := Result{Counts: h.Count()}
	objects := map[string]bool{}
	for _, op := range h.Ops {
		objects[op.Object] = true
	}
	res.Objects = len(objects)
	dur, lost := checkDurability(h)
	res.LostWrites = lost
	res.Violations = append(res.Violations, dur...)
	res.Violations = append(res.Violations, checkPreconditions(h)...)
	res.Violations = append(res.Violations, checkMonotonic(h)...)
	res.Violations = append(res.Violations, checkWatch(h)...)
	verdict, bad := checkLinearizable(h, timeout)
	res.Linearizability = verdict
	for _, o := range bad {
		res.Violations = append(res.Violations, Violation{CheckLinearizable, o, "no linearization of this object's history exists"})
	}
	return res
}

// isWrite: creates and updates write a value; status updates and deletes
// change the object but not its value.
func (op Op) writesValue() bool { return op.Kind == Create || op.Kind == Update }

// checkDurability is check (a): the final value of every object was written
// by a create or update that no later acknowledged write superseded, an
// acknowledged object is not gone unless it may have been deleted, and an
// object deleted with acknowledgement is not live again.
func checkDurability(h History) ([]Violation, int) {
	var out []Violation
	lost := 0
	byObject := map[string][]Op{}
	final := map[string]Op{}
	for _, op := range h.Ops {
		if op.Client == FinalClient {
			if op.Kind == Get && op.Outcome != Unknown {
				final[op.Object] = op
			}
			continue
		}
		byObject[op.Object] = append(byObject[op.Object], op)
	}
	objs := sortedKeys(byObject)
	for _, obj := range objs {
		f, ok := final[obj]
		if !ok {
			continue
		}
		ops := byObject[obj]
		var writes []Op
		var deleteOK, deleteMaybe, created bool
		for _, op := range ops {
			if op.writesValue() && op.Outcome != Failed {
				writes = append(writes, op)
			}
			if op.Kind == Create && op.Outcome == OK {
				created = true
			}
			if op.Kind == Delete {
				deleteOK = deleteOK || op.Outcome == OK
				deleteMaybe = deleteMaybe || op.Outcome != Failed
			}
		}
		if !f.Found {
			if created && !deleteMaybe {
				out = append(out, Violation{CheckDurability, obj, "acknowledged object is gone, and no delete of it was attempted"})
				lost++
			}
			continue
		}
		if deleteOK && !f.Terminating {
			out = append(out, Violation{CheckDurability, obj, "object came back: a delete was acknowledged, but the final object is not being deleted"})
		}
		var from *Op
		for i := range writes {
			if writes[i].Value == f.ReadValue {
				from = &writes[i]
			}
		}
		if from == nil {
			out = append(out, Violation{CheckDurability, obj, fmt.Sprintf("final value %q was never written", f.ReadValue)})
			continue
		}
		for _, w := range writes {
			if w.Outcome == OK && w.Start.After(from.End) {
				out = append(out, Violation{CheckDurability, obj, fmt.Sprintf(
					"acknowledged write lost: %s %q by client %d (acknowledged at %s, rv %s) was overwritten by the older %q (written by client %d, ended %s)",
					w.Kind, w.Value, w.Client, w.End.Format(time.RFC3339Nano), w.RV, from.Value, from.Client, from.End.Format(time.RFC3339Nano))})
				lost++
			}
		}
	}
	return out, lost
}

// checkPreconditions is check (b): of the writes that carried the same
// resourceVersion precondition, at most one succeeded; a successful write
// returns a newer resourceVersion, and no two writes of an object share one.
func checkPreconditions(h History) []Violation {
	var out []Violation
	type key struct{ obj, rv string }
	byPrecondition := map[key][]Op{}
	byResult := map[key][]Op{}
	for _, op := range h.Ops {
		if op.Outcome != OK || op.Kind == Get || op.Client == FinalClient {
			continue
		}
		if op.PreconditionRV != "" {
			pre, _ := rv(op.PreconditionRV)
			got, _ := rv(op.RV)
			if got < pre {
				out = append(out, Violation{CheckPrecondition, op.Object, fmt.Sprintf("%s by client %d with precondition rv %s returned the older rv %s", op.Kind, op.Client, op.PreconditionRV, op.RV)})
			}
			if op.RV == op.PreconditionRV {
				continue // a no-op write: nothing changed, nothing to contend for
			}
			k := key{op.Object, op.PreconditionRV}
			byPrecondition[k] = append(byPrecondition[k], op)
		}
		// A delete of a store that is already terminating changes nothing
		// and returns the store as it is: it may share a resourceVersion.
		if op.RV != "" && op.Kind != Delete {
			k := key{op.Object, op.RV}
			byResult[k] = append(byResult[k], op)
		}
	}
	for _, k := range sortedKeys(byPrecondition) {
		if ops := byPrecondition[k]; len(ops) > 1 {
			out = append(out, Violation{CheckPrecondition, k.obj, fmt.Sprintf("%d writes with precondition rv %s all succeeded: %s", len(ops), k.rv, describe(ops))})
		}
	}
	for _, k := range sortedKeys(byResult) {
		if ops := byResult[k]; len(ops) > 1 {
			out = append(out, Violation{CheckPrecondition, k.obj, fmt.Sprintf("%d successful writes returned the same rv %s: %s", len(ops), k.rv, describe(ops))})
		}
	}
	return out
}

// checkMonotonic is check (c) for requests: for each client and object, in
// the client's order, a read never returns an older resourceVersion than the
// client has seen and a write always returns a newer one.
func checkMonotonic(h History) []Violation {
	var out []Violation
	type key struct {
		client int
		obj    string
	}
	last := map[key]uint64{}
	for _, op := range h.sortedOps() {
		if op.Outcome != OK || op.RV == "" || op.Client == FinalClient {
			continue
		}
		n, ok := rv(op.RV)
		if !ok {
			out = append(out, Violation{CheckMonotonic, op.Object, fmt.Sprintf("client %d got a non-numeric rv %q", op.Client, op.RV)})
			continue
		}
		k := key{op.Client, op.Object}
		prev, seen := last[k]
		noop := op.Kind == UpdateStatus && op.RV == op.PreconditionRV
		switch {
		case !seen:
		case (op.Kind == Get || op.Kind == Delete || noop) && n < prev:
			out = append(out, Violation{CheckMonotonic, op.Object, fmt.Sprintf("client %d: %s returned rv %d after the client had seen rv %d (stale read)", op.Client, op.Kind, n, prev)})
		case op.Kind != Get && op.Kind != Delete && !noop && n <= prev:
			out = append(out, Violation{CheckMonotonic, op.Object, fmt.Sprintf("client %d: %s returned rv %d, not newer than rv %d it had seen", op.Client, op.Kind, n, prev)})
		}
		if n > prev {
			last[k] = n
		}
	}
	return out
}

// checkWatch is check (c) for watches: per watcher, events arrive in
// strictly increasing resourceVersion (no duplicates, no reordering, also
// across resumptions); every acknowledged write whose resourceVersion a
// watch request covered (after its start RV, up to the last RV it
// delivered) was delivered by it with the acknowledged value; a resumed
// watch starts where the previous one ended unless it relisted after 410.
func checkWatch(h History) []Violation {
	var out []Violation
	type key struct{ watcher, segment int }
	events := map[key][]Event{}
	lastOfWatcher := map[int]uint64{}
	lastEvent := map[int]Event{}
	for _, e := range h.Events {
		k := key{e.Watcher, e.Segment}
		events[k] = append(events[k], e)
		n, ok := rv(e.RV)
		if !ok {
			out = append(out, Violation{CheckWatch, e.Object, fmt.Sprintf("watcher %d: event with non-numeric rv %q", e.Watcher, e.RV)})
			continue
		}
		if prev, seen := lastOfWatcher[e.Watcher]; seen && n <= prev {
			what := "out of order"
			if n == prev {
				what = "duplicate"
			}
			out = append(out, Violation{CheckWatch, e.Object, fmt.Sprintf("watcher %d: %s event %s rv %d after %s rv %d (%s)", e.Watcher, e.Type, e.Object, n, lastEvent[e.Watcher].Object, prev, what)})
		}
		if n > lastOfWatcher[e.Watcher] {
			lastOfWatcher[e.Watcher], lastEvent[e.Watcher] = n, e
		}
	}

	// Acknowledged writes by resourceVersion.
	type ack struct {
		op Op
		n  uint64
	}
	var acks []ack
	for _, op := range h.Ops {
		if op.Outcome != OK || op.Kind == Get || op.Client == FinalClient || op.RV == op.PreconditionRV {
			continue
		}
		if n, ok := rv(op.RV); ok {
			acks = append(acks, ack{op, n})
		}
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].n < acks[j].n })

	segs := append([]Segment(nil), h.Segments...)
	sort.Slice(segs, func(i, j int) bool {
		if segs[i].Watcher != segs[j].Watcher {
			return segs[i].Watcher < segs[j].Watcher
		}
		return segs[i].Index < segs[j].Index
	})
	prevLast := map[int]uint64{}
	for i, s := range segs {
		from, ok := rv(s.FromRV)
		if !ok {
			out = append(out, Violation{CheckWatch, "", fmt.Sprintf("watcher %d segment %d: non-numeric start rv %q", s.Watcher, s.Index, s.FromRV)})
			continue
		}
		evs := events[key{s.Watcher, s.Index}]
		last := from
		for _, e := range evs {
			if n, ok := rv(e.RV); ok && n > last {
				last = n
			}
		}
		if s.Index > 0 && !s.Relist {
			if want := prevLast[s.Watcher]; from != want {
				out = append(out, Violation{CheckWatch, "", fmt.Sprintf("watcher %d segment %d resumed from rv %d, but the previous request ended at rv %d (a resume must continue or relist)", s.Watcher, s.Index, from, want)})
			}
		}
		prevLast[s.Watcher] = last
		_ = i
		byRV := map[uint64]Event{}
		for _, e := range evs {
			n, _ := rv(e.RV)
			byRV[n] = e
		}
		lo := sort.Search(len(acks), func(j int) bool { return acks[j].n > from })
		for _, a := range acks[lo:] {
			if a.n > last {
				break
			}
			e, ok := byRV[a.n]
			switch {
			case !ok:
				out = append(out, Violation{CheckWatch, a.op.Object, fmt.Sprintf("watcher %d segment %d (rv %d..%d) missed the acknowledged %s by client %d at rv %d (gap)", s.Watcher, s.Index, from, last, a.op.Kind, a.op.Client, a.n)})
			case e.Object != a.op.Object:
				out = append(out, Violation{CheckWatch, a.op.Object, fmt.Sprintf("watcher %d: event at rv %d is for %s, but the acknowledged %s at that rv was of %s", s.Watcher, a.n, e.Object, a.op.Kind, a.op.Object)})
			case a.op.writesValue() && e.Value != a.op.Value:
				out = append(out, Violation{CheckWatch, a.op.Object, fmt.Sprintf("watcher %d: event at rv %d carries value %q, but the acknowledged %s wrote %q", s.Watcher, a.n, e.Value, a.op.Kind, a.op.Value)})
			}
		}
	}
	return out
}

func describe(ops []Op) string {
	s := ""
	for i, op := range ops {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("client %d %s %q -> rv %s", op.Client, op.Kind, op.Value, op.RV)
	}
	return s
}

func sortedKeys[K comparable, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	return keys
}
