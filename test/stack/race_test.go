package stack

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// report is a report of the race detector as a program built -race writes it.
const report = `WARNING: DATA RACE
Read at 0x00c000094008 by goroutine 7:
  main.main.func1()
      /tmp/racedemo/main.go:10 +0x7b

Previous write at 0x00c000094008 by goroutine 8:
  main.main.func1()
      /tmp/racedemo/main.go:10 +0x8d

Goroutine 7 (running) created at:
  main.main()
      /tmp/racedemo/main.go:10 +0x78
==================`

func TestDataRaces(t *testing.T) {
	tests := []struct {
		name string
		logs map[string]string
		want []DataRace
	}{
		{
			name: "no race",
			logs: map[string]string{"skylb.log": "==== 2026-12-07T10:00:00Z start: skylb\nlevel=info msg=ready\n"},
		},
		{
			name: "one race among log lines",
			logs: map[string]string{"skylb.log": "level=info msg=ready\n==================\n" + report + "\nlevel=info msg=published\n"},
			want: []DataRace{{Log: "skylb.log", Report: report}},
		},
		{
			name: "two races in two logs, a run's start line between them",
			logs: map[string]string{
				"skylb-b.log": "==================\n" + report + "\n==== 2026-12-07T10:00:00Z start: skylb\n",
				"skylb-a.log": "==================\n" + report + "\n==================\n" + report + "\nFound 2 data race(s)\n",
				"etcd.log":    "{\"level\":\"info\"}\n",
			},
			want: []DataRace{{Log: "skylb-a.log", Report: report}, {Log: "skylb-a.log", Report: report}, {Log: "skylb-b.log", Report: report}},
		},
		{
			name: "a report cut short by the process's death",
			logs: map[string]string{"skylb.log": "==================\nWARNING: DATA RACE\nRead at 0x00c000094008 by goroutine 7:\n"},
			want: []DataRace{{Log: "skylb.log", Report: "WARNING: DATA RACE\nRead at 0x00c000094008 by goroutine 7:\n"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Stack{Options: Options{Dir: t.TempDir()}}
			if err := os.MkdirAll(s.logDir(), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, text := range tt.logs {
				if err := os.WriteFile(filepath.Join(s.logDir(), name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.DataRaces()
			if err != nil {
				t.Fatalf("DataRaces() = %v", err)
			}
			for i := range got {
				got[i].Log = filepath.Base(got[i].Log)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DataRaces() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
