package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const auditSample = `{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"patch","user":{"username":"kvstore-apiserver"},"userAgent":"kvstore-apiserver-b/v0.0.0 (linux/amd64) kubernetes/$Format/kvstore-controller","objectRef":{"resource":"statefulsets","namespace":"ns","name":"s1","apiGroup":"apps"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-30T23:28:17.408336Z"}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"patch","user":{"username":"kvstore-apiserver"},"userAgent":"kvstore-apiserver/v0.0.0 (linux/amd64) kubernetes/$Format/kvstore-controller","objectRef":{"resource":"statefulsets","namespace":"ns","name":"s1","apiGroup":"apps"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-30T23:28:18Z"}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"update","user":{"username":"kvstore-apiserver"},"userAgent":"kvstore-apiserver-b/v0.0.0 (linux/amd64) kubernetes/$Format/kvstore-controller","objectRef":{"resource":"leases","namespace":"kvstore-system","name":"kvstore-controller","apiGroup":"coordination.k8s.io"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-11-30T23:28:18Z"}
{"kind":"Event","level":"Metadata","stage":"ResponseStarted","verb":"patch","userAgent":"kvstore-apiserver-b/x","objectRef":{"resource":"services","namespace":"ns","name":"s1"},"requestReceivedTimestamp":"2026-11-30T23:28:19Z"}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"get","userAgent":"kvstore-apiserver-b/x","objectRef":{"resource":"services","namespace":"ns","name":"s1"},"requestReceivedTimestamp":"2026-11-30T23:28:19Z"}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"update","user":{"username":"system:apiserver"},"userAgent":"kvstore-apiserver-b/x","objectRef":{"resource":"keyvaluestores","subresource":"status","namespace":"ns","name":"kv-1"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-11-30T23:28:20Z"}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"delete","user":{"username":"kvstore-apiserver"},"userAgent":"kvstore-apiserver-b/x","objectRef":{"resource":"pods","namespace":"ns","name":"kv-1-0"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-30T23:28:21Z"}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"update","user":{"username":"system:apiserver"},"userAgent":"kvstore-apiserver-b/x","objectRef":{"resource":"keyvaluestorebackups","subresource":"status","namespace":"ns","name":"b"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-11-30T23:28:22Z"}
not json
`

func TestAuditWritesByReplica(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(auditSample), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := AuditWrites(path, ByReplica(B))
	if err != nil {
		t.Fatal(err)
	}
	// The Lease (not a workload object), the other replica's write, the
	// unfinished stage and the read are left out; the Pod it deletes and the
	// backup's status it writes are kept (found by review: they were not
	// counted).
	if len(got) != 4 || got[0].Resource != "statefulsets" || got[0].Code != 200 || got[1].Resource != "keyvaluestores/status" || got[1].User != "system:apiserver" ||
		got[2].Resource != "pods" || got[3].Resource != "keyvaluestorebackups/status" {
		t.Fatalf("got %v", got)
	}
	want := time.Date(2026, 11, 30, 23, 28, 17, 408336000, time.UTC)
	if !got[0].Received.Equal(want) {
		t.Errorf("received %s, want %s", got[0].Received, want)
	}
	main, _ := AuditWrites(path, ByReplica(Main))
	if len(main) != 1 || main[0].Received.Second() != 18 {
		t.Fatalf("main replica: %v", main)
	}
}

func TestMarkdownAndPassed(t *testing.T) {
	ok := &Report{Name: "a", Title: "A", Linearizability: "Ok"}
	ok.figure("x", 1500*time.Millisecond, "fault")
	ok.figure("never", -1, "fault")
	ok.finish()
	bad := &Report{Name: "b", Title: "B", Linearizability: "Ok", Findings: []string{"dual writer"}}
	bad.finish()
	known := &Report{Name: "c", Title: "C", Linearizability: "Ok", Findings: []string{"dual writer"}, Known: true}
	known.finish()
	lost := &Report{Name: "d", Title: "D", Linearizability: "Ok", WritesLost: 1}
	lost.finish()
	// A recovery that never came within the scenario's patience fails it,
	// whatever else held; one that came passes.
	stuck := &Report{Name: "e", Title: "E", Linearizability: "Ok"}
	stuck.recovery("back", 2*time.Second, "fault")
	stuck.recovery("writes again", -1, "fault")
	stuck.finish()
	if !ok.Passed || bad.Passed || !known.Passed || lost.Passed || stuck.Passed {
		t.Fatalf("passed: ok=%v bad=%v known=%v lost=%v stuck=%v", ok.Passed, bad.Passed, known.Passed, lost.Passed, stuck.Passed)
	}
	md := Markdown([]*Report{ok, bad, known, stuck}, time.Minute)
	for _, want := range []string{"| a | PASS |", "| b | **FAIL** |", "| c | PASS (known finding) |", "| x | 1.500 | fault |", "| never | never | fault |", "**Finding**: dual writer",
		"| e | **FAIL** |", "| back | 2.000 | fault |", "| writes again | **never** (required) | fault |", "**Not recovered**: writes again"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
