package chaos

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// row is one line of the report.
type row struct {
	fault, invariant string
	result           string // "pass", or "FAIL: why"
	notes            []string
	converge         time.Duration // from the end of the fault to etcd holding the desired records; 0 if never
	dns              time.Duration // from the end of the fault to CoreDNS answering the sample
}

// reportTable collects the rows of the faults in the order they ran.
type reportTable struct {
	mu   sync.Mutex
	rows []*row
}

var report reportTable

func (r *reportTable) add(x *row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, x)
}

// markdown renders the table: fault, invariant, result, time to converge.
func (r *reportTable) markdown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	b.WriteString("| fault | invariant | result | time to converge |\n|---|---|---|---|\n")
	for _, x := range r.rows {
		result := x.result
		if len(x.notes) > 0 {
			result += " (" + strings.Join(x.notes, "; ") + ")"
		}
		conv := "—"
		if x.converge > 0 {
			conv = "etcd " + seconds(x.converge)
			if x.dns > 0 {
				conv += ", DNS " + seconds(x.dns)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(x.fault), cell(x.invariant), cell(result), conv)
	}
	return b.String()
}

// write writes the table to -report, if given.
func (r *reportTable) write() error {
	if *reportPath == "" {
		return nil
	}
	return os.WriteFile(*reportPath, []byte(r.markdown()), 0o644)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// cell keeps a value inside its table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// faultT is the test of one fault: the failures it reports also make its row.
type faultT struct {
	*testing.T
	row *row
}

func (t *faultT) fail(msg string) {
	if t.row.result == "pass" {
		t.row.result = "FAIL: " + msg
	}
}

// Errorf fails the fault and records the first failure in its row.
func (t *faultT) Errorf(format string, args ...any) {
	t.T.Helper()
	t.fail(fmt.Sprintf(format, args...))
	t.T.Errorf(format, args...)
}

// Fatalf fails the fault, records the failure and stops the fault.
func (t *faultT) Fatalf(format string, args ...any) {
	t.T.Helper()
	t.fail(fmt.Sprintf(format, args...))
	t.T.Fatalf(format, args...)
}

// Notef adds a measurement to the row and the test log.
func (t *faultT) Notef(format string, args ...any) {
	t.T.Helper()
	msg := fmt.Sprintf(format, args...)
	t.row.notes = append(t.row.notes, msg)
	t.T.Log(msg)
}

// fault runs one fault as a subtest and adds its row to the report.
func fault(t *testing.T, name, invariant string, f func(t *faultT)) {
	t.Run(name, func(tt *testing.T) {
		ft := &faultT{T: tt, row: &row{fault: name, invariant: invariant, result: "pass"}}
		report.add(ft.row)
		start := time.Now()
		defer func() {
			if tt.Failed() && ft.row.result == "pass" {
				ft.row.result = "FAIL"
			}
			tt.Logf("%s: %s in %s", name, ft.row.result, seconds(time.Since(start)))
			// Written after every fault, so that a run cut short keeps its rows.
			if err := report.write(); err != nil {
				tt.Errorf("report: %v", err)
			}
		}()
		f(ft)
	})
}
