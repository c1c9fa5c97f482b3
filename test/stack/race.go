package stack

import (
	"os"
	"path/filepath"
	"strings"
)

// raceWarning begins each report of the race detector.
const raceWarning = "WARNING: DATA RACE"

// raceRule is the line of "=" around each report of the race detector.
const raceRule = "=================="

// DataRace is one report of the race detector in the log of a process of the
// stack.
type DataRace struct {
	// Log is the log file the report is in.
	Log string
	// Report is the report, from its "WARNING: DATA RACE" line to the line
	// that closes it: the accesses and the goroutines, with their stacks.
	Report string
}

// DataRaces returns the reports of the race detector in the logs of the
// stack's processes (<Dir>/logs/*.log), file by file in the order of their
// names. With skylb built -race (Options.SkylbBuildFlags) and GORACE leaving
// the reports on stderr, as it does unless it sets log_path, every race a
// skylb of the stack met is there, also when the process was killed.
func (s *Stack) DataRaces() ([]DataRace, error) {
	logs, err := filepath.Glob(filepath.Join(s.logDir(), "*.log"))
	if err != nil {
		return nil, err
	}
	var out []DataRace
	for _, log := range logs {
		b, err := os.ReadFile(log)
		if err != nil {
			return nil, err
		}
		for _, r := range raceReports(string(b)) {
			out = append(out, DataRace{Log: log, Report: r})
		}
	}
	return out, nil
}

// raceReports returns the race detector's reports in a log. A report whose
// closing line is missing (the process died writing it) runs to the end of
// the log.
func raceReports(log string) []string {
	lines := strings.Split(log, "\n")
	var out []string
	for i, l := range lines {
		if !strings.Contains(l, raceWarning) {
			continue
		}
		end := i + 1
		for end < len(lines) && lines[end] != raceRule {
			end++
		}
		out = append(out, strings.Join(lines[i:min(end+1, len(lines))], "\n"))
	}
	return out
}
