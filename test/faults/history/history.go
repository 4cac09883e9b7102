// Package history records what a fault-injection workload did (every
// request with its outcome, every watch event) and checks the record: no
// acknowledged write lost, optimistic concurrency held, resourceVersions and
// watches in order without gaps, and per-object linearizability (porcupine).
package history

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Kind is the kind of a recorded request.
type Kind string

// The requests a workload makes. Update and UpdateStatus carry a
// resourceVersion precondition; Create, Delete and Get do not.
const (
	Create       Kind = "create"
	Update       Kind = "update"
	UpdateStatus Kind = "updateStatus"
	Delete       Kind = "delete"
	Get          Kind = "get"
)

// Outcome is what the client knows about a request's effect.
type Outcome string

const (
	// OK: the server acknowledged the request.
	OK Outcome = "ok"
	// Failed: the server refused it for a reason that proves it had no
	// effect (Reason says which: Conflict, NotFound, AlreadyExists).
	Failed Outcome = "failed"
	// Unknown: a timeout, a 5xx, a dropped connection: it may or may not
	// have happened, at any time after it started.
	Unknown Outcome = "unknown"
)

// Reasons of a Failed outcome that the checks understand.
const (
	ReasonConflict      = "Conflict"
	ReasonNotFound      = "NotFound"
	ReasonAlreadyExists = "AlreadyExists"
)

// FinalClient is the client id of the reads taken after the workload has
// stopped and every fault has healed: the final state that check (a) uses.
const FinalClient = -1

// Op is one request and its outcome. A client issues its requests one at a
// time, so a client's Ops never overlap.
type Op struct {
	Client int    `json:"client"`
	Kind   Kind   `json:"kind"`
	Object string `json:"object"`
	// PreconditionRV is metadata.resourceVersion sent with an update.
	PreconditionRV string `json:"preconditionRV,omitempty"`
	// ExpectValue is the value the client read together with PreconditionRV.
	ExpectValue string `json:"expectValue,omitempty"`
	// Value is the value a create or update writes (unique per write).
	Value   string    `json:"value,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Outcome Outcome   `json:"outcome"`
	// Reason is the failure reason or the error's text.
	Reason string `json:"reason,omitempty"`
	// RV is the resourceVersion of the object the server returned.
	RV string `json:"rv,omitempty"`
	// Found, ReadValue and Terminating describe the object a get or a
	// delete returned.
	Found       bool   `json:"found,omitempty"`
	ReadValue   string `json:"readValue,omitempty"`
	Terminating bool   `json:"terminating,omitempty"`
}

// Segment is one watch request of a watcher: from FromRV until it ended.
// A watcher resumes from the last resourceVersion it saw (a new Segment
// with the same Watcher), or relists after 410 Gone (Relist is true and
// FromRV is the list's resourceVersion).
type Segment struct {
	Watcher int       `json:"watcher"`
	Index   int       `json:"index"`
	FromRV  string    `json:"fromRV"`
	Relist  bool      `json:"relist,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	// EndReason: "closed" (the server ended it), "gone" (410), "error: ...",
	// or "stopped" (the workload ended).
	EndReason string `json:"endReason,omitempty"`
}

// Event is one watch event.
type Event struct {
	Watcher     int       `json:"watcher"`
	Segment     int       `json:"segment"`
	Type        string    `json:"type"`
	Object      string    `json:"object"`
	RV          string    `json:"rv"`
	Value       string    `json:"value,omitempty"`
	Terminating bool      `json:"terminating,omitempty"`
	Time        time.Time `json:"time"`
}

// History is everything a workload run recorded.
type History struct {
	Ops      []Op      `json:"ops"`
	Segments []Segment `json:"segments,omitempty"`
	Events   []Event   `json:"events,omitempty"`
}

// Recorder collects a History from concurrent clients and watchers.
type Recorder struct {
	mu sync.Mutex
	h  History
}

// Record appends a finished request.
func (r *Recorder) Record(op Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Ops = append(r.h.Ops, op)
}

// StartSegment records the start of a watch request and returns its index
// within the watcher.
func (r *Recorder) StartSegment(watcher int, fromRV string, relist bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.h.Segments {
		if s.Watcher == watcher {
			n++
		}
	}
	r.h.Segments = append(r.h.Segments, Segment{Watcher: watcher, Index: n, FromRV: fromRV, Relist: relist, Start: time.Now()})
	return n
}

// EndSegment records why a watch request ended.
func (r *Recorder) EndSegment(watcher, index int, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.h.Segments {
		if s := &r.h.Segments[i]; s.Watcher == watcher && s.Index == index {
			s.End, s.EndReason = time.Now(), reason
		}
	}
}

// Event appends a watch event.
func (r *Recorder) Event(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Events = append(r.h.Events, e)
}

// History returns a copy of what has been recorded.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return History{
		Ops:      append([]Op(nil), r.h.Ops...),
		Segments: append([]Segment(nil), r.h.Segments...),
		Events:   append([]Event(nil), r.h.Events...),
	}
}

// Counts are the request totals of a History (the final reads excluded).
type Counts struct {
	Attempted int `json:"attempted"`
	OK        int `json:"acknowledged"`
	Failed    int `json:"failed"`
	Unknown   int `json:"unknown"`
	// Writes, WritesOK: creates, updates, status updates and deletes.
	Writes      int `json:"writes"`
	WritesOK    int `json:"writesAcknowledged"`
	WatchEvents int `json:"watchEvents"`
	// WatchResumes counts watch requests after the first per watcher;
	// WatchRelists those that relisted after 410 Gone.
	WatchResumes int `json:"watchResumes"`
	WatchRelists int `json:"watchRelists"`
}

// Count totals h.
func (h History) Count() Counts {
	var c Counts
	for _, op := range h.Ops {
		if op.Client == FinalClient {
			continue
		}
		c.Attempted++
		switch op.Outcome {
		case OK:
			c.OK++
		case Failed:
			c.Failed++
		default:
			c.Unknown++
		}
		if op.Kind != Get {
			c.Writes++
			if op.Outcome == OK {
				c.WritesOK++
			}
		}
	}
	c.WatchEvents = len(h.Events)
	for _, s := range h.Segments {
		if s.Index > 0 {
			c.WatchResumes++
		}
		if s.Relist {
			c.WatchRelists++
		}
	}
	return c
}

// Save writes h as JSON.
func (h History) Save(path string) error {
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode history: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

// Load reads a History written by Save.
func Load(path string) (History, error) {
	var h History
	b, err := os.ReadFile(path)
	if err != nil {
		return h, fmt.Errorf("read history: %w", err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("decode history %s: %w", path, err)
	}
	return h, nil
}

// rv parses a resourceVersion. kvstore-apiserver's are etcd revisions; the
// checks compare them as numbers, which Kubernetes allows a test of a
// known server to do (clients in general must treat them as opaque).
func rv(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil && s != ""
}

// sortedOps returns h's ops ordered by start time, then client.
func (h History) sortedOps() []Op {
	ops := append([]Op(nil), h.Ops...)
	sort.SliceStable(ops, func(i, j int) bool {
		if !ops[i].Start.Equal(ops[j].Start) {
			return ops[i].Start.Before(ops[j].Start)
		}
		return ops[i].Client < ops[j].Client
	})
	return ops
}
