package history

import (
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// phase is where an object is in its life, as the workload sees it.
type phase uint8

const (
	absent phase = iota
	live
	// terminating: deleted, waiting for the controller's teardown to
	// remove the kvstore.io/teardown finalizer. The object may vanish at
	// any time from then on; a NotFound observes that it did.
	terminating
)

// register is the model's state: one object's life and its value.
type register struct {
	Phase phase
	Value string
}

type input struct {
	Kind   Kind
	Value  string
	Expect string
}

type output struct {
	Outcome     Outcome
	Reason      string
	Found       bool
	Value       string
	Terminating bool
}

// Model is the sequential specification of one KeyValueStore as the
// workload uses it: a register with a lifecycle. Updates carry a
// resourceVersion precondition; since the controller also writes the object
// (status, finalizer), the model does not know every resourceVersion, so it
// checks the precondition as a compare-and-set on the value the client read
// with that resourceVersion (values are unique per write): a success
// requires the value to be unchanged; a Conflict is always allowed. An
// Unknown outcome may or may not have taken effect.
var Model = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{register{}} },
	Step: func(state, in, out interface{}) []interface{} {
		st, i, o := state.(register), in.(input), out.(output)
		switch o.Outcome {
		case OK:
			return applied(st, i, o)
		case Failed:
			return refused(st, i, o)
		default:
			return append([]interface{}{st}, applied(st, i, o)...)
		}
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		if i.Kind == Get {
			return fmt.Sprintf("get -> %s found=%v %q terminating=%v", o.Outcome, o.Found, o.Value, o.Terminating)
		}
		return fmt.Sprintf("%s(%q, expect %q) -> %s %s", i.Kind, i.Value, i.Expect, o.Outcome, o.Reason)
	},
	DescribeState: func(state interface{}) string {
		st := state.(register)
		return fmt.Sprintf("%v %q", [...]string{"absent", "live", "terminating"}[st.Phase], st.Value)
	},
}

// applied: the states after the request took effect and returned o.
func applied(st register, i input, o output) []interface{} {
	switch i.Kind {
	case Create:
		if st.Phase == absent {
			return []interface{}{register{live, i.Value}}
		}
	case Update:
		if st.Phase != absent && st.Value == i.Expect {
			return []interface{}{register{st.Phase, i.Value}}
		}
	case UpdateStatus:
		if st.Phase != absent && st.Value == i.Expect {
			return []interface{}{st}
		}
	case Delete:
		if st.Phase != absent {
			return []interface{}{register{terminating, st.Value}}
		}
	case Get:
		if o.Outcome != OK {
			return nil
		}
		if !o.Found {
			return vanished(st)
		}
		if st.Phase != absent && st.Value == o.Value && o.Terminating == (st.Phase == terminating) {
			return []interface{}{st}
		}
	}
	return nil
}

// refused: the states in which the server could refuse i with o.
func refused(st register, i input, o output) []interface{} {
	switch o.Reason {
	case ReasonNotFound:
		return vanished(st)
	case ReasonConflict, ReasonAlreadyExists:
		if st.Phase != absent {
			return []interface{}{st}
		}
		return nil
	default:
		return []interface{}{st}
	}
}

// vanished: the states in which the object is not found.
func vanished(st register) []interface{} {
	switch st.Phase {
	case absent:
		return []interface{}{st}
	case terminating:
		return []interface{}{register{}}
	}
	return nil
}

// operations converts h into porcupine operations per object. Unknown
// outcomes never return (math.MaxInt64): they may take effect at any time
// after their start. Gets without a definite answer say nothing.
func operations(h History) map[string][]porcupine.Operation {
	out := map[string][]porcupine.Operation{}
	for _, op := range h.Ops {
		if op.Kind == Get && op.Outcome != OK {
			continue
		}
		ret := op.End.UnixNano()
		if op.Outcome == Unknown {
			ret = math.MaxInt64
		}
		client := op.Client
		if client == FinalClient {
			client = 0
		}
		out[op.Object] = append(out[op.Object], porcupine.Operation{
			ClientId: client,
			Input:    input{Kind: op.Kind, Value: op.Value, Expect: op.ExpectValue},
			Call:     op.Start.UnixNano(),
			Output:   output{Outcome: op.Outcome, Reason: op.Reason, Found: op.Found, Value: op.ReadValue, Terminating: op.Terminating},
			Return:   ret,
		})
	}
	return out
}

// checkLinearizable is check (d): porcupine on each object's history. It
// returns the overall verdict and the objects without a linearization.
func checkLinearizable(h History, timeout time.Duration) (string, []string) {
	model := Model.ToModel()
	perObject := operations(h)
	verdict := porcupine.Ok
	var bad []string
	if len(perObject) == 0 {
		return string(verdict), nil
	}
	each := timeout / time.Duration(len(perObject))
	if each < time.Second {
		each = time.Second
	}
	for _, obj := range sortedKeys(perObject) {
		switch porcupine.CheckOperationsTimeout(model, perObject[obj], each) {
		case porcupine.Illegal:
			verdict = porcupine.Illegal
			bad = append(bad, obj)
		case porcupine.Unknown:
			if verdict == porcupine.Ok {
				verdict = porcupine.Unknown
			}
		}
	}
	return string(verdict), bad
}
