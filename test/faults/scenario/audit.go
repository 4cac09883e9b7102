package scenario

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// AuditWrite is one write in an audit log (Metadata level).
type AuditWrite struct {
	Verb      string    `json:"verb"`
	UserAgent string    `json:"userAgent"`
	User      string    `json:"user"`
	Resource  string    `json:"resource"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	Code      int       `json:"code"`
	Received  time.Time `json:"received"`
}

func (w AuditWrite) String() string {
	return fmt.Sprintf("%s %s %s/%s -> %d at %s (%s)", w.Verb, w.Resource, w.Namespace, w.Name, w.Code, w.Received.Format("15:04:05.000000"), w.UserAgent)
}

type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource, Namespace, Name, Subresource string
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// workloadResources are the objects the controller writes for a store:
// those it manages, the Pods it deletes (a stuck rollout, a teardown), and
// the store and its backups, in kvstore-apiserver's own audit log.
var workloadResources = map[string]bool{
	"statefulsets": true, "deployments": true, "services": true, "poddisruptionbudgets": true,
	"jobs": true, "persistentvolumeclaims": true, "pods": true, "keyvaluestores": true, "keyvaluestorebackups": true,
}

// AuditWrites reads the completed writes to workload objects in an audit
// log that match keep.
func AuditWrites(path string, keep func(AuditWrite) bool) ([]AuditWrite, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditWrite
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Stage != "ResponseComplete" || ev.ObjectRef == nil {
			continue
		}
		switch ev.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		if !workloadResources[ev.ObjectRef.Resource] {
			continue
		}
		w := AuditWrite{Verb: ev.Verb, UserAgent: ev.UserAgent, User: ev.User.Username, Resource: ev.ObjectRef.Resource,
			Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name, Received: ev.RequestReceivedTimestamp}
		if ev.ObjectRef.Subresource != "" {
			w.Resource += "/" + ev.ObjectRef.Subresource
		}
		if ev.ResponseStatus != nil {
			w.Code = ev.ResponseStatus.Code
		}
		if keep(w) {
			out = append(out, w)
		}
	}
	return out, sc.Err()
}

// ByReplica keeps the writes of replica r's controller in kube-apiserver's
// audit log: its client's user agent starts with the name it runs under.
func ByReplica(r Replica) func(AuditWrite) bool {
	return func(w AuditWrite) bool { return strings.HasPrefix(w.UserAgent, r.Name+"/") }
}
