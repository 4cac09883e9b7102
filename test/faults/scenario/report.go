package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kvstore-io/kvstore-apiserver/test/faults/history"
)

// Figure is one measured time. Seconds is -1 when the event never happened
// within the scenario's patience.
type Figure struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// From says which instant the time is measured from.
	From string `json:"from"`
	// Recovery says the event must happen: a recovery that never came fails
	// the scenario.
	Recovery bool `json:"recovery,omitempty"`
}

// Fact is a measured count or flag.
type Fact struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Report is the outcome of one scenario.
type Report struct {
	Name      string    `json:"name"`
	Title     string    `json:"title"`
	Short     bool      `json:"short"`
	Start     time.Time `json:"start"`
	Seconds   float64   `json:"seconds"`
	Namespace string    `json:"namespace,omitempty"`
	// Workload is the workload's shape, as text.
	Workload        string              `json:"workload,omitempty"`
	Counts          history.Counts      `json:"counts"`
	WritesLost      int                 `json:"acknowledgedWritesLost"`
	Linearizability string              `json:"linearizability,omitempty"`
	Objects         int                 `json:"objects"`
	Violations      []history.Violation `json:"violations"`
	Figures         []Figure            `json:"figures"`
	Facts           []Fact              `json:"facts"`
	// Findings are product defects the scenario demonstrated; Known says
	// each is documented as found, fix pending (docs/reliability.md) and
	// does not fail the run.
	Findings []string `json:"findings,omitempty"`
	Known    bool     `json:"findingsKnown,omitempty"`
	Skipped  string   `json:"skipped,omitempty"`
	Error    string   `json:"error,omitempty"`
	Passed   bool     `json:"passed"`
	// History is the file the full history was saved to.
	History string `json:"history,omitempty"`
}

// figure records how long an event took to happen after a fault; it may
// never happen (a fault that /readyz does not notice, say).
func (r *Report) figure(name string, d time.Duration, from string) {
	r.Figures = append(r.Figures, Figure{Name: name, Seconds: seconds(d), From: from})
}

// recovery records how long the system took to recover from a fault in one
// respect. A recovery that did not come within the scenario's patience
// fails the scenario.
func (r *Report) recovery(name string, d time.Duration, from string) {
	r.Figures = append(r.Figures, Figure{Name: name, Seconds: seconds(d), From: from, Recovery: true})
}

// seconds is d in seconds to the millisecond, or -1 for never (d < 0).
func seconds(d time.Duration) float64 {
	if d < 0 {
		return -1
	}
	return d.Round(time.Millisecond).Seconds()
}

// unrecovered names the recoveries that never came.
func (r *Report) unrecovered() []string {
	var out []string
	for _, f := range r.Figures {
		if f.Recovery && f.Seconds < 0 {
			out = append(out, f.Name)
		}
	}
	return out
}

func (r *Report) fact(name string, v any) { r.Facts = append(r.Facts, Fact{name, v}) }

// finish decides Passed.
func (r *Report) finish() {
	r.Passed = r.Error == "" && len(r.Violations) == 0 && r.WritesLost == 0 &&
		r.Linearizability != "Illegal" && (len(r.Findings) == 0 || r.Known) && len(r.unrecovered()) == 0
	if r.Skipped != "" {
		r.Passed = r.Error == ""
	}
}

// WriteReports writes reports as faults.json and faults.md under dir.
func WriteReports(dir string, reports []*Report, total time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	doc := struct {
		Generated time.Time `json:"generated"`
		Seconds   float64   `json:"seconds"`
		Passed    bool      `json:"passed"`
		Scenarios []*Report `json:"scenarios"`
	}{time.Now().UTC(), total.Round(time.Second).Seconds(), true, reports}
	for _, r := range reports {
		doc.Passed = doc.Passed && r.Passed
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "faults.json"), b, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "faults.md"), []byte(Markdown(reports, total)), 0o644)
}

// Markdown renders reports as a summary table and a section per scenario.
func Markdown(reports []*Report, total time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Fault-injection report\n\nGenerated %s; %d scenarios in %s.\n\n",
		time.Now().UTC().Format(time.RFC3339), len(reports), total.Round(time.Second))
	b.WriteString("| scenario | result | requests | acknowledged | failed | unknown | writes lost | linearizable | violations |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range reports {
		res := "PASS"
		switch {
		case r.Skipped != "":
			res = "skipped"
		case !r.Passed:
			res = "**FAIL**"
		case len(r.Findings) > 0:
			res = "PASS (known finding)"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %s | %d |\n", r.Name, res, r.Counts.Attempted, r.Counts.OK,
			r.Counts.Failed, r.Counts.Unknown, r.WritesLost, r.Linearizability, len(r.Violations))
	}
	for _, r := range reports {
		fmt.Fprintf(&b, "\n## %s: %s\n\n", r.Name, r.Title)
		if r.Skipped != "" {
			fmt.Fprintf(&b, "Skipped: %s\n", r.Skipped)
			continue
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "Error: `%s`\n\n", r.Error)
		}
		fmt.Fprintf(&b, "Ran %.0fs. Workload: %s. Watch events %d, watch resumes %d, relists after 410: %d. Objects %d.\n\n",
			r.Seconds, r.Workload, r.Counts.WatchEvents, r.Counts.WatchResumes, r.Counts.WatchRelists, r.Objects)
		if len(r.Figures) > 0 {
			b.WriteString("| time to | seconds | measured from |\n|---|---|---|\n")
			for _, f := range r.Figures {
				s := fmt.Sprintf("%.3f", f.Seconds)
				switch {
				case f.Seconds < 0 && f.Recovery:
					s = "**never** (required)"
				case f.Seconds < 0:
					s = "never"
				}
				fmt.Fprintf(&b, "| %s | %s | %s |\n", f.Name, s, f.From)
			}
			b.WriteString("\n")
		}
		for _, f := range r.Facts {
			fmt.Fprintf(&b, "- %s: %v\n", f.Name, f.Value)
		}
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "- **Finding**: %s\n", f)
		}
		for _, f := range r.unrecovered() {
			fmt.Fprintf(&b, "- **Not recovered**: %s\n", f)
		}
		for i, v := range r.Violations {
			if i == 20 {
				fmt.Fprintf(&b, "- ... %d more violations in the JSON report\n", len(r.Violations)-20)
				break
			}
			fmt.Fprintf(&b, "- **Violation** %s\n", v)
		}
	}
	return b.String()
}
